#!/usr/bin/env bash
# The gvisor tier (--tier gvisor): agentjail builds the root, the network namespace and the
# cgroup, and runs the command on gVisor's Sentry through runsc. Checked here: what `features`
# says; that the kernel inside is gVisor's (uname, /proc, dmesg, no host modules, a system
# call the Sentry lacks answers ENOSYS); runsc's own processes run as unprivileged host ids;
# /dev/null and the caller's stdio keep their owner and mode after every kind of run (Debian's
# runsc changes the owner of the stdio it is handed); exit codes, signals, the timeout and the
# memory limit as reported; the workspace; an image root; egress through the proxy; a
# published port; and persistent sandboxes, whose init runs inside the Sentry (exec, its stdin,
# exec -t, cp of a file, pause, snapshot, fork, diff, stop, start; on an image root too).
# tier_gvisor_persist.sh drives such a sandbox through every front end.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_gvisor.bash"

T=$(mktmp)
WS=$T/ws
mkdir "$WS"
R=$T/report.json

# ---- refusals that hold wherever the tier cannot run ------------------------------------

aj_run run --tier gvisor --dry-run -w "$WS" --allow-syscalls ptrace -- true
if is_root && gv_usable; then
	expect_eq "syscalls.allow is refused in the tier (125)" "$RC" 125
	expect_contains "syscalls.allow: the error says why" "$ERR" "reach gVisor's Sentry"
fi

AGENTJAIL_RUNSC=/nonexistent/runsc aj_run run --tier gvisor -w "$WS" -- true
expect_eq "a runsc that is not there: refused (125)" "$RC" 125
expect_contains "a runsc that is not there: named" "$ERR" 'AGENTJAIL_RUNSC="/nonexistent/runsc"'
GV_FEAT=$(AGENTJAIL_RUNSC=/nonexistent/runsc "$AJ" features --json </dev/null)
expect_eq "features: the tier unusable with a missing runsc" \
	"$(printf '%s' "$GV_FEAT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tiers"]["gvisor"]["usable"])')" \
	False

if ! is_root; then
	aj_run run --tier gvisor -w "$WS" --memory none --cpus none -- true
	expect_eq "rootless: refused (125)" "$RC" 125
	expect_contains "rootless: the error says why" "$ERR" "the gvisor tier needs root"
	exit 0
fi
gv_require

# ---- features ---------------------------------------------------------------------------

aj_run features --json
expect_eq "features: runsc usable" "$(printf '%s' "$OUT" | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["runsc"]["usable"])')" True
expect_contains "features: runsc's version" "$(printf '%s' "$OUT" | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["runsc"]["version"])')" "2022"
expect_contains "features: the tier's detail names version and platform" "$(printf '%s' "$OUT" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["tiers"]["gvisor"]["detail"])')" \
	"platform ptrace"

# ---- the kernel inside is gVisor's --------------------------------------------------------

