#!/usr/bin/env bash
# The web console's server side without a browser (docs/console.md, docs/api.md "Terminal"):
# the page and its files on --listen with their security headers; --console-listen (loopback
# only, port 0, console.json written once bound and removed at the end, its token and
# single-use login codes, sessions, loopback Hosts only); and the terminal's WebSocket with a
# real client (python3-websockets): tickets (single use, per owner, per sandbox, capped per
# owner), Origin and authentication refusals, a resize seen inside, a 1 MB paste arriving
# whole, protocol violations answered with their close codes (and read by the client, not
# reset), a client that never reads kept to a bounded memory, terminals capped per owner, the
# command killed with its connection, at the daemon's shutdown and when the daemon is killed.
# passes: main sanitize
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
PY=/usr/bin/python3
WS="$PY $AJ_ROOT/tests/helpers/ws_term.py"
if ! $PY -c 'import websockets' 2>/dev/null; then
	skip "the console's WebSocket" "python3-websockets is not installed (scripts/install-deps installs it)"
	exit 0
fi
TA=alice-console-token-0123456789
TB=bob-console-token-0123456789ab
sv_tokens "$TA alice" "$TB bob"

# ---- --console-listen -------------------------------------------------------------------------

out=$(timeout 20 "$AJ" serve --socket "$SV_DIR/x.sock" --state-dir "$STATE" --console-listen "0.0.0.0:$(free_port)" 2>&1)
expect_eq "--console-listen on 0.0.0.0: exit 125" "$?" 125
expect_contains "--console-listen on 0.0.0.0: says why" "$out" "not a loopback address"
check "a refused --console-listen writes no console.json" test ! -e "$STATE/console.json"
# Another process holds the port: the daemon fails, and writes no login URL pointing there.
HELD=$(free_port)
/usr/bin/python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(); print("held",flush=True); time.sleep(30)' "$HELD" >"$SV_DIR/held" &
SV_PIDS+=($!)
wait_until 10 grep -q held "$SV_DIR/held"
out=$(timeout 20 "$AJ" serve --socket "$SV_DIR/x.sock" --state-dir "$STATE" --console-listen "127.0.0.1:$HELD" 2>&1)
expect_eq "--console-listen on a port held by another process: exit 125" "$?" 125
check "... and no console.json names that port" test ! -e "$STATE/console.json"

CPORT=$(free_port)
sv_start_tcp --console-listen "127.0.0.1:$CPORT" ||
	{ not_ok "serve --listen --console-listen ($(tail -5 "$SV_LOG"))"; exit 0; }
expect_eq "console.json is 0600" "$(stat -c %a "$STATE/console.json")" 600
CT=$(json "$STATE/console.json" 'd["token"]')
check "the console token is 64 hex digits" grep -Eq '^[0-9a-f]{64}$' <<<"$CT"
LOGIN=$(json "$STATE/console.json" 'd["login_url"]')
check "the login URL carries a login code in its fragment, not the token" \
	grep -Eq "^http://127\.0\.0\.1:$CPORT/console/#login=[0-9a-f]{64}\$" <<<"$LOGIN"
C="http://127.0.0.1:$CPORT"

# ---- the page and its files -------------------------------------------------------------------

