#!/usr/bin/env bash
# Ports through the daemon: ANY /v1/sandboxes/{ref}/ports/{port}/PATH on the unix socket and on
# TCP with bearer tokens, and preview URLs (serve --preview-listen --preview-domain) routed by
# Host, with the owner's token, a preview token (query, then cookie, or header) or a public
# port. Real servers inside (python3's http.server, a server that echoes the request head, a
# WebSocket echo server, one that sends 256 MiB), and port-forward for WebSocket too; the
# daemon's credentials never reach them.
# Isolation: no token, another sandbox's preview token, another port's, another owner's bearer
# token and a bad Host are refused. Traffic stays on loopback.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
TA=alice-token-0123456789abcdef
TB=bob-token-0123456789abcdef01
sv_tokens "$TA alice" "$TB bob"
PP=$(free_port)
sv_start_tcp --preview-listen "127.0.0.1:$PP" --preview-domain localhost ||
	{ not_ok "serve with a preview listener ($(tail -5 "$SV_LOG"))"; exit 0; }
ok "serve with --preview-listen and --preview-domain"
PY=/usr/bin/python3
W=$(mktmp)
cp "$AJ_ROOT/tests/helpers/portsrv.py" "$W/"
chmod 644 "$W/portsrv.py"

# The local owner's sandbox "web": servers on 8000 (files), 8001 (request heads), 8002 (a
# WebSocket echo), 8003 (256 MiB); 8009 is public.
pj_create web --ro "$W" --public-port 8001
"$AJ" --state-dir "$STATE" exec web -- sh -c "
cd /tmp && echo served-inside >index.txt
nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &
nohup python3 $W/portsrv.py headers 8001 /tmp/r1 120 >/dev/null 2>&1 &
nohup python3 $W/portsrv.py ws 8002 /tmp/r2 120 >/dev/null 2>&1 &
nohup python3 $W/portsrv.py blob 8003 268435456 /tmp/r3 120 >/dev/null 2>&1 &
for i in \$(seq 100); do [ -e /tmp/r1 ] && [ -e /tmp/r3 ] && curl -s -o /dev/null http://127.0.0.1:8000/ && break; sleep 0.1; done"
ID=$(pj_field web 'd["id"]')
pj_create web2
ID2=$(pj_field web2 'd["id"]')
U="http://aj/v1/sandboxes/web/ports"

# dialers: the processes below a supervisor named aj-dialer (made at a sandbox's first port use)
dialers() {
	local sup
	sup=$("$AJ" --state-dir "$STATE" inspect --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["supervisor_pid"])')
	for c in $(pgrep -P "$sup"); do [ "$(cat "/proc/$c/comm" 2>/dev/null)" = aj-dialer ] && echo "$c"; done | grep -c .
}
expect_eq "an idle sandbox without published ports has no dialer process" "$(dialers web)" 0

# ---- the API path ----------------------------------------------------------------------------

expect_eq "unix socket: GET .../ports/8000/index.txt reaches http.server inside" \
	"$(curl -sS -m 10 --unix-socket "$SOCK" "$U/8000/index.txt")" "served-inside"
expect_eq "its first port use made one" "$(dialers web)" 1
expect_eq "by id as well" \
	"$(curl -sS -m 10 --unix-socket "$SOCK" "http://aj/v1/sandboxes/$ID/ports/8000/index.txt")" "served-inside"
head=$(curl -sS -m 10 --unix-socket "$SOCK" -H 'Cookie: app=1' "$U/8001/a/b?x=1&y=2")
expect_contains "the path and query inside are the rest of the URL" "$head" "GET /a/b?x=1&y=2"
expect_contains "the client's cookie goes in" "$head" "Cookie: app=1"
expect_contains "with Connection: close and X-Forwarded-For" "$head" "X-Forwarded-For: "
code=$(curl -sS -m 10 --unix-socket "$SOCK" -o "$W/post.out" -w '%{http_code}' \
	-X POST --data-binary 'a body' "$U/8001/post")
expect_eq "a POST with a body: the server's 200" "$code" 200
expect_contains "its body's length arrives" "$(cat "$W/post.out")" "Content-Length: 6"
got=$(curl -sS -m 60 --unix-socket "$SOCK" -o /dev/null -w '%{size_download} %{http_code}' "$U/8003/")
expect_eq "256 MiB streamed through the API path" "$got" "268435456 200"
code=$(curl -s -m 10 --unix-socket "$SOCK" -o "$W/e.json" -w '%{http_code}' "$U/8007/")
expect_eq "nothing listens on 8007: 502" "$code" 502
expect_contains "saying so" "$(cat "$W/e.json")" "nothing listens there"
code=$(curl -s -m 10 --unix-socket "$SOCK" -o "$W/e.json" -w '%{http_code}' "http://aj/v1/sandboxes/nope/ports/8000/")
expect_eq "no such sandbox: 404" "$code" 404
code=$(curl -s -m 10 --unix-socket "$SOCK" -o "$W/e.json" -w '%{http_code}' "$U/70000/")
expect_eq "port 70000: 400" "$code" 400

