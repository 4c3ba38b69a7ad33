#!/usr/bin/env bash
# Published ports and port-forward: real servers inside (python3's http.server, a WebSocket
# echo server, a line echo server, a server that sends 1 GiB) reached from the host with curl
# and real clients through `run -p`, `create -p` and `port-forward`; each connection an
# event; ports bound again after stop/start; a port taken meanwhile named; bad input refused
# with nothing left bound or running. Traffic stays on loopback.
# rootless: yes
# timeout: 420
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir "$WS"
chmod 777 "$WS"
cp "$AJ_ROOT/tests/helpers/portsrv.py" "$WS/"
echo "hello from inside" >"$WS/index.txt"
export AGENTJAIL_STATE_DIR=$T/state
# The host's clients: Debian's python3 has python3-websockets.
PY=/usr/bin/python3
NAMES=()
cleanup_sandboxes() {
	local n
	for n in "${NAMES[@]}"; do "$AJ" rm -f "$n" >/dev/null 2>&1; done
}
trap 'cleanup_sandboxes; _aj_cleanup' EXIT

# bg_run NAME ARGS... -- CMD...: a one-shot run in the background (stderr to $T/NAME.err);
# sets BG_PID and, once the run printed it, HOST_PORT (the first published port's host side).
bg_run() {
	local name=$1
	shift
	rm -f "$WS/ready"
	# shellcheck disable=SC2046
	"$AJ" run $(rootless_flags) -w "$WS" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
	BG_PID=$!
	wait_until 30 grep -q "published on" "$T/$name.err"
	HOST_PORT=$(sed -n 's/.*published on .*:\([0-9]*\)$/\1/p' "$T/$name.err" | head -1)
	wait_until 30 test -e "$WS/ready"
}

test_http() {
	local code
	bg_run http -p 8000 --report "$T/http.json" --events "$T/http.ev" -- sh -c '
python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 & pid=$!
for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:8000/ && break; sleep 0.1; done
touch ready
for i in $(seq 300); do [ -e done ] && break; sleep 0.1; done
kill $pid'
	expect_contains "run -p 8000: the ephemeral host port is printed" "$(cat "$T/http.err")" \
		"agentjail: port 8000 published on 127.0.0.1:"
	expect_eq "curl through the published port reaches http.server inside" \
		"$(curl -sS -m 10 "http://127.0.0.1:$HOST_PORT/index.txt")" "hello from inside"
	code=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HOST_PORT/missing")
	expect_eq "a second request on a new connection: the server's own 404" "$code" 404
	touch "$WS/done"
	wait "$BG_PID"
	expect_eq "the run ends with its command: exit 0" "$?" 0
	rm -f "$WS/done"
	expect_eq "the report names the published port" \
		"$(json "$T/http.json" '[(p["host_ip"], p["host_port"] == '"$HOST_PORT"', p["port"]) for p in d["ports"]]')" \
		"[('127.0.0.1', True, 8000)]"
	expect_eq "each connection is an event: peer, ports, bytes both ways, duration" \
		"$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
c = [e for e in ev if e["event"] == "port.connection"]
print(len(c), all(e["port"] == 8000 and e["peer"].startswith("127.0.0.1:") and e["bytes_in"] > 0
                  and e["bytes_out"] > 0 and "duration_ms" in e for e in c))' "$T/http.ev")" "2 True"
	expect_eq "the plan's network namespace names the inbound port" \
		"$(json "$T/http.json" '[l["detail"] for l in d["plan"]["layers"] if l["layer"] == "network-namespace"][0].split("; ")[-1]')" \
		"inbound only from published ports: 127.0.0.1->8000"
}

