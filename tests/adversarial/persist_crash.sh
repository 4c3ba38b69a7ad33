#!/usr/bin/env bash
# Crash safety of persistent sandboxes (root): a supervisor killed with SIGKILL (reaped at once,
# or left a zombie by a parent that does not reap), and the CLI killed with SIGKILL in the
# middle of `snapshot`, `fork` and `create` -- at timed delays over a 64 MB workspace and, when
# strace is available, exactly at chosen system calls. After each, `gc` must leave the state
# consistent: no sandbox or snapshot stuck "creating", no layers/.tmp-*, no layer directory
# nobody references and none referenced but missing, every sandbox able to run (not left
# paused), and no workspace lost or half applied (checksums of the data inside).
# Main pass only: its processes die by SIGKILL (the sanitizers report nothing of those), and
# the snapshot, fork, create and gc code it kills runs under them in persist_snapshots.sh,
# persist_lifecycle.sh and persist_gc.sh.
# passes: main
# timeout: 600
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

if ! is_root; then
	skip "crash safety of persistent sandboxes" "run as root (kills supervisors, 64 MB workspaces)"
	exit 0
fi

REAPER=
cleanup_crash() {
	[ -n "$REAPER" ] && kill -9 "$REAPER" 2>/dev/null
	pj_cleanup
}
trap cleanup_crash EXIT

# consistent LABEL: runs gc and checks the state directory against the store.
report= # what the last consistent() found wrong
consistent() {
	local label=$1
	aj_run gc
	expect_eq "$label: gc exit 0" "$RC" 0
	report=$( ("$AJ" ls --json; echo "@@"; "$AJ" snapshots --json) | python3 -c '
import json, os, sys
state = sys.argv[1]
a, b = sys.stdin.read().split("@@")
sbs, snaps = json.loads(a), json.loads(b)
bad = []
refs = set()
for s in sbs:
    if s["state"] not in ("running", "stopped", "paused"):
        bad.append("sandbox %s is %s" % (s["name"], s["state"]))
    if not os.path.isdir(os.path.join(state, "sandboxes", s["id"], "upper")):
        bad.append("sandbox %s has no upper directory" % s["name"])
    for l in s["layers"]:
        refs.add(l)
        if not os.path.isdir(os.path.join(state, "layers", l)):
            bad.append("sandbox %s needs missing layer %s" % (s["name"], l))
for s in snaps:
    if s["state"] != "ready":
        bad.append("snapshot %s is %s" % (s["name"], s["state"]))
    for l in s["layers"]:
        refs.add(l)
        if not os.path.isdir(os.path.join(state, "layers", l)):
            bad.append("snapshot %s needs missing layer %s" % (s["name"], l))
ld = os.path.join(state, "layers")
for e in sorted(os.listdir(ld)) if os.path.isdir(ld) else []:
    if e.startswith(".tmp-"):
        bad.append("leftover layers/" + e)
    elif e not in refs:
        bad.append("unreferenced layers/" + e)
ids = set(s["id"] for s in sbs)
sd = os.path.join(state, "sandboxes")
for e in sorted(os.listdir(sd)) if os.path.isdir(sd) else []:
    if e not in ids:
        bad.append("sandboxes/%s has no record" % e)
print("; ".join(bad))' "$STATE")
	expect_eq "$label: the state directory matches the store" "$report" ""
}

sleep_ms() { sleep "$(awk -v d="$1" 'BEGIN { printf "%.3f", d / 1000 }')"; }

# all_run LABEL: every sandbox runs a command (stopped ones are started first).
all_run() {
	local label=$1 n bad=""
	for n in $("$AJ" ls --json | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)))'); do
		[ "$(pj_state "$n")" = stopped ] && "$AJ" start "$n" >/dev/null 2>&1
		"$AJ" exec "$n" -- true >/dev/null 2>&1 || bad="$bad $n($(pj_state "$n"))"
	done
	expect_eq "$label: every sandbox runs commands" "$bad" ""
}

# ---- a supervisor killed -----------------------------------------------------------------

