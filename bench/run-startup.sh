#!/usr/bin/env bash
# One-shot start-up cost: `agentjail run -- /bin/true` next to bubblewrap building the same root
# filesystem, util-linux unshare with the same namespaces, and a bare /bin/true (bench/README.md;
# the goals: at most 0.5x bubblewrap with equivalent mounts, and at most 1.0x a minimal
# `bwrap --unshare-all --ro-bind /usr /usr ... /bin/true`).
#
# The rows of a group run alternately (A B C A B C ...) through bench/abtime, so drift in the
# machine's load hits every row alike, and the paired ratio (median of per-round ratios against
# the group's first row) is steadier than a ratio of medians. Two groups: with a network
# namespace (agentjail's default policy) and without (agentjail --network host, bwrap
# --share-net, unshare without -n); each compares against its own bubblewrap row. The groups
# are not paired with each other.
#
# usage: bench/run-startup.sh
# environment: ROUNDS (200), WARMUP (20), BUILD (build-bench), CC (cc),
#              AGENTJAIL (a binary to measure instead of building the tree's)
# Prints figures only; the exit status says whether the benchmark ran, not how it came out.
set -euo pipefail

ROUNDS=${ROUNDS:-200}
WARMUP=${WARMUP:-20}
TARGET_RATIO=0.50
TARGET_MINIMAL=1.00

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
bench_cc abtime
bench_bwrap_args BW_NET
bench_bwrap_args BW_HOST --share-net

# unshare with the namespaces agentjail creates (user, mount, pid, ipc, uts, net, cgroup); the
# fallback drops only the cgroup namespace, and the printed command shows which one ran.
UNSHARE_NET=()
for flags in "-Urmpiun --cgroup" "-Urmpiun"; do
	# shellcheck disable=SC2086  # the flag words split on purpose
	if unshare $flags --fork --mount-proc /bin/true 2>/dev/null; then
		read -ra UNSHARE_NET <<<"$flags"
		break
	fi
done
((${#UNSHARE_NET[@]})) || bench_die "unshare with user/mount/pid namespaces does not work here"
UNSHARE_HOST=("${UNSHARE_NET[@]}")
UNSHARE_HOST[0]=${UNSHARE_HOST[0]/n/}

MIN_BWRAP=(bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin
	--symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp)

# A workspace that is a git repository, as a coding agent's usually is: agentjail protects its
# .git (read-only hooks and config, a watch for a commondir made inside), bwrap does nothing
# of the kind, so this row is agentjail's alone.
GITWS="$WORK/git-ws"
git init -q "$GITWS" 2>/dev/null || bench_die "needs git (git init $GITWS failed)"

# NAME -- CMD... rows separated by ":::", as abtime takes them; the first row of a group is the
# reference of its paired ratios.
NET_ROWS=(
	bwrap-equivalent -- bwrap "${BW_NET[@]}" /bin/true :::
	agentjail -- "$AJ" run -- /bin/true :::
	agentjail-git-workspace -- "$AJ" run -w "$GITWS" -- /bin/true :::
	unshare -- unshare "${UNSHARE_NET[@]}" --fork --mount-proc /bin/true :::
	bwrap-minimal -- "${MIN_BWRAP[@]}" /bin/true :::
	bare-true -- /bin/true
)
HOST_ROWS=(
	bwrap-equivalent-share-net -- bwrap "${BW_HOST[@]}" /bin/true :::
	agentjail-network-host -- "$AJ" run --network host -- /bin/true :::
	unshare-no-net -- unshare "${UNSHARE_HOST[@]}" --fork --mount-proc /bin/true :::
	bare-true -- /bin/true
)

# A run that leaves its cgroup behind would also slow the next ones down: list any that appear.
agentjail_cgroups() {
	find /sys/fs/cgroup -maxdepth 6 -type d -path '*agentjail*' -name 'run-*' 2>/dev/null | sort
}
CGROUPS_BEFORE=$(agentjail_cgroups)

# Each command must succeed once before it is timed: a failing sandbox is fast and meaningless.
check_rows() {
	local -a cmd=()
	local a
	for a in "$@" :::; do
		if [[ $a == ::: ]]; then
			"${cmd[@]:2}" >/dev/null || bench_die "row ${cmd[0]} failed: ${cmd[*]:2}"
			cmd=()
		else
			cmd+=("$a")
		fi
	done
}
check_rows "${NET_ROWS[@]}"
check_rows "${HOST_ROWS[@]}"

echo "== agentjail start-up: run -- /bin/true"
bench_header
echo "harness:    abtime, $ROUNDS rounds alternated after $WARMUP warm-up rounds," \
	"stdout of each command to /dev/null"
echo

NET_JSON=$("$BIN/abtime" "$ROUNDS" "$WARMUP" "${NET_ROWS[@]}")
HOST_JSON=$("$BIN/abtime" "$ROUNDS" "$WARMUP" "${HOST_ROWS[@]}")

python3 - "$TARGET_RATIO" "$NET_JSON" "$HOST_JSON" "$TARGET_MINIMAL" <<'EOF'
import json
import sys

target = float(sys.argv[1])
target_min = float(sys.argv[4])
groups = [("with network namespace", sys.argv[2]), ("host network", sys.argv[3])]
minimal = None
print("%-30s %10s %10s %13s %12s %5s" % ("", "median ms", "p90 ms", "paired ratio",
                                         "max RSS KiB", "fail"))
goal = None
for title, text in groups:
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    print("%s (ratio vs %s)" % (title, rows[0]["name"]))
    for r in rows:
        ratio = next(v for k, v in r.items() if k.startswith("paired_ratio_vs_"))
        print("  %-28s %10.3f %10.3f %12.3fx %12d %5d" % (r["name"], r["median_ms"], r["p90_ms"],
                                                        ratio, r["max_rss_kb"], r["failures"]))
        if r["name"] == "agentjail":
            goal = ratio
        if r["name"] == "bwrap-minimal":
            minimal = ratio
print()
print("goal: full agentjail sandbox <= %.2fx bwrap --unshare-all with equivalent mounts, paired"
      % target)
print("      measured %.3fx" % goal)
print("goal: full agentjail sandbox <= %.2fx bwrap-minimal" % target_min)
print("      measured %.3fx (its paired ratio over bwrap-minimal's, both against bwrap-equivalent)"
      % (goal / minimal))
EOF

echo
echo "-- raw (abtime JSON lines)"
echo "$NET_JSON"
echo "$HOST_JSON"
echo
echo "-- exact commands (cwd: an empty workspace; the bwrap data files are removed at exit)"
bench_print_commands "${NET_ROWS[@]}"
bench_print_commands "${HOST_ROWS[@]}"

LEFT=$(comm -13 <(echo "$CGROUPS_BEFORE") <(agentjail_cgroups) | sed '/^$/d')
if [[ -n $LEFT ]]; then
	echo
	echo "note: agentjail cgroups that appeared during this run and are still there"
	echo "      (other agentjail users on this host create them too):"
	echo "${LEFT//$'\n'/$'\n'  }" | sed '1s/^/  /'
fi
