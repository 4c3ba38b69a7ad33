# Shared helpers for shell tests. Source it first: . "$AJ_ROOT/tests/lib.sh"
#
# Every check prints one TAP line. Checks assert behaviour that can fail: compare exact exit
# codes, exact errno names, exact report fields.
#
# Environment from tests/run: AGENTJAIL (binary under test), AJ_BUILD (its build directory,
# with tests/helpers/), AJ_ROOT (source tree), AJ_PASS (main, rootless, sanitize).
set -u
AJ=${AGENTJAIL:?run through tests/run}
HELPERS=${AJ_BUILD:?}/tests/helpers
_aj_tmp=()

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }
skip() { echo "ok - $1 # SKIP $2"; }

# check NAME COMMAND...: ok if the command succeeds.
check() {
	local name=$1; shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# expect_eq NAME ACTUAL EXPECTED
expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', expected '$3')"; fi
}

# expect_contains NAME HAYSTACK NEEDLE
expect_contains() {
	case "$2" in
	*"$3"*) ok "$1" ;;
	*) not_ok "$1 (expected to contain '$3'; got: $(printf '%s' "$2" | head -c 400))" ;;
	esac
}

expect_not_contains() {
	case "$2" in
	*"$3"*) not_ok "$1 (must not contain '$3'; got: $(printf '%s' "$2" | head -c 400))" ;;
	*) ok "$1" ;;
	esac
}

# A fresh directory removed at exit; world-traversable so sandboxes of any uid can enter.
mktmp() {
	local d
	d=$(mktemp -d /tmp/ajtest.XXXXXX)
	chmod 755 "$d"
	_aj_tmp+=("$d")
	echo "$d"
}
_aj_cleanup() {
	local d
	for d in "${_aj_tmp[@]}"; do rm -rf "$d"; done
}
trap _aj_cleanup EXIT

# aj_run ARGS...: runs agentjail with ARGS; sets OUT, ERR and RC.
aj_run() {
	local o e
	o=$(mktemp) e=$(mktemp)
	"$AJ" "$@" >"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
}

# json FILE EXPR: evaluates a Python expression over the JSON document as `d`.
json() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

is_root() { [ "$(id -u)" = 0 ]; }
is_rootless_pass() { [ "${AJ_PASS:-main}" = rootless ]; }

# Flags a rootless run needs on a host without a delegated cgroup (this is what the pass
# tests: limits that need cgroups are refused unless explicitly accepted as degraded).
rootless_flags() {
	if is_root; then return; fi
	echo "--memory none --cpus none"
}
