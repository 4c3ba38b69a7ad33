#!/usr/bin/env bash
# The egress proxy (bench/README.md: near loopback throughput, sub-millisecond added latency per
# request, thousands of concurrent connections), measured against the same traffic without
# the proxy.
#
#   latency     LAT_N sequential small requests on one keep-alive connection
#   throughput  one download of TPUT_BYTES
#   concurrent  CONNS connections at once (each CONC_REQS requests), for each value of CONNS
#
# Each row runs the same client (bench/egress-load.c) against the same upstream server
# (egress-load serve):
#   direct          from the host, no sandbox
#   sandbox-host    inside agentjail with --network host (the sandbox's own cost, no proxy)
#   proxy-http      inside agentjail with --network proxy, absolute-URI requests
#   proxy-connect   the same through a CONNECT tunnel (relayed with splice(2))
# The upstream listens on loopback, or, as root (NETNS=1, the default as root), in a network
# namespace this script makes with a veth pair (a "public" 198.18.N.2 address), like the
# tests. Names resolve through a hosts file (AGENTJAIL_EGRESS_HOSTS); nothing leaves the
# machine.
#
# usage: bench/run-egress.sh [SECTION...]      (default: latency throughput concurrent)
# environment: LAT_N (5000), TPUT_BYTES (3000000000), CONNS ("100 1000 2000"), CONC_REQS (20),
#              REPEAT (3: each figure is the median of REPEAT runs), NETNS, BUILD, CC,
#              AGENTJAIL as for the other benchmarks.
set -euo pipefail

LAT_N=${LAT_N:-5000}
TPUT_BYTES=${TPUT_BYTES:-3000000000}
CONNS=${CONNS:-"100 1000 2000"}
CONC_REQS=${CONC_REQS:-20}
REPEAT=${REPEAT:-3}

. "$(dirname "$0")/common.sh"
bench_setup
bench_cc egress-load
LOAD=$BIN/egress-load
SECTIONS=("$@")
[[ ${#SECTIONS[@]} -gt 0 ]] || SECTIONS=(latency throughput concurrent)
if [[ -z ${NETNS:-} ]]; then
	NETNS=0
	[[ $(id -u) == 0 ]] && NETNS=1
fi

NS=
VETH=
SERVER_PID=
cleanup_egress() {
	set +e
	if [[ -n $SERVER_PID ]]; then
		kill "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	[[ -n $NS ]] && ip netns del "$NS" 2>/dev/null
	[[ -n $VETH ]] && ip link del "$VETH" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup_egress EXIT

PORT=19090
if [[ $NETNS == 1 ]]; then
	n=$((RANDOM % 250 + 1))
	NS=ajbench$$
	VETH=ajbench$$h
	ADDR=198.18.$n.2
	ip netns add "$NS"
	ip link add "$VETH" type veth peer name ajbu netns "$NS"
	ip addr add "198.18.$n.1/24" dev "$VETH"
	ip link set "$VETH" up
	ip -n "$NS" addr add "$ADDR/24" dev ajbu
	ip -n "$NS" link set ajbu up
	ip -n "$NS" link set lo up
	# The server takes connection storms: a SYN queue as deep as its accept queue, or storms
	# of thousands measure SYN retransmission timers (1 s, 3 s) instead of the proxy.
	ip netns exec "$NS" sysctl -qw net.ipv4.tcp_max_syn_backlog=16384 net.core.somaxconn=16384
	ip netns exec "$NS" "$LOAD" serve 0.0.0.0 "$PORT" 200 >"$WORK/server.out" &
	SERVER_PID=$!
	WHERE="network namespace $NS over a veth pair ($ADDR)"
	PRIVATE=""
else
	ADDR=127.0.0.1
	PORT=$((20000 + RANDOM % 20000))
	"$LOAD" serve 127.0.0.1 "$PORT" 200 >"$WORK/server.out" &
	SERVER_PID=$!
	WHERE="loopback ($ADDR)"
	PRIVATE='"allow_private": ["127.0.0.1/32"],'
fi
for _ in $(seq 50); do [[ -s $WORK/server.out ]] && break; sleep 0.1; done
echo "$ADDR bench.test" >"$WORK/hosts"
: >"$WORK/resolv.conf"
cat >"$WORK/policy.json" <<EOF
{"network": {"mode": "proxy", "allow": ["bench.test:*"], $PRIVATE "max_connections": 20000},
 "limits": {"open_files": 20000, "memory": null}}
EOF
export AGENTJAIL_EGRESS_HOSTS=$WORK/hosts AGENTJAIL_EGRESS_RESOLV_CONF=$WORK/resolv.conf

# run ROW ARGS...: one client run, its JSON line.
run() {
	local row=$1
	shift
	case "$row" in
	direct) "$LOAD" "$1" direct "$ADDR" "${@:2}" ;;
	sandbox-host) "$AJ" run --network host --memory none --open-files 20000 --ro "$BIN" -- \
		"$LOAD" "$1" direct "$ADDR" "${@:2}" ;;
	proxy-http) "$AJ" run --policy "$WORK/policy.json" --ro "$BIN" -- \
		"$LOAD" "$1" proxy:3128 bench.test "${@:2}" ;;
	proxy-connect) "$AJ" run --policy "$WORK/policy.json" --ro "$BIN" -- \
		"$LOAD" "$1" connect:3128 bench.test "${@:2}" ;;
	esac
}

