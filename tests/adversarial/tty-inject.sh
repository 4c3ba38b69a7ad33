#!/usr/bin/env bash
# TIOCSTI injection into the caller's terminal: agentjail runs with a pseudo-terminal's slave
# as stdin (as from an interactive shell); the attacker tries to make it its controlling
# terminal and push a command line into its input, and to write to it past the output limit.
# Afterwards nothing may wait in the terminal's input (where the user's shell would read it)
# nor have reached the master.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

# argv: mode, agentjail, workspace, report, helper dir, bytes for the helper to write to the
# terminal (0: none), extra agentjail flags. Mode "owned": agentjail
# is started by a session leader whose controlling terminal the pty is (an interactive shell);
# mode "free": the pty is nobody's controlling terminal, so the sandbox could take it as its
# own. Prints the helper's lines and:
#   control BYTES   what a host session leader owning the terminal injected (proof that
#                   injection works on this kernel), or the error that stopped it
#   rc N            agentjail's exit code
#   input N         bytes waiting in the terminal's input after the run
#   master N        bytes the master received during the run
DRIVER='
import errno, fcntl, os, pty, subprocess, sys, termios, threading, tty
mode, aj, ws, report, helpers, flood = sys.argv[1:7]
master, slave = pty.openpty()
tty.setraw(slave)
def drain(fd):
    os.set_blocking(fd, False)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.set_blocking(fd, True)
    return data
def lead_session():
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for b in b"ctl\n":
        fcntl.ioctl(slave, termios.TIOCSTI, bytes([b]))
    print("control", drain(slave).decode(errors="replace").strip() or "-", flush=True)
def read_master(got, stop):
    # The terminal must be read while the sandbox writes, or a full buffer blocks it.
    while not stop.is_set():
        got[0] += len(drain(master))
        stop.wait(0.02)
def run_agentjail():
    drain(master)
    got, stop = [0], threading.Event()
    reader = threading.Thread(target=read_master, args=(got, stop))
    reader.start()
    argv = [helpers + "/tty-inject"] + ([flood] if flood != "0" else [])
    p = subprocess.run([aj, "run", "-w", ws, "--report", report, "--ro", helpers] +
                       sys.argv[7:] + ["--"] + argv, stdin=slave, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    stop.set()
    reader.join()
    sys.stdout.write(p.stdout.decode(errors="replace"))
    print("rc", p.returncode)
    print("input", len(drain(slave)))
    print("master", got[0] + len(drain(master)), flush=True)
pid = os.fork()
if pid == 0:
    try:
        lead_session()
        if mode == "owned":
            run_agentjail()
        os._exit(0)
    except OSError as e:
        print("control", errno.errorcode[e.errno], flush=True)
        os._exit(1)
os.waitpid(pid, 0)
if mode == "free":
    run_agentjail()
'

# run_tiocsti MODE [FLOOD_BYTES [FLAGS...]]: sets OUT.
run_tiocsti() {
	local mode=$1 flood=${2:-0}
	shift
	[ $# -gt 0 ] && shift
	adv_setup
	# shellcheck disable=SC2046
	OUT=$(python3 -c "$DRIVER" "$mode" "$AJ" "$WS" "$REPORT" "$HELPERS" "$flood" \
		$(rootless_flags) "$@" 2>&1)
}

common_checks() {
	local mode=$1
	expect_line "$mode: control: the terminal's own session can inject on this host" control ctl
	expect_line "$mode: agentjail exit code" rc 0
	# agentjail relays a terminal stdin through a pipe: the terminal itself never enters.
	expect_line "$mode: the caller's terminal is not the sandbox's stdin" isatty ENOTTY
	expect_line "$mode: TIOCSTI on stdin: EPERM (filtered before the kernel looks)" sti EPERM
	expect_line "$mode: TIOCSCTTY on stdin: ENOTTY" sctty ENOTTY
	expect_line "$mode: no controlling terminal inside (/dev/tty: ENXIO)" devtty ENXIO
	# Where a terminal is within reach (one of the sandbox's own), the filter refuses TIOCSTI.
	expect_line "$mode: TIOCSTI into a pty the attacker controls: EPERM" own-sti EPERM
	expect_line "$mode: nothing waits in the caller's terminal input" input 0
	expect_line "$mode: nothing reached the caller's terminal" master 0
	expect_eq "$mode: report: exit_code" "$(rep 'd["exit_code"]')" 0
}

# As from an interactive shell: the terminal belongs to the caller's session.
test_owned_terminal() {
	run_tiocsti owned
	common_checks owned
}

# A terminal no session owns: if it were handed in, the sandbox's command (a session leader)
# could take it as its controlling terminal.
test_free_terminal() {
	run_tiocsti free
	common_checks free
}

# Output written to the caller's terminal through stdin would not pass agentjail's output
# pipes; it must still be bounded by the output limit.
test_terminal_output_limit() {
	run_tiocsti owned 65536 --output-limit 1KiB
	expect_line "terminal flood: agentjail exit code" rc 0
	local got
	got=$(line_of master)
	check "terminal flood: at most the 1 KiB limit reached the terminal (${got:-?} bytes)" \
		test "${got:-999999}" -le 1024
}

test_owned_terminal
test_free_terminal
test_terminal_output_limit