hdr=$(curl -s -D - -o "$SV_DIR/page" "http://127.0.0.1:$SV_PORT/console/")
csp=$(sed -n 's/^Content-Security-Policy: //Ip' <<<"$hdr" | tr -d '\r')
expect_contains "the page: 200 text/html" "$hdr" "Content-Type: text/html"
expect_contains "CSP: scripts of this origin only" "$csp" "script-src 'self';"
expect_not_contains "CSP: no inline or eval'd script" "$csp" "unsafe-eval"
expect_contains "CSP: no framing" "$csp" "frame-ancestors 'none'"
expect_contains "CSP: connections to this origin only" "$csp" "connect-src 'self'"
expect_contains "X-Frame-Options: DENY" "$hdr" "X-Frame-Options: DENY"
expect_contains "nosniff" "$hdr" "X-Content-Type-Options: nosniff"
nonce=$(grep -o "nonce-[0-9a-f]*" <<<"$csp")
expect_contains "the page's script tag carries the answer's nonce" "$(cat "$SV_DIR/page")" "nonce=\"${nonce#nonce-}\""
check "no inline script in the page" bash -c "! grep -Eq '<script>|<script [^>]*>[^<]' '$SV_DIR/page'"
nonce2=$(curl -s -D - -o /dev/null "http://127.0.0.1:$SV_PORT/console/" | grep -o "nonce-[0-9a-f]*")
check "a fresh nonce per answer" test "$nonce" != "$nonce2"
code=$(curl -s -o "$SV_DIR/xterm.js" -w '%{http_code} %{content_type}' "http://127.0.0.1:$SV_PORT/console/vendor/xterm.js")
expect_eq "xterm.js is built in" "$code" "200 text/javascript; charset=utf-8"
check "xterm.js is whole (its license header and its size)" bash -c "[ \$(stat -c %s '$SV_DIR/xterm.js') -gt 100000 ]"
expect_eq "/console redirects to /console/" "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$SV_PORT/console")" \
	"302 http://127.0.0.1:$SV_PORT/console/"
# The console's files are no part of the JSON API of docs/openapi.json.
SV_NO_OPENAPI=1 apit "" GET /console/nothing.js
expect_api "an unknown file: 404" 404 "" not_found
SV_NO_OPENAPI=1 apit "" POST /console/
expect_api "the files are read-only: 405" 405 "" method_not_allowed
apit "" GET /v1/sandboxes
expect_api "the page needs no token, the API still does" 401

# ---- the console listener ---------------------------------------------------------------------

apij POST /v1/sandboxes "{\"name\": \"local-box\", \"policy\": $SV_POLICY, \"start\": false}"
lc() { curl -s -o "$SV_DIR/lc" -w '%{http_code}' "$@"; }
expect_eq "the console token lists the local owner's sandboxes" \
	"$(lc -H "Authorization: Bearer $CT" "$C/v1/sandboxes")$(json "$SV_DIR/lc" '[s["name"] for s in d["sandboxes"]]')" "200['local-box']"
expect_eq "a --token-file token is not the console listener's" "$(lc -H "Authorization: Bearer $TA" "$C/v1/sandboxes")" 401
expect_eq "no token: 401" "$(lc "$C/v1/sandboxes")" 401
expect_eq "a Host that is not loopback (DNS rebinding): 403, token or not" \
	"$(lc -H "Authorization: Bearer $CT" -H "Host: evil.example:$CPORT" "$C/v1/sandboxes")" 403
expect_eq "localhost is a loopback Host" "$(lc -H "Authorization: Bearer $CT" -H "Host: localhost:$CPORT" "$C/v1/health")" 200
expect_eq "/ on the console listener goes to the page" "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$C/")" "302 $C/console/"
expect_eq "the page on the console listener" "$(lc "$C/console/")" 200