cd "$WS" || exit 1
PROBE='
import ctypes, errno, os, platform
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(434, os.getpid(), 0)  # pidfd_open, which the host implements
print("pidfd_open", "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()])
print("release", platform.release())
print("modules", os.path.exists("/proc/modules"))
print("kallsyms", os.path.exists("/proc/kallsyms"))
'
aj_run run --tier gvisor -w "$WS" --report "$R" -- sh -c "python3 -c '$PROBE'; dmesg | head -1"
expect_eq "probe run: exit 0" "$RC" 0
expect_contains "uname: gVisor's kernel release, not the host's" "$OUT" "release 4.4.0"
expect_not_contains "uname: not the host's release" "$OUT" "release $(uname -r)"
expect_contains "dmesg: the Sentry's log" "$OUT" "Starting gVisor"
expect_contains "no host kernel modules (/proc/modules)" "$OUT" "modules False"
expect_contains "no host kernel symbols (/proc/kallsyms)" "$OUT" "kallsyms False"
python3 -c 'import ctypes,os,sys; sys.exit(0 if ctypes.CDLL(None).syscall(434, os.getpid(), 0) >= 0 else 1)' &&
	expect_contains "pidfd_open: the host has it, the Sentry answers ENOSYS" "$OUT" \
		"pidfd_open ENOSYS"
expect_eq "report: tier" "$(json "$R" 'd["plan"]["tier"]')" gvisor
expect_eq "report: runsc" "$(json "$R" 'd["plan"]["gvisor"]["runsc"]')" "$(command -v runsc)"
expect_eq "report: what gVisor enforces, agentjail around it, the host still sees" \
	"$(json "$R" '[len(d["plan"]["gvisor"][k]) > 0 for k in ("gvisor_enforces", "agentjail_enforces", "host_kernel_sees")]')" \
	"[True, True, True]"
expect_eq "report: Landlock absent (it would stop runsc)" \
	"$(json "$R" '[l["state"] for l in d["plan"]["layers"] if l["layer"] == "landlock"][0]')" absent
expect_contains "report: seccomp on runsc" \
	"$(json "$R" '[l["detail"] for l in d["plan"]["layers"] if l["layer"] == "seccomp"][0]')" \
	"gvisor-tier"

# ---- runsc runs as an unprivileged host id range --------------------------------------------

"$AJ" run --tier gvisor -w "$WS" -- sleep 3 </dev/null >/dev/null 2>&1 &
GV_PID=$!
gv_uids() {
	local p kids all=() uids
	kids=$(pgrep -P "$GV_PID")
	while [ -n "$kids" ]; do
		all+=($kids)
		kids=$(for p in $kids; do pgrep -P "$p"; done)
	done
	for p in "${all[@]}"; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = exe ] && stat -c %u "/proc/$p"
	done | sort -u | tr '\n' ' '
}
wait_until 10 sh -c "[ -n \"\$(pgrep -P $GV_PID)\" ]"
sleep 1
UIDS=$(gv_uids)
check "runsc's processes seen ($UIDS)" test -n "$UIDS"
check "runsc's processes: no host root among them ($UIDS)" \
	sh -c "! printf '%s' '$UIDS' | grep -qw 0"
wait "$GV_PID"

# ---- /dev/null and the caller's stdio keep their owner and mode ------------------------------

NULL0=$(stat_state /dev/null)
IN=$T/in.txt OUTF=$T/out.txt ERRF=$T/err.txt
echo input >"$IN"
: >"$OUTF"
: >"$ERRF"
chmod 640 "$IN" "$OUTF" "$ERRF"
IN0=$(stat_state "$IN") OUT0=$(stat_state "$OUTF") ERR0=$(stat_state "$ERRF")
stdio_kept() {
	expect_eq "$1: /dev/null keeps owner and mode" "$(stat_state /dev/null)" "$NULL0"
	expect_eq "$1: the caller's stdin file keeps owner and mode" "$(stat_state "$IN")" "$IN0"
	expect_eq "$1: the caller's stdout file keeps owner and mode" "$(stat_state "$OUTF")" "$OUT0"
	expect_eq "$1: the caller's stderr file keeps owner and mode" "$(stat_state "$ERRF")" "$ERR0"
}
gv() { "$AJ" run --tier gvisor -w "$WS" "$@"; }
gv -- cat </dev/null >>"$OUTF" 2>>"$ERRF"
expect_eq "stdin /dev/null: exit 0" "$?" 0
stdio_kept "stdin /dev/null"
GOT=$(gv -- cat <"$IN" 2>>"$ERRF")
expect_eq "stdin a file: read inside" "$GOT" input
stdio_kept "stdin a file"
GOT=$(echo piped | gv -- cat 2>>"$ERRF")
expect_eq "stdin a pipe: read inside" "$GOT" piped
gv -- true <&- >>"$OUTF" 2>>"$ERRF"
expect_eq "stdin closed: exit 0" "$?" 0
stdio_kept "stdin closed"
gv -- sh -c 'echo to-out; echo to-err >&2; exit 3' <"$IN" >>"$OUTF" 2>>"$ERRF"
expect_eq "exit code passed on" "$?" 3
expect_contains "stdout file written" "$(cat "$OUTF")" to-out
expect_contains "stderr file written" "$(cat "$ERRF")" to-err
stdio_kept "a failing command"
gv -- no-such-program </dev/null >>"$OUTF" 2>>"$ERRF"
check "a missing program: non-zero exit" test "$?" -ne 0
stdio_kept "a missing program"
gv --timeout 1s -- sleep 30 </dev/null >>"$OUTF" 2>>"$ERRF"
expect_eq "timeout: exit 124" "$?" 124
stdio_kept "a timeout"
gv --report "$R" --memory 96m -- python3 -c 'x = [bytearray(8 << 20) for _ in range(64)]' \
	</dev/null >>"$OUTF" 2>>"$ERRF"