# Over TCP the local owner's sandbox is no token owner's.
code=$(curl -s -m 10 -H "Authorization: Bearer $TA" -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$SV_PORT/v1/sandboxes/$ID/ports/8000/index.txt")
expect_eq "TCP: alice's token on another owner's sandbox: 404" "$code" 404
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SV_PORT/v1/sandboxes/$ID/ports/8000/")
expect_eq "TCP without a token: 401" "$code" 401

# ---- preview URLs ----------------------------------------------------------------------------

H="Host: 8000-$ID.localhost:$PP"
code=$(curl -s -m 10 -H "$H" -o "$W/e.json" -w '%{http_code}' "http://127.0.0.1:$PP/index.txt")
expect_eq "preview without a token: 401" "$code" 401
expect_contains "naming what opens it" "$(cat "$W/e.json")" "preview token"
aj_run --state-dir "$STATE" port web 8000 --url
URL=$OUT
expect_contains "port --url: PORT-ID.DOMAIN:LISTENPORT with a token" "$URL" "http://8000-$ID.localhost:$PP/?aj_token="
TOK=${URL##*=}
curl -s -m 10 -H "$H" -D "$W/h" -o /dev/null "http://127.0.0.1:$PP/index.txt?aj_token=$TOK&keep=1"
expect_contains "?aj_token=: a redirect" "$(tr -d '\r' <"$W/h")" "HTTP/1.1 302"
expect_contains "to the same URL without the token" "$(tr -d '\r' <"$W/h")" "Location: /index.txt?keep=1"
expect_contains "that sets the host's cookie" "$(tr -d '\r' <"$W/h")" "Set-Cookie: aj_preview=$TOK; Path=/; HttpOnly"
expect_eq "the cookie opens it" \
	"$(curl -sS -m 10 -H "$H" -H "Cookie: aj_preview=$TOK" "http://127.0.0.1:$PP/index.txt")" served-inside
expect_eq "so does the header" \
	"$(curl -sS -m 10 -H "$H" -H "X-Agentjail-Preview-Token: $TOK" "http://127.0.0.1:$PP/index.txt")" served-inside
expect_contains "and a browser following the redirect with a cookie jar" \
	"$(curl -sS -m 10 -L -c "$W/jar" -b "$W/jar" --resolve "8000-$ID.localhost:$PP:127.0.0.1" "$URL")" \
	"Directory listing for /"
expect_eq "the owner's bearer token on the preview host is not this owner's: 404" \
	"$(curl -s -m 10 -H "$H" -H "Authorization: Bearer $TA" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PP/index.txt")" 404
code=$(curl -s -m 10 -H "Host: 8002-$ID.localhost" -H "X-Agentjail-Preview-Token: $TOK" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PP/")
expect_eq "port 8000's token does not open port 8002: 401" "$code" 401
code=$(curl -s -m 10 -H "Host: 8000-$ID2.localhost" -H "X-Agentjail-Preview-Token: $TOK" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PP/")
expect_eq "nor another sandbox's port 8000: 401" "$code" 401
code=$(curl -s -m 10 -H "Host: 8000-web.localhost" -H "X-Agentjail-Preview-Token: $TOK" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PP/")
expect_eq "without the owner's token a sandbox is named by its id: 404" "$code" 404
for bad in "example.com" "8000-$ID.other" "x-$ID.localhost" "99999-$ID.localhost" "8000-.localhost" "8000-a.b.localhost"; do
	code=$(curl -s -m 10 -H "Host: $bad" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PP/")
	expect_eq "Host $bad: 404" "$code" 404
done
head=$(curl -sS -m 10 -H "Host: 8001-$ID.localhost" -H "Cookie: app=2; aj_preview=$TOK" "http://127.0.0.1:$PP/h")
expect_contains "a public port (--public-port 8001) needs no token" "$head" "GET /h"
expect_not_contains "the preview cookie does not reach the server" "$head" "aj_preview"
expect_contains "the app's own cookie does" "$head" "Cookie: app=2"
if $PY -c 'import websockets' 2>/dev/null; then
	WS_OUT=$($PY "$W/portsrv.py" wsclient "ws://8002-$ID.localhost:$PP/" "127.0.0.1:$PP" 2>&1)
	expect_contains "WebSocket through a preview URL without a token: refused" "$WS_OUT" "401"
	expect_eq "WebSocket through the unix socket's API path: both ways" \
		"$($PY - "$SOCK" <<'EOF'
import asyncio, sys, os
import websockets
async def main():
    async with websockets.unix_connect(sys.argv[1], "ws://aj/v1/sandboxes/web/ports/8002/", max_size=4 << 20) as ws:
        print(await asyncio.wait_for(ws.recv(), 10))
        await ws.send("hello"); print("text ok" if await ws.recv() == "hello" else "text wrong")
        b = os.urandom(1 << 20); await ws.send(b)
        print("binary ok" if await asyncio.wait_for(ws.recv(), 20) == b else "binary wrong")
asyncio.run(main())
EOF
)" "welcome
text ok
binary ok"
	H8002="X-Agentjail-Preview-Token: $($AJ --state-dir "$STATE" port web 8002 --url | sed 's/.*aj_token=//')"
	expect_eq "WebSocket through a preview URL with its token: both ways" \
		"$($PY - "$PP" "$ID" "$H8002" <<'EOF'
import asyncio, sys, os
import websockets
async def main():
    k, v = sys.argv[3].split(": ", 1)
    async with websockets.connect("ws://8002-%s.localhost:%s/" % (sys.argv[2], sys.argv[1]), host="127.0.0.1",
                                  port=int(sys.argv[1]), extra_headers={k: v}, max_size=4 << 20) as ws:
        print(await asyncio.wait_for(ws.recv(), 10))
        await ws.send("hello"); print("text ok" if await ws.recv() == "hello" else "text wrong")
        b = os.urandom(1 << 20); await ws.send(b)
        print("binary ok" if await asyncio.wait_for(ws.recv(), 20) == b else "binary wrong")
asyncio.run(main())
EOF
)" "welcome
text ok
binary ok"
	"$AJ" --state-dir "$STATE" port-forward web 0:8002 >"$W/pf.out" 2>&1 &
	PF=$!
	wait_until 20 grep -q Forwarding "$W/pf.out"
	LP=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) -> 8002$/\1/p' "$W/pf.out")
	expect_eq "WebSocket through port-forward: both ways" \
		"$($PY "$W/portsrv.py" wsclient "ws://127.0.0.1:$LP/" 2>&1)" "welcome
text ok
binary ok"
	kill "$PF"
	wait "$PF" 2>/dev/null
else
	skip "WebSocket through the daemon" "python3-websockets is not installed"
fi

# A hostile server inside that keeps every connection open: a client that reuses its
# connection to the daemon must not get a second request through unchecked.
"$AJ" --state-dir "$STATE" exec web -- sh -c "nohup python3 $W/portsrv.py keepalive 8004 /tmp/r4 /tmp/heads.log 120 >/dev/null 2>&1 &
for i in \$(seq 100); do [ -e /tmp/r4 ] && break; sleep 0.1; done"
T8004=$("$AJ" --state-dir "$STATE" port web 8004 --url | sed 's/.*aj_token=//')
REUSE=$(python3 - "$PP" "8004-$ID.localhost" "$T8004" <<'EOF'
import socket, sys
port, host, tok = int(sys.argv[1]), sys.argv[2], sys.argv[3]
req = ("GET /r%d HTTP/1.1\r\nHost: " + host + "\r\nX-Agentjail-Preview-Token: " + tok + "\r\n\r\n")
s = socket.create_connection(("127.0.0.1", port), 5)
s.settimeout(5)
s.sendall((req % 1).encode())
first = s.recv(65536)
print("first:", first.split(b"\r\n")[0].decode())
try:
    s.sendall((req % 2).encode())
    second = s.recv(65536)
    print("second:", second.split(b"\r\n")[0].decode() if second else "closed")
except OSError as e:
    print("second: closed (%s)" % e.__class__.__name__)
EOF
)
expect_contains "a reused connection: the first request is answered" "$REUSE" "first: HTTP/1.1 200 OK"
expect_contains "the second request on it goes nowhere: the connection is closed" "$REUSE" "second: closed"
HEADS=$("$AJ" --state-dir "$STATE" exec web -- cat /tmp/heads.log)
expect_contains "the server inside saw the first request" "$HEADS" "GET /r1 HTTP/1.1"
expect_not_contains "and never the second" "$HEADS" "GET /r2"
expect_not_contains "nor a preview token" "$HEADS" "$T8004"

# A host service the sandbox may use (--host-port) is not the daemon's to serve: not through
# the API path, not through a preview URL, public or not.
HPORT=$(free_port)
pj_create hps --host-port "$HPORT" --public-port "$HPORT"
HID=$(pj_field hps 'd["id"]')
code=$(curl -s -m 10 --unix-socket "$SOCK" -o "$W/e.json" -w '%{http_code}' "http://aj/v1/sandboxes/hps/ports/$HPORT/")
expect_eq "a host_ports port through the API path: 403" "$code" 403
expect_contains "naming it a host service's" "$(cat "$W/e.json")" "network.host_ports"
code=$(curl -s -m 10 -H "Host: $HPORT-$HID.localhost" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PP/")
expect_eq "nor through a public preview URL: 403" "$code" 403
aj_run --state-dir "$STATE" create --name hpx --host-port 8000 -p 8000
expect_eq "publishing a host_ports port: refused (125)" "$RC" 125

# ---- a token owner's sandbox -----------------------------------------------------------------

if is_root; then
	# alice's own sandbox, over TCP.
	apitj "$TA" POST /v1/sandboxes "{\"name\": \"al\", \"policy\": $SV_POLICY}"
	expect_api "alice creates a sandbox" 201
	apitj "$TA" POST /v1/sandboxes/al/processes '{"command": "cd /tmp && echo alices >a.txt && exec python3 -m http.server 8000 --bind 127.0.0.1"}'
	expect_api "and starts http.server in it" 201
	AL=$(apit "$TA" GET /v1/sandboxes/al >/dev/null; bj 'd["id"]')
	wait_until 20 sh -c "curl -sf -m 2 -H 'Authorization: Bearer $TA' http://127.0.0.1:$SV_PORT/v1/sandboxes/al/ports/8000/a.txt >/dev/null"
	expect_eq "TCP: alice reaches her sandbox's port" \
		"$(curl -sS -m 10 -H "Authorization: Bearer $TA" "http://127.0.0.1:$SV_PORT/v1/sandboxes/al/ports/8000/a.txt")" alices
	code=$(curl -s -m 10 -H "Authorization: Bearer $TB" -o /dev/null -w '%{http_code}' \
		"http://127.0.0.1:$SV_PORT/v1/sandboxes/al/ports/8000/a.txt")
	expect_eq "bob's token on alice's sandbox: 404" "$code" 404
	apitj "$TA" POST /v1/sandboxes/al/processes "{\"command\": \"exec python3 -c 'import http.server as h, sys\nclass H(h.BaseHTTPRequestHandler):\n def do_GET(s):\n  b=str(s.headers).encode(); s.send_response(200); s.send_header(\\\"Content-Length\\\", str(len(b))); s.end_headers(); s.wfile.write(b)\nh.HTTPServer((\\\"127.0.0.1\\\", 8001), H).serve_forever()'\"}"
	wait_until 20 sh -c "curl -sf -m 2 -H 'Authorization: Bearer $TA' http://127.0.0.1:$SV_PORT/v1/sandboxes/al/ports/8001/ >/dev/null"
	head=$(curl -sS -m 10 -H "Authorization: Bearer $TA" "http://127.0.0.1:$SV_PORT/v1/sandboxes/al/ports/8001/")
	expect_not_contains "alice's bearer token does not reach her server" "$head" "$TA"
	expect_not_contains "nor any Authorization header" "$head" "Authorization"

	apit "$TA" GET "/v1/sandboxes/al/preview?port=8000"
	expect_api "GET .../preview?port=8000: 200" 200
	expect_eq "its host" "$(bj 'd["host"]')" "8000-$AL.localhost:$PP"
	ATOK=$(bj 'd["token"]')
	expect_eq "alice's preview token opens her port 8000" \
		"$(curl -sS -m 10 -H "Host: 8000-$AL.localhost" -H "X-Agentjail-Preview-Token: $ATOK" "http://127.0.0.1:$PP/a.txt")" alices
	expect_eq "so does her bearer token, with the name" \
		"$(curl -sS -m 10 -H "Host: 8000-al.localhost" -H "Authorization: Bearer $TA" "http://127.0.0.1:$PP/a.txt")" alices
	apit "$TA" GET "/v1/sandboxes/al/preview?port=0"
	expect_api "preview?port=0: 400" 400 port
else
	skip "a token owner's sandbox through the API path and a preview URL" \
		"rootless without a delegated cgroup a sandbox needs limits.memory null, which token owners may not ask for"
fi

aj_run --state-dir "$STATE" stop web
code=$(curl -s -m 10 --unix-socket "$SOCK" -o "$W/e.json" -w '%{http_code}' "$U/8000/")
expect_eq "a stopped sandbox: 409" "$code" 409
code=$(curl -s -m 10 -H "Host: 8000-$ID.localhost" -o "$W/e.json" -w '%{http_code}' "http://127.0.0.1:$PP/")
expect_eq "a preview of a stopped sandbox without a token: 404, as for none (no oracle of states)" "$code" 404
expect_not_contains "not saying it is stopped" "$(cat "$W/e.json")" "stopped"
sv_done
