#!/usr/bin/env bash
# Published ports (bench/README.md): what a connection through `run -p` costs next to the same
# client and server on plain loopback, and next to `podman run -p` of the same server.
#
#   latency     LAT_N sequential small requests on one keep-alive connection
#   throughput  one download of TPUT_BYTES
#   setup       CONNS connections at once, CONC_REQS requests each (connection setup rate)
#   api         API_N sequential requests, each on a new connection (the daemon's port path
#               ends each connection with its response): direct, through the published port,
#               and through `agentjail serve`'s /v1/sandboxes/{ref}/ports/9000/ on its unix
#               socket, the server in a persistent sandbox
#
# One client (bench/egress-load.c) and one server (egress-load serve, HTTP/1.1 keep-alive):
#   direct      the server on the host's loopback
#   agentjail   the server inside `agentjail run -p 127.0.0.1:P:9000` (the supervisor accepts
#               and splices to the sandbox's loopback)
#   podman      the server inside `podman run -p 127.0.0.1:P:9000` of a Debian minbase image
#               (rootful; skipped with the reason where podman cannot publish here)
# Each figure is the median of REPEAT runs, the rows alternating. Loopback only.
#
# usage: bench/run-ports.sh [SECTION...]        (default: latency throughput setup api)
# environment: LAT_N (5000), TPUT_BYTES (2000000000), CONNS (500), CONC_REQS (4),
#              API_N (2000), REPEAT (3); BUILD, CC, AGENTJAIL as for the other benchmarks.
set -euo pipefail

LAT_N=${LAT_N:-5000}
TPUT_BYTES=${TPUT_BYTES:-2000000000}
CONNS=${CONNS:-500}
CONC_REQS=${CONC_REQS:-4}
REPEAT=${REPEAT:-3}
API_N=${API_N:-2000}
MINBASE=/var/cache/agentjail-tests/bookworm-minbase.tar