expect_eq "memory limit: exit 122" "$?" 122
expect_eq "memory limit: report limit_hit" "$(json "$R" 'd["limit_hit"]')" memory
stdio_kept "a memory kill"
# runsc ends with 128+N when the command dies of signal N; init reports it as the signal.
gv --report "$R" -- sh -c 'kill -9 $$' </dev/null >>"$OUTF" 2>>"$ERRF"
expect_eq "killed by a signal: exit 137" "$?" 137
expect_eq "killed by a signal: report" \
	"$(json "$R" '(d["status"]["kind"], d["status"]["signal_name"], d["exit_code"])')" \
	"('signaled', 'KILL', 137)"
stdio_kept "a signal"
if command -v script >/dev/null; then
	script -qec "$AJ run --tier gvisor -w $WS -- sh -c 'test -t 0 || echo no-tty'" /dev/null \
		</dev/null >"$T/tty.out" 2>&1
	expect_contains "a terminal as stdin: relayed, the command gets a pipe" "$(cat "$T/tty.out")" \
		no-tty
	stdio_kept "a terminal"
else
	skip "a terminal as stdin" "script (bsdutils) not installed"
fi

# ---- the workspace ----------------------------------------------------------------------------

OWNER=$(stat -c %u:%g "$WS")
aj_run run --tier gvisor -w "$WS" -- sh -c 'echo made > made.txt && mkdir dir && echo x > /usr/planted'
expect_contains "writes outside the workspace fail" "$ERR" "/usr/planted"
expect_eq "a file made inside lands in the workspace" "$(cat "$WS/made.txt")" made
expect_eq "with the workspace's owner" "$(stat -c %u:%g "$WS/made.txt") $(stat -c %u:%g "$WS/dir")" \
	"$OWNER $OWNER"
check "nothing planted in /usr" test ! -e /usr/planted

# ---- an image's root --------------------------------------------------------------------------

if [ -x /bin/busybox ]; then
	IMG=$T/img
	mkdir -p "$IMG/r/bin" "$IMG/r/tmp" "$IMG/r/etc"
	cp /bin/busybox "$IMG/r/bin/"
	for c in sh cat id uname echo; do ln -s busybox "$IMG/r/bin/$c"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$IMG/r/etc/passwd"
	echo 'root:x:0:' >"$IMG/r/etc/group"
	tar -C "$IMG/r" -cf "$IMG/rootfs.tar" .
	aj_run --state-dir "$T/state" image import --name gvbox "$IMG/rootfs.tar"
	expect_eq "image: imported" "$RC" 0
	aj_run --state-dir "$T/state" run --tier gvisor --image gvbox -w "$WS" -- \
		sh -c 'uname -r; cat /etc/passwd | head -1; echo from-image > image.txt'
	expect_eq "image: exit 0" "$RC" 0
	expect_contains "image: on gVisor's kernel" "$OUT" 4.4.0
	expect_contains "image: the image's own files" "$OUT" "root:x:0:0:root:/root:/bin/sh"
	expect_eq "image: the workspace written" "$(cat "$WS/image.txt")" from-image
	# A persistent sandbox on it: init inside the Sentry runs through the host's loader and
	# libraries (bound read-only), whatever the image has; it is the image's uid 0 and starts
	# commands as the sandbox user.
	aj_run --state-dir "$T/state" create --tier gvisor --image gvbox --user 1000 --name gvimg
	expect_eq "image, persistent: create" "$RC" 0
	aj_run --state-dir "$T/state" exec gvimg -- sh -c 'id -u; uname -r; echo made > mine.txt'
	expect_eq "image, persistent: exec as the sandbox user on gVisor's kernel" "$OUT" "1000
