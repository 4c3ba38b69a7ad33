#!/usr/bin/env bash
# The gvisor tier (docs/gvisor.md) against the namespaces tier and plain runsc, paired: every
# group's rows run alternately through bench/abtime (A B C A B C ...), so the load of a shared
# machine hits all rows alike, and each row's median and its paired ratio against the first
# row are printed.
#   start-up      /bin/true
#   syscalls      bench/syscall-loop (getppid, stat, open+close loops), timed from inside
#   file walk     find over /usr/include (about 9,000 entries), stat'ing every entry
#   build         cc -O2 of bench/syscall-loop.c into /tmp (a small build: exec, read, write)
#   runsc exec    what one `runsc exec` into a live runsc sandbox costs (the exec path the
#                 tier does not take, docs/gvisor.md), and what a fork and exec inside the
#                 Sentry costs
#   exec          one exec of /bin/true into a live persistent sandbox from a connected
#                 client (bench/exec-loop): the namespaces tier's init against the gvisor
#                 tier's init inside the Sentry
#   idle memory   PSS of every process of a sandbox running `sleep` (supervisor, init, runsc,
#                 gofer, Sentry), median of IDLE_REPS sandboxes
# Plain runsc (`runsc do`, and `runsc run` on a bundle whose root is the host's /, read-only)
# runs as host root with --network=none; its stdio is a file and a pipe of the benchmark's,
# never /dev/null (Debian's runsc changes the owner of its stdio).
#
# usage: bench/run-gvisor.sh
# environment: ROUNDS (20) for start-up, HEAVY_ROUNDS (5) for the workloads, WARMUP (1),
#              ITERATIONS (2000), IDLE_REPS (3), EXEC_REPS (10), BUILD, CC, AGENTJAIL as
#              for the other benchmarks
# As root (the tier needs it). Prints figures only.
set -euo pipefail
ROUNDS=${ROUNDS:-20}
HEAVY_ROUNDS=${HEAVY_ROUNDS:-5}
WARMUP=${WARMUP:-1}
ITERATIONS=${ITERATIONS:-2000}
IDLE_REPS=${IDLE_REPS:-3}
EXEC_REPS=${EXEC_REPS:-10}

[[ $(id -u) == 0 ]] || { echo "${0##*/}: needs root (the gvisor tier does)" >&2; exit 1; }
command -v runsc >/dev/null || { echo "${0##*/}: needs runsc (apt-get install runsc)" >&2; exit 1; }

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
bench_cc abtime
bench_cc syscall-loop
RUNSC=$(command -v runsc)
cp "$BIN/syscall-loop" "$ROOT/bench/syscall-loop.c" "$WS/"
: >"$WORK/empty"

# Plain runsc: a bundle with the host's root read-only, and a wrapper giving it our own stdio.
mkdir -p "$WORK/bundle" "$WORK/rs"
python3 - "$WORK/bundle/config.json" <<'EOF'
import json, sys
json.dump({"ociVersion": "1.0.2", "root": {"path": "/", "readonly": True}, "hostname": "b",
           "process": {"args": ["/bin/true"], "env": ["PATH=/usr/bin:/bin"], "cwd": "/",
                       "user": {"uid": 0, "gid": 0}},
           "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                      {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"}],
           "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")]}},
          open(sys.argv[1], "w"))
EOF
cat >"$WORK/plain" <<EOF
#!/bin/bash
# plain do|run CMD...: runsc as host root, stdio of our own.
mode=\$1; shift
if [[ \$mode == do ]]; then
	"$RUNSC" --network=none --root="$WORK/rs" do --cwd "$WS" "\$@" <"$WORK/empty" 2>&1 | cat
else
	"$RUNSC" --network=none --root="$WORK/rs" run --bundle "$WORK/bundle" "b\$\$-\$RANDOM" \\
		<"$WORK/empty" 2>&1 | cat
fi
EOF
chmod +x "$WORK/plain"
NULL_BEFORE=$(stat -c '%u:%g %a' /dev/null)

