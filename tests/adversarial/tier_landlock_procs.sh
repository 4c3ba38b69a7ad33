#!/usr/bin/env bash
# Processes in the landlock tier, where the sandbox runs as the caller's own uid and shares
# the host's pid space: the attacker signals, traces and reads a host process of that very
# uid, its keeper and its supervisor, hunts the host's environment secrets, and leaves
# daemons behind (double fork, setsid, nohup, holding the output pipe) when its command
# exits, times out, floods its output or has its supervisor killed. Nothing may survive, and
# the run's scratch directory must go too.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_landlock.bash"
tl_require

VICTIM_PID=
BG_PID=
MARK=
cleanup() {
	local p
	[ -n "$VICTIM_PID" ] && kill -9 "$VICTIM_PID" 2>/dev/null
	[ -n "$BG_PID" ] && kill -9 "$BG_PID" 2>/dev/null
	# Survivors of a failed check: only processes carrying this run's marker, by pid.
	if [ -n "$MARK" ]; then
		for p in $(tl_procs "$MARK"); do kill -9 "$p" 2>/dev/null; done
	fi
	_aj_cleanup
}
trap cleanup EXIT

new_mark() {
	MARK="ajmark$$x$RANDOM$RANDOM"
	MARK_A=${MARK:0:6}
	MARK_B=${MARK:6}
}

# A host process of the sandbox's own uid, marked, ending by itself after 120 s.
start_victim() {
	new_mark
	"${AS_TIER_USER[@]}" bash -c 'exec -a "$1" sleep 120' _ "$MARK-victim" &
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
def sc(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
def ppid_of(p):
    return int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1])
keeper = os.getppid()
supervisor = ppid_of(keeper)
t("victim-visible", lambda: "yes" if mark.encode() in open("/proc/%d/cmdline" % pid, "rb").read() else "no")
t("kill-0", lambda: os.kill(pid, 0))
t("kill-9", lambda: os.kill(pid, signal.SIGKILL))
t("killpg", lambda: os.killpg(os.getpgid(pid), signal.SIGKILL))
t("pidfd-signal", lambda: sc(424, sc(434, pid, 0), signal.SIGKILL, 0, 0))
t("ptrace-attach", lambda: sc(101, 16, pid, 0, 0))
t("victim-environ", lambda: open("/proc/%d/environ" % pid, "rb").read() and None)
t("victim-mem", lambda: open("/proc/%d/mem" % pid, "rb").close())
t("victim-fd-link", lambda: os.readlink("/proc/%d/fd/0" % pid))
t("victim-fd-open", lambda: open("/proc/%d/fd/1" % pid, "wb").close())
t("victim-cwd", lambda: os.listdir("/proc/%d/cwd/" % pid) and None)
t("keeper-name", lambda: open("/proc/%d/cmdline" % keeper, "rb").read().rstrip(b"\0").decode())
t("keeper-kill", lambda: os.kill(keeper, signal.SIGKILL))
t("keeper-stop", lambda: os.kill(keeper, signal.SIGSTOP))
t("keeper-mem", lambda: open("/proc/%d/mem" % keeper, "rb").close())
t("supervisor-kill", lambda: os.kill(supervisor, signal.SIGKILL))
t("supervisor-cmdline", lambda: "secret" if b"ajsetenvsecret" in open("/proc/%d/cmdline" % supervisor, "rb").read() else "clean")
t("supervisor-environ", lambda: open("/proc/%d/environ" % supervisor, "rb").read() and None)
child = os.fork()
if child == 0:
    os.execvp("sleep", ["sleep", "30"])
t("kill-all", lambda: os.kill(-1, signal.SIGKILL))
print("sandbox-child", os.WTERMSIG(os.waitpid(child, 0)[1]))
print("env-secret", os.environ.get("AJ_FAKE_SECRET", "-"))
print("setenv", os.environ.get("AJ_SET", "-"))
'

test_signal_trace_read() {
	tl_setup
	start_victim
	AJ_FAKE_SECRET=ajenvsecret tl_sandbox --setenv AJ_SET=ajsetenvsecret -- \
		python3 -c "$ATTACK" "$VICTIM_PID" "$MARK"
	expect_eq "attacker exit code" "$RC" 0
	expect_line "host processes are visible (as the plan says)" victim-visible yes
	expect_contains "the plan says host processes are visible" "$(layer_detail pid-namespace)" \
		"host processes are visible in /proc"
	expect_line "kill(host pid of the same uid, 0): EPERM (Landlock scope)" kill-0 EPERM
	expect_line "kill(host pid, SIGKILL): EPERM" kill-9 EPERM
	expect_line "killpg(host process group): EPERM" killpg EPERM
	expect_line "pidfd_send_signal(host pid): EPERM" pidfd-signal EPERM
	expect_line "ptrace(ATTACH, host pid): EPERM (seccomp)" ptrace-attach EPERM
	expect_line "read the host process's environment: EACCES (Landlock)" victim-environ EACCES
	expect_line "open the host process's memory: EACCES" victim-mem EACCES
	expect_line "where the host process's descriptors lead: EACCES" victim-fd-link EACCES
	expect_line "reopen the host process's stdout: EACCES" victim-fd-open EACCES
	expect_line "the host process's working directory: EACCES" victim-cwd EACCES
	expect_line "the command's parent is the keeper" keeper-name agentjail-init
	expect_line "kill the keeper: EPERM (outside the sandbox's domain)" keeper-kill EPERM
	expect_line "stop the keeper: EPERM" keeper-stop EPERM
	expect_line "open the keeper's memory: EACCES" keeper-mem EACCES
	expect_line "kill the supervisor: EPERM" supervisor-kill EPERM
	expect_line "the supervisor's command line no longer holds --setenv values" supervisor-cmdline clean
	expect_line "read the supervisor's environment: EACCES" supervisor-environ EACCES
	expect_line "kill(-1, SIGKILL) returns" kill-all OK
	expect_line "kill(-1, SIGKILL) killed the sandbox's own child" sandbox-child 9
	expect_line "the host's environment secret is not passed" env-secret -
	expect_line "--setenv reaches the command" setenv ajsetenvsecret
	check "host: the victim survived every attack" kill -0 "$VICTIM_PID"
	kill -9 "$VICTIM_PID" 2>/dev/null
	VICTIM_PID=
	expect_eq "host: the run's scratch directory is gone" \
		"$(test -e "$(rep 'd["plan"]["scratch"]')" && echo left)" ""
	expect_not_contains "the report holds no --setenv value" "$(cat "$REPORT")" ajsetenvsecret
}

