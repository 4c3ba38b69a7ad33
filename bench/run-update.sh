#!/usr/bin/env bash
# Live updates (bench/README.md): how long `agentjail update NAME --deny-host H` takes to take
# effect, measured as the time from its start until it returns (the proxy's rules are replaced
# before it does), and checked on a new connection right after: the next request through the
# proxy to H must be the proxy's 403. Then the same for --allow-host (a 200 after). A loopback
# HTTP server is the host; nothing leaves the machine.
#
# usage: bench/run-update.sh            environment: REPS (20); BUILD, AGENTJAIL as for the
#                                       other benchmarks
# As root or rootless (a rootless run needs no cgroup: only the network rules change).
set -euo pipefail

REPS=${REPS:-20}

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
export AGENTJAIL_STATE_DIR="$WORK/state"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 "$PORT" >/dev/null 2>&1 &
SRV=$!
for ((i = 0; i < 50; i++)); do
	curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
	sleep 0.1
done
cleanup() {
	kill "$SRV" 2>/dev/null || true
	"$AJ" rm -f bench-upd >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
printf '{"network": {"mode": "proxy", "allow": ["127.0.0.1:%s"], "allow_private": ["127.0.0.1/32"]}}\n' \
	"$PORT" >"$WORK/policy.json"
flags=()
[[ $(id -u) == 0 ]] || flags=(--memory none --cpus none --pids none)
"$AJ" create --name bench-upd "${flags[@]}" --policy "$WORK/policy.json" >/dev/null
req() { "$AJ" exec bench-upd -- curl --noproxy '' -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/"; }
[[ $(req) == 200 ]] || bench_die "the sandbox does not reach the loopback server"

deny=() allow=()
for ((i = 0; i < REPS; i++)); do
	s=$(date +%s%N)
	"$AJ" update bench-upd --deny-host "127.0.0.1:$PORT" >/dev/null
	e=$(date +%s%N)
	[[ $(req) == 403 ]] || bench_die "rep $i: a request after the deny was not refused"
	deny+=($(((e - s) / 1000)))
	s=$(date +%s%N)
	"$AJ" update bench-upd --allow-host "127.0.0.1:$PORT" >/dev/null
	e=$(date +%s%N)
	[[ $(req) == 200 ]] || bench_die "rep $i: a request after the allow was refused"
	allow+=($(((e - s) / 1000)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf 'update --deny-host  until in force: median %s us over %d (min %s, max %s); every next request 403\n' \
	"$(median "${deny[@]}")" "$REPS" "$(printf '%s\n' "${deny[@]}" | sort -n | head -1)" \
	"$(printf '%s\n' "${deny[@]}" | sort -n | tail -1)"
printf 'update --allow-host until in force: median %s us over %d; every next request 200\n' \
	"$(median "${allow[@]}")" "$REPS"