# The login code: once, for a session that is not the console's token.
login() { lc -H 'Content-Type: application/json' --data-binary "{\"code\": \"$1\"}" "$C/v1/console/session"; }
expect_eq "the login URL's code opens a session" "$(login "${LOGIN##*#login=}")" 200
SESS=$(json "$SV_DIR/lc" 'd["token"]')
check "the session's token is not the console's" test "$SESS" != "$CT"
expect_eq "a code works once" "$(login "${LOGIN##*#login=}")$(json "$SV_DIR/lc" 'd["error"]["field"]')" "401code"
check "console.json has a new login URL once its code is used" test "$(json "$STATE/console.json" 'd["login_url"]')" != "$LOGIN"
expect_eq "the session acts for the local owner (whoami)" \
	"$(lc -H "Authorization: Bearer $SESS" "$C/v1/whoami")$(json "$SV_DIR/lc" 'd["owner"], d["listener"]')" "200(None, 'console')"
apit "$TA" GET /v1/whoami
expect_api "whoami on --listen names the token's owner" 200
expect_eq "... alice" "$(bj 'd["owner"]')" alice
apit "$TA" POST /v1/console/session -H 'Content-Type: application/json' --data-binary '{"code": "x"}'
expect_api "--listen has no login by code: 404" 404 "" not_found
expect_eq "a session is not a --listen token" "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SESS" "http://127.0.0.1:$SV_PORT/v1/sandboxes")" 401
expect_eq "logging out ends the session" \
	"$(lc -X DELETE -H "Authorization: Bearer $SESS" "$C/v1/console/session")$(lc -H "Authorization: Bearer $SESS" "$C/v1/sandboxes")" 204401

# ---- terminal tickets -------------------------------------------------------------------------

if is_root; then PA='{"network":{"mode":"proxy","allow":["allowed.test"]}}'; else PA=$SV_POLICY; fi
apitj "$TA" POST /v1/sandboxes "{\"name\": \"term-a\", \"policy\": $PA}"
[ "$CODE" = 201 ] || { not_ok "alice's sandbox for the terminal ($BODY)"; exit 0; }
apitj "$TB" POST /v1/sandboxes "{\"name\": \"term-b\", \"policy\": $SV_POLICY, \"start\": false}"
ticket() { # TOKEN SANDBOX [BODY]
	local body=${3:-'{}'}
	apit "$1" POST "/v1/sandboxes/$2/terminal/tickets" -H 'Content-Type: application/json' --data-binary "$body"
}
# terminals_running: how many of term-a's terminal commands run.
terminals_running() {
	curl -s -H "Authorization: Bearer $TA" "http://127.0.0.1:$SV_PORT/v1/sandboxes/term-a/processes" |
		$PY -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["processes"] if p["tag"] == "terminal" and p["running"]))'
}
ticket "$TA" term-a
expect_api "a ticket for alice's sandbox" 200
T1=$(bj 'd["ticket"]')
expect_eq "the ticket names the sandbox's id" "$(bj 'd["sandbox"]')" "$(apit "$TA" GET /v1/sandboxes/term-a >/dev/null; bj 'd["id"]')"
ticket "$TB" term-a
expect_api "bob gets no ticket for alice's sandbox: 404" 404 "" not_found
ticket "$TB" term-b
expect_api "no ticket for a stopped sandbox: 409" 409 "" wrong_state
ticket "$TA" term-a '{"cwd": "relative"}'
expect_api "a relative cwd: 400 naming it" 400 cwd invalid_value
ticket "$TA" term-a '{"tty": false}'
expect_api "an unknown field: 400 naming it" 400 tty unknown_field