pj_create victim
pj_x victim sh -c 'echo precious >keep; sleep 300 </dev/null >/dev/null 2>&1 &'
VID=$(pj_id victim)
SUP=$(pj_field victim 'd["supervisor_pid"]')
INIT=$(pj_init_pid victim)
VSOCK=$(pj_field victim 'd.get("socket") or ""')
check "the control socket from inspect exists" [ -S "$VSOCK" ]
check "the sandbox has cgroups" [ -n "$(pj_cgroup_dirs "$VID")" ]
check "the supervisor pid from inspect --json is a live process" kill -0 "$SUP"
kill -9 "$SUP"
expect_eq "supervisor killed: ls reports the sandbox stopped" "$(pj_wait_state victim stopped 10)" stopped
expect_contains "supervisor killed: the record says why" "$(pj_field victim 'd["error"]')" "supervisor"
check "supervisor killed: the sandbox's init died with it" pj_wait 5 pid_gone "${INIT:-0}"
expect_eq "supervisor killed: its cgroups are swept" "$(pj_cgroup_dirs "$VID")" ""
check "supervisor killed: its control socket is removed" [ -n "$VSOCK" -a ! -e "$VSOCK" ]
check "supervisor killed: the workspace is intact on disk" [ "$(cat "$STATE/sandboxes/$VID/upper/keep")" = precious ]
aj_run start victim
expect_eq "supervisor killed: start works again" "$RC" 0
expect_eq "supervisor killed: generation 2" "$(pj_field victim 'd["generation"]')" 2
pj_x victim sh -c 'cat keep; ps -eo args | grep -c "^sleep 300"'
expect_eq "supervisor killed: files kept, old processes gone" "$OUT" "precious
0"
EV=$("$AJ" events --json victim)
expect_contains "supervisor killed: a stop event says the supervisor died" "$EV" '"reason":"the supervisor died"'

# The supervisor's parent does not reap it at once (a container's init, a busy subreaper):
# a killed supervisor is a zombie for a while. It is dead all the same.
READY=$STATE/../reaper.out
python3 - "$AJ" >"$READY" 2>&1 <<'EOF' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans below us become our children
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "create", "--name", "zombie"])
os.waitpid(pid, 0)  # the CLI only; the supervisor it leaves behind is never waited for
print("ready", flush=True)
time.sleep(120)
EOF
REAPER=$!
pj_wait 20 grep -q ready "$READY"
ZSUP=$(pj_field zombie 'd["supervisor_pid"]')
check "zombie case: the supervisor's parent is the non-reaping process" \
	[ "$(awk '/^PPid:/ {print $2}' "/proc/$ZSUP/status" 2>/dev/null)" = "$REAPER" ]
kill -9 "$ZSUP"
pj_wait 5 grep -q '^State:.*Z' "/proc/$ZSUP/status"
check "zombie case: the killed supervisor is a zombie" grep -q '^State:.*Z' "/proc/$ZSUP/status"
expect_eq "zombie case: ls reports the sandbox stopped within 10 s" "$(pj_wait_state zombie stopped 10)" stopped
t0=$(date +%s)
aj_run start zombie
t1=$(date +%s)
expect_eq "zombie case: start works" "$RC" 0
check "zombie case: start returns within 10 s" [ $((t1 - t0)) -lt 10 ]
kill -9 "$REAPER" 2>/dev/null
wait "$REAPER" 2>/dev/null
REAPER=
aj_run rm -f zombie

consistent "after the supervisor kills"

# ---- the CLI killed during snapshot and fork of a 64 MB running sandbox ------------------

pj_create big
pj_x big sh -c 'dd if=/dev/urandom of=big.bin bs=1M count=64 status=none &&
	for i in $(seq 1 200); do echo "$i" >"small-$i"; done && mkdir -p a/b && echo nested >a/b/c &&
	cat big.bin small-* a/b/c | sha256sum | cut -d" " -f1 >sum'
expect_eq "a 64 MB workspace" "$RC" 0
SUM=$("$AJ" exec big -- cat sum)
data_ok() { # NAME: the data in NAME is what big had
	[ "$("$AJ" exec "$1" -- sh -c 'cat big.bin small-* a/b/c | sha256sum | cut -d" " -f1' 2>/dev/null)" = "$SUM" ]
}
t0=$(date +%s%N)
aj_run snapshot big --name timing
t1=$(date +%s%N)
expect_eq "a full snapshot of the 64 MB workspace" "$RC" 0
FULL_MS=$(((t1 - t0) / 1000000))
echo "# a full snapshot takes $FULL_MS ms"
aj_run snapshots rm timing

