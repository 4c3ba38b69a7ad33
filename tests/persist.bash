# Helpers for the tests of persistent sandboxes (tests/*/persist_*.sh); sourced after
# tests/lib.sh. Not a test itself: tests/run only runs *.sh.
#
# pj_setup gives the test a state directory of its own (AGENTJAIL_STATE_DIR, also $STATE) and
# an EXIT trap that removes every sandbox in it with `rm -f`, kills by pid any supervisor of
# that directory still alive after that, and then runs lib.sh's cleanup. Sandboxes are made
# with pj_create, which adds the flags a rootless run needs ($PJ_FLAGS).

PJ_FLAGS=$(rootless_flags)

pj_setup() {
	local t
	t=$(mktmp)
	STATE=$t/state
	mkdir -p "$STATE"
	export AGENTJAIL_STATE_DIR=$STATE
	trap pj_cleanup EXIT
}

# pj_supervisors [DIR]: pids of supervisors started for the state directory DIR (default
# $STATE). The directory is unique to this test, so no other process matches.
pj_supervisors() {
	local dir=${1:-$STATE} p
	for p in $(pgrep -f -- "__supervise --state-dir $dir " 2>/dev/null); do
		echo "$p"
	done
}

# pj_remove_all [DIR]: rm -f of every sandbox in DIR (default $STATE).
pj_remove_all() {
	local dir=${1:-$STATE} n
	for n in $("$AJ" ls --json --state-dir "$dir" 2>/dev/null | python3 -c '
import json, sys
try:
    print("\n".join(s["id"] for s in json.load(sys.stdin)))
except Exception:
    pass'); do
		"$AJ" rm -f --state-dir "$dir" "$n" >/dev/null 2>&1
	done
}

PJ_EXTRA_STATES=()
PJ_AT_EXIT=() # commands run after the sandboxes are gone, before the temporary files go
pj_cleanup() {
	local d p
	for d in "$STATE" "${PJ_EXTRA_STATES[@]}"; do
		if [ -z "$d" ] || [ ! -d "$d" ]; then continue; fi
		pj_remove_all "$d"
		for p in $(pj_supervisors "$d"); do kill -9 "$p" 2>/dev/null; done
	done
	for p in "${PJ_AT_EXIT[@]}"; do eval "$p"; done
	_aj_cleanup
}

# pj_can_freeze: whether this user has a usable cgroup freezer (pausing, and snapshots and
# forks of a running sandbox, need one): what can_pause in src/e2b/control.c reads from the
# same probe.
pj_can_freeze() {
	"$AJ" features --json 2>/dev/null | python3 -c '
import json, sys
cg = json.load(sys.stdin)["cgroup"]
ctl = cg.get("controllers", {})
ok = ctl.get("freezer", {}).get("usable") if cg.get("mode") == "v1" else any(c.get("usable") for c in ctl.values())
sys.exit(0 if ok else 1)'
}

# pj_bail NAME: reports NAME as failed with agentjail's stderr and ends the file: what
# follows depends on it and would only repeat the failure.
pj_bail() {
	not_ok "$1 (exit $RC: $(printf '%s' "${ERR:-$OUT}" | head -c 400)); the checks after it were not run"
	exit 0
}

# pj_create NAME [ARGS...]: creates (and starts) sandbox NAME; bails out on failure.
pj_create() {
	local name=$1
	shift
	# shellcheck disable=SC2086
	aj_run create --name "$name" $PJ_FLAGS "$@"
	[ "$RC" = 0 ] || pj_bail "create $name"
}

# pj_field NAME EXPR: a field of `inspect NAME` (Python expression over `d`); MISSING if the
# sandbox is unknown.
pj_field() {
	local f
	f=$(mktemp)
	if "$AJ" inspect "$1" >"$f" 2>/dev/null; then
		json "$f" "$2" 2>/dev/null || echo BROKEN
	else
		echo MISSING
	fi
	rm -f "$f"
}

pj_state() { pj_field "$1" 'd["state"]'; }
pj_id() { pj_field "$1" 'd["id"]'; }

# pj_wait_state NAME STATE SECONDS: waits until inspect shows STATE; prints the last state.
pj_wait_state() {
	local name=$1 want=$2 end s
	end=$(($(date +%s%N) / 1000000 + $3 * 1000))
	while :; do
		s=$(pj_state "$name")
		if [ "$s" = "$want" ] || [ $(($(date +%s%N) / 1000000)) -ge "$end" ]; then
			echo "$s"
			return
		fi
		sleep 0.1
	done
}

# pj_wait SECONDS CMD...: wait_until, under the name the persistent-sandbox tests use.
pj_wait() { wait_until "$@"; }

# pj_x NAME CMD...: exec in NAME; OUT, ERR, RC as aj_run sets them.
pj_x() {
	local name=$1
	shift
	aj_run exec "$name" -- "$@"
}

# pj_init_pid NAME: host pid of the sandbox's init (the supervisor's child).
pj_init_pid() {
	local sp
	sp=$(pj_field "$1" 'd["supervisor_pid"]')
	case "$sp" in '' | None | MISSING | BROKEN) return ;; esac
	pgrep -P "$sp" | head -1
}

# pj_summary: the persistent objects of the state directory in a canonical form (names, ids,
# states, generations, labels, layer stacks of sandboxes; names, ids, states and layers of
# snapshots), to compare before and after an operation that must change nothing.
pj_summary() {
	{
		"$AJ" ls --json 2>/dev/null
		echo "@@"
		"$AJ" snapshots --json 2>/dev/null
	} | python3 -c '
import json, sys
a, b = sys.stdin.read().split("@@")
for s in sorted(json.loads(a), key=lambda s: s["id"]):
    print("sandbox", s["id"], s["name"], s["state"], s["generation"],
          json.dumps(s["labels"], sort_keys=True), ",".join(s["layers"]))
for s in sorted(json.loads(b), key=lambda s: s["id"]):
    print("snapshot", s["id"], s["name"], s["state"], ",".join(s["layers"]))'
}

# pj_cgroup_dirs ID: cgroup directories of sandbox ID (sb-ID, or sb-ID-GENERATION) that exist
# on this host.
pj_cgroup_dirs() {
	find /sys/fs/cgroup -maxdepth 4 -type d \( -name "sb-$1" -o -name "sb-$1-*" \) 2>/dev/null
}

# matches STRING REGEX: bash's =~ as a command, for check.
matches() { [[ "$1" =~ $2 ]]; }
