#!/usr/bin/env bash
# Persistent sandboxes (bench/README.md): exec into a live sandbox, the latency of the lifecycle
# verbs against the workspace's size, the memory of an idle sandbox, and how many idle
# sandboxes fit on this machine.
#
#   exec      exec-loop.c on one control connection: {"op":"exec"} of /bin/true -> exit event,
#             alternated with a bare posix_spawn+wait of /bin/true (EXEC_RUNS runs, each on a
#             fresh sandbox); then `agentjail exec NAME -- /bin/true` through abtime,
#             alternated with /bin/true, nsenter into the sandbox's namespaces, and
#             `crun exec` / `runc exec` into an idle container when one of them works here.
#   latency   create (start included), exec, pause, resume, stop (right after the copies of
#             the running snapshot and fork, and after a sync), start, snapshot of a running and
#             of a stopped sandbox, fork of a running and of a stopped sandbox, each with SIZES
#             of data in the sandbox's own (writable) layer, REPS repetitions.
#   memory    RSS/PSS (smaps_rollup) of the supervisor and every process below it (init, helper
#             processes), and the memory cgroup, of idle sandboxes.
#   density   idle sandboxes created until DENSITY_MAX, MemAvailable < DENSITY_MIN_AVAIL_MIB
#             or DENSITY_SECONDS; time per create, memory per sandbox; then all removed.
#
# usage: bench/run-persistent.sh [SECTION...]        (default: exec latency memory density)
# environment: ROUNDS (2000), WARMUP (100): engine exec rounds; EXEC_RUNS (2);
#              CLI_ROUNDS (300), CLI_WARMUP (20): abtime rounds for the CLI-level rows;
#              SIZES ("1 100 1024", MiB), REPS (5);
#              DENSITY_MAX (1000), DENSITY_MIN_AVAIL_MIB (4096), DENSITY_SECONDS (600),
#              DENSITY_CPU_SECONDS (60: the window of the idle sandboxes' CPU, each
#              supervisor's metrics sampling included), DENSITY_CPU_AFTER (0: seconds to
#              wait before it, for the sampling of idle sandboxes to slow to its minute),
#              RM_PARALLEL (32); DENSITY_VIA (cli: `agentjail create`; serve: POST
#              /v1/sandboxes to an `agentjail serve` of the state directory, whose zygote forks
#              the supervisors); BUILD, CC, AGENTJAIL as for the other benchmarks.
# Every sandbox lives in a private state directory under the scratch directory and is removed
# at exit. Prints figures only; the exit status says whether the benchmark ran.
set -euo pipefail