U="ws://127.0.0.1:$SV_PORT/v1/sandboxes/term-a/terminal"
ws() { $WS session "$@" 2>"$SV_DIR/ws.err"; }
wj() { printf '%s' "$1" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" 2>/dev/null || echo BROKEN; }

# ---- the terminal -----------------------------------------------------------------------------

r=$(ws "$U?rows=30&cols=100" --ticket "$T1" --origin "http://127.0.0.1:$SV_PORT" --send 'stty size; echo hi-$((6*7))\r' --wait-for hi-42)
expect_eq "a ticket opens the terminal (101, the subprotocol)" "$(wj "$r" 'd["status"], d.get("subprotocol")')" "(101, 'agentjail.terminal.v1')"
expect_eq "its first message names the process" "$(wj "$r" 'd["start"]["type"], d["start"]["process"] > 0')" "('start', True)"
expect_contains "the shell runs in the sandbox: echo" "$(wj "$r" 'd["output"]')" "hi-42"
expect_contains "the terminal has the size asked for" "$(wj "$r" 'd["output"]')" "30 100"
for _ in $(seq 50); do [ "$(terminals_running)" = 0 ] && break; sleep 0.2; done
expect_eq "closing the connection kills the command" "$(terminals_running)" 0
r=$(ws "$U" --ticket "$T1")
expect_eq "a ticket opens once: 401" "$(wj "$r" 'd["status"]')" 401

ticket "$TA" term-a; T2=$(bj 'd["ticket"]')
r=$(ws "$U" --ticket "$T2" --origin "http://evil.example")
expect_eq "another origin is refused, even with a valid ticket: 403" "$(wj "$r" 'd["status"]')" 403
r=$(ws "ws://127.0.0.1:$SV_PORT/v1/sandboxes/term-b/terminal" --ticket "$T2")
expect_eq "alice's ticket on bob's sandbox: 404 (not hers)" "$(wj "$r" 'd["status"]')" 404
ticket "$TA" term-a; T3=$(bj 'd["ticket"]')
r=$(ws "ws://127.0.0.1:$CPORT/v1/sandboxes/term-a/terminal" --ticket "$T3")
expect_eq "a ticket of --listen does not open on the console listener" "$(wj "$r" 'd["status"]')" 401
r=$(ws "$U")
expect_eq "no ticket and no token: 401" "$(wj "$r" 'd["status"]')" 401
r=$(ws "$U" --auth "$TB")
expect_eq "bob's token on alice's sandbox: 404" "$(wj "$r" 'd["status"]')" 404
r=$(ws "$U?rows=20&cols=60" --auth "$TA" --resize 40 120 --send 'sleep 0.3; stty size\r' --wait-for '40 120')
expect_contains "a client with the bearer token; a resize is seen inside" "$(wj "$r" 'd["output"]')" "40 120"
r=$(ws "$U" --auth "$TA" --send 'exit 3\r')
expect_eq "the command's exit is told, then a normal close" "$(wj "$r" 'd["exit"]["exit_code"], d["close_code"]')" "(3, 1000)"
r=$(ws "$U?rows=0" --auth "$TA")
expect_eq "rows out of range: 400" "$(wj "$r" 'd["status"]')" 400
ticket "$TA" term-a '{"command": "stty -echo; wc -c"}'
r=$(ws "$U" --ticket "$(bj 'd["ticket"]')" --paste 1000000 --wait-for never)
expect_eq "a 1 MB paste arrives whole, in order, and the terminal goes on (wc -c, exit 0, no error)" \
	"$(wj "$r" '(d["output"].split() or [""])[-1], d["exit"] and d["exit"]["exit_code"], d["errors"], d["close_code"]')" \
	"('1000000', 0, [], 1000)"
# A command that reads nothing and prints nothing (no echo): the paste waits, the client is not
# read, and when it goes the kill is not lost behind the input, nor put off to a failed ping.
SILENT='stty -echo; echo ready; sleep 603'
silent_running() {
	curl -s -H "Authorization: Bearer $TA" "http://127.0.0.1:$SV_PORT/v1/sandboxes/term-a/processes" |
		$PY -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["processes"] if p["running"] and (p["argv"] or [""])[-1] == sys.argv[1]))' "$SILENT"
}
ticket "$TA" term-a "{\"command\": \"$SILENT\"}"
r=$(ws "$U" --ticket "$(bj 'd["ticket"]')" --ready ready --paste 3000000 --gone)
expect_eq "a silent command that reads nothing ran" "$(wj "$r" '"ready" in d["output"]')" True
for _ in $(seq 25); do [ "$(silent_running)" = 0 ] && break; sleep 0.2; done
expect_eq "a 3 MB paste to it (more than the supervisor holds), then the client gone: the command is killed within 5 s" "$(silent_running)" 0
ticket "$TA" term-a
r=$($WS flood "$U" --ticket "$(bj 'd["ticket"]')" 3 "$SV_PID" 2>>"$SV_DIR/ws.err")
echo "# flood: $r"
expect_eq "a client that sends pings and bad messages and reads nothing: it sends more than 1 MiB" \
	"$(wj "$r" 'd["sent"] > (1 << 20)')" True