for pct in 10 30 50 70 90 110 140 250 500; do
	d=$((FULL_MS * pct / 100))
	"$AJ" snapshot big --name "cut-$pct" >/dev/null 2>&1 &
	p=$!
	sleep_ms "$d"
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	consistent "snapshot killed at ${pct}%"
	expect_eq "snapshot killed at ${pct}%: the source is running, not left paused" "$(pj_state big)" running
	[ "$(pj_state big)" = paused ] && "$AJ" resume big >/dev/null 2>&1
	check "snapshot killed at ${pct}%: the source's data is intact" data_ok big
	st=$("$AJ" snapshots --json | python3 -c '
import json, sys
print(next((s["state"] for s in json.load(sys.stdin) if s["name"] == sys.argv[1]), "absent"))' "cut-$pct")
	if [ "$st" = ready ]; then
		aj_run create --name "from-cut-$pct" --from "cut-$pct"
		check "snapshot killed at ${pct}% but complete: a sandbox made from it has all the data" data_ok "from-cut-$pct"
		"$AJ" rm -f "from-cut-$pct" >/dev/null 2>&1
	else
		expect_eq "snapshot killed at ${pct}%: either complete or absent" "$st" absent
	fi
done

for pct in 10 40 70 100 130; do
	d=$((FULL_MS * pct / 100))
	"$AJ" fork big --count 3 --name "fk$pct" >/dev/null 2>&1 &
	p=$!
	sleep_ms "$d"
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	consistent "fork killed at ${pct}%"
	expect_eq "fork killed at ${pct}%: the source is running, not left paused" "$(pj_state big)" running
	[ "$(pj_state big)" = paused ] && "$AJ" resume big >/dev/null 2>&1
	bad=
	for k in 1 2 3; do
		case $(pj_state "fk$pct-$k") in
		MISSING) ;;
		stopped) "$AJ" start "fk$pct-$k" >/dev/null 2>&1 ;&
		running) data_ok "fk$pct-$k" || bad="$bad fk$pct-$k" ;;
		*) bad="$bad fk$pct-$k($(pj_state "fk$pct-$k"))" ;;
		esac
		"$AJ" rm -f "fk$pct-$k" >/dev/null 2>&1
	done
	expect_eq "fork killed at ${pct}%: every fork that exists has all the data" "$bad" ""
done
check "after the killed snapshots and forks: the source's data is intact" data_ok big

# gc at any moment (a timer, another user) must leave a snapshot or fork in progress alone.
for pct in 10 40 70; do
	d=$((FULL_MS * pct / 100))
	"$AJ" snapshot big --name "gc-$pct" >/dev/null 2>"$STATE/../snap.err" &
	p=$!
	sleep_ms "$d"
	"$AJ" gc >/dev/null 2>&1
	wait "$p"
	expect_eq "gc during a snapshot (at ${pct}%): the snapshot succeeds" "$?" 0
	sed 's/^/# /' "$STATE/../snap.err"
	aj_run create --name "from-gc-$pct" --from "gc-$pct"
	check "gc during a snapshot (at ${pct}%): the snapshot has all the data" data_ok "from-gc-$pct"
	"$AJ" rm -f "from-gc-$pct" >/dev/null 2>&1
	"$AJ" snapshots rm "gc-$pct" >/dev/null 2>&1
done
for pct in 20 60 100; do
	d=$((FULL_MS * pct / 100))
	"$AJ" fork big --count 2 --name "gcf$pct" >/dev/null 2>"$STATE/../fork.err" &
	p=$!
	sleep_ms "$d"
	"$AJ" gc >/dev/null 2>&1
	wait "$p"
	expect_eq "gc during a fork (at ${pct}%): the fork succeeds" "$?" 0
	sed 's/^/# /' "$STATE/../fork.err"
	check "gc during a fork (at ${pct}%): the fork has all the data" data_ok "gcf$pct-2"
	"$AJ" rm -f "gcf$pct-1" "gcf$pct-2" >/dev/null 2>&1
done
consistent "after gc during snapshots and forks"
# A layer directory the store no longer knows is never collected: reported just above, then
# removed by hand so that the checks below are about their own steps only.
for l in $(echo "$report" | grep -o 'unreferenced layers/[0-9a-f]*' | cut -d/ -f2); do
	rm -rf "${STATE:?}/layers/$l"
done
all_run "after the killed snapshots and forks"

# ---- the CLI killed during create ---------------------------------------------------------

for ms in 1 2 3 5 8 12 20; do
	"$AJ" create --name "cr-$ms" >/dev/null 2>&1 &
	p=$!
	sleep_ms "$ms"
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
consistent "create killed at 1-20 ms"
all_run "create killed at 1-20 ms"
aj_run gc
for ms in 1 2 3 5 8 12 20; do "$AJ" rm -f "cr-$ms" >/dev/null 2>&1; done

# ---- kills at exact system calls (strace) -----------------------------------------------

if ! command -v strace >/dev/null; then
	skip "kills at exact system calls" "strace is not installed"
	exit 0
fi