# The daemons write heartbeats into the workspace, so a survivor is seen even if its name
# were hidden; each gives up by itself after 60 s. $1$2 is the marker, in two pieces so that
# agentjail's own command line does not contain it.
DAEMONS='
mark=$1$2 mode=$3
beat() {
	exec -a "$mark-$1" bash -c "trap \"\" HUP TERM INT; end=\$((SECONDS + 60));
		while [ \$SECONDS -lt \$end ]; do date +%s%N > .beat-$1; sleep 0.1; done"
}
( ( setsid bash -c "$(declare -f beat); mark=$mark; beat doublefork" \
	</dev/null >/dev/null 2>&1 & ) & )
setsid bash -c "$(declare -f beat); mark=$mark; beat setsid" </dev/null >/dev/null 2>&1 &
nohup bash -c "$(declare -f beat); mark=$mark; beat nohup" </dev/null >/dev/null 2>&1 &
bash -c "$(declare -f beat); mark=$mark; beat holdspipe" &
for d in doublefork setsid nohup holdspipe; do
	while [ ! -s .beat-$d ]; do sleep 0.05; done
done
echo daemons-up
case $mode in
exit) exit 0 ;;
spin) trap "" TERM; while :; do :; done ;;
flood) exec yes ;;
wait) sleep 100 ;;
esac
'

beats() {
	local d
	for d in doublefork setsid nohup holdspipe; do
		printf '%s:%s ' "$d" "$(cat "$WS/.beat-$d" 2>/dev/null || echo none)"
	done
}

# daemons MODE FLAGS...: runs the daemons in the tier; sets RC, OUT, MS.
daemons() {
	local mode=$1 t0
	shift
	tl_setup
	new_mark
	t0=$(date +%s%N)
	tl_sandbox "$@" -- bash -c "$DAEMONS" _ "$MARK_A" "$MARK_B" "$mode"
	MS=$((($(date +%s%N) - t0) / 1000000))
}

expect_nothing_left() {
	local what=$1 scratch=$2 before
	expect_contains "$what: the daemons were up before the end" "$OUT" daemons-up
	before=$(beats)
	expect_not_contains "$what: every daemon had beaten" "$before" ":none"
	sleep 0.6
	expect_eq "$what: no marked process survives" "$(tl_procs "$MARK")" ""
	expect_eq "$what: no heartbeat after the end" "$(beats)" "$before"
	expect_eq "$what: the scratch directory is gone" "$(test -e "$scratch" && echo left)" ""
}

test_leftovers() {
	daemons exit
	expect_eq "exit: exit code 0" "$RC" 0
	check "exit: returns at once despite a daemon holding the pipe (${MS} ms)" test "$MS" -lt 5000
	expect_nothing_left exit "$(rep 'd["plan"]["scratch"]')"
	daemons spin --timeout 5s
	expect_eq "timeout: exit code 124" "$RC" 124
	expect_nothing_left timeout "$(rep 'd["plan"]["scratch"]')"
	daemons flood --output-limit 64KiB --output-action kill --timeout 30s
	expect_eq "output kill: exit code 123" "$RC" 123
	expect_nothing_left "output kill" "$(rep 'd["plan"]["scratch"]')"
}

# The supervisor is SIGKILLed and can clean nothing up: the keeper, alone now, must kill the
# tree and remove the scratch directory.
test_supervisor_killed() {
	local events=$T/events.jsonl scratch
	tl_setup
	new_mark
	events=$T/events.jsonl
	(cd "$WS" && exec "${AS_TIER_USER[@]}" "$WRAP" "${NO_USERNS[@]}" -- "$AJ" run "${TIER[@]}" \
		-w "$WS" --events "$events" -v -- bash -c "$DAEMONS" _ "$MARK_A" "$MARK_B" wait \
		>"$T/out" 2>"$T/err" </dev/null) &
	BG_PID=$!
	for _ in $(seq 100); do
		grep -q daemons-up "$T/out" 2>/dev/null && break
		sleep 0.1
	done
	OUT=$(cat "$T/out")
	scratch=$(sed -n 's/.*\/tmp and HOME in \([^;]*\);.*/\1/p' "$T/err" | head -1)
	expect_eq "supervisor killed: daemons running while it lived" \
		"$(tl_procs "$MARK" | wc -l | tr -d ' ')" 4
	check "supervisor killed: the scratch directory exists while it runs" test -d "$scratch"
	kill -9 "$BG_PID"
	wait "$BG_PID" 2>/dev/null
	BG_PID=
	sleep 0.5
	expect_nothing_left "supervisor killed" "$scratch"
}

test_signal_trace_read
test_leftovers
test_supervisor_killed
