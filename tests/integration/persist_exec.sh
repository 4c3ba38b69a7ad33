#!/usr/bin/env bash
# exec into a running persistent sandbox: exit codes (the command's own, 127 not found, 126 not
# executable, 124 timeout, 128+signal), stdout and stderr kept apart, --env and --cwd, a
# background process outliving the exec that started it, stdin only with -i, a terminal with
# -t (a real pty inside, the caller's window size), and execs in parallel.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

pj_create ex

# ---- exit codes ----------------------------------------------------------------------------

pj_x ex true
expect_eq "exit 0" "$RC" 0
pj_x ex sh -c 'exit 42'
expect_eq "the command's own exit code (42)" "$RC" 42
pj_x ex sh -c 'exit 3'
expect_eq "the command's own exit code (3)" "$RC" 3
pj_x ex no-such-command-here
expect_eq "command not found: 127" "$RC" 127
expect_contains "command not found: says so" "$ERR" "not found"
pj_x ex /etc/hostname
expect_eq "not executable: 126" "$RC" 126
aj_run exec --cwd /no/such/dir ex -- true
expect_eq "a working directory that does not exist: 126, not 127 (the command exists)" "$RC" 126
expect_contains "... and the message says it is the working directory" "$ERR" "working directory"
pj_x ex sh -c 'kill -KILL $$'
expect_eq "killed by SIGKILL: 128+9" "$RC" 137

t0=$(date +%s%N)
aj_run exec --timeout 1s ex -- sh -c 'sleep 30 & sleep 30; echo not reached'
t1=$(date +%s%N)
expect_eq "--timeout 1s: exit 124" "$RC" 124
expect_not_contains "--timeout: the command did not finish" "$OUT" "not reached"
expect_contains "--timeout: says the limit was reached" "$ERR" "timeout"
check "--timeout: returned within 5 s" [ $(((t1 - t0) / 1000000)) -lt 5000 ]
pj_x ex sh -c 'ps -eo args | grep -c "^sleep 30"'
expect_eq "--timeout: the command and its children were killed" "$OUT" 0
pj_x ex true
expect_eq "--timeout: the sandbox still serves execs" "$RC" 0

# ---- output, environment, working directory ------------------------------------------------

pj_x ex sh -c 'echo to-out; echo to-err >&2'
expect_eq "stdout is the command's stdout" "$OUT" to-out
expect_eq "stderr is the command's stderr" "$ERR" to-err
aj_run exec --env GREETING=hello --env EMPTY= --cwd /tmp ex -- sh -c 'echo "$GREETING|$EMPTY|$(pwd)"'
expect_eq "--env and --cwd" "$OUT" "hello||/tmp"
pj_x ex sh -c 'echo "$GREETING"'
expect_eq "--env applies to one exec only" "$OUT" ""
aj_run exec --cwd /no/such/dir ex -- true
check "--cwd of a missing directory fails" [ "$RC" != 0 ]
pj_x ex sh -c 'head -c 300000 /dev/zero | tr "\0" x'
expect_eq "large output arrives whole" "${#OUT}" 300000

# ---- how the command starts -------------------------------------------------------------

# init starts each command with a clone that shares its memory: what init holds (its signal
# handlers and mask, its descriptors) must not reach the command.
pj_x ex cat /proc/self/status
expect_eq "no signal blocked or ignored when the command starts" \
	"$(printf '%s\n' "$OUT" | awk '/^Sig(Blk|Ign):/ {print $2}' | sort -u)" 0000000000000000
pj_x ex sh -c 'ls /proc/$$/fd; exit 0'
expect_eq "the command has stdin, stdout and stderr, nothing more" "$(printf '%s' "$OUT" | paste -sd' ')" \
	"0 1 2"
pj_x ex sh -c 'echo "$(cut -d" " -f6 /proc/$$/stat) $$"'
expect_eq "the command leads a session of its own" "${OUT% *}" "${OUT#* }"
# The PATH search: a file found first that may not be run is passed over for a later one, and
# is the error only where nothing else is found.
pj_x ex sh -c 'mkdir -p /tmp/noexec && echo "echo wrong" >/tmp/noexec/true && chmod 644 /tmp/noexec/true'
aj_run exec --env PATH=/tmp/noexec:/usr/bin:/bin ex -- true
expect_eq "PATH: a non-executable match is skipped for a later one" "$RC" 0
aj_run exec --env PATH=/tmp/noexec:/no/such ex -- true
expect_eq "PATH: a non-executable match, then nothing: 126 (not the last entry's ENOENT)" "$RC" 126
expect_contains "... and it says so" "$ERR" "cannot execute"
aj_run exec --env PATH=/no/such:/tmp/noexec2 ex -- true
expect_eq "PATH: no match at all: 127" "$RC" 127
aj_run exec --env PATH=/etc/hostname ex -- true
expect_eq "PATH: an entry that is a file: its ENOTDIR, 126 (as posix_spawnp)" "$RC" 126

# ---- a background process outlives its exec ----------------------------------------------

