# shellcheck shell=bash
# Shared by the bench/run-*.sh scripts (sourced, not run): build, scratch directory, the
# bubblewrap command equivalent to agentjail's root filesystem, and the host description
# every report starts with.
#
# After bench_setup: ROOT, BUILD, BIN (the build directory), AJ (the agentjail binary: built
# from the tree, or $AGENTJAIL as given), WORK (scratch, removed at exit) and WS (an empty
# workspace under WORK, the current directory).

BUILD=${BUILD:-build-bench}
CC=${CC:-cc}

bench_die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

bench_setup() {
	local tool
	for tool in bwrap unshare python3 "$CC" make; do
		command -v "$tool" >/dev/null || bench_die "needs $tool"
	done
	ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	BIN="$ROOT/$BUILD"
	mkdir -p "$BIN"
	if [[ -n ${AGENTJAIL:-} ]]; then
		AJ=$(realpath "$AGENTJAIL")
		[[ -x $AJ ]] || bench_die "AGENTJAIL=$AGENTJAIL is not an executable"
	else
		AJ="$BIN/agentjail"
		make -s -C "$ROOT" BUILD="$BUILD" "$BUILD/agentjail" >&2 ||
			bench_die "building agentjail failed (AGENTJAIL=PATH benchmarks a given binary)"
	fi
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/agentjail-bench.XXXXXX")
	# shellcheck disable=SC2064  # expand WORK now: the trap must remove this directory
	trap "rm -rf '$WORK'" EXIT
	WS="$WORK/ws"
	mkdir "$WS"
	cd "$WS" || bench_die "cd $WS"
}

# bench_serve_policy: the policy of the API benchmarks' sandboxes. Rootless without a
# delegated cgroup: no limits that need one (as the tests' rootless pass).
bench_serve_policy() {
	if [[ $(id -u) == 0 ]]; then echo '{}'; else echo '{"limits":{"memory":null,"cpus":null}}'; fi
}

# bench_serve_cleanup: the EXIT trap of a benchmark that runs `agentjail serve` ($SERVE_PID)
# on the state directory $STATE: the daemon stopped, every sandbox left there removed, then
# the scratch directory.
bench_serve_cleanup() {
	local n
	if [[ -n ${SERVE_PID:-} ]]; then
		kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true
	fi
	for n in $("$AJ" ls --json --state-dir "$STATE" 2>/dev/null |
		python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)))' 2>/dev/null); do
		"$AJ" rm -f --state-dir "$STATE" "$n" >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
}

# bench_cc NAME: compiles bench/NAME.c to $BIN/NAME.
bench_cc() {
	"$CC" -std=gnu17 -O2 -Wall -Wextra -o "$BIN/$1" "$ROOT/bench/$1.c" ||
		bench_die "building $1 failed"
}

# bench_bwrap_args ARRAY [--share-net]: fills ARRAY with the bubblewrap arguments that build
# the root filesystem agentjail plans for this workspace (bench/plan2bwrap.py), with or without
# the network namespace.
bench_bwrap_args() {
	local -n out=$1
	local tag=net ajnet=()
	if [[ ${2:-} == --share-net ]]; then
		tag=host
		ajnet=(--network host)
	fi
	mkdir -p "$WORK/bwrap-$tag"
	"$AJ" run "${ajnet[@]}" --dry-run --json -- /bin/true >"$WORK/plan-$tag.json" ||
		bench_die "agentjail run --dry-run failed"
	mapfile -d '' out < <(python3 "$ROOT/bench/plan2bwrap.py" "$WORK/plan-$tag.json" \
		"$WORK/bwrap-$tag" ${2:+"$2"})
	((${#out[@]} > 10)) || bench_die "plan2bwrap produced no arguments"
}

bench_header() {
	local rev
	rev=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
	echo "date:       $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "kernel:     $(uname -srm)"
	echo "cpus:       $(nproc) ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1))"
	echo "load:       $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "caller:     uid $(id -u)"
	echo "agentjail:  $AJ: $("$AJ" version 2>&1 | head -1)," \
		"sha256 $(sha256sum "$AJ" | cut -c1-12), built $(date -u -r "$AJ" +%Y-%m-%dT%H:%M:%SZ)," \
		"tree $rev, cgroup $("$AJ" features 2>&1 | sed -n 's/^  cgroup *//p' | head -1)"
	echo "bwrap:      $(bwrap --version)"
	echo "unshare:    $(unshare --version)"
}

# bench_print_commands NAME -- CMD... ::: NAME -- CMD...: one line per row, shell-quoted.
bench_print_commands() {
	local a state=name
	for a in "$@"; do
		case $state:$a in
		*:::)
			printf '\n'
			state=name
			;;
		name:*)
			printf '  %s:' "$a"
			state=sep
			;;
		sep:--) state=argv ;;
		argv:*) printf ' %q' "$a" ;;
		*) ;;
		esac
	done
	printf '\n'
}