AJN=("$AJ" run -w "$WS" --)
AJG=("$AJ" run --tier gvisor -w "$WS" --)
WALK=(find /usr/include -xdev -printf '%s\n')
BUILDCMD=(cc -O2 -o /tmp/a.out syscall-loop.c)

group() { # ROUNDS TITLE ROWS...: abtime over the rows, one JSON line per row
	local rounds=$1 title=$2
	shift 2
	echo "== $title ($rounds rounds)"
	"$BIN/abtime" "$rounds" "$WARMUP" "$@" | tee -a "$WORK/all.jsonl" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print("  %-22s %10s %10s %13s %6s" % ("", "median ms", "p90 ms", "paired ratio", "fail"))
for r in rows:
    ratio = next(v for k, v in r.items() if k.startswith("paired_ratio_vs_"))
    print("  %-22s %10.1f %10.1f %12.2fx %6d" % (r["name"], r["median_ms"], r["p90_ms"], ratio,
                                               r["failures"]))'
}

bench_header
echo "runsc:      $("$RUNSC" --version | head -1), platform ptrace"
echo "harness:    abtime, rounds alternated after $WARMUP warm-up round(s)"
echo
group "$ROUNDS" "start-up: /bin/true" \
	namespaces -- "${AJN[@]}" /bin/true ::: \
	gvisor -- "${AJG[@]}" /bin/true ::: \
	runsc-do -- "$WORK/plain" do /bin/true ::: \
	runsc-run -- "$WORK/plain" run
group "$HEAVY_ROUNDS" "syscall-heavy: syscall-loop $ITERATIONS (whole run)" \
	namespaces -- "${AJN[@]}" ./syscall-loop "$ITERATIONS" /usr/bin/true ::: \
	gvisor -- "${AJG[@]}" ./syscall-loop "$ITERATIONS" /usr/bin/true ::: \
	runsc-do -- "$WORK/plain" do ./syscall-loop "$ITERATIONS" /usr/bin/true
echo "  per call, from inside (ns): namespaces / gvisor"
for t in "${AJN[0]} ${AJN[*]:1}" "${AJG[0]} ${AJG[*]:1}"; do
	# shellcheck disable=SC2086  # the words split on purpose
	$t ./syscall-loop "$ITERATIONS" /usr/bin/true 2>/dev/null | sed 's/^/    /'
done
group "$HEAVY_ROUNDS" "file walk: find /usr/include -printf %s" \
	namespaces -- "${AJN[@]}" "${WALK[@]}" ::: \
	gvisor -- "${AJG[@]}" "${WALK[@]}" ::: \
	runsc-do -- "$WORK/plain" do "${WALK[@]}"
group "$HEAVY_ROUNDS" "build: cc -O2 syscall-loop.c" \
	namespaces -- "${AJN[@]}" "${BUILDCMD[@]}" ::: \
	gvisor -- "${AJG[@]}" "${BUILDCMD[@]}" ::: \
	runsc-do -- "$WORK/plain" do "${BUILDCMD[@]}"

# One runsc exec into a live runsc sandbox, as a persistent sandbox of the tier would pay it.
echo "== runsc exec into a live runsc sandbox ($EXEC_REPS calls)"
python3 - "$WORK/bundle/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); c["process"]["args"] = ["/bin/sleep", "120"]
json.dump(c, open(sys.argv[1], "w"))
EOF
"$RUNSC" --network=none --root="$WORK/rs" run --detach --bundle "$WORK/bundle" bexec \
	<"$WORK/empty" >"$WORK/exec.log" 2>&1
for _ in $(seq "$EXEC_REPS"); do
	s=$(date +%s%N)
	"$RUNSC" --root="$WORK/rs" exec bexec /bin/true <"$WORK/empty" >>"$WORK/exec.log" 2>&1
	echo $((($(date +%s%N) - s) / 1000))