ROUNDS=${ROUNDS:-2000}
WARMUP=${WARMUP:-100}
EXEC_RUNS=${EXEC_RUNS:-2}
CLI_ROUNDS=${CLI_ROUNDS:-300}
CLI_WARMUP=${CLI_WARMUP:-20}
SIZES=${SIZES:-"1 100 1024"}
REPS=${REPS:-5}
DENSITY_MAX=${DENSITY_MAX:-1000}
DENSITY_MIN_AVAIL_MIB=${DENSITY_MIN_AVAIL_MIB:-4096}
DENSITY_SECONDS=${DENSITY_SECONDS:-600}
DENSITY_CPU_SECONDS=${DENSITY_CPU_SECONDS:-60}
DENSITY_CPU_AFTER=${DENSITY_CPU_AFTER:-0}
RM_PARALLEL=${RM_PARALLEL:-32}
DENSITY_VIA=${DENSITY_VIA:-cli}
SECTIONS=("$@")
((${#SECTIONS[@]})) || SECTIONS=(exec latency memory density)

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
command -v sqlite3 >/dev/null || bench_die "needs sqlite3 (the control socket is read from the state store)"
bench_cc abtime
bench_cc exec-loop
bench_cc timeit

export AGENTJAIL_STATE_DIR="$WORK/state"
mkdir -p "$AGENTJAIL_STATE_DIR" "$WORK/samples"
STATE_DB="$AGENTJAIL_STATE_DIR/state.db"
PEER_ID="agentjail-bench-$$"
PEER_RT=
IDS_SEEN="$WORK/ids"
: >"$IDS_SEEN"

# Removes every sandbox of the private state directory (in parallel: stopping one waits for
# its supervisor to be gone), the peer container, then the scratch directory.
cleanup() {
	local names
	set +e
	[[ -n ${DENSITY_SERVE:-} ]] && kill -TERM "$DENSITY_SERVE" 2>/dev/null && wait "$DENSITY_SERVE"
	if [[ -e $STATE_DB ]]; then
		sqlite3 "$STATE_DB" 'select id from sandboxes' >>"$IDS_SEEN" 2>/dev/null
		names=$("$AJ" ls --json 2>/dev/null | python3 -c \
			'import json,sys; print("\n".join(s["name"] for s in json.load(sys.stdin)))')
		[[ -n $names ]] && xargs -r -P "$RM_PARALLEL" -n 1 "$AJ" rm -f <<<"$names" >/dev/null
		"$AJ" snapshots ls --json 2>/dev/null | python3 -c \
			'import json,sys; print("\n".join(s["name"] for s in json.load(sys.stdin)))' |
			xargs -r "$AJ" snapshots rm >/dev/null 2>&1
	fi
	if [[ -n $PEER_RT ]]; then
		"$PEER_RT" kill "$PEER_ID" KILL >/dev/null 2>&1
		sleep 0.2
		"$PEER_RT" delete -f "$PEER_ID" >/dev/null 2>&1
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# ---- helpers -------------------------------------------------------------------------------

# aj ARGS...: the agentjail binary on the private state directory; failures end the benchmark.
aj() {
	"$AJ" "$@" || bench_die "failed: agentjail $*"
}

sock_of() {
	sqlite3 "$STATE_DB" "select socket from sandboxes where name = '$1'"
}

supervisor_of() {
	sqlite3 "$STATE_DB" "select supervisor_pid from sandboxes where name = '$1'"
}

# The sandbox's init: the supervisor's child named agentjail-init (the supervisor may keep
# other children).
init_of() {
	local sup pid kids
	sup=$(supervisor_of "$1")
	read -ra kids < <(cat "/proc/$sup/task/"*/children)
	for pid in "${kids[@]}"; do
		[[ $(<"/proc/$pid/comm") == agentjail-init ]] && echo "$pid" && return
	done
	bench_die "no init below supervisor $sup of $1"
}

# tm KEY CMD...: times CMD with timeit into samples/KEY; the first command of each KEY is kept
# for the report exactly as run.
declare -A FIRST_CMD=()
tm() {
	local key=$1
	shift
	if [[ -z ${FIRST_CMD[$key]:-} ]]; then
		FIRST_CMD[$key]=$(printf ' %q' "$@")
		KEYS+=("$key")
	fi
	"$BIN/timeit" "$@" >>"$WORK/samples/${key//\//_}" || bench_die "failed: $*"
}
KEYS=()
EXEC_LOOP_CMD=
CLI_ROWS=()

# fill NAME MIB: MIB of fresh random data in files inside the sandbox's workspace, then written
# back to disk so that writeback does not land on the next timed step.
fill_cmd() {
	local mib=$1 files kib
	if ((mib >= 1024)); then files=16; elif ((mib >= 100)); then files=10; else files=4; fi
	kib=$((mib * 1024 / files))
	echo "i=0; while [ \$i -lt $files ]; do dd if=/dev/urandom of=data-\$i bs=64k" \
		"count=$((kib / 64)) status=none || exit 1; i=\$((i + 1)); done"
}
fill() {
	aj exec "$1" -- sh -c "$(fill_cmd "$2")"
	sync
}

meminfo() {
	awk '{sub(":", "", $1); printf "%s=%s ", $1, $2} END {print ""}' /proc/meminfo
}

# ---- header ----------------------------------------------------------------------------------

echo "== agentjail persistent sandboxes: exec, lifecycle latency, idle memory, density"
bench_header
echo "nsenter:    $(nsenter --version)"
echo "memory:     $(awk '/MemTotal|MemAvailable/ {printf "%s %d MiB  ", $1, $2 / 1024}' /proc/meminfo)"
echo "state dir:  $AGENTJAIL_STATE_DIR (private; sandboxes removed at exit)"
echo "sections:   ${SECTIONS[*]}"

has_section() {
	local s
	for s in "${SECTIONS[@]}"; do [[ $s == "$1" ]] && return 0; done
	return 1
}

# ---- 1. exec ---------------------------------------------------------------------------------

# A container to exec into with crun or runc (root only: the bundle is rootful): rootfs with
# /usr bound read-only, the runtime's default namespaces (pid, net, ipc, uts, mount), sleep as
# its process. Sets PEER_RT, or PEER_NOTE with why not.
peer_setup() {
	local b="$WORK/peer" rt err l
	PEER_NOTE=
	if (($(id -u) != 0)); then
		PEER_NOTE="crun/runc: skipped (the bundle is rootful)"
		return 1
	fi
	mkdir -p "$b/rootfs/usr" "$b/rootfs/proc" "$b/rootfs/dev" "$b/rootfs/tmp"
	for l in bin sbin lib lib64; do ln -s "usr/$l" "$b/rootfs/$l"; done
	for rt in crun runc; do
		if ! command -v "$rt" >/dev/null; then
			PEER_NOTE+="$rt: not installed; "
			continue
		fi
		rm -f "$b/config.json"
		(cd "$b" && "$rt" spec) || continue
		python3 - "$b/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["terminal"] = False
c["process"]["args"] = ["sleep", "infinity"]
c["root"] = {"path": "rootfs", "readonly": True}
c["mounts"].append({"destination": "/usr", "type": "bind", "source": "/usr",
                    "options": ["rbind", "ro"]})
json.dump(c, open(sys.argv[1], "w"))
EOF
		# stderr to a file: the detached container keeps the descriptors it was given.
		if "$rt" run -d --bundle "$b" "$PEER_ID" </dev/null >/dev/null 2>"$WORK/peer.err" &&
			"$rt" exec "$PEER_ID" /bin/true; then
			PEER_RT=$rt
			PEER_NOTE+="$rt $("$rt" --version | head -1 | awk '{print $NF}'): used"
			return 0
		fi
		err=$(head -c 300 "$WORK/peer.err")
		PEER_NOTE+="$rt: failed: ${err//$'\n'/ }; "
		"$rt" delete -f "$PEER_ID" >/dev/null 2>&1 || true
	done
	return 1
}

section_exec() {
	local run name sock init uid gid json rows=() cli_json=() docker_note
	echo
	echo "== 1. exec of /bin/true in a live sandbox"
	echo "engine: exec-loop, one connection, $ROUNDS rounds after $WARMUP warm-up, alternated" \
		"with a bare posix_spawn+wait of /bin/true (stdio /dev/null in both)"
	for ((run = 1; run <= EXEC_RUNS; run++)); do
		name="exec-$run"
		aj create --name "$name" >/dev/null
		sock=$(sock_of "$name")
		json=$("$BIN/exec-loop" "$sock" "$ROUNDS" "$WARMUP" /bin/true) ||
			bench_die "exec-loop failed on $name: $json"
		echo "$json" >"$WORK/exec-run-$run.json"
		rows+=("run $run" "$json")
		EXEC_LOOP_CMD=$(printf ' %q' "$BIN/exec-loop" "$sock" "$ROUNDS" "$WARMUP" /bin/true)
	done
	python3 - "${rows[@]}" <<'EOF'
import json, sys
args = sys.argv[1:]
print("%-8s %-18s %9s %9s %9s %9s %9s %8s %5s" % ("", "", "median ms", "p90 ms", "p99 ms",
      "min ms", "max ms", "ratio", "fail"))
for title, text in zip(args[::2], args[1::2]):
    for line in text.splitlines():
        r = json.loads(line)
        ratio = next(v for k, v in r.items() if k.startswith("paired_ratio_vs_"))
        print("%-8s %-18s %9.3f %9.3f %9.3f %9.3f %9.3f %7.2fx %5d" % (
            title, r["name"], r["median_ms"], r["p90_ms"], r["p99_ms"], r["min_ms"],
            r["max_ms"], ratio, r["failures"]))
        title = ""
print("rows: engine-exec = request sent -> exit event received; engine-started = request sent"
      " -> reply {ok, exec, pid}")
print("      (init's posix_spawn has returned, i.e. the command is exec'd); supervisor-wall ="
      " the exit event's")
print("      wall_ms (supervisor: started -> exit reported by init); ping-roundtrip = {op: ping}"
      " -> reply on the")
print("      same connection (protocol and event loop, no init); ratio = median of per-round"
      " ratios vs bare.")
print("goal: engine exec median < 1 ms (bench/README.md)")
EOF

	# CLI level: a new agentjail process per exec, next to peers that enter a live sandbox.
	name="exec-1"
	init=$(init_of "$name")
	uid=$(aj exec "$name" -- id -u)
	gid=$(aj exec "$name" -- id -g)
	CLI_ROWS=(
		bare-true -- /bin/true :::
		agentjail-exec -- "$AJ" exec "$name" -- /bin/true :::
		agentjail-start -- "$AJ" --version :::
		nsenter -- nsenter -t "$init" -a -r -w -S "$uid" -G "$gid" /bin/true
	)
	peer_setup || true
	if [[ -n $PEER_RT ]]; then
		CLI_ROWS+=(::: "$PEER_RT-exec" -- "$PEER_RT" exec "$PEER_ID" /bin/true)
	fi
	docker_note="docker: $(docker info >/dev/null 2>&1 && echo "daemon up, not measured" ||
		echo "no daemon reachable")"
	command -v docker >/dev/null || docker_note="docker: not installed"
	command -v podman >/dev/null || docker_note+="; podman: not installed"
	for ((run = 1; run <= EXEC_RUNS; run++)); do
		cli_json+=("run $run" "$("$BIN/abtime" "$CLI_ROUNDS" "$CLI_WARMUP" "${CLI_ROWS[@]}")")
	done
	echo
	echo "CLI level: abtime, $CLI_ROUNDS rounds alternated after $CLI_WARMUP warm-up rounds," \
		"stdout to /dev/null; peers: ${PEER_NOTE:-none}; $docker_note"
	python3 - "${cli_json[@]}" <<'EOF'
import json, sys
args = sys.argv[1:]
print("%-8s %-18s %10s %10s %13s %12s %5s" % ("", "", "median ms", "p90 ms", "paired ratio",
      "max RSS KiB", "fail"))
floors = []
for title, text in zip(args[::2], args[1::2]):
    med = {}
    for line in text.splitlines():
        r = json.loads(line)
        ratio = next(v for k, v in r.items() if k.startswith("paired_ratio_vs_"))
        print("%-8s %-18s %10.3f %10.3f %12.2fx %12d %5d" % (
            title, r["name"], r["median_ms"], r["p90_ms"], ratio, r["max_rss_kb"],
            r["failures"]))
        med[r["name"]] = r["median_ms"]
        title = ""
    if med.get("bare-true") and "agentjail-start" in med:
        floors.append((med["agentjail-start"] + med["bare-true"]) / med["bare-true"])
print("agentjail-start: `agentjail --version`, the client's own start and exit with nothing sent.")
if floors:
    print("floor of agentjail-exec, two process starts (agentjail-start + bare-true, medians) over")
    print("bare-true, before any work of the client or the sandbox: " +
          ", ".join("%.2fx" % f for f in floors) + " (goal: <= 2.5x)")
print("nsenter enters the sandbox's namespaces, root and uid only: no cgroup, no seccomp,")
print("no Landlock, no capability drop; crun/runc exec: the runtime's default spec (no user")
print("namespace, its default capabilities, its cgroup).")
EOF
	for ((run = 1; run <= EXEC_RUNS; run++)); do
		aj rm -f "exec-$run" >/dev/null
	done
}

# ---- 2. lifecycle latency against the workspace's size ----------------------------------------

latency_size() {
	local mib=$1 r base="base-$1" snap="snap-$1" x y sock
	aj create --name "$base" >/dev/null
	fill "$base" "$mib"
	echo "  $mib MiB: $(aj exec "$base" -- du -sk . | awk '{print $1}') KiB in" \
		"$(aj exec "$base" -- sh -c 'ls | wc -l') files"
	aj snapshot "$base" --name "$snap" >/dev/null
	sock=$(sock_of "$base")
	"$BIN/exec-loop" "$sock" 300 30 /bin/true >"$WORK/samples/engine-$mib.json" ||
		bench_die "exec-loop failed on $base"
	for ((r = 1; r <= REPS; r++)); do
		tm "create --from SNAP (start included)@$mib" "$AJ" create --from "$snap" --name "c-$mib-$r"
		tm "exec -- /bin/true (CLI)@$mib" "$AJ" exec "$base" -- /bin/true
		tm "pause@$mib" "$AJ" pause "$base"
		tm "resume@$mib" "$AJ" resume "$base"
		tm "snapshot, running@$mib" "$AJ" snapshot "$base" --name "sr-$mib-$r"
		tm "fork, running source (fork started)@$mib" "$AJ" fork "$base" --name "fr-$mib-$r"
		tm "stop@$mib" "$AJ" stop "$base"
		tm "start@$mib" "$AJ" start "$base"
		sync
		tm "stop, host page cache clean (after sync)@$mib" "$AJ" stop "$base"
		aj start "$base" >/dev/null
		aj rm -f "c-$mib-$r" "fr-$mib-$r-1" >/dev/null
		aj snapshots rm "sr-$mib-$r" >/dev/null

		# A stopped sandbox's snapshot or fork moves its writable layer: each needs a
		# sandbox of its own with the data still there.
		x="xs-$mib-$r"
		aj create --name "$x" >/dev/null
		fill "$x" "$mib"
		aj stop "$x" >/dev/null
		tm "snapshot, stopped@$mib" "$AJ" snapshot "$x" --name "ss-$mib-$r"
		aj rm "$x" >/dev/null
		aj snapshots rm "ss-$mib-$r" >/dev/null

		y="ys-$mib-$r"
		aj create --name "$y" >/dev/null
		fill "$y" "$mib"
		aj stop "$y" >/dev/null
		tm "fork, stopped source (fork started)@$mib" "$AJ" fork "$y" --name "fs-$mib-$r"
		aj rm -f "fs-$mib-$r-1" >/dev/null
		aj rm "$y" >/dev/null
	done
	aj rm -f "$base" >/dev/null
	aj snapshots rm "$snap" >/dev/null
}

section_latency() {
	local mib
	echo
	echo "== 2. lifecycle latency against the data in the workspace ($REPS repetitions," \
		"medians; timeit: spawn -> reaped exit)"
	echo "data: random files written inside the sandbox by exec (dd from /dev/urandom), then" \
		"sync; sizes (MiB): $SIZES"
	for mib in $SIZES; do
		latency_size "$mib"
	done
	python3 - "$WORK/samples" "$SIZES" "${KEYS[@]}" <<'EOF'
import json, os, statistics, sys
d, sizes, keys = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
ops = []
for k in keys:
    op = k.rsplit("@", 1)[0]
    if op not in ops:
        ops.append(op)
def cell(v):
    return "%8.1f (%s-%s)" % (statistics.median(v), fmt(min(v)), fmt(max(v)))
def fmt(x):
    return "%.0f" % x if x >= 10 else "%.1f" % x
print()
print("%-40s" % "median ms (min-max)" + "".join("%22s" % (s + " MiB") for s in sizes))
for op in ops:
    row = "%-40s" % op
    for s in sizes:
        p = os.path.join(d, ("%s@%s" % (op, s)).replace("/", "_"))
        v = [float(x) for x in open(p)] if os.path.exists(p) else []
        row += "%22s" % (cell(v) if v else "-")
    print(row)
row = "%-40s" % "exec, engine (exec-loop, 300 rounds)"
for s in sizes:
    p = os.path.join(d, "engine-%s.json" % s)
    r = [json.loads(l) for l in open(p)] if os.path.exists(p) else []
    e = [x for x in r if x["name"] == "engine-exec"]
    row += "%22s" % ("%8.3f p99 %.2f" % (e[0]["median_ms"], e[0]["p99_ms"]) if e else "-")
print(row)
EOF
	echo
	echo "notes: 'running' snapshot and fork copy the writable layer with the sandbox paused;"
	echo "'stopped' ones rename it into a layer. stop waits until the supervisor process is"
	echo "gone (its zombie reaped by whoever adopted it; PID 1 here: $(ps -o comm= -p 1)); the"
	echo "first stop row follows the running snapshot and fork, whose copies are still dirty in"
	echo "the page cache; the second follows a sync."
	echo
	echo "-- exact commands (first repetition; names vary per repetition and size)"
	local k
	for k in "${KEYS[@]}"; do
		printf '  %s:%s\n' "$k" "${FIRST_CMD[$k]}"
	done
	printf '  fill (untimed), e.g. 1 GiB: %s exec NAME -- sh -c %q; sync\n' "$AJ" \
		"$(fill_cmd 1024)"
	printf '  exec, engine: %s SOCKET 300 30 /bin/true\n' "$BIN/exec-loop"
}

# ---- 3. idle memory ----------------------------------------------------------------------------

# mem_report NAME...: the processes of each sandbox (supervisor and everything below it) and
# its memory cgroup.
mem_report() {
	local n args=()
	for n in "$@"; do
		args+=("$n:$(supervisor_of "$n")")
	done
	python3 "$ROOT/bench/sandbox-mem.py" detail "${args[@]}"
}

section_memory() {
	echo
	echo "== 3. memory of idle sandboxes (supervisor and every process below it,"\
		"/proc/PID/smaps_rollup; 3 s after create)"
	aj create --name mem-1 >/dev/null
	aj create --name mem-2 >/dev/null
	aj create --name mem-3 >/dev/null
	sleep 3
	mem_report mem-1 mem-2 mem-3
	echo "after 1000 execs of /bin/true in mem-1 (exec-loop):"
	"$BIN/exec-loop" "$(sock_of mem-1)" 1000 0 /bin/true >/dev/null ||
		bench_die "exec-loop failed on mem-1"
	sleep 1
	mem_report mem-1
	echo "goal: idle sandbox (supervisor + init) < 2 MiB (bench/README.md). PSS shares the"
	echo "binary's pages among all sandboxes (and with other agentjail processes on the host);"
	echo "section 4 gives the per-sandbox cost with kernel memory included."
	echo "commands: agentjail create --name mem-N; python3 bench/sandbox-mem.py detail NAME:SUP"
	echo "(SUP = sandboxes.supervisor_pid in the state store, as inspect --json shows it;"
	echo "its descendants from /proc/PID/task/*/children; memory cgroup from /proc/INIT/cgroup)."
	aj rm -f mem-1 mem-2 mem-3 >/dev/null
}

# ---- 4. density ----------------------------------------------------------------------------------

# avail_of MEMINFO_LINE: MemAvailable (KiB) from a meminfo snapshot.
avail_of() {
	tr ' ' '\n' <<<"$1" | awk -F= '$1 == "MemAvailable" {print $2}'
}

# density_create NAME: one idle sandbox; prints the create's milliseconds (start included).
density_create() {
	local t
	if [[ $DENSITY_VIA == serve ]]; then
		t=$(curl -sf -o /dev/null -w '%{time_total}' --unix-socket "$WORK/api.sock" \
			-H 'Content-Type: application/json' \
			-d "{\"name\": \"$1\", \"policy\": $(bench_serve_policy)}" \
			http://aj/v1/sandboxes) || return 1
		awk -v t="$t" 'BEGIN {printf "%.3f\n", t * 1000}'
	else
		"$BIN/timeit" "$AJ" create --name "$1"
	fi
}

# density_serve: with DENSITY_VIA=serve, a daemon on the private state directory (and its
# zygote), until the end of the section.
density_serve() {
	[[ $DENSITY_VIA == serve ]] || return 0
	"$AJ" serve --socket "$WORK/api.sock" --workers 2 2>"$WORK/serve.log" &
	DENSITY_SERVE=$!
	for _ in $(seq 100); do
		curl -sf --unix-socket "$WORK/api.sock" http://aj/v1/health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	bench_die "serve did not start: $(cat "$WORK/serve.log")"
}

section_density() {
	local i=0 reason="reached DENSITY_MAX=$DENSITY_MAX" avail t0 before after left sups=() ids=()
	local min_kb=$((DENSITY_MIN_AVAIL_MIB * 1024)) t_rm
	echo
	echo "== 4. density: idle sandboxes until $DENSITY_MAX, MemAvailable < $DENSITY_MIN_AVAIL_MIB" \
		"MiB or $DENSITY_SECONDS s, created through $DENSITY_VIA"
	density_serve
	sync
	sleep 1
	before=$(meminfo)
	t0=$SECONDS
	while ((i < DENSITY_MAX)); do
		avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
		if ((avail < min_kb)); then
			reason="MemAvailable $((avail / 1024)) MiB < $DENSITY_MIN_AVAIL_MIB MiB"
			break
		fi
		if ((SECONDS - t0 >= DENSITY_SECONDS)); then
			reason="time limit ${DENSITY_SECONDS}s"
			break
		fi
		if ! density_create "d-$((i + 1))" >>"$WORK/samples/density-create" \
			2>"$WORK/density-err"; then
			reason="create d-$((i + 1)) failed: $(head -c 400 "$WORK/density-err")"
			break
		fi
		i=$((i + 1))
	done
	DENSITY_WALL=$((SECONDS - t0))
	sleep 5
	after=$(meminfo)
	echo "created: $i sandboxes in ${DENSITY_WALL}s; stopped because: $reason"
	((i)) || return 0
	mapfile -t sups < <(sqlite3 "$STATE_DB" "select supervisor_pid from sandboxes where name like 'd-%'")
	python3 - "$WORK/samples/density-create" "$i" "$before" "$after" <<'PY'
import statistics, sys
samples, n, before, after = sys.argv[1:]
n = int(n)
t = [float(x) for x in open(samples)]
mb = dict(kv.split("=") for kv in before.split())
ma = dict(kv.split("=") for kv in after.split())
print("create (start included): median %.1f ms, p90 %.1f, max %.1f ms" % (
    statistics.median(t), sorted(t)[int(0.9 * (len(t) - 1))], max(t)))
print("  median per block of 100 creates:", " ".join("%.1f" % statistics.median(t[k:k + 100])
      for k in range(0, len(t), 100)))
print("memory per sandbox from /proc/meminfo, (after - before) / %d, KiB:" % n)
for k in ("MemAvailable", "MemFree", "AnonPages", "Shmem", "Cached", "Slab", "SUnreclaim",
          "KernelStack", "PageTables", "Percpu"):
    if k in mb and k in ma:
        d = int(ma[k]) - int(mb[k])
        print("  %-18s %8.0f   (total %+.0f MiB)" % (k + (" (drop)" if k.startswith("Mem") else ""),
              (-d if k.startswith("Mem") else d) / n, d / 1024))
PY
	echo "host MemAvailable before / after: $(avail_of "$before") / $(avail_of "$after") KiB" \
		"(anything else running on the host counts too)"
	python3 "$ROOT/bench/sandbox-mem.py" sum "${sups[@]}"
	if [[ -n ${DENSITY_SERVE:-} ]]; then
		echo "the daemon and its zygote (one for all the sandboxes; not in the sums above):"
		python3 "$ROOT/bench/sandbox-mem.py" detail "serve:$DENSITY_SERVE" | sed 's/^/  /'
	fi
	echo "idle CPU (supervisors and what runs below them; the metrics sampling is all a" \
		"supervisor does while idle; goal: under 1 % of one CPU for 1,000), after" \
		"${DENSITY_CPU_AFTER}s:"
	sleep "$DENSITY_CPU_AFTER"
	python3 "$ROOT/bench/sandbox-mem.py" cpu "$DENSITY_CPU_SECONDS" "${sups[@]}"
	printf 'agentjail ls with %d sandboxes: %s ms\n' "$i" "$("$BIN/timeit" "$AJ" ls)"
	printf 'agentjail exec d-%d -- /bin/true with %d sandboxes: %s ms\n' "$i" "$i" \
		"$("$BIN/timeit" "$AJ" exec "d-$i" -- /bin/true)"
	printf 'engine exec (exec-loop, 300 rounds) in d-%d: ' "$i"
	"$BIN/exec-loop" "$(sock_of "d-$i")" 300 30 | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
e = next(x for x in r if x["name"] == "engine-exec")
b = next(x for x in r if x["name"] == "bare-posix_spawn")
print("median %.3f ms, p99 %.3f ms; bare posix_spawn median %.3f ms; paired ratio %.2fx"
      % (e["median_ms"], e["p99_ms"], b["median_ms"], e["paired_ratio_vs_bare-posix_spawn"]))'

	# Removal: each rm -f waits for its supervisor to be gone, so they run side by side.
	mapfile -t ids < <(sqlite3 "$STATE_DB" "select id from sandboxes where name like 'd-%'")
	printf '%s\n' "${ids[@]}" >>"$IDS_SEEN"
	t0=$EPOCHREALTIME
	sqlite3 "$STATE_DB" "select name from sandboxes where name like 'd-%'" |
		xargs -r -P "$RM_PARALLEL" -n 1 "$AJ" rm -f >/dev/null 2>"$WORK/rm-err" || true
	t_rm=$(python3 -c "print('%.1f' % ($EPOCHREALTIME - $t0))")
	echo "removal: ${t_rm}s for $i sandboxes, $RM_PARALLEL in parallel" \
		"($(grep -c . "$WORK/rm-err" || true) error lines$(head -c 300 "$WORK/rm-err" | tr '\n' ' '))"
	sleep 3
	echo "left after removal:"
	echo "  agentjail ls: $("$AJ" ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') sandboxes"
	echo "  $AGENTJAIL_STATE_DIR/sandboxes: $(find "$AGENTJAIL_STATE_DIR/sandboxes" -mindepth 1 -maxdepth 1 | wc -l) entries"
	left=$(find /sys/fs/cgroup -mindepth 2 -maxdepth 6 -type d -path '*agentjail*' -name 'sb-*' 2>/dev/null |
		grep -F -f <(sed 's/^/sb-/' "$IDS_SEEN") || true)
	echo "  sb-<id>* cgroups of these sandboxes under /sys/fs/cgroup/*/.../agentjail:" \
		"$(grep -c . <<<"$left" || true)${left:+ ($(head -3 <<<"$left" | tr '\n' ' '))}"
	echo "  control sockets /run/agentjail/sb/<id>.sock: $(for id in "${ids[@]}"; do
		[[ -e /run/agentjail/sb/$id.sock ]] && echo "$id"; done | wc -l)"
	echo "  supervisor processes: $(for s in "${sups[@]}"; do
		grep -qs __supervise "/proc/$s/cmdline" && echo "$s"; done | wc -l)"
	echo "  MemAvailable after removal: $(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) KiB"
	if [[ -n ${DENSITY_SERVE:-} ]]; then
		kill -TERM "$DENSITY_SERVE" && wait "$DENSITY_SERVE" || true
		DENSITY_SERVE=
	fi
	echo "commands: $BIN/timeit $AJ create --name d-N (N = 1, 2, ...);"
	echo "  sqlite3 STATE/state.db \"select name from sandboxes where name like 'd-%'\" |" \
		"xargs -P $RM_PARALLEL -n 1 $AJ rm -f"
	echo "goal: 1,000 idle sandboxes on one 24 GiB machine (bench/README.md)"
}

has_section exec && section_exec
has_section latency && section_latency
has_section memory && section_memory
has_section density && section_density
echo
[[ -n $EXEC_LOOP_CMD ]] && echo "-- engine exec command (last run):$EXEC_LOOP_CMD"
if ((${#CLI_ROWS[@]})); then
	echo "-- CLI-level exec commands (abtime $CLI_ROUNDS $CLI_WARMUP ...):"
	bench_print_commands "${CLI_ROWS[@]}"
fi
