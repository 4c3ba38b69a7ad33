#!/usr/bin/env bash
# Servers on the sandbox's own loopback, as a test suite, a dev server or a Jupyter kernel
# starts them: python3's http.server and a node server on port 0, over IPv4 and IPv6, in modes
# none and proxy, in one-shot runs and in a persistent sandbox. The host cannot reach them: a
# server inside is the sandbox's alone until a port is published.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir "$WS"
chmod 777 "$WS"

run_in() { # ARGS... -- CMD...: a one-shot run in WS
	aj_run run $(rootless_flags) -w "$WS" "$@"
}

# http.server on a fixed port and address, fetched with curl from inside the same sandbox.
HTTP_SERVER='
addr=$1 url=$2
echo hello >"$PWD/index.txt"
python3 -m http.server 8123 --bind "$addr" >/dev/null 2>&1 &
for i in $(seq 100); do
	out=$(curl -sS -m 2 "$url/index.txt" 2>/dev/null) && break
	sleep 0.1
done
echo "got $out"
kill $!
'

# A node server on port 0 (the kernel picks the port), fetched by node itself.
NODE_SERVER='
const http = require("http");
const host = process.argv[1];
const srv = http.createServer((q, r) => r.end("node " + q.url)).listen(0, host, () => {
	const port = srv.address().port;
	http.get({host, port, path: "/p0"}, (res) => {
		let b = "";
		res.on("data", (d) => (b += d));
		res.on("end", () => { console.log(port > 0 ? "ok " + b : "no port"); srv.close(); });
	});
});
'

test_http_server() {
	local mode
	for mode in none proxy; do
		local extra=()
		[ "$mode" = proxy ] && extra=(--allow-host registry.invalid)
		run_in "${extra[@]}" --network "$mode" -- sh -c "$HTTP_SERVER" sh 127.0.0.1 \
			http://127.0.0.1:8123
		expect_eq "mode $mode: python3 http.server on 127.0.0.1 serves (exit $RC)" "$OUT" \
			"got hello"
		run_in "${extra[@]}" --network "$mode" -- sh -c "$HTTP_SERVER" sh ::1 \
			'http://[::1]:8123'
		expect_eq "mode $mode: python3 http.server on ::1 serves" "$OUT" "got hello"
	done
}

test_node_port0() {
	if ! command -v node >/dev/null; then
		skip "node server on port 0" "node is not installed"
		return
	fi
	run_in -- node -e "$NODE_SERVER" 127.0.0.1
	expect_eq "node listen(0) on 127.0.0.1 (exit $RC)" "$OUT" "ok node /p0"
	run_in -- node -e "$NODE_SERVER" ::1
	expect_eq "node listen(0) on ::1" "$OUT" "ok node /p0"
	# With the proxy variables set, clients still reach local servers directly (no_proxy).
	run_in --allow-host registry.invalid -- node -e "$NODE_SERVER" 127.0.0.1
	expect_eq "node listen(0) with the egress proxy on" "$OUT" "ok node /p0"
	run_in --allow-host registry.invalid --report "$T/r.json" -- sh -c '
python3 -m http.server 8124 --bind 127.0.0.1 >/dev/null 2>&1 &
for i in $(seq 100); do curl -s -m 2 -o /dev/null http://127.0.0.1:8124/ && break; sleep 0.1; done
curl -sS -m 5 -o /dev/null -w "local %{http_code}\n" http://127.0.0.1:8124/
curl -sS -m 5 -o /dev/null -w "outside %{http_code}\n" http://denied.invalid/
kill $!'
	expect_contains "proxy mode: curl reaches the local server directly" "$OUT" "local 200"
	expect_contains "proxy mode: and the proxy still decides what leaves" "$OUT" "outside 403"
	expect_eq "the plan: landlock-net off, the namespace holds TCP" \
		"$(json "$T/r.json" '[l["state"] for l in d["plan"]["layers"] if l["layer"] == "landlock-net"][0]')" off
}

# While a server listens inside on PORT, the host's connection to 127.0.0.1:PORT is refused:
# the sandbox's loopback is not the host's.
test_host_cannot_reach() {
	local port helper
	port=$(free_port)
	rm -f "$WS/ready" "$WS/done"
	(wait_until 20 test -e "$WS/ready"
	 python3 -c '
import errno, socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close()
    print("CONNECTED")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$port" >"$T/host-try"
	 touch "$WS/done") &
	helper=$!
	run_in -- python3 -c '
import socket, sys, os, time
s = socket.socket()
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen()
open("ready", "w").close()
end = time.time() + 20
while not os.path.exists("done") and time.time() < end:
    time.sleep(0.05)
s.settimeout(0.5)
try:
    s.accept()
    print("accepted")
except OSError:
    print("nothing came")
' "$port"
	wait "$helper"
	expect_eq "a server inside on 0.0.0.0:$port: nothing reached it" "$OUT" "nothing came"
	expect_eq "the host's connect to 127.0.0.1:$port is refused" "$(cat "$T/host-try")" ECONNREFUSED
}

test_persistent() {
	local state=$T/state
	mkdir -p "$state"
	aj_run create --state-dir "$state" --name srv $(rootless_flags)
	if [ "$RC" != 0 ]; then
		not_ok "persistent sandbox: create (exit $RC: $ERR)"
		return
	fi
	aj_run exec --state-dir "$state" srv -- sh -c "$HTTP_SERVER" sh 127.0.0.1 \
		http://127.0.0.1:8123
	expect_eq "persistent sandbox: a server started by exec serves" "$OUT" "got hello"
	"$AJ" rm -f --state-dir "$state" srv >/dev/null 2>&1
}

test_http_server
test_node_port0
test_host_cannot_reach
test_persistent