test_ipv6_server_and_fixed_port() {
	local port
	port=$(free_port)
	bg_run v6 -p "127.0.0.1:$port:8001" -- sh -c '
python3 -c "
import http.server, socket
class S(http.server.ThreadingHTTPServer): address_family = socket.AF_INET6
S((\"::1\", 8001), http.server.SimpleHTTPRequestHandler).serve_forever()" >/dev/null 2>&1 & pid=$!
for i in $(seq 100); do curl -s -o /dev/null "http://[::1]:8001/" && break; sleep 0.1; done
touch ready
for i in $(seq 300); do [ -e done ] && break; sleep 0.1; done
kill $pid'
	expect_eq "a fixed host port is bound as asked" "$HOST_PORT" "$port"
	expect_eq "a server on ::1 only is reached (127.0.0.1 refused, then ::1)" \
		"$(curl -sS -m 10 "http://127.0.0.1:$port/index.txt")" "hello from inside"
	touch "$WS/done"
	wait "$BG_PID"
	rm -f "$WS/done"
}

test_websocket() {
	if ! /usr/bin/python3 -c 'import websockets' 2>/dev/null; then
		skip "WebSocket through a published port" "python3-websockets is not installed"
		return
	fi
	bg_run ws -p 0:8002 -- python3 portsrv.py ws 8002 ready 60
	expect_eq "WebSocket through -p: the server's message, a text and a 1 MiB binary echo" \
		"$($PY "$AJ_ROOT/tests/helpers/portsrv.py" wsclient "ws://127.0.0.1:$HOST_PORT/" 2>&1)" \
		"welcome
text ok
binary ok"
	kill "$BG_PID"
	wait "$BG_PID"
}

test_gib() {
	local got
	bg_run gib -p 0:8003 -- python3 portsrv.py blob 8003 1073741824 ready 120
	got=$(curl -sS -m 120 -o /dev/null -w '%{size_download} %{http_code}' "http://127.0.0.1:$HOST_PORT/")
	expect_eq "1 GiB through a published port, whole" "$got" "1073741824 200"
	kill "$BG_PID"
	wait "$BG_PID"
}

test_many() {
	local n=1000
	bg_run many -p 0:8004 --open-files 4096 -- python3 portsrv.py echo 8004 ready 90
	expect_eq "$n concurrent connections through one published port, each echoed" \
		"$(python3 "$AJ_ROOT/tests/helpers/portsrv.py" many 127.0.0.1 "$HOST_PORT" "$n")" \
		"echoed $n of $n"
	kill "$BG_PID"
	wait "$BG_PID"
}

test_persistent() {
	local fixed pf_pid lp
	fixed=$(free_port)
	NAMES+=(web)
	cd "$WS" || return
	# shellcheck disable=SC2046
	aj_run create $(rootless_flags) --name web -p "$fixed:8000" -p 8001
	cd - >/dev/null || return
	expect_eq "create -p: exit 0 ($ERR)" "$RC" 0
	aj_run port web
	expect_eq "port lists both, as bound" \
		"$(echo "$OUT" | sed 's/:[0-9]*$/:N/')" "8000/tcp -> 127.0.0.1:N
8001/tcp -> 127.0.0.1:N"
	expect_contains "the fixed host port is the one asked for" "$OUT" "8000/tcp -> 127.0.0.1:$fixed"
	aj_run port web 8001
	local eph=${OUT##*:}
	aj_run --json port web
	expect_eq "port --json" "$(echo "$OUT" | python3 -c 'import json,sys; print([p["port"] for p in json.load(sys.stdin)])')" "[8000, 8001]"
	"$AJ" exec web -- sh -c 'cd /workspace 2>/dev/null || true; nohup python3 -m http.server 8000 --bind 0.0.0.0 >/dev/null 2>&1 &'
	wait_until 20 curl -s -o /dev/null "http://127.0.0.1:$fixed/"
	expect_eq "a server started by exec, on 0.0.0.0, through create -p" \
		"$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$fixed/")" 200

	"$AJ" port-forward web 0:8000 >"$T/pf.out" 2>"$T/pf.err" &
	pf_pid=$!
	wait_until 20 grep -q Forwarding "$T/pf.out"
	lp=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) -> 8000$/\1/p' "$T/pf.out")
	expect_eq "port-forward: the same server through an ad hoc port" \
		"$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$lp/")" 200

	aj_run stop web
	wait_until 20 pid_gone "$pf_pid"
	wait "$pf_pid"
	expect_eq "port-forward ends with exit 3 (wrong state) when the sandbox stops" "$?" 3
	expect_contains "saying so" "$(cat "$T/pf.err")" 'the sandbox "web" stopped'
	expect_eq "stopped: the published host port is released" \
		"$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$fixed/")" 000

	aj_run start web
	expect_eq "start: exit 0" "$RC" 0
	aj_run port web 8000
	expect_eq "start binds the fixed host port again" "$OUT" "127.0.0.1:$fixed"
	"$AJ" exec web -- sh -c 'nohup python3 -m http.server 8000 >/dev/null 2>&1 &'
	wait_until 20 curl -s -o /dev/null "http://127.0.0.1:$fixed/"
	expect_eq "and serves through it" \
		"$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$fixed/")" 200
	aj_run events web
	expect_contains "connections are the sandbox's events" "$OUT" '"port":8000'

	aj_run stop web
	python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); open(sys.argv[2], "w").close(); time.sleep(30)' \
		"$fixed" "$T/taken" &
	local holder=$!
	wait_until 10 test -e "$T/taken"
	aj_run start web
	expect_eq "start with the host port taken meanwhile: exit 125" "$RC" 125
	expect_contains "the error names the port" "$ERR" "publish port 8000 on 127.0.0.1:$fixed"
	expect_contains "and says it is in use" "$ERR" "in use"
	aj_run inspect web
	expect_eq "the sandbox stays stopped" "$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" stopped
	kill "$holder"
	wait "$holder" 2>/dev/null
	[ -n "$eph" ] # the ephemeral port was read
}

