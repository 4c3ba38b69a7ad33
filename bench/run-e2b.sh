#!/usr/bin/env bash
# The E2B-compatible API (agentjail serve --e2b-listen, docs/e2b-protocol.md) as the real E2B
# JS SDK drives it, next to agentjail's own HTTP API (docs/api.md) driven by node's fetch, so
# that both pay the same client runtime: one cycle is
#
#   e2b       Sandbox.create() + sandbox.commands.run('true') + sandbox.kill()
#             (POST /sandboxes; process.Process/Start of `/bin/bash -l -c true`, a Connect
#             stream; DELETE /sandboxes/ID)
#   api-bash  POST /v1/sandboxes + POST .../exec {"argv": ["/bin/bash", "-l", "-c", "true"]}
#             (the SDK's very command) + DELETE ?force=true
#   api-true  the same with {"argv": ["true"]}
#
# bench/e2b-cycle.mjs times each cycle and its phases (create, run, kill) with the rows
# alternating iteration by iteration; WARMUP cycles of each come first and are not counted.
# Then the create alone with a minimal C client (bench/api-client.c, keep-alive TCP), so that
# the daemon's share is seen without the SDK's and node's: POST /sandboxes of the E2B API and
# POST /v1/sandboxes of the HTTP API, CREATE_N each, every create followed by an untimed
# delete and CREATE_PAUSE_MS of pause (time for a warm pool to refill). Last, how quickly the
# daemon answers GET /health while one client makes and removes WATCH_CYCLES directory
# watchers (bench/e2b-watch-churn.py), next to the same requests without: each removal ends an
# inotify instance, whose last close is slow and must not hold up the event loop.
# One daemon serves both APIs on TCP (127.0.0.1), with a private socket and state directory;
# every sandbox is removed at exit. Prints figures only.
#
# usage: bench/run-e2b.sh [-n ITERATIONS] [-w WARMUP]      (default 30 and 3)
# environment: ITERATIONS, WARMUP (the same), WORKERS (--workers of the daemon, 8);
#              WARM_POOL (N: the daemon keeps N sandboxes of each side's policy started,
#              --warm-pool e2b:base=N and the API's policy file =N; 0, the default: none);
#              CREATE_N (40), CREATE_PAUSE_MS (200): the C client's create rows;
#              WATCH_CYCLES (40): watchers made and removed by the last rows;
#              E2B_SDK_DIR (node_modules holding e2b; default: what tests/e2b/setup.sh
#              installed into build/npm-e2b, installing it if need be); BUILD, CC, AGENTJAIL as
#              for the others.
set -euo pipefail

ITERATIONS=${ITERATIONS:-30}
WARMUP=${WARMUP:-3}
WORKERS=${WORKERS:-8}
WARM_POOL=${WARM_POOL:-0}
CREATE_N=${CREATE_N:-40}
CREATE_PAUSE_MS=${CREATE_PAUSE_MS:-200}
WATCH_CYCLES=${WATCH_CYCLES:-40}
while (($#)); do
	case $1 in
	-n | --iterations) ITERATIONS=${2:?$1 needs a number}; shift 2 ;;
	-w | --warmup) WARMUP=${2:?$1 needs a number}; shift 2 ;;
	-h | --help) sed -n '2,22p' "$0"; exit 0 ;;
	*) echo "${0##*/}: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $ITERATIONS =~ ^[1-9][0-9]*$ && $WARMUP =~ ^[0-9]+$ ]] ||
	{ echo "${0##*/}: ITERATIONS must be >= 1 and WARMUP >= 0" >&2; exit 2; }

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
bench_cc api-client
NODE=$(command -v node || true)
[[ -x /usr/bin/node ]] && NODE=/usr/bin/node
[[ -n $NODE ]] || bench_die "needs node (>= 20, for the e2b SDK)"
if [[ -z ${E2B_SDK_DIR:-} ]]; then
	sdk=$(AJ_BUILD="$ROOT/build" "$ROOT/tests/e2b/setup.sh")
	[[ $sdk == *E2B_SDK_DIR=* ]] || bench_die "the e2b SDK is not available: $sdk"
	E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=}
fi
[[ -f $E2B_SDK_DIR/e2b/package.json ]] || bench_die "no e2b SDK in $E2B_SDK_DIR"
STATE=$WORK/state
POLICY=$(bench_serve_policy)
trap bench_serve_cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
secret() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
API_PORT=$(free_port)
E2B_PORT=$(free_port)
TOKEN=tok_$(secret)
KEY=e2b_$(secret)
# The same owner on both sides: the two rows make the same kind of sandbox for the same user.
printf '%s bench\n' "$TOKEN" >"$WORK/tokens"
printf '%s bench\n' "$KEY" >"$WORK/e2b-keys"
chmod 600 "$WORK/tokens" "$WORK/e2b-keys"
printf '{"base": %s}\n' "$POLICY" >"$WORK/templates.json"
printf '%s\n' "$POLICY" >"$WORK/policy.json"
WARM=()
if ((WARM_POOL > 0)); then
	WARM=(--warm-pool "e2b:base=$WARM_POOL" --warm-pool "$WORK/policy.json=$WARM_POOL")