4.4.0"
	aj_run --state-dir "$T/state" exec -u root gvimg -- id -u
	expect_eq "image, persistent: exec -u root" "$OUT" 0
	aj_run --state-dir "$T/state" cp "$IMG/rootfs.tar" gvimg:/workspace/copied.tar
	aj_run --state-dir "$T/state" exec gvimg -- sh -c 'ls -n /workspace | grep -c " 1000  *1000 "'
	expect_eq "image, persistent: files written for the sandbox user are its own" "$OUT" 2
	aj_run --state-dir "$T/state" exec gvimg -- sh -c 'echo x > /.agentjail/gvisor/planted'
	check "image, persistent: init's files are read-only" test "$RC" -ne 0
	aj_run --state-dir "$T/state" diff gvimg
	expect_not_contains "image, persistent: nothing of init's in the diff" "$OUT" agentjail
	aj_run --state-dir "$T/state" rm -f gvimg
else
	skip "an image's root" "no /bin/busybox (busybox-static) to make an image of"
fi

# ---- egress through the proxy ----------------------------------------------------------------

PORT=$(free_port)
echo served >"$T/index.html"
(cd "$T" && exec timeout 60 python3 -m http.server "$PORT" --bind 127.0.0.1) >/dev/null 2>&1 &
SRV=$!
wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/index.html"
printf '{"network": {"mode": "proxy", "allow": ["127.0.0.1:%s"], "allow_private": ["127.0.0.1"]}}' \
	"$PORT" >"$T/egress.json"
aj_run run --tier gvisor -w "$WS" --report "$R" --policy "$T/egress.json" -- sh -c \
	"curl -sS -m 10 --noproxy '' http://127.0.0.1:$PORT/index.html; curl -sS -m 5 --noproxy '*' http://127.0.0.1:$PORT/index.html || echo direct-refused; curl -sS -m 10 --noproxy '' http://10.255.255.1/"
expect_contains "an allowed host through the proxy" "$OUT" served
expect_contains "the host's loopback is not reachable directly" "$OUT" direct-refused
expect_contains "another host: refused by the proxy, which says why" "$OUT" \
	"10.255.255.1:80 is not allowed"
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null

# ---- a published port to a server inside ------------------------------------------------------

PORT=$(free_port)
"$AJ" run --tier gvisor -w "$WS" -p "$PORT:8000" --timeout 60s -- \
	python3 -m http.server 8000 --bind 127.0.0.1 </dev/null >"$T/pub.out" 2>"$T/pub.err" &
PUB=$!
check "a published port reaches the server on the Sentry's loopback" \
	wait_until 30 curl -sf -o "$T/pub.html" "http://127.0.0.1:$PORT/"
expect_contains "a published port: the server's listing" "$(cat "$T/pub.html" 2>/dev/null)" \
	"Directory listing"
kill -TERM "$PUB" 2>/dev/null
wait "$PUB" 2>/dev/null

# ---- persistent sandboxes: init inside the Sentry ------------------------------------------------

