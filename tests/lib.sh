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
# Every one lives under a per-test directory made here, in the test's own shell: mktmp is
# called as T=$(mktmp), a subshell whose changes to variables the EXIT trap never sees.
_aj_tmproot=$(mktemp -d /tmp/ajtest.XXXXXX)
chmod 755 "$_aj_tmproot"
mktmp() {
	local d
	d=$(mktemp -d "$_aj_tmproot/t.XXXXXX")
	chmod 755 "$d"
	_aj_tmp+=("$d")
	echo "$d"
}
_aj_cleanup() {
	local d
	for d in "${_aj_tmp[@]}"; do rm -rf "$d"; done
	rm -rf "$_aj_tmproot"
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

# The test's Python evaluations (json, serve.bash's bj and its OpenAPI check) go to one
# interpreter started here in the background (tests/helpers/pysvc.py, on a loopback port that
# bash reaches through /dev/tcp), not one per call. Until it listens, or where it cannot, each
# call starts its own interpreter as before.
_py_port_file=$_aj_tmproot/pysvc.port
python3 "$AJ_ROOT/tests/helpers/pysvc.py" "$_py_port_file" </dev/null >/dev/null 2>&1 &
disown # not a job of the test's: its `wait` and `jobs` are about the test's own
_py_port=

# py_call OP ARGS...: the service's answer (see pysvc.py): what it printed on stdout and on
# stderr, and its status; 255 without printing anything where there is no service.
py_call() {
	local fd reply out
	if [ -z "$_py_port" ]; then
		[ -s "$_py_port_file" ] || return 255
		read -r _py_port <"$_py_port_file" || return 255
	fi
	{ exec {fd}<>"/dev/tcp/127.0.0.1/$_py_port"; } 2>/dev/null || return 255
	printf '%s\0' $(($# + 1)) "$@" >&"$fd"
	IFS= read -r -d '' reply <&"$fd"
	exec {fd}>&-
	case "$reply" in [0-9]*$'\n'*$'\x1e'*) ;; *) return 255 ;; esac
	out=${reply#*$'\n'}
	printf '%s' "${out%%$'\x1e'*}"
	out=${out#*$'\x1e'}
	[ -z "$out" ] || printf '%s' "$out" >&2
	return "${reply%%$'\n'*}"
}

# json FILE EXPR: evaluates a Python expression over the JSON document as `d`. FILE may be
# /dev/stdin or a pipe: those (what is not a regular file, or is one through /dev or /proc)
# are read by an interpreter of the caller's own.
json() {
	local rc
	if [ -f "$1" ] && [[ "$1" != /dev/* && "$1" != /proc/* ]]; then
		if [[ "$1" == /* ]]; then py_call eval "$2" "$1"; else py_call eval "$2" "$PWD/$1"; fi
		rc=$?
		[ "$rc" = 255 ] || return "$rc"
	fi
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s until it succeeds; fails after SECONDS.
# Tests wait for the state they check instead of sleeping a fixed time, which a loaded machine
# or the sanitized build can outlast.
wait_until() {
	local end=$(($(date +%s%N) / 1000000 + $1 * 1000))
	shift
	until "$@"; do
		[ $(($(date +%s%N) / 1000000)) -ge "$end" ] && return 1
		sleep 0.1
	done
}

# never_reads SECONDS: a caller that reads nothing of its stdin (a pipe left to fill up) and
# ends once every writer has closed it, or after SECONDS: the writer's end, not a fixed sleep.
never_reads() {
	python3 -c 'import select, sys
p = select.poll()
p.register(0, 0)
p.poll(int(sys.argv[1]) * 1000)' "$1"
}

# pid_gone PID: the process has ended (for wait_until).
pid_gone() { ! kill -0 "$1" 2>/dev/null; }

# at_least N CMD...: succeeds if CMD prints a number of at least N (for wait_until).
at_least() {
	local n=$1 v
	shift
	v=$("$@")
	[ "${v:-0}" -ge "$n" ] 2>/dev/null
}

# free_port: a TCP port on 127.0.0.1 nothing listens on right now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

is_root() { [ "$(id -u)" = 0 ]; }
is_rootless_pass() { [ "${AJ_PASS:-main}" = rootless ]; }

# Flags a rootless run needs on a host without a delegated cgroup (this is what the pass
# tests: limits that need cgroups are refused unless explicitly accepted as degraded).
rootless_flags() {
	if is_root; then return; fi
	echo "--memory none --cpus none"
}

# ---- cgroup and leftover checks for `agentjail run` tests ------------------------------------

# cgroup_parents [--cgroup-parent P]: the directories under which agentjail creates sandbox
# cgroups on this host for this user (usable controllers of `agentjail features --json`), one
# per line.
cgroup_parents() {
	"$AJ" features --json "$@" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
seen = []
for c in d["cgroup"]["controllers"].values():
    if c["usable"] and c["parent"] not in seen:
        seen.append(c["parent"])
print("\n".join(seen))'
}

# cgroup_snapshot FILE [--cgroup-parent P]: records the entries under every cgroup parent.
cgroup_snapshot() {
	local out=$1 p; shift
	: >"$out"
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		[ -d "$p" ] || continue
		find "$p" -mindepth 1 -maxdepth 1 -type d -printf "$p/%f\n" >>"$out"
	done < <(cgroup_parents "$@")
	sort -o "$out" "$out"
}

# cgroup_new_dirs BEFORE [--cgroup-parent P]: directories under the cgroup parents that were
# not there in the BEFORE snapshot, ignoring the run-ID directories of sandboxes that other
# processes on this machine may be running right now (ours are checked by id with
# cgroup_run_dirs).
cgroup_new_dirs() {
	local before=$1 now; shift
	now=$(mktemp)
	cgroup_snapshot "$now" "$@"
	comm -13 "$before" "$now" | grep -v '/run-[0-9a-f]\{16\}$'
	rm -f "$now"
}

# cgroup_run_dirs ID... [-- --cgroup-parent P]: the cgroup directories of these sandboxes that
# still exist (they must not, once `agentjail run` has returned).
cgroup_run_dirs() {
	local ids=() p id
	while [ $# -gt 0 ] && [ "$1" != -- ]; do ids+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		for id in "${ids[@]}"; do
			[ -n "$id" ] && [ "$id" != None ] && [ -e "$p/run-$id" ] && echo "$p/run-$id"
		done
	done < <(cgroup_parents "$@")
	return 0
}

# report_field FILE EXPR: like json, but prints MISSING when the file is absent or broken.
report_field() {
	if [ -s "$1" ]; then
		json "$1" "$2" 2>/dev/null || echo BROKEN
	else
		echo MISSING
	fi
}