fi

"$AJ" serve --socket "$WORK/api.sock" --state-dir "$STATE" --workers "$WORKERS" \
	--listen "127.0.0.1:$API_PORT" --token-file "$WORK/tokens" \
	--e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$WORK/e2b-keys" \
	--e2b-templates "$WORK/templates.json" "${WARM[@]}" 2>"$WORK/serve.log" &
SERVE_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$E2B_PORT/health" >/dev/null 2>&1 && break
	sleep 0.05
done
curl -sf "http://127.0.0.1:$E2B_PORT/health" >/dev/null ||
	bench_die "serve did not start: $(cat "$WORK/serve.log")"
if ((WARM_POOL > 0)); then # until both pools are full
	for _ in $(seq 600); do
		n=$("$AJ" ls --json --state-dir "$STATE" | python3 -c 'import json,sys; print(sum(s["owner"] == ":pool" and s["state"] == "running" for s in json.load(sys.stdin)))')
		((n >= 2 * WARM_POOL)) && break
		sleep 0.1
	done
fi

echo "# agentjail serve, E2B API vs HTTP API: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), uid $(id -u)"
echo "# binary: $AJ ($(sha256sum "$AJ" | cut -c1-12)), --workers $WORKERS, policy $POLICY (template \"base\" the same), warm pools: $WARM_POOL sandboxes each"
echo "# client: node $("$NODE" --version), e2b SDK $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$E2B_SDK_DIR/e2b/package.json"); $ITERATIONS cycles per row after $WARMUP warm-up, rows alternating; p99 is nearest-rank (with 30 cycles: the slowest)"
raw=$(E2B_SDK_DIR=$E2B_SDK_DIR E2B_API_URL="http://127.0.0.1:$E2B_PORT" \
	E2B_SANDBOX_URL="http://127.0.0.1:$E2B_PORT" E2B_API_KEY=$KEY \
	AJ_API_URL="http://127.0.0.1:$API_PORT" AJ_TOKEN=$TOKEN AJ_POLICY=$POLICY \
	"$NODE" "$ROOT/bench/e2b-cycle.mjs" "$ITERATIONS" "$WARMUP") ||
	bench_die "the client failed: $raw"
printf '%s\n' "$raw" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print("%-66s %4s %6s %9s %9s %9s %9s   %s" % ("cycle (ms)", "n", "errors", "p50", "p99", "mean", "min",
                                               "p50 of create / run / kill"))
for r in rows:
    c = r["cycle"]
    f = lambda v: "%9.2f" % v if v is not None else "%9s" % "-"
    phases = " / ".join("%.2f" % r[k]["p50"] if r[k]["p50"] is not None else "-" for k in ("create", "run", "kill"))
    print("%-66s %4d %6d %s %s %s %s   %s" % (r["row"][:66], r["n"], r["errors"], f(c["p50"]), f(c["p99"]),
                                             f(c["mean"]), f(c["min"]), phases))
    if r.get("first_error"):
        print("#   first error: %s" % r["first_error"])
'
c_rows=()
c_row() { # LABEL ADDRESS HEADER ARGS... (api-client arguments after SOCKET)
	local label=$1 addr=$2 header=$3 line
	shift 3
	line=$(AJ_BENCH_HEADER=$header "$BIN/api-client" "$addr" "$@") || true
	c_rows+=("$line")
	python3 -c 'import json,sys; d=json.loads(sys.argv[2]); print("%-66s %4d %6d %9.2f %9.2f %9s %9s   (p90 %.2f)" % (sys.argv[1], d["n"], d["errors"], d["p50_ms"], d["p99_ms"], "-", "-", d["p90_ms"]))' "$label" "$line"
}
echo "create alone (ms), C client on a keep-alive TCP connection, then an untimed delete and ${CREATE_PAUSE_MS} ms:"
c_row "create: E2B API, POST /sandboxes {templateID: base}" "tcp:127.0.0.1:$E2B_PORT" \
	"X-API-Key: $KEY" e2b-create "$CREATE_N" 1 base "$CREATE_PAUSE_MS"
c_row "create: HTTP API, POST /v1/sandboxes" "tcp:127.0.0.1:$API_PORT" \
	"Authorization: Bearer $TOKEN" create "$CREATE_N" 1 "$POLICY" "$CREATE_PAUSE_MS"
echo "GET /health (ms), alone and while one client makes and removes $WATCH_CYCLES watchers:"
watch_raw=$(python3 "$ROOT/bench/e2b-watch-churn.py" "$E2B_PORT" "$KEY" "$WATCH_CYCLES") ||
	bench_die "bench/e2b-watch-churn.py failed: $watch_raw"
printf '%s\n' "$watch_raw" | python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    print("%-66s %4d %6s %9.2f %9s %9s %9s   (p90 %.2f, max %.2f)" % (d["row"], d["n"], "-", d["p50_ms"], "-", "-", "-", d["p90_ms"], d["max_ms"]))
'
echo "# raw:"
printf '%s\n' "$raw" | sed 's/^/# /'
printf '# %s\n' "${c_rows[@]}"
printf '%s\n' "$watch_raw" | sed 's/^/# /'
