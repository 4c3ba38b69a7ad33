#!/usr/bin/env bash
# What the sandbox adds to each system call (bench/README.md: "seccomp + Landlock overhead on a
# syscall-heavy loop: under 5 %"). bench/syscall-loop times getppid, stat and open+close loops
# from inside the process, so sandbox start-up is not in the figure. Five rows, alternated
# round by round so drift in the machine's load hits all alike:
#   bare              the loop on the host;
#   bwrap-equivalent  the loop in bubblewrap with the same namespaces and root filesystem as
#                     agentjail, without seccomp or Landlock;
#   bwrap+seccomp     bwrap-equivalent plus agentjail's compiled default seccomp filter alone;
#   bwrap+landlock    bwrap-equivalent plus a Landlock domain alone (bench/layer-exec.c);
#   agentjail         the loop under `agentjail run` with the default policy.
# agentjail vs bare is the whole cost of the sandbox on the loop; agentjail vs bwrap-equivalent
# takes the namespaces and mounts out and leaves seccomp, Landlock and the cgroup limits; the
# two single-layer rows show what the kernel charges for each layer by itself.
#
# usage: bench/run-syscall-overhead.sh
# environment: ROUNDS (30), WARMUP (2), ITERATIONS per loop (100000), SYSCALL_PATH the file
#              stat'ed and opened (/usr/bin/true), BUILD (build-bench), CC (cc),
#              AGENTJAIL (a binary to measure instead of building the tree's)
# Prints figures only; the exit status says whether the benchmark ran, not how it came out.
set -euo pipefail

ROUNDS=${ROUNDS:-30}
WARMUP=${WARMUP:-2}
ITERATIONS=${ITERATIONS:-100000}
SYSCALL_PATH=${SYSCALL_PATH:-/usr/bin/true}
TARGET_PCT=5

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
bench_cc syscall-loop
# layer-exec links the seccomp BPF the build generates from data/seccomp/default.rules, the
# filter agentjail applies (when AGENTJAIL names a binary built from another tree, the filter of
# this tree).
make -s -C "$ROOT" BUILD="$BUILD" "$BUILD/gen/seccomp_default.o" >&2 ||
	bench_die "building the seccomp filter failed"
"$CC" -std=gnu17 -O2 -Wall -Wextra -o "$BIN/layer-exec" "$ROOT/bench/layer-exec.c" \
	"$BIN/gen/seccomp_default.o" || bench_die "building layer-exec failed"
bench_bwrap_args BW_NET

# The binaries go into the workspace: the one path both sandboxes show at the same place.
cp "$BIN/syscall-loop" "$BIN/layer-exec" "$WS/"
LOOP=("$WS/syscall-loop" "$ITERATIONS" "$SYSCALL_PATH")
ROWS=(
	bare -- "${LOOP[@]}" :::
	bwrap-equivalent -- bwrap "${BW_NET[@]}" "${LOOP[@]}" :::
	bwrap+seccomp -- bwrap "${BW_NET[@]}" "$WS/layer-exec" seccomp "${LOOP[@]}" :::
	bwrap+landlock -- bwrap "${BW_NET[@]}" "$WS/layer-exec" landlock "${LOOP[@]}" :::
	agentjail -- "$AJ" run -- "${LOOP[@]}"
)

echo "== agentjail syscall overhead: getppid, stat, open+close loops"
bench_header
echo "harness:    $ROUNDS rounds alternated after $WARMUP warm-up rounds," \
	"$ITERATIONS calls per loop on $SYSCALL_PATH"
echo

python3 - "$ROUNDS" "$WARMUP" "$TARGET_PCT" "${ROWS[@]}" <<'EOF'
import json
import statistics
import subprocess
import sys

rounds, warmup, target = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rows, cur = [], None
for a in sys.argv[4:]:
    if cur is None:
        cur = {"name": a, "argv": [], "runs": []}
    elif a == ":::":
        rows.append(cur)
        cur = None
    elif a != "--" or cur["argv"]:
        cur["argv"].append(a)
rows.append(cur)
by_name = {r["name"]: r for r in rows}
keys = ["getppid_ns", "stat_ns", "openclose_ns", "total_ms"]


def run(row):
    p = subprocess.run(row["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("row %s failed (exit %d): %s\n%s" % (row["name"], p.returncode,
                                                      " ".join(row["argv"]), p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


for i in range(warmup + rounds):
    for row in rows:
        res = run(row)
        if i >= warmup:
            row["runs"].append(res)

head = "%-38s %12s %12s %14s %12s"
line = "  %-36s %12.1f %12.1f %14.1f %12.2f"
print(head % ("median", "getppid ns", "stat ns", "open+close ns", "total ms"))
for row in rows:
    print(line % ((row["name"],) + tuple(statistics.median(x[k] for x in row["runs"])
                                         for k in keys)))


def paired(a, b, k):
    """Median over rounds of a/b - 1, in percent."""
    return 100 * (statistics.median(x[k] / y[k] for x, y in zip(a["runs"], b["runs"])) - 1)


print()
print(head % ("paired overhead", "getppid", "stat", "open+close", "total"))
for a, b in [("agentjail", "bare"), ("bwrap-equivalent", "bare"),
             ("agentjail", "bwrap-equivalent"), ("bwrap+seccomp", "bwrap-equivalent"),
             ("bwrap+landlock", "bwrap-equivalent")]:
    print("  %-36s %+11.1f%% %+11.1f%% %+13.1f%% %+11.1f%%"
          % (("%s vs %s" % (a, b),) + tuple(paired(by_name[a], by_name[b], k) for k in keys)))
print()
print("goal: seccomp + Landlock overhead on a syscall-heavy loop < %g %%" % target)
print("      measured, paired total: agentjail vs bare %+.1f %%, "
      "agentjail vs bwrap-equivalent %+.1f %%"
      % (paired(by_name["agentjail"], by_name["bare"], "total_ms"),
         paired(by_name["agentjail"], by_name["bwrap-equivalent"], "total_ms")))
print()
print("-- raw (one JSON line per run)")
for i in range(rounds):
    for row in rows:
        print(json.dumps(dict(row=row["name"], round=i, **row["runs"][i])))
EOF

echo
echo "-- exact commands (cwd: the workspace; it and the bwrap data files are removed at exit)"
bench_print_commands "${ROWS[@]}"