# median_of KEY JSONLINES...: the median of KEY over the runs, and the run it came from.
median_of() {
	python3 -c '
import json, sys
key, rows = sys.argv[1], [json.loads(l) for l in sys.argv[2:] if l.startswith("{")]
rows = [r for r in rows if key in r]
rows.sort(key=lambda r: r[key])
print(json.dumps(rows[len(rows) // 2]) if rows else "{}")' "$@"
}

# measure KEY ROW SECTION PORT ARGS...: REPEAT runs, the median by KEY. Connection storms
# (conc) get a fresh port per run.
NEXT_PORT=1
measure() {
	local key=$1 row=$2 sec=$3 port=$4 out=()
	shift 4
	for _ in $(seq "$REPEAT"); do
		if [[ $sec == conc ]]; then
			port=$((PORT + NEXT_PORT))
			NEXT_PORT=$((NEXT_PORT + 1))
		fi
		out+=("$(run "$row" "$sec" "$port" "$@" 2>"$WORK/err" || echo '{}')")
	done
	median_of "$key" "${out[@]}"
}

echo "# agentjail egress proxy benchmark"
echo "# $(uname -srm), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), uid $(id -u)"
echo "# binary $AJ ($(sha256sum "$AJ" | cut -c1-16))"
echo "# upstream: egress-load serve in $WHERE, port $PORT; median of $REPEAT runs per row"
RAW=()
for section in "${SECTIONS[@]}"; do
	echo
	case "$section" in
	latency)
		echo "## latency: $LAT_N sequential requests on one keep-alive connection (microseconds)"
		printf '%-14s %10s %10s %10s %12s\n' row median p90 p99 added
		base=
		for row in direct sandbox-host proxy-http proxy-connect; do
			j=$(measure median_us "$row" lat "$PORT" "$LAT_N")
			RAW+=("latency $row $j")
			read -r m p9 p99 < <(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get("median_us",0), d.get("p90_us",0), d.get("p99_us",0))' "$j")
			[[ -z $base ]] && base=$m
			printf '%-14s %10s %10s %10s %12s\n' "$row" "$m" "$p9" "$p99" \
				"$(python3 -c "print('%+.1f' % ($m - $base))")"
		done
		;;
	throughput)
		echo "## throughput: one download of $TPUT_BYTES bytes (MB/s)"
		printf '%-14s %10s %10s\n' row MB/s "vs direct"
		base=
		for row in direct sandbox-host proxy-http proxy-connect; do
			j=$(measure MBps "$row" tput "$PORT" "$TPUT_BYTES")
			RAW+=("throughput $row $j")
			m=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("MBps",0))' "$j")
			[[ -z $base ]] && base=$m
			printf '%-14s %10s %10s\n' "$row" "$m" \
				"$(python3 -c "print('%.2f' % ($m / $base if $base else 0))")"
		done
		;;
	concurrent)
		echo "## concurrent connections: each sends $CONC_REQS requests, all at once"
		printf '%-14s %6s %10s %10s %10s %10s\n' row conns setup_ms req/s median_us p99_us
		for c in $CONNS; do
			for row in direct proxy-http proxy-connect; do
				j=$(measure req_per_s "$row" conc "$PORT" "$c" "$CONC_REQS")
				RAW+=("concurrent $row $j")
				python3 -c '
import json, sys
d = json.loads(sys.argv[2])
print("%-14s %6s %10s %10s %10s %10s" % (sys.argv[1], d.get("connections", "FAIL"), d.get("setup_ms"), d.get("req_per_s"), d.get("median_us"), d.get("p99_us")))' "$row" "$j"
			done
		done
		;;
	*) bench_die "unknown section $section" ;;
	esac
done
echo
echo "## raw"
printf '%s\n' "${RAW[@]}"