ST=$T/state
ag() { "$AJ" --state-dir "$ST" "$@"; }
aj_run --state-dir "$ST" create --tier gvisor --name gv1
expect_eq "create: exit 0" "$RC" 0
aj_run --state-dir "$ST" exec gv1 -- sh -c 'uname -r; id -u; echo kept > kept.txt'
expect_eq "exec: exit 0" "$RC" 0
expect_contains "exec: on gVisor's kernel" "$OUT" 4.4.0
expect_contains "exec: as the sandbox user" "$OUT" 1000
GOT=$(echo piped | ag exec -i gv1 -- cat 2>&1)
expect_eq "exec -i: stdin reaches the command" "$GOT" piped
aj_run --state-dir "$ST" exec gv1 -- python3 -c 'import os, stat; print(stat.S_ISFIFO(os.fstat(0).st_mode))'
expect_eq "exec without -i: stdin is an empty pipe of agentjail's, not /dev/null" "$OUT" True
aj_run --state-dir "$ST" exec gv1 -- sh -c 'exit 7'
expect_eq "exec: exit code passed on" "$RC" 7
# A client may pass devices as stdout (exec-loop passes /dev/null): the Sentry imports them as
# an unprivileged host id and cannot change them.
python3 - "$ST" "$AJ" <<'PY' >"$T/devnull.out" 2>&1
import os, subprocess, sys
null = os.open("/dev/null", os.O_WRONLY)
subprocess.run([sys.argv[2], "--state-dir", sys.argv[1], "exec", "gv1", "--", "python3", "-c",
                "import os\nfor f in (lambda: os.fchown(1, 1000, 1000), lambda: os.fchmod(1, 0o600)):\n"
                "    try: f()\n    except OSError as e: pass"], stdout=null, stderr=null,
               stdin=subprocess.DEVNULL)
PY
stdio_kept "exec with /dev/null as stdout, chown and chmod tried"
TO=$(script -qec "$AJ --state-dir $ST exec -t gv1 -- sh -c 'tty; exit 3'" /dev/null </dev/null 2>&1)
expect_eq "exec -t: the command's exit code" "$?" 3
expect_contains "exec -t: a terminal of the Sentry's devpts" "$TO" /dev/pts/
echo data >"$T/cp.txt"
aj_run --state-dir "$ST" cp "$T/cp.txt" gv1:/home/user/cp.txt
expect_eq "cp in: exit 0" "$RC" 0
aj_run --state-dir "$ST" exec gv1 -- cat cp.txt
expect_eq "cp in: the file inside" "$OUT" data
aj_run --state-dir "$ST" cp gv1:/home/user/cp.txt "$T/cp-out.txt"
expect_eq "cp out: the file on the host" "$(cat "$T/cp-out.txt" 2>/dev/null)" data
aj_run --state-dir "$ST" pause gv1
expect_eq "pause: exit 0" "$RC" 0
aj_run --state-dir "$ST" resume gv1
expect_eq "resume: exit 0" "$RC" 0
aj_run --state-dir "$ST" snapshot --name gvs gv1
expect_eq "snapshot: exit 0" "$RC" 0
aj_run --state-dir "$ST" diff gv1
expect_contains "diff: the file the command wrote" "$OUT" "kept.txt"
aj_run --state-dir "$ST" fork -n gv2 gv1
expect_eq "fork: exit 0" "$RC" 0
aj_run --state-dir "$ST" exec gv2 -- cat kept.txt
expect_eq "fork: the workspace carried over" "$OUT" kept
aj_run --state-dir "$ST" stop gv1
expect_eq "stop: exit 0" "$RC" 0
aj_run --state-dir "$ST" start gv1
expect_eq "start: exit 0" "$RC" 0
aj_run --state-dir "$ST" exec gv1 -- cat kept.txt
expect_eq "stop/start: the workspace kept" "$OUT" kept
aj_run --state-dir "$ST" rm -f gv1 gv2
expect_eq "rm: exit 0" "$RC" 0
stdio_kept "persistent sandboxes"