# nth_call SYSCALL NEEDLE ARGS...: runs agentjail ARGS under strace and prints the index (1-
# based, among SYSCALL calls) of the first call whose line contains NEEDLE.
nth_call() {
	local sc=$1 needle=$2 log=$STATE/../strace.log
	shift 2
	strace -o "$log" -e trace="$sc" "$AJ" "$@" >/dev/null 2>&1
	grep "^$sc(" "$log" | grep -n -F -- "$needle" | head -1 | cut -d: -f1
}
# kill_at SYSCALL N ARGS...: runs agentjail ARGS, killed with SIGKILL on entering the Nth call
# of SYSCALL (before it runs).
kill_at() {
	local sc=$1 n=$2
	shift 2
	strace -o /dev/null -e trace="$sc" -e inject="$sc:signal=SIGKILL:when=$n" "$AJ" "$@" >/dev/null 2>&1
}

# victim NAME: a stopped sandbox with known data; exact_ok NAME checks it (starting it).
victim() {
	pj_create "$1"
	pj_x "$1" sh -c 'echo exact-data >f; mkdir d && echo 2 >d/x'
	aj_run stop "$1"
}
exact_ok() {
	[ "$(pj_state "$1")" = stopped ] && "$AJ" start "$1" >/dev/null 2>&1
	[ "$("$AJ" exec "$1" -- sh -c 'cat f d/x' 2>/dev/null)" = "exact-data
2" ]
}

# Where the steps are, from complete runs on throwaway stopped sandboxes.
pj_create probe --stopped
N_UPPER=$(nth_call mkdir '/upper"' snapshot probe --name probe-snap)
aj_run rm -f probe
"$AJ" snapshots rm probe-snap >/dev/null 2>&1
check "strace probe: the snapshot recreates the upper with mkdir" [ -n "$N_UPPER" ]
pj_create probe2 --stopped
strace -o "$STATE/../strace.log" -e trace=mkdir "$AJ" fork probe2 --count 1 --name probe-fork-1 --stopped >/dev/null 2>&1
N_FORK_UPPER=$(grep "^mkdir(" "$STATE/../strace.log" | grep -n -F '/upper"' | sed -n 2p | cut -d: -f1)
aj_run rm -f probe2 probe-fork-1
check "strace probe: a fork makes its own upper with mkdir" [ -n "$N_FORK_UPPER" ]
N_CREATE=$(nth_call mkdir '/upper"' create --name probe3 --stopped)
aj_run rm -f probe3
check "strace probe: create makes the upper with mkdir" [ -n "$N_CREATE" ]

victim ex1
kill_at rename 1 snapshot ex1 --name at-rename
consistent "snapshot of a stopped sandbox killed before its rename"
check "killed before the rename: the sandbox starts, its data intact" exact_ok ex1
aj_run rm -f ex1

victim ex2
kill_at mkdir "${N_UPPER:-1}" snapshot ex2 --name at-upper
consistent "snapshot of a stopped sandbox killed after its rename, before the new upper"
aj_run start ex2
expect_eq "killed after the rename: the sandbox starts" "$RC" 0
[ "$RC" = 0 ] || printf '# %s\n' "$ERR"
check "killed after the rename: its data is intact" exact_ok ex2
aj_run rm -f ex2

victim ex3
kill_at mkdir "${N_UPPER:-1}" fork ex3 --count 2 --name ex3fork --stopped
consistent "fork of a stopped sandbox killed after its rename"
check "fork killed after the rename: the source starts, its data intact" exact_ok ex3
aj_run rm -f ex3 ex3fork-1 ex3fork-2

victim ex4
kill_at mkdir "${N_FORK_UPPER:-1}" fork ex4 --count 2 --name ex4fork --stopped
consistent "fork killed while making the first new sandbox's workspace"
check "fork killed while making a new sandbox: the source starts, its data intact" exact_ok ex4
expect_eq "fork killed while making a new sandbox: that sandbox is complete or gone" \
	"$(pj_state ex4fork-1 | sed 's/^stopped$/ok/; s/^MISSING$/ok/')" ok
aj_run rm -f ex4 ex4fork-1 ex4fork-2

kill_at mkdir "${N_CREATE:-1}" create --name half-made
consistent "create killed after its record, before its workspace"
expect_eq "create killed: the half-made sandbox is complete or gone" \
	"$(pj_state half-made | sed 's/^stopped$/ok/; s/^MISSING$/ok/')" ok
aj_run rm -f half-made
aj_run create --name half-made
expect_eq "create killed: the name can be used again" "$RC" 0

pj_create live
pj_x live sh -c 'echo live-data >f; sleep 300 </dev/null >/dev/null 2>&1 &'
kill_at rename 1 snapshot live --name live-at-rename
consistent "snapshot of a running sandbox killed before publishing its layer"
expect_eq "snapshot of a running sandbox killed: the sandbox is running, not left paused" "$(pj_state live)" running
[ "$(pj_state live)" = paused ] && "$AJ" resume live >/dev/null 2>&1
pj_x live cat f
expect_eq "snapshot of a running sandbox killed: its data is intact" "$OUT" live-data