test_bad_input() {
	local spec port
	for spec in 0 65536 80/udp 8000-8010 'x:80' '::1:8080:80' '[::1]:80' ''; do
		aj_run run -p "$spec" -- true
		expect_eq "-p '$spec': exit 125" "$RC" 125
		expect_contains "-p '$spec': the flag is named" "$ERR" "--publish \"$spec\""
	done
	aj_run run --network host -p 8000 -- true
	expect_eq "-p with --network host: refused (exit 125)" "$RC" 125
	expect_contains "saying why" "$ERR" "network.publish: the sandbox shares the host's network"
	aj_run run --tier landlock -p 8000 -- true
	expect_eq "-p in the landlock tier: refused (exit 125)" "$RC" 125
	expect_contains "naming network.listen instead" "$ERR" "network.listen"
	aj_run run --allow-host example.invalid -p 3128 -- true
	expect_eq "publishing the egress proxy's port: refused (exit 125)" "$RC" 125
	expect_contains "saying whose it is" "$ERR" "port 3128 inside is the egress proxy's"
	port=$(free_port)
	aj_run run -p "$port:80" -p "$port:81" -- true
	expect_eq "the same host port twice: exit 125" "$RC" 125
	expect_contains "naming both" "$ERR" "published twice"
	# shellcheck disable=SC2046
	aj_run run $(rootless_flags) -p 203.0.113.9:0:80 -- true
	expect_eq "an address this host does not have: exit 125" "$RC" 125
	expect_contains "named" "$ERR" "203.0.113.9 is not an address of this host"
	# A port in use: the run fails before its command runs.
	python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); open(sys.argv[2], "w").close(); time.sleep(20)' \
		"$port" "$T/held" &
	local holder=$!
	wait_until 10 test -e "$T/held"
	rm -f "$WS/ran"
	# shellcheck disable=SC2046
	aj_run run $(rootless_flags) -w "$WS" -p "$port:80" -- touch ran
	expect_eq "a host port in use: exit 125" "$RC" 125
	expect_contains "naming it" "$ERR" "host port $port is in use"
	expect_eq "the command did not run" "$(test -e "$WS/ran" && echo ran || echo "did not run")" "did not run"
	kill "$holder"
	wait "$holder" 2>/dev/null
	if ! is_root; then
		aj_run run $(rootless_flags) -w "$WS" -p 80:80 -- true
		expect_eq "rootless: host port 80: exit 125" "$RC" 125
		expect_contains "naming the port and the privilege" "$ERR" "below 1024 need privilege"
	fi
	aj_run port-forward nosuch 8000
	expect_eq "port-forward to no sandbox: exit 1" "$RC" 1
	aj_run port-forward web 127.0.0.1:1:2
	expect_eq "port-forward with an address in the port: exit 125" "$RC" 125
	expect_contains "pointing at --address" "$ERR" "--address"
}

test_http
test_ipv6_server_and_fixed_port
test_websocket
test_gib
test_many
test_persistent
test_bad_input
