#!/usr/bin/env bash
# The HTTP API (agentjail serve, docs/api.md) under load, with api-client.c: keep-alive
# connections on the unix socket, one per client thread, every operation timed.
#
#   cycle   POST /v1/sandboxes (started) + DELETE ?force=true, one sample per pair, at
#           concurrency 1 and CONCURRENCY: sandboxes created and removed per second
#   exec    create+exec /bin/true+delete cycles, and exec /bin/true on a warm sandbox (streamed);
#           then, one client, each exec paired with a bare posix_spawn of /bin/true on the host:
#           the anchor's p50 and the median of the rounds' ratios
#   get     GET /v1/sandboxes/NAME of a warm (running) sandbox: the daemon's own overhead plus
#           one state-store read on a worker
#   read    GET .../files?path=... of a 4 KiB file in a warm sandbox: through the supervisor and
#           the sandbox's init, sent with sendfile
#   health  GET /v1/health: answered on the event loop, no worker: the HTTP floor
#   create  POST /v1/sandboxes alone (then an untimed DELETE and a CREATE_PAUSE_MS pause):
#           with WARM_POOL set, from the daemon's warm pool of the same policy
#
# usage: bench/run-api.sh [SECTION...]       (default: cycle exec get read health create)
# environment: CYCLES (200), CONCURRENCY (8), WARM_N (5000), WARM_CONCURRENCY (1 and this, 8),
#              WORKERS (--workers of the daemon, 8); WARM_POOL (N: serve --warm-pool of the
#              benchmark's policy, N started sandboxes; 0: none), CREATE_N (40),
#              CREATE_PAUSE_MS (200: time for the pool to refill); BUILD, CC, AGENTJAIL as for
#              the others.
# The daemon runs on a private socket and state directory under the scratch directory; every
# sandbox is removed at exit. Prints figures only.
set -euo pipefail

CYCLES=${CYCLES:-200}
CONCURRENCY=${CONCURRENCY:-8}
WARM_N=${WARM_N:-5000}
WARM_CONCURRENCY=${WARM_CONCURRENCY:-8}
WORKERS=${WORKERS:-8}
WARM_POOL=${WARM_POOL:-0}
CREATE_N=${CREATE_N:-40}
CREATE_PAUSE_MS=${CREATE_PAUSE_MS:-200}
SECTIONS=("$@")
((${#SECTIONS[@]})) || SECTIONS=(cycle exec get read health create)

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
bench_cc api-client
CLIENT=$BIN/api-client
SOCK=$WORK/api.sock
STATE=$WORK/state
POLICY=$(bench_serve_policy)
trap bench_serve_cleanup EXIT

printf '%s\n' "$POLICY" >"$WORK/policy.json"
WARM=()
((WARM_POOL > 0)) && WARM=(--warm-pool "$WORK/policy.json=$WARM_POOL")
"$AJ" serve --socket "$SOCK" --state-dir "$STATE" --workers "$WORKERS" "${WARM[@]}" 2>"$WORK/serve.log" &
SERVE_PID=$!
for _ in $(seq 100); do
	curl -sf --unix-socket "$SOCK" http://aj/v1/health >/dev/null 2>&1 && break
	sleep 0.05
done
curl -sf --unix-socket "$SOCK" http://aj/v1/health >/dev/null || bench_die "serve did not start: $(cat "$WORK/serve.log")"

echo "# agentjail serve: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), uid $(id -u)"
echo "# binary: $AJ ($(sha256sum "$AJ" | cut -c1-12)), --workers $WORKERS, policy $POLICY, warm pool: $WARM_POOL"
printf '%-34s %8s %10s %9s %9s %9s %9s %6s\n' operation n "ops/s" "p50 ms" "p90 ms" "p99 ms" "max ms" errors
RAW=()
row() { # LABEL ARGS... (api-client arguments after SOCKET)
	local label=$1 line
	shift
	line=$("$CLIENT" "$SOCK" "$@") || true
	RAW+=("$line")
	python3 -c 'import json,sys; d=json.loads(sys.argv[2]); print("%-34s %8d %10.1f %9.3f %9.3f %9.3f %9.3f %6d" % (sys.argv[1], d["n"], d["per_s"], d["p50_ms"], d["p90_ms"], d["p99_ms"], d["max_ms"], d["errors"]))' "$label" "$line"
}

warm_sandbox() {
	curl -sf --unix-socket "$SOCK" -H 'Content-Type: application/json' \
		-d "{\"name\": \"warm\", \"policy\": $POLICY}" http://aj/v1/sandboxes >/dev/null ||
		bench_die "creating the warm sandbox failed"
	head -c 4096 /dev/urandom >"$WORK/4k"
	curl -sf --unix-socket "$SOCK" -X PUT -H 'Content-Type: application/octet-stream' \
		--data-binary @"$WORK/4k" 'http://aj/v1/sandboxes/warm/files?path=4k' >/dev/null ||
		bench_die "writing the warm sandbox's file failed"
}

for section in "${SECTIONS[@]}"; do
	case $section in
	cycle)
		row "create+delete, 1 client" cycle "$((CYCLES / 4))" 1 "$POLICY"
		row "create+delete, $CONCURRENCY clients" cycle "$CYCLES" "$CONCURRENCY" "$POLICY"
		;;
	exec)
		row "create+exec+delete, 1 client" cycle-exec "$((CYCLES / 4))" 1 "$POLICY"
		row "create+exec+delete, $CONCURRENCY clients" cycle-exec "$CYCLES" "$CONCURRENCY" "$POLICY"
		curl -sf --unix-socket "$SOCK" http://aj/v1/sandboxes/warm >/dev/null || warm_sandbox
		for c in 1 "$WARM_CONCURRENCY"; do
			row "exec /bin/true (warm), $c clients" exec "$WARM_N" "$c" warm
		done
		row "exec (warm), paired with bare spawn" exec-paired "$((WARM_N / 5))" 1 warm
		python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("  paired: bare posix_spawn of /bin/true p50 %.3f ms; exec / bare, median of rounds: %.2fx" % (d["anchor_p50_ms"], d["ratio_p50"]))' "${RAW[-1]}" || true
		;;
	get | read | health)
		[[ $section == health ]] || curl -sf --unix-socket "$SOCK" http://aj/v1/sandboxes/warm >/dev/null || warm_sandbox
		for c in 1 "$WARM_CONCURRENCY"; do
			case $section in
			get) row "GET sandbox (warm), $c clients" get "$WARM_N" "$c" warm ;;
			read) row "GET 4 KiB file (warm), $c clients" read "$WARM_N" "$c" warm 4k ;;
			health) row "GET /v1/health, $c clients" health "$WARM_N" "$c" ;;
			esac
		done
		;;
	create)
		if ((WARM_POOL > 0)); then # until the pool is full
			for _ in $(seq 600); do
				n=$("$AJ" ls --json --state-dir "$STATE" | python3 -c 'import json,sys; print(sum(s["owner"] == ":pool" and s["state"] == "running" for s in json.load(sys.stdin)))')
				((n >= WARM_POOL)) && break
				sleep 0.1
			done
		fi
		row "create (warm pool $WARM_POOL), 1 client" create "$CREATE_N" 1 "$POLICY" "$CREATE_PAUSE_MS"
		;;
	*) bench_die "unknown section $section" ;;
	esac
done
echo "# raw:"
printf '# %s\n' "${RAW[@]}"