pj_x ex sh -c 'sleep 300 </dev/null >/dev/null 2>&1 & echo $!'
BG=$OUT
expect_eq "background start: exit 0" "$RC" 0
pj_x ex sh -c "kill -0 $BG && cat /proc/$BG/cmdline | tr '\\0' ' '"
expect_eq "the background process is alive in the next exec" "$OUT" "sleep 300 "
pj_has_file() { "$AJ" exec "$1" -- test -s "$2" 2>/dev/null; }
"$AJ" exec ex -- sh -c 'echo "$$" >first.pid; exec sleep 60' >/dev/null 2>&1 &
XPID=$!
pj_wait 30 pj_has_file ex first.pid
pj_x ex sh -c 'kill -0 "$(cat first.pid)" && echo alive'
expect_eq "an attached command runs while another exec comes and goes" "$OUT" alive
t0=$(date +%s%N)
pj_x ex sh -c 'sleep 30 & echo quick'
t1=$(date +%s%N)
expect_eq "a background child holding stdout: the exec's output" "$OUT" quick
# Waiting for the child's end instead would take 30 s.
check "a background child holding stdout: exec returns when the command ends (< 15 s)" \
	[ $(((t1 - t0) / 1000000)) -lt 15000 ]
pj_x ex sh -c 'kill -0 "$(cat first.pid)" && echo alive'
expect_eq "the attached command still runs after more execs" "$OUT" alive
kill -INT "$XPID"
wait "$XPID"
XRC=$?
expect_eq "SIGINT to the exec client is forwarded: the command dies of it" "$XRC" 130

# ---- stdin ---------------------------------------------------------------------------------

OUT=$(printf 'line1\nline2\n' | "$AJ" exec -i ex -- sh -c 'cat; echo end' 2>/dev/null)
expect_eq "-i: stdin reaches the command, EOF ends it" "$OUT" "line1
line2
end"
OUT=$(printf 'secret\n' | timeout 10 "$AJ" exec ex -- sh -c 'cat; echo eof' 2>/dev/null)
expect_eq "without -i: the command's stdin is empty" "$OUT" eof
head -c 2000000 /dev/urandom >"$STATE/../blob"
want=$(sha256sum <"$STATE/../blob" | cut -d' ' -f1)
got=$("$AJ" exec -i ex -- sha256sum <"$STATE/../blob" 2>/dev/null | cut -d' ' -f1)
expect_eq "-i: 2 MB of binary stdin arrive intact" "$got" "$want"
pj_x ex sh -c 'test -t 0 || test -t 1 || echo no-tty'
expect_eq "without -t: no terminal" "$OUT" no-tty

# ---- terminal ------------------------------------------------------------------------------

# tty_exec ROWS COLS ARGS...: runs `agentjail exec -t ARGS` on a pseudo-terminal of that size;
# prints the terminal's output, then "rc=N".
tty_exec() {
	python3 - "$AJ" "$@" <<'EOF'
import os, pty, sys, fcntl, termios, struct, select, time
aj, rows, cols, args = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.execv(aj, [aj, "exec", "-t"] + args)
out, end = b"", time.time() + 20
feed = os.environ.get("TTY_INPUT", "").encode()
while time.time() < end:
    if feed and b"ready" in out:
        os.write(fd, feed)
        feed = b""
    r, _, _ = select.select([fd], [], [], 0.5)
    if not r:
        if os.waitpid(pid, os.WNOHANG)[0]:
            pid = 0
            break
        continue
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
if pid:
    _, st = os.waitpid(pid, 0)
else:
    st = 0
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
print("rc=%d" % (os.waitstatus_to_exitcode(st) if pid else -1))
EOF
}
TO=$(tty_exec 37 101 ex -- sh -c 'tty; stty size; test -t 0 && test -t 1 && echo both-tty
(: </dev/tty) 2>/dev/null && echo has-ctty; printf "fds: "; ls -m /proc/$$/fd; echo end')
expect_contains "-t: the command's stdin is a pty" "$TO" "/dev/pts/"
expect_contains "-t: the window size propagates (rows cols)" "$TO" "37 101"
expect_contains "-t: stdin and stdout are the terminal" "$TO" both-tty
expect_contains "-t: the terminal is the command's controlling terminal" "$TO" has-ctty
expect_contains "-t: no descriptor beyond stdin, stdout and stderr" "$TO" $'fds: 0, 1, 2\nend'
expect_contains "-t: exit 0" "$TO" "rc=0"
TO=$(tty_exec 24 80 ex -- sh -c 'exit 7')
expect_contains "-t: the command's exit code" "$TO" "rc=7"
TO=$(TTY_INPUT=$'typed words\n' tty_exec 24 80 ex -- sh -c 'echo ready; read -r x; echo "got:$x"')
expect_contains "-t: what is typed on the terminal reaches the command" "$TO" "got:typed words"

# ---- parallel execs ------------------------------------------------------------------------

P=$STATE/../par
mkdir -p "$P"
for i in $(seq 1 12); do
	("$AJ" exec ex -- sh -c "echo n$i; exit $i" >"$P/$i.out" 2>/dev/null; echo $? >"$P/$i.rc") &
done
wait
bad=
for i in $(seq 1 12); do
	[ "$(cat "$P/$i.out")" = "n$i" ] && [ "$(cat "$P/$i.rc")" = "$i" ] || bad="$bad $i"
done
expect_eq "12 parallel execs: each its own output and exit code" "$bad" ""

aj_run rm -f ex
expect_eq "rm -f: exit 0" "$RC" 0
