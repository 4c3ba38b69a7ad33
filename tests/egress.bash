# Helpers for the egress tests (sourced after tests/lib.sh; not a test itself: tests/run only
# runs *.sh).
#
# The "internet" of these tests is either the host's loopback (rootless-capable: the proxy is
# then told 127.0.0.1 is fine through network.allow_private) or a network namespace the test
# creates with a veth pair to the host (root only): it holds a "public" address in
# 198.18.N.0/24 (the benchmarking range, which the address guard treats as public) and a
# private one in 10.213.N.0/24, and runs the upstream servers. Names resolve through a hosts
# file and, when a test needs DNS answers that change (rebinding), a DNS server on loopback:
# the proxy reads them through AGENTJAIL_EGRESS_HOSTS and AGENTJAIL_EGRESS_RESOLV_CONF, so no
# query ever leaves the machine. Everything started here is stopped at exit.

EG_PIDS=()
EG_NS=
EG_VETH=

eg_cleanup() {
	local p
	for p in "${EG_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${EG_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	EG_PIDS=()
	if [ -n "$EG_NS" ]; then
		ip netns pids "$EG_NS" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$EG_NS" 2>/dev/null
	fi
	[ -n "$EG_VETH" ] && ip link del "$EG_VETH" 2>/dev/null
	EG_NS=
	EG_VETH=
}
trap 'eg_cleanup; _aj_cleanup' EXIT

# eg_init: the scratch directory EG (hosts file, resolver configuration, CA, logs) and a
# workspace WS.
eg_init() {
	EG=$(mktmp)
	WS=$EG/ws
	mkdir -p "$WS" "$EG/up"
	chmod 777 "$EG/up"
	: >"$EG/hosts"
	: >"$EG/resolv.conf"
	EVENTS=$EG/events.jsonl
	REPORT=$EG/report.json
}