if [ "$AJ_PASS" = sanitize ]; then
	# Measured: 2 MiB with ASAN_OPTIONS=quarantine_size_mb=0, 60 MiB without.
	skip "... the daemon's RSS stays bounded" "ASan's quarantine keeps what is freed: RSS measures no leak under the sanitizer (the main pass checks it)"
else
	expect_eq "... the daemon stops reading it: its RSS grows by less than 32 MiB" \
		"$(wj "$r" 'd["rss_growth_kib"] < 32768')" True
fi
expect_eq "... and it got answers: pongs (the latest ping of a round) and errors" \
	"$(wj "$r" 'd["pongs"] > 0, d["errors"] > 0')" "(True, True)"
apit "$TA" GET /v1/sandboxes/term-a/terminal
expect_api "a GET without Upgrade: 426" 426 "" upgrade_required
apit "$TA" POST /v1/sandboxes/term-a/terminal
expect_api "POST: 405" 405 "" method_not_allowed

# ---- protocol violations ---------------------------------------------------------------------

raw() {
	ticket "$TA" term-a
	$WS raw "$U" --ticket "$(bj 'd["ticket"]')" "$@" 2>>"$SV_DIR/ws.err"
}
expect_eq "an unmasked frame: close 1002" "$(wj "$(raw 81026869)" 'd["close_code"]')" 1002
expect_eq "a reserved bit: close 1002" "$(wj "$(raw c1800000000000)" 'd["close_code"]')" 1002
expect_eq "a message over 1 MiB announced: close 1009" "$(wj "$(raw 82ff000000000010000100000000)" 'd["close_code"]')" 1009
expect_eq "text that is not UTF-8: close 1007" "$(wj "$(raw 818200000000c328)" 'd["close_code"]')" 1007
expect_eq "a fragmented ping: close 1002" "$(wj "$(raw 098000000000)" 'd["close_code"]')" 1002
expect_eq "a violation with 256 KiB behind it: the client reads the close frame, then an end, not a reset" \
	"$(wj "$(raw 81026869 --trail 262144)" 'd["close_code"], d.get("reset", False), d.get("end")')" "(1002, False, 'eof')"
for _ in $(seq 50); do [ "$(terminals_running)" = 0 ] && break; sleep 0.2; done
expect_eq "no terminal's command is left running" "$(terminals_running)" 0

# ---- per-owner limits -------------------------------------------------------------------------

