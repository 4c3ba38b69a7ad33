#!/usr/bin/env bash
# Every process of a run dies with it — background jobs, double forks, setsid'd daemons,
# processes ignoring SIGTERM — whether the command ends, a timeout ends it, the caller
# interrupts it or the supervisor itself is killed; and the run's cgroup directories are
# removed (checked under the parents that `agentjail features --json` shows).
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS"
cd "$WS" || exit 1
RL=$(rootless_flags)
R=$T/report.json
TAG=$$
IDS=()
BEFORE=$T/cg.before
cgroup_snapshot "$BEFORE"

# Unique sleep durations mark this test's processes: "sleep 3NN.<pid of this test>".
alive() { pgrep -a -f -- "sleep 3[0-9][0-9]\.$TAG" 2>/dev/null; }
# running: only the sleeps themselves, not agentjail and init, whose argv holds the same words:
# a signal sent before the command runs tests nothing.
running() { pgrep -a -f -- "^sleep 3[0-9][0-9]\.$TAG" 2>/dev/null; }
none_alive() { [ -z "$(alive)" ]; }
gone_within() { wait_until "$1" none_alive; }
record_id() { IDS+=("$(report_field "$R" 'd["sandbox"]')"); }

start=$(date +%s%N)
aj_run run $RL --report "$R" -- sh -c "
	sleep 301.$TAG &
	setsid sh -c 'sleep 302.$TAG & sleep 303.$TAG' &
	nohup sh -c 'trap \"\" TERM HUP INT; sleep 304.$TAG' >/dev/null 2>&1 &
	(sh -c 'sleep 305.$TAG &' &) 
	echo started"
elapsed=$((($(date +%s%N) - start) / 1000000))
record_id
expect_eq "background jobs: the command's exit status" "$RC:$OUT" "0:started"
check "background jobs: agentjail returns when the command ends (${elapsed} ms)" test "$elapsed" -lt 10000
check "background jobs, daemons and double forks are all gone" gone_within 3
alive | sed 's/^/#   still alive: /'

aj_run run $RL --report "$R" --timeout 1s -- sh -c "trap '' TERM; sleep 306.$TAG & sleep 307.$TAG"
record_id
expect_eq "timeout: exit 124" "$RC" 124
check "timeout: every process is gone" gone_within 3

# The caller interrupts: the first SIGTERM goes to the command.
rm -f "$R"
"$AJ" run $RL --report "$R" -- sleep 308.$TAG >/dev/null 2>&1 &
pid=$!
wait_until 15 running >/dev/null
check "interrupt: the command is running" test -n "$(running)"
kill -TERM "$pid"
wait "$pid"
rc=$?
record_id
expect_eq "interrupt: SIGTERM reaches the command (exit 128+15)" "$rc" 143
# agentjail itself was not the one killed: it reports the command's end.
expect_eq "interrupt: the report has the command's exit code" "$(report_field "$R" 'd["exit_code"]')" 143
check "interrupt: every process is gone" gone_within 3

# A command that survives SIGTERM: the second one ends the sandbox. Its trap notes the first,
# so the second is sent only once the first has been passed on (two pending SIGTERMs would
# merge into one); then every process ignores SIGTERM, so only agentjail killing the sandbox
# can end it.
rm -f "$WS/got-term"
"$AJ" run $RL --report "$R" -- sh -c "trap 'touch got-term' TERM; (trap '' TERM; exec sleep 309.$TAG) & wait; trap '' TERM; sleep 310.$TAG" \
	>/dev/null 2>&1 &
pid=$!
wait_until 15 running >/dev/null
kill -TERM "$pid"
check "second interrupt: the first reached the command" wait_until 15 test -e "$WS/got-term"
check "second interrupt: the command lives on after the first" kill -0 "$pid"
kill -TERM "$pid"
wait_until 5 pid_gone "$pid"
check "second interrupt: agentjail ends" sh -c "! kill -0 $pid 2>/dev/null"
wait "$pid" 2>/dev/null
expect_eq "second interrupt: exit 128+15 (the sandbox killed, not the command's own end)" "$?" 143
record_id
check "second interrupt: every process is gone" gone_within 3

# The supervisor is killed outright: the sandbox must not outlive it.
"$AJ" run $RL --events "$T/ev" -- sleep 311.$TAG >/dev/null 2>&1 &
pid=$!
wait_until 15 running >/dev/null
check "supervisor killed: the command was running" test -n "$(running)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
check "supervisor killed: the sandbox dies with it" gone_within 5
KILLED_ID=$(head -1 "$T/ev" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandbox"])' 2>/dev/null)

# Several sandboxes at once.
for i in 1 2 3 4 5; do
	"$AJ" run $RL --report "$T/r$i.json" -- sh -c "sleep 31$i.$TAG & sleep 0.5; exit $i" \
		>/dev/null 2>&1 &
done
wait
for i in 1 2 3 4 5; do
	expect_eq "concurrent run $i: its exit code" "$(report_field "$T/r$i.json" 'd["exit_code"]')" "$i"
	IDS+=("$(report_field "$T/r$i.json" 'd["sandbox"]')")
done
check "concurrent runs: every process is gone" gone_within 3

# The cgroup guard holds the sandbox's mount namespace until it exits, after the supervisor
# has returned (unmounting the tree is slow); in a git workspace it holds the supervisor's
# .git watch too (so is its last close). Run under a subreaper, which inherits whatever the
# run leaves: all of it must end by itself.
GITWS=$T/git-ws
mkdir -p "$GITWS" && git -C "$GITWS" init -q
SUBREAPER='
import ctypes, errno, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(fd, i)
    os.execv(sys.argv[1], sys.argv[1:])
status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
adopted, deadline = 0, time.monotonic() + 5
while True:
    try:
        got, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        print("exit %d, left 0 (%d inherited)" % (status, adopted))
        break
    adopted += got > 0
    if time.monotonic() > deadline:
        print("exit %d, left running after 5 s" % status)
        break
    time.sleep(0.01) if got == 0 else None
'
OUT=$(python3 -c "$SUBREAPER" "$AJ" run $RL --report "$R" -- true)
record_id
expect_contains "the run ends and leaves nothing running ($OUT)" "$OUT" "exit 0, left 0"
OUT=$(python3 -c "$SUBREAPER" "$AJ" run $RL -w "$GITWS" --report "$R" -- true)
record_id
expect_contains "git workspace: the run ends and leaves nothing running ($OUT)" "$OUT" "exit 0, left 0"

# ---- cgroups -------------------------------------------------------------------------------

expect_eq "no cgroup directory of these runs is left" "$(cgroup_run_dirs "${IDS[@]}")" ""
expect_eq "nothing else new under the cgroup parents" "$(cgroup_new_dirs "$BEFORE")" ""
# The killed supervisor could not clean up: its cgroup is the one thing it leaves, and it is
# empty (the processes are gone). Remove it so that the host is left as found.
for d in $(cgroup_run_dirs "$KILLED_ID"); do
	check "the killed supervisor's cgroup holds no task ($d)" test -z "$(cat "$d/cgroup.procs" 2>/dev/null)"
	rmdir "$d" 2>/dev/null
done
