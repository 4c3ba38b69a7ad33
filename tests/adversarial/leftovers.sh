#!/usr/bin/env bash
# Persistence after the sandbox ends: daemons (double fork, setsid, ignoring SIGHUP and
# SIGTERM, holding the output pipe or not), left behind by a command that exits, is timed out,
# is killed for its output, or whose supervisor is killed. None may survive on the host, and
# the sandbox's cgroups must be gone. Each daemon writes a heartbeat into the workspace, so a
# survivor is seen even if its name were hidden; every daemon gives up by itself after 60 s.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

BG_PID=
MARK=
cleanup() {
	[ -n "$BG_PID" ] && kill -9 "$BG_PID" 2>/dev/null
	local p
	# A survivor of a failed check: only processes carrying this run's marker, by pid.
	if [ -n "$MARK" ]; then
		for p in $(host_pids_matching "$MARK"); do kill -9 "$p" 2>/dev/null; done
	fi
	_aj_cleanup
}
trap cleanup EXIT

# The attacker's script: $1$2 is the marker (given in two pieces so that agentjail's own
# command line does not contain it), $3 the mode. It starts daemons of several kinds, waits
# until each has beaten once, then ends as the mode says.
ATTACK='
mark=$1$2 mode=$3
beat() {  # NAME: a daemon loop, under the marker as its process name
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

DAEMONS="doublefork setsid nohup holdspipe"

new_mark() {
	MARK=$(marker)
	MARK_A=${MARK:0:6}
	MARK_B=${MARK:6}
}

# Runs the attack in mode $1 with extra agentjail flags; sets RC and MS (wall time).
attack() {
	local mode=$1 t0
	shift
	adv_setup
	new_mark
	chmod 777 "$WS"
	t0=$(date +%s%N)
	rm -f "$REPORT"
	"$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) "$@" -- \
		bash -c "$ATTACK" _ "$MARK_A" "$MARK_B" "$mode" >"$T/out" 2>"$T/err" </dev/null
	RC=$?
	MS=$((($(date +%s%N) - t0) / 1000000))
	OUT=$(cat "$T/out")
}

# beats: the heartbeat files' contents, to compare over time.
beats() {
	local d
	for d in $DAEMONS; do
		printf '%s:%s ' "$d" "$(cat "$WS/.beat-$d" 2>/dev/null || echo none)"
	done
}

cgroup_dirs_of() {
	local id=$1 p
	[ -n "$id" ] && [ "$id" != None ] || return 0
	for p in $("$AJ" features --json 2>/dev/null | python3 -c '
import json, sys
for c in json.load(sys.stdin)["cgroup"]["controllers"].values():
    if c["usable"]:
        print(c["parent"])' | sort -u); do
		[ -e "$p/run-$id" ] && echo "$p/run-$id"
	done
	return 0
}

# What every scenario must leave: no process, no heartbeat, no cgroup.
expect_nothing_left() {
	local what=$1 id=$2 before
	expect_contains "$what: the daemons were up before the end" "$OUT" daemons-up
	before=$(beats)
	expect_not_contains "$what: every daemon had beaten" "$before" ":none"
	sleep 0.6
	expect_eq "$what: no marked process survives on the host" "$(host_pids_matching "$MARK")" ""
	expect_eq "$what: no heartbeat after the end" "$(beats)" "$before"
	expect_eq "$what: the sandbox's cgroups are removed" \
		"$(cgroup_dirs_of "$id" | tr '\n' ' ')" ""
	[ "$what" = "supervisor killed" ] || remove_leaked_cgroups "$id"
}

# A failed check above must not leave this test's debris in the host's cgroup tree.
remove_leaked_cgroups() {
	local d
	for d in $(cgroup_dirs_of "$1"); do
		rmdir "$d" 2>/dev/null
	done
}

test_exit() {
	attack exit
	expect_eq "exit: exit code 0" "$RC" 0
	check "exit: returns at once despite a daemon holding the pipe (${MS} ms)" \
		test "$MS" -lt 5000
	expect_nothing_left exit "$(rep 'd["sandbox"]')"
}

test_timeout() {
	attack spin --timeout 5s
	expect_eq "timeout: exit code 124" "$RC" 124
	expect_eq "timeout: report limit_hit" "$(rep 'd["limit_hit"]')" timeout
	expect_nothing_left timeout "$(rep 'd["sandbox"]')"
}

test_output_kill() {
	attack flood --output-limit 64KiB --output-action kill --timeout 30s
	expect_eq "output kill: exit code 123" "$RC" 123
	expect_nothing_left "output kill" "$(rep 'd["sandbox"]')"
}

# The supervisor itself is killed (SIGKILL: it can clean nothing up); the sandbox must die with
# it, and its cgroups must not stay behind.
# daemon_names MARK: the names (argv[0]) of the host's processes carrying MARK, each once.
daemon_names() {
	local p
	for p in $(host_pids_matching "$1"); do
		tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | head -1
	done | sort -u | tr '\n' ' ' | sed 's/ $//'
}

test_supervisor_killed() {
	local events id
	adv_setup
	new_mark
	chmod 777 "$WS"
	events=$T/events.jsonl
	"$AJ" run -w "$WS" --events "$events" $(rootless_flags) -- \
		bash -c "$ATTACK" _ "$MARK_A" "$MARK_B" wait >"$T/out" 2>"$T/err" </dev/null &
	BG_PID=$!
	for _ in $(seq 100); do
		grep -q daemons-up "$T/out" 2>/dev/null && break
		sleep 0.1
	done
	OUT=$(cat "$T/out")
	# By name: each daemon's loop forks for its `date` and `sleep`, and a child not yet
	# exec'd carries the daemon's name for a moment (a fifth process, seen once under load).
	expect_eq "supervisor killed: daemons running while it lived" \
		"$(daemon_names "$MARK")" "$MARK-doublefork $MARK-holdspipe $MARK-nohup $MARK-setsid"
	kill -9 "$BG_PID"
	wait "$BG_PID" 2>/dev/null
	BG_PID=
	id=$(head -1 "$events" | python3 -c 'import json, sys
print(json.load(sys.stdin)["sandbox"])')
	sleep 0.5
	expect_nothing_left "supervisor killed" "$id"
	KILLED_ID=$id KILLED_AT=$(date +%s%N) KILLED_WS=$WS
}

# Whatever the dead supervisor left, a later run sweeps (empty run cgroups older than 10 s):
# the other tests run in between, then this waits for the rest of the 11 s.
test_supervisor_killed_swept() {
	while [ $((($(date +%s%N) - KILLED_AT) / 1000000)) -lt 11000 ]; do sleep 0.2; done
	"$AJ" run -w "$KILLED_WS" $(rootless_flags) -- true </dev/null >/dev/null 2>&1
	expect_eq "supervisor killed: the next run swept its cgroups" \
		"$(cgroup_dirs_of "$KILLED_ID" | tr '\n' ' ')" ""
	remove_leaked_cgroups "$KILLED_ID"
}

# A crash leaves no core file behind, and the core limit cannot be raised to get one.
test_core_dump() {
	adv_setup
	chmod 777 "$WS"
	sandbox -- python3 -c '
import os, resource, signal
try:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print("raise-core OK")
except (ValueError, OSError):
    print("raise-core refused")
print("core-limit", resource.getrlimit(resource.RLIMIT_CORE)[1], flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
'
	expect_line "core limit cannot be raised" raise-core refused
	expect_line "core limit is 0" core-limit 0
	expect_eq "crash: exit code 128+SIGSEGV" "$RC" 139
	local cores=("$WS"/core*)
	check "host: no core file in the workspace" test ! -e "${cores[0]}"
}

test_supervisor_killed
test_exit
test_core_dump
test_timeout
test_output_kill
test_supervisor_killed_swept