. "$(dirname "$0")/common.sh"
bench_setup
bench_cc egress-load
LOAD=$BIN/egress-load
SECTIONS=("$@")
[[ ${#SECTIONS[@]} -gt 0 ]] || SECTIONS=(latency throughput setup api)
export AGENTJAIL_STATE_DIR="$WORK/aj"
cp "$LOAD" "$WS/egress-load"

PIDS=()
pod() { podman --root "$WORK/pod/root" --runroot "$WORK/pod/run" --storage-driver overlay "$@"; }
cleanup() {
	local p
	set +e
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[[ -d $WORK/pod ]] && { pod rm -f -a >/dev/null 2>&1; pod system reset --force >/dev/null 2>&1; }
	"$AJ" rm -f benchweb >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

P_DIRECT=$(free_port)
"$LOAD" serve 127.0.0.1 "$P_DIRECT" >/dev/null 2>&1 &
PIDS+=($!)
P_AJ=$(free_port)
"$AJ" run --open-files 65536 -p "127.0.0.1:$P_AJ:9000" -- ./egress-load serve 127.0.0.1 9000 \
	>/dev/null 2>"$WORK/aj.err" &
PIDS+=($!)
wait_port "$P_DIRECT" || bench_die "the direct server did not start"
wait_port "$P_AJ" || bench_die "agentjail run -p did not start: $(cat "$WORK/aj.err")"
# The port is bound before the sandbox starts: wait for the server behind it.
for _ in $(seq 100); do
	"$LOAD" lat direct 127.0.0.1 "$P_AJ" 1 >/dev/null 2>&1 && break
	sleep 0.1
done

P_POD=
POD_WHY="podman is not installed"
if command -v podman >/dev/null && [[ $(id -u) == 0 ]] && [[ -s $MINBASE ]]; then
	POD_WHY=""
	"$AJ" image import --name bench/debian:minbase "$MINBASE" >/dev/null
	"$AJ" image export bench/debian:minbase "$WORK/layout.tar"
	pod load --quiet -i "$WORK/layout.tar" >/dev/null
	P_POD=$(free_port)
	if ! pod run -d --name ajbench --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
		-p "127.0.0.1:$P_POD:9000" -v "$WS/egress-load:/egress-load:ro" \
		docker.io/bench/debian:minbase /egress-load serve 0.0.0.0 9000 >"$WORK/pod.out" 2>&1 ||
		! wait_port "$P_POD"; then
		POD_WHY="podman run -p failed here: $(tail -1 "$WORK/pod.out")"
		P_POD=
	fi
fi

# one SECTION ROW PORT: egress-load's JSON line
one() {
	case $1 in
	latency) "$LOAD" lat direct 127.0.0.1 "$3" "$LAT_N" ;;
	throughput) "$LOAD" tput direct 127.0.0.1 "$3" "$TPUT_BYTES" ;;
	setup) "$LOAD" conc direct 127.0.0.1 "$3" "$CONNS" "$CONC_REQS" ;;
	esac
}

echo "== published ports: direct loopback, agentjail run -p, podman run -p"
bench_header
echo "podman:     $(podman --version 2>/dev/null || echo none)${POD_WHY:+ (skipped: $POD_WHY)}"
echo "client:     bench/egress-load.c; each figure the median of $REPEAT runs, rows alternating"
echo
# api: one new connection per request, as the daemon's port path serves them.
section_api() {
	local sock=$WORK/api.sock
	"$AJ" create --name benchweb --open-files 65536 >/dev/null
	"$AJ" cp "$WS/egress-load" benchweb:/tmp/egress-load >/dev/null
	"$AJ" exec benchweb -- sh -c 'chmod +x /tmp/egress-load; nohup /tmp/egress-load serve 127.0.0.1 9000 >/dev/null 2>&1 &'
	"$AJ" serve --socket "$sock" >"$WORK/serve.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
	python3 - "$REPEAT" "$API_N" "$P_DIRECT" "$P_AJ" "$sock" <<'EOF'
import http.client, socket, statistics, sys, time
repeat, n, p_direct, p_aj, sock = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock)

def one(make, path):
    t = time.perf_counter()
    c = make()
    c.request("GET", path, headers={"Connection": "close"})
    r = c.getresponse()
    r.read()
    c.close()
    assert r.status == 200, r.status
    return (time.perf_counter() - t) * 1e6

rows = [("direct", lambda: http.client.HTTPConnection("127.0.0.1", p_direct), "/"),
        ("agentjail -p", lambda: http.client.HTTPConnection("127.0.0.1", p_aj), "/"),
        ("API path", lambda: Unix("aj"), "/v1/sandboxes/benchweb/ports/9000/")]
res = {name: [] for name, _, _ in rows}
for _ in range(repeat):
    for name, make, path in rows:
        for _ in range(50):
            one(make, path)
        res[name].append(statistics.median(one(make, path) for _ in range(n)))
print("-- api (a new connection per request, python http.client)")
for name, _, _ in rows:
    print("  %-12s median_us %.1f" % (name, statistics.median(res[name])))
EOF
	echo
}

for s in "${SECTIONS[@]}"; do
	if [[ $s == api ]]; then
		section_api
		continue
	fi
	case $s in latency | throughput | setup) ;; *) bench_die "unknown section $s" ;; esac
	rows=(direct "$P_DIRECT" agentjail "$P_AJ")
	[[ -n $P_POD ]] && rows+=(podman "$P_POD")
	: >"$WORK/$s.jsonl"
	for r in $(seq "$REPEAT"); do
		for ((i = 0; i < ${#rows[@]}; i += 2)); do
			echo "{\"row\": \"${rows[i]}\", \"data\": $(one "$s" "${rows[i]}" "${rows[i + 1]}")}" \
				>>"$WORK/$s.jsonl"
		done
	done
	python3 - "$s" "$WORK/$s.jsonl" <<'EOF'
import json, statistics, sys
section, path = sys.argv[1], sys.argv[2]
rows = {}
for line in open(path):
    d = json.loads(line)
    rows.setdefault(d["row"], []).append(d["data"])
print("-- %s" % section)
for name, runs in rows.items():
    keys = [k for k, v in runs[0].items() if isinstance(v, (int, float))]
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    print("  %-10s %s" % (name, "  ".join("%s %.4g" % (k, v) for k, v in med.items())))
EOF
	echo
done