apit "$TB" POST /v1/sandboxes/term-b/start
expect_api "bob's sandbox runs" 200
r=$(/usr/bin/python3 - "$SV_PORT" "$TB" <<'EOF'
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
codes, first = {}, None
for i in range(1100):
    c.request("POST", "/v1/sandboxes/term-b/terminal/tickets", body=b"{}",
              headers={"Authorization": "Bearer " + sys.argv[2], "Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    codes[r.status] = codes.get(r.status, 0) + 1
    if first is None:
        first = json.loads(body)["ticket"]
print(json.dumps({"codes": codes, "first": first}))
EOF
)
expect_eq "one owner asks for 1,100 tickets: each is given (its oldest make room)" "$(wj "$r" 'd["codes"]')" "{'200': 1100}"
first=$(wj "$r" 'd["first"]')
ticket "$TA" term-a
expect_api "another owner still gets a ticket" 200
r=$(ws "ws://127.0.0.1:$SV_PORT/v1/sandboxes/term-b/terminal" --ticket "$first")
expect_eq "the owner's oldest ticket was dropped for its 33rd" "$(wj "$r" 'd["status"]')" 401
r=$($WS cap "$U" 32 --auth "$TA" --other "ws://127.0.0.1:$SV_PORT/v1/sandboxes/term-b/terminal" \
	--other-auth "$TB" 2>>"$SV_DIR/ws.err")
expect_eq "an owner opens 32 terminals, not a 33rd (429); another owner still opens one" \
	"$(wj "$r" 'd["opened"], d["next"], d["other"]')" "(32, 429, 101)"
for _ in $(seq 100); do [ "$(terminals_running)" = 0 ] && break; sleep 0.2; done
expect_eq "their commands end with their connections" "$(terminals_running)" 0

# ---- shutdown --------------------------------------------------------------------------------

ticket "$TA" term-a; T4=$(bj 'd["ticket"]')
$WS session "$U" --ticket "$T4" --send 'sleep 600\r' --wait-for never >"$SV_DIR/shut.json" 2>>"$SV_DIR/ws.err" &
WSP=$!
for _ in $(seq 50); do [ "$(terminals_running)" = 1 ] && break; sleep 0.2; done
expect_eq "a terminal runs" "$(terminals_running)" 1
sv_stop
wait "$WSP"
expect_eq "SIGTERM: the daemon exits 0 with a terminal open" "$SV_RC" 0
expect_eq "the client is told: close 1001" "$(json "$SV_DIR/shut.json" 'd["close_code"]')" 1001
check "console.json goes with the daemon (no login URL for a port nobody holds)" test ! -e "$STATE/console.json"
sv_start_tcp --console-listen "127.0.0.1:0" || { not_ok "serve again ($(tail -5 "$SV_LOG"))"; exit 0; }
expect_eq "the terminal's command was killed at the shutdown" "$(terminals_running)" 0
C2=$(json "$STATE/console.json" 'd["url"]')
check "--console-listen 127.0.0.1:0: console.json names the port the kernel chose" \
	grep -Eq '^http://127\.0\.0\.1:[1-9][0-9]*/console/$' <<<"$C2"
C2=${C2%/console/}
CT2=$(json "$STATE/console.json" 'd["token"]')
check "a restart makes a new console token" test "$CT2" != "$CT"
expect_eq "the old console token no longer opens anything" "$(lc -H "Authorization: Bearer $CT" "$C2/v1/sandboxes")" 401
expect_eq "the new one does, on that port" "$(lc -H "Authorization: Bearer $CT2" "$C2/v1/sandboxes")" 200

# The daemon killed outright: the supervisor kills the commands tied to its connections.
running_cmd() { # how many of term-a's spawned commands run with $1 as their last word
	curl -s -H "Authorization: Bearer $TA" "http://127.0.0.1:$SV_PORT/v1/sandboxes/term-a/processes" |
		$PY -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["processes"] if p["running"] and (p["argv"] or [""])[-1] == sys.argv[1]))' "$1"
}
both_running() { echo "$(running_cmd 'sleep 601')$(running_cmd 'sleep 602')"; }
U="ws://127.0.0.1:$SV_PORT/v1/sandboxes/term-a/terminal"
ticket "$TA" term-a '{"command": "sleep 601"}'
$WS session "$U" --ticket "$(bj 'd["ticket"]')" --wait-for never >/dev/null 2>>"$SV_DIR/ws.err" &
WSP=$!
curl -s -N -o "$SV_DIR/exec.out" --max-time 30 -H "Authorization: Bearer $TA" -H 'Content-Type: application/json' \
	--data-binary '{"command": "sleep 602"}' "http://127.0.0.1:$SV_PORT/v1/sandboxes/term-a/exec" &
CURLP=$!
for _ in $(seq 75); do [ "$(both_running)" = 11 ] && break; sleep 0.2; done
expect_eq "a terminal and an exec run" "$(both_running)" 11
[ "$(both_running)" = 11 ] || echo "# exec answered: $(head -c 300 "$SV_DIR/exec.out")"
kill -9 "$SV_PID"
wait "$SV_PID" "$WSP" "$CURLP" 2>/dev/null
sv_start_tcp || { not_ok "serve after SIGKILL ($(tail -5 "$SV_LOG"))"; exit 0; }
for _ in $(seq 50); do [ "$(both_running)" = 00 ] && break; sleep 0.2; done
expect_eq "SIGKILL of the daemon: the terminal's and the exec's commands are killed" "$(both_running)" 00
sv_done