done | sort -n | awk '{v[NR]=$1} END {printf "  median %.1f ms, min %.1f ms, max %.1f ms\n", v[int((NR+1)/2)]/1000, v[1]/1000, v[NR]/1000}'
"$RUNSC" --root="$WORK/rs" kill bexec KILL >/dev/null 2>&1 || true
# What the fast path (an init inside the Sentry forking commands) would pay per command: a
# fork and exec of /bin/true inside the Sentry, timed from inside over 50 of them.
echo "== fork+exec of /bin/true inside the Sentry (the fast path's own cost; 50 in one run)"
for t in namespaces gvisor; do
	if [[ $t == gvisor ]]; then cmd=("${AJG[@]}"); else cmd=("${AJN[@]}"); fi
	"${cmd[@]}" python3 -c 'import os, subprocess, time
t = time.monotonic()
for _ in range(50): subprocess.run(["/bin/true"])
print("%.2f" % ((time.monotonic() - t) * 1000 / 50))' 2>/dev/null |
		awk -v t="$t" '{printf "  %-12s %s ms per command\n", t, $1}'
done
sleep 0.5
"$RUNSC" --root="$WORK/rs" delete -force bexec >/dev/null 2>&1 || true

# Exec into a live persistent sandbox, from a client already connected (bench/exec-loop.c):
# the namespaces tier's init, and the gvisor tier's init inside the Sentry.
bench_cc exec-loop
echo "== exec of /bin/true into a live persistent sandbox (exec-loop, $ROUNDS rounds)"
export AGENTJAIL_STATE_DIR="$WORK/state"
for t in namespaces gvisor; do
	"$AJ" create --tier "$t" --name "bx-$t" >/dev/null
	id=$("$AJ" ls --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if s["name"] == sys.argv[1]][0])' "bx-$t")
	"$BIN/exec-loop" "/run/agentjail/sb/$id.sock" "$ROUNDS" "$WARMUP" /bin/true | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["name"] in ("engine-exec", "engine-started", "bare-posix_spawn"):
        print("  %-12s %-18s median %8.2f ms  p90 %8.2f ms" % (sys.argv[1], r["name"], r["median_ms"], r["p90_ms"]))' "$t"
	"$AJ" rm -f "bx-$t" >/dev/null
done
unset AGENTJAIL_STATE_DIR

# Idle memory: PSS of the process tree under each sandbox's top process.
tree_pss_kib() {
	python3 - "$1" <<'EOF'
import os, sys
top = int(sys.argv[1]); seen, todo, total = set(), [top], 0
while todo:
    p = todo.pop()
    if p in seen: continue
    seen.add(p)
    try:
        for t in os.listdir("/proc/%d/task" % p):
            todo += [int(c) for c in open("/proc/%d/task/%s/children" % (p, t)).read().split()]
        for line in open("/proc/%d/smaps_rollup" % p):
            if line.startswith("Pss:"): total += int(line.split()[1])
    except OSError:
        pass
print(total, len(seen))
EOF
}
echo "== idle memory (PSS of the whole process tree, median of $IDLE_REPS)"
for row in namespaces gvisor runsc-do; do
	vals=()
	for _ in $(seq "$IDLE_REPS"); do
		case $row in
		namespaces) "${AJN[@]}" sleep 30 </dev/null >/dev/null 2>&1 & ;;
		gvisor) "${AJG[@]}" sleep 30 </dev/null >/dev/null 2>&1 & ;;
		runsc-do) "$WORK/plain" do sleep 30 >/dev/null 2>&1 & ;;
		esac
		pid=$!
		sleep 4
		vals+=("$(tree_pss_kib "$pid")")
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	printf '%s\n' "${vals[@]}" | sort -n | awk -v r="$row" '{v[NR]=$1; n[NR]=$2} END {m=int((NR+1)/2); printf "  %-12s %8.1f MiB over %d processes\n", r, v[m]/1024, n[m]}'
done
"$RUNSC" --root="$WORK/rs" list 2>/dev/null | awk 'NR > 1 {print $1}' | while read -r id; do
	"$RUNSC" --root="$WORK/rs" delete -force "$id" >/dev/null 2>&1 || true
done
[[ $(stat -c '%u:%g %a' /dev/null) == "$NULL_BEFORE" ]] ||
	echo "WARNING: /dev/null changed owner or mode during the benchmark"