# eg_ca NAME...: a test CA and one server certificate for all NAMEs ($EG/ca/{ca,srv}.pem).
eg_ca() {
	local d=$EG/ca san="" n
	mkdir -p "$d"
	for n in "$@"; do san="${san:+$san,}DNS:$n"; done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-keyout "$d/ca.key" -out "$d/ca.pem" -subj "/CN=agentjail egress test CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
		>/dev/null 2>&1 &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/srv.key" \
			-out "$d/srv.csr" -subj "/CN=$1" >/dev/null 2>&1 &&
		printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
			"$san" >"$d/ext.cnf" &&
		openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
			-CAcreateserial -days 2 -out "$d/srv.pem" -extfile "$d/ext.cnf" >/dev/null 2>&1
	chmod 644 "$d"/*.pem "$d/srv.key"
}

# eg_wait_file FILE: up to 10 s.
eg_wait_file() {
	local i
	for i in $(seq 100); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# eg_upstream ADDR HTTP_PORT TLS_PORT ECHO_PORT [NETNS]: the upstream servers.
eg_upstream() {
	local addr=$1 http=$2 tls=$3 echo=$4 ns=${5:-}
	local cmd=(python3 "$AJ_ROOT/tests/helpers/egress_upstream.py" "$EG/up" "$addr" "$http"
		"$tls" "$EG/ca/srv.pem" "$EG/ca/srv.key" --echo-port "$echo" --ttl 170)
	rm -f "$EG/up/ready"
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "${cmd[@]}" >>"$EG/up/log" 2>&1 &
	else
		"${cmd[@]}" >>"$EG/up/log" 2>&1 &
	fi
	EG_PIDS+=($!)
	eg_wait_file "$EG/up/ready"
}

# eg_dns PORT NAME=IP... : the DNS server on 127.0.0.1:PORT, and the proxy pointed at it.
eg_dns() {
	local port=$1
	shift
	python3 "$AJ_ROOT/tests/helpers/egress_dns.py" 127.0.0.1 "$port" "$EG" "$@" \
		>>"$EG/dns.out" 2>&1 &
	EG_PIDS+=($!)
	eg_wait_file "$EG/dns.ready"
	echo "nameserver 127.0.0.1:$port" >"$EG/resolv.conf"
}

# eg_netns: a network namespace with a veth pair to the host; sets EG_NS, EG_PUB (its
# "public" address) and EG_PRIV (its private one). Needs root.
eg_netns() {
	local n i
	for i in $(seq 20); do
		n=$((RANDOM % 250 + 1))
		ip route show | grep -q "198\.18\.$n\.0/24\|10\.213\.$n\.0/24" || break
	done
	EG_NS=ajeg$$
	EG_VETH=ajeg$$h
	EG_PUB=198.18.$n.2
	EG_PRIV=10.213.$n.2
	ip netns add "$EG_NS" &&
		ip link add "$EG_VETH" type veth peer name ajegu netns "$EG_NS" &&
		ip addr add "198.18.$n.1/24" dev "$EG_VETH" &&
		ip addr add "10.213.$n.1/24" dev "$EG_VETH" &&
		ip link set "$EG_VETH" up &&
		ip -n "$EG_NS" addr add "$EG_PUB/24" dev ajegu &&
		ip -n "$EG_NS" addr add "$EG_PRIV/24" dev ajegu &&
		ip -n "$EG_NS" link set ajegu up &&
		ip -n "$EG_NS" link set lo up
}

# eg_hosts "ADDR NAME..." ...: the proxy's hosts file.
eg_hosts() {
	printf '%s\n' "$@" >"$EG/hosts"
}

# eg_run ARGS... -- CMD...: agentjail run with the test's resolver, hosts, CA trust, events
# and report; OUT, ERR, RC as aj_run sets them.
eg_run() {
	rm -f "$REPORT" "$EVENTS"
	aj_run_env=(AGENTJAIL_EGRESS_HOSTS="$EG/hosts" AGENTJAIL_EGRESS_RESOLV_CONF="$EG/resolv.conf")
	[ -f "$EG/ca/ca.pem" ] && aj_run_env+=(SSL_CERT_FILE="$EG/ca/ca.pem")
	local o e
	o=$(mktemp) e=$(mktemp)
	(cd "$WS" && env "${aj_run_env[@]}" ${EG_EXTRA_ENV:-} "$AJ" run -w "$WS" --events "$EVENTS" \
		--report "$REPORT" $(rootless_flags) "$@") >"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
	if [ "$RC" = 125 ]; then
		printf '%s\n' "$ERR" | sed 's/^/# agentjail: /'
	fi
}

# eg_policy JSON: writes the policy file $EG/policy.json.
eg_policy() {
	printf '%s\n' "$1" >"$EG/policy.json"
}

# eg_events EXPR: a Python expression over `ev`, the list of the run's egress events.
eg_events() {
	python3 -c '
import json, sys
ev = []
try:
    for l in open(sys.argv[1]):
        d = json.loads(l)
        if d.get("event") == "egress":
            ev.append(d)
except FileNotFoundError:
    pass
print(eval(sys.argv[2]))' "$EVENTS" "$1"
}

# eg_requests EXPR: a Python expression over `req`, the requests the upstream received.
eg_requests() {
	python3 -c '
import json, sys
req = []
try:
    req = [json.loads(l) for l in open(sys.argv[1])]
except FileNotFoundError:
    pass
print(eval(sys.argv[2]))' "$EG/up/requests.jsonl" "$1"
}

# eg_report EXPR: a field of the run's report.
eg_report() {
	if [ -s "$REPORT" ]; then json "$REPORT" "$1"; else echo NO-REPORT; fi
}

# need_root NAME: skips a whole test file without root (netns creation).
need_root_or_skip() {
	if ! is_root; then
		skip "$1" "creating network namespaces needs root"
		exit 0
	fi
	if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
		skip "$1" "iproute2 with netns support is missing"
		exit 0
	fi
}
