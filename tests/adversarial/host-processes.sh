#!/usr/bin/env bash
# Host processes: the attacker tries to see, signal and ptrace a process running on the host
# (in the rootless pass it even runs under the same host uid as the sandbox).
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

VICTIM_PID=
cleanup_victim() {
	[ -n "$VICTIM_PID" ] && kill -9 "$VICTIM_PID" 2>/dev/null
	_aj_cleanup
}
trap cleanup_victim EXIT

# A host process whose command line carries a marker; it ends by itself after 120 s.
start_victim() {
	[ -n "$VICTIM_PID" ] && kill -9 "$VICTIM_PID" 2>/dev/null
	MARK=$(marker)
	bash -c 'exec -a "$1" sleep 120' _ "$MARK-victim" &
	VICTIM_PID=$!
	sleep 0.2
}

ATTACK='
import ctypes, errno, os, signal, sys
pid, mark = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
def t(name, fn):
    try:
        r = fn()
        print(name, "OK" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def sys_call(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
def seen():
    hits = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    c = f.read()
            except OSError:
                continue
            argv = c.split(b"\0")
            if int(p) != os.getpid() and (mark.encode() in argv[0] or b"run" in argv[1:2]):
                hits.append(p)
    return "seen:" + ",".join(hits) if hits else "unseen"
t("listing", seen)
t("proc-entry", lambda: os.stat("/proc/%d/cmdline" % pid) and "exists")
t("kill-0", lambda: os.kill(pid, 0))
t("kill-9", lambda: os.kill(pid, signal.SIGKILL))
t("killpg", lambda: os.killpg(pid, signal.SIGKILL))
t("pidfd_open", lambda: sys_call(434, pid, 0))
t("ptrace-attach", lambda: sys_call(101, 16, pid, 0, 0))
t("init-ppid", lambda: [l.split()[1] for l in open("/proc/1/status") if l.startswith("PPid:")][0])
t("own-ppid", lambda: str(os.getppid()))
t("pids", lambda: str(len([p for p in os.listdir("/proc") if p.isdigit()])))
child = os.fork()
if child == 0:
    os.execvp("sleep", ["sleep", "30"])
t("kill-all", lambda: os.kill(-1, signal.SIGKILL))
print("sandbox-child", os.WTERMSIG(os.waitpid(child, 0)[1]))
'

test_see_signal_trace() {
	adv_setup
	start_victim
	sandbox -- python3 -c "$ATTACK" "$VICTIM_PID" "$MARK"
	expect_line "host process and supervisor absent from the sandbox's /proc" listing unseen
	expect_line "no /proc entry for the host pid" proc-entry ENOENT
	expect_line "kill(host pid, 0): ESRCH" kill-0 ESRCH
	expect_line "kill(host pid, SIGKILL): ESRCH" kill-9 ESRCH
	expect_line "killpg(host pgid): ESRCH" killpg ESRCH
	# The gvisor tier: the Sentry lacks pidfd_open, traces its own processes only (no filter
	# needed), and runs the command as its PID 1 (agentjail's init is outside the Sentry).
	expect_line "pidfd_open(host pid): $(want ESRCH ENOSYS)" pidfd_open "$(want ESRCH ENOSYS)"
	expect_line "ptrace(ATTACH, host pid): $(want "EPERM (filtered)" "ESRCH (the Sentry's)")" \
		ptrace-attach "$(want EPERM ESRCH)"
	if tier_is gvisor; then
		expect_line "the command is the Sentry's PID 1 (ppid 0)" own-ppid 0
		expect_line "only the sandbox's processes are visible (the attacker)" pids 1
	else
		expect_line "init's parent is outside the namespace (ppid 0)" init-ppid 0
		expect_line "the command's parent is the sandbox's init" own-ppid 1
		expect_line "only the sandbox's processes are visible (init and the attacker)" pids 2
	fi
	# kill(-1) reaches every process the attacker may signal: only the sandbox's own.
	expect_line "kill(-1, SIGKILL) is allowed" kill-all OK
	expect_line "kill(-1, SIGKILL) killed the sandbox's own child" sandbox-child 9
	expect_eq "attacker exit code" "$RC" 0
	check "host: the victim survived every attack" kill -0 "$VICTIM_PID"
	local argv0
	argv0=$(tr '\0' ' ' <"/proc/$VICTIM_PID/cmdline" 2>/dev/null | cut -d' ' -f1)
	expect_eq "host: the victim is still the same process" "$argv0" "$MARK-victim"
}

# The sandbox's init holds the control socket to the supervisor and was forked from agentjail
# (the caller's memory): even with the ptrace group relaxed, the command may not attach to it,
# steal its descriptors or read its memory.
INIT_ATTACK='
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def t(name, fn):
    try:
        r = fn()
        print(name, "OK" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def sc(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
def steal():
    pidfd = sc(434, 1, 0)
    sc(438, pidfd, 3, 0)
t("attach-init", lambda: sc(101, 16, 1, 0, 0))
t("getfd-init", steal)
t("mem-init", lambda: open("/proc/1/mem", "rb").close())
t("environ-init", lambda: open("/proc/1/environ", "rb").read() and None)
t("fd-init", lambda: os.listdir("/proc/1/fd") and None)
'

# With the ptrace group relaxed, tracing reaches the kernel and still finds no host process.
test_ptrace_relaxed() {
	adv_setup
	sandbox --allow-syscalls ptrace -- python3 -c "$INIT_ATTACK"
	expect_line "relaxed ptrace: attach to the sandbox's init: EPERM" attach-init EPERM
	expect_line "relaxed ptrace: pidfd_getfd(init, control socket): EPERM" getfd-init EPERM
	expect_line "relaxed ptrace: open init's memory: EACCES" mem-init EACCES
	expect_line "relaxed ptrace: read init's environment: EACCES" environ-init EACCES
	expect_line "relaxed ptrace: list init's descriptors: EACCES" fd-init EACCES
	start_victim
	sandbox --allow-syscalls ptrace -- python3 -c "$ATTACK" "$VICTIM_PID" "$MARK"
	expect_line "relaxed ptrace(ATTACH, host pid): ESRCH" ptrace-attach ESRCH
	check "host: the victim survived the relaxed run" kill -0 "$VICTIM_PID"
	kill -9 "$VICTIM_PID" 2>/dev/null
	VICTIM_PID=
}

test_see_signal_trace
if tier_is gvisor; then
	skip "relaxed ptrace" "the gvisor tier has no host filter to relax (syscalls.allow is refused) and no agentjail init inside the Sentry"
else
	test_ptrace_relaxed
fi
