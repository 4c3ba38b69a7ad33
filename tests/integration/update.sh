#!/usr/bin/env bash
# agentjail update and PATCH /v1/sandboxes/{id} (docs/sandboxes.md "Changing a running
# sandbox"): a running sandbox reaches a loopback server through its proxy, then the host is
# denied and the next request gets the proxy's 403 naming the rule, an open tunnel to it is
# closed, the change is an event, kept over stop and start, and undone. Limits raised and
# lowered under a workload (memory below use refused with the figures, pids), where the host
# gives a cgroup. Bad input changes nothing. The API's PATCH with the same fields, and what a
# token owner may not lift.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup

HP=$(free_port) # HTTP
TP=$(free_port) # a TCP server that holds a connection open
W=$(mktmp)
# In a subshell that execs it: $! is then the server's pid, which the trap kills.
(cd "$W" && exec timeout 300 python3 -m http.server --bind 127.0.0.1 "$HP") >/dev/null 2>&1 &
HTTP_PID=$!
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); s.settimeout(120)
held = []
end = time.time() + 120
while time.time() < end:
    try:
        c, _ = s.accept(); c.sendall(b"hello\n"); held.append(c)
    except OSError:
        break
' "$TP" &
TCP_PID=$!
trap 'kill $HTTP_PID $TCP_PID 2>/dev/null; sv_cleanup' EXIT
wait_until 10 eval "curl -s -o /dev/null http://127.0.0.1:$HP/" || not_ok "the loopback HTTP server starts"

POL=$W/policy.json
printf '{"network": {"mode": "proxy", "allow": ["127.0.0.1:%s", "127.0.0.1:%s"], "allow_private": ["127.0.0.1/32"]}}\n' "$HP" "$TP" >"$POL"
chmod 644 "$POL"
pj_create up --policy "$POL"
get() { aj_run exec up -- curl --noproxy '' -s -m 10 -w ' %{http_code}' "http://127.0.0.1:$HP/"; }
get
check "through the proxy to the allowed host: 200 ($OUT)" eval '[[ $OUT == *" 200" ]]'

# A tunnel through the proxy to the TCP server, held open inside the sandbox; it says when
# the proxy closes it.
"$AJ" exec up -- python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(("CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[1]).encode())
buf = b""
while b"hello" not in buf:
    buf += s.recv(4096)
print("open", flush=True)
t = time.time()
while True:
    d = s.recv(4096)
    if not d:
        print("closed after %.1f s" % (time.time() - t), flush=True)
        break
' "$TP" >"$W/tunnel.out" 2>&1 &
TUN=$!
check "a tunnel to the TCP server is open" wait_until 15 grep -q open "$W/tunnel.out"

aj_run update up --deny-host "127.0.0.1:$HP" --deny-host "127.0.0.1:$TP"
check "update --deny-host: live ($OUT $ERR)" eval '[ "$RC" = 0 ] && [[ $OUT == *"updated up (live)"* ]]'
get
check "the next request: the proxy's 403 naming the rule ($OUT)" \
	eval '[[ $OUT == *" 403" ]] && [[ $OUT == *"network.deny[0] \"127.0.0.1:$HP\""* ]]'
check "the open tunnel to the denied host is closed" wait_until 10 grep -q closed "$W/tunnel.out"
wait "$TUN" 2>/dev/null
aj_run events up --json
check "events: the update, and the closed connection" \
	eval '[[ $OUT == *"\"update\""* ]] && [[ $OUT == *"\"decision\":\"closed\""* ]]'
expect_eq "inspect: the deny list" "$(pj_field up 'd["policy"]["network"]["deny"]')" \
	"['127.0.0.1:$HP', '127.0.0.1:$TP']"
expect_eq "inspect: the allow list lost them" "$(pj_field up 'd["policy"]["network"]["allow"]')" "[]"
aj_run stop up && aj_run start up
get
check "kept over stop and start: still 403 ($OUT)" eval '[[ $OUT == *" 403" ]]'
aj_run update up --allow-host "127.0.0.1:$HP"
get
check "update --allow-host: 200 again ($OUT)" eval '[[ $OUT == *" 200" ]]'

# ---- bad input: field-named errors, nothing changed ------------------------------------------
before=$(pj_field up 'd["policy"]')
aj_run update nosuch --memory 1GiB
check "an unknown sandbox: exit 1, named ($ERR)" eval '[ "$RC" = 1 ] && [[ $ERR == *"no sandbox \"nosuch\""* ]]'
aj_run update up --allow-host 'bad host!'
check "a host that is no host: 125 naming network.allow ($ERR)" \
	eval '[ "$RC" = 125 ] && [[ $ERR == *"network.allow["* ]]'
aj_run update up --network none
check "another network mode while it runs: 125 with the reason ($ERR)" \
	eval '[ "$RC" = 125 ] && [[ $ERR == *"keeps the mode it started with"* ]]'
aj_run update up --network host
check "--network host: 125" eval '[ "$RC" = 125 ] && [[ $ERR == *"none or proxy"* ]]'
aj_run update up
check "nothing to change: 125" eval '[ "$RC" = 125 ] && [[ $ERR == *"nothing to change"* ]]'
expect_eq "... and the policy is as it was" "$(pj_field up 'd["policy"]')" "$before"
aj_run stop up
aj_run update up --network none
check "a stopped sandbox: another mode (its host rules dropped), from its next start ($OUT $ERR)" \
	eval '[ "$RC" = 0 ] && [[ $OUT == *"from its next start"* ]]'
aj_run start up
get
check "... it starts without a network: the request fails ($OUT)" eval '[[ $OUT == *" 000" ]]'
aj_run update up --network proxy
check "... and back is refused while it runs" eval '[ "$RC" = 125 ]'

# ---- limits ---------------------------------------------------------------------------------
if [ -n "$PJ_FLAGS" ]; then
	skip "limits changed live" "rootless without a delegated cgroup: the sandbox has no limits to change (docs/sandboxes.md)"
else
	pj_create lim --memory 128MiB --pids 64
	alloc() { aj_run exec lim -- python3 -c "b = bytearray($1 << 20); b[::4096] = b'x' * len(b[::4096]); print('ok')"; }
	alloc 200
	check "200 MiB under a 128 MiB limit: killed ($RC)" eval '[ "$RC" != 0 ] && [[ $OUT != *ok* ]]'
	aj_run update lim --memory 512MiB
	alloc 200
	check "update --memory 512MiB: the same 200 MiB fits ($RC $OUT)" eval '[ "$RC" = 0 ] && [[ $OUT == ok ]]'
	"$AJ" exec lim -- python3 -c "b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096]); open('/tmp/held', 'w').write('1'); import time; time.sleep(30)" >/dev/null 2>&1 &
	HOLD=$!
	held() { aj_run exec lim -- test -e /tmp/held; [ "$RC" = 0 ]; }
	check "a workload holds 300 MiB" wait_until 30 held
	aj_run update lim --memory 100MiB
	check "below what it uses now: refused with both figures ($ERR)" \
		eval '[ "$RC" = 125 ] && [[ $ERR == *"104857600 bytes asked, the sandbox uses "* ]]'
	expect_eq "... and the limit stays" "$(pj_field lim 'd["policy"]["limits"]["memory"]')" "536870912"
	kill "$HOLD" 2>/dev/null
	aj_run exec lim -- pkill -f time.sleep
	forks() { aj_run exec lim -- python3 -c '
import os, time
n = 0
kids = []
for i in range(100):
    try:
        p = os.fork()
    except OSError:
        break
    if p == 0:
        time.sleep(3); os._exit(0)
    kids.append(p); n += 1
print(n)'; }
	forks
	N1=$OUT
	sleep 4 # its children end
	aj_run update lim --pids 20
	forks
	check "update --pids 20: fewer than 20 processes can be made ($N1, then $OUT)" \
		eval '[ "$N1" -ge 50 ] && [ "$OUT" -lt 20 ]'
fi

# ---- PATCH /v1/sandboxes/{id} ---------------------------------------------------------------
sv_start || { not_ok "serve starts ($(tail -3 "$SV_LOG"))"; exit 0; }
apij PATCH /v1/sandboxes/up '{"network": {"mode": "proxy"}}'
expect_api "PATCH: another mode while it runs is 409 naming network" 409 network wrong_state
apij PATCH /v1/sandboxes/up '{"network": {"publish": ["8080"]}}'
check "PATCH: a member that does not change is 400 naming it ($BODY)" \
	eval '[ "$CODE" = 400 ] && [[ $BODY == *"network.publish"* ]]'
apij PATCH /v1/sandboxes/nosuch '{"limits": {"pids": 100}}'
expect_api "PATCH: an unknown sandbox is 404" 404
apij PATCH /v1/sandboxes/up '{"max_lifetime": "1h", "idle_timeout": 600}'
expect_api "PATCH: lifetimes" 200
expect_eq "... the idle timeout is kept" "$(bj 'd["ttl"]["idle_timeout_ms"]')" 600000
sv_stop
if [ -n "$PJ_FLAGS" ]; then
	skip "PATCH by a token owner" "rootless without a delegated cgroup: a token owner's sandbox needs the memory limit, which this host cannot enforce"
else
	TOK=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	sv_tokens "$TOK alice"
	sv_start_tcp --max-memory 1GiB || { not_ok "serve --listen starts"; exit 0; }
	pj_create theirs
	apitj "$TOK" POST /v1/sandboxes '{"name": "mine", "policy": {"limits": {"memory": "256MiB"}}}'
	expect_api "a token owner creates a sandbox" 201
	apitj "$TOK" PATCH /v1/sandboxes/mine '{"limits": {"memory": null}}'
	expect_api "a token owner lifting its memory limit: 403 naming limits.memory" 403 limits.memory forbidden
	apitj "$TOK" PATCH /v1/sandboxes/mine '{"limits": {"pids": 100000}}'
	expect_api "... or its pids above the default: 403" 403 limits.pids forbidden
	apitj "$TOK" PATCH /v1/sandboxes/mine '{"limits": {"memory": "2GiB"}}'
	expect_api "... or its memory past its quota (--max-memory 1GiB): 429" 429 policy.limits.memory quota_exceeded
	apitj "$TOK" PATCH /v1/sandboxes/mine '{"limits": {"memory": "768MiB"}}'
	expect_api "... and within it: 200" 200
	apitj "$TOK" PATCH /v1/sandboxes/mine '{"limits": {"memory": "128MiB"}}'
	expect_api "a token owner narrows its own sandbox" 200
	apitj "$TOK" PATCH /v1/sandboxes/theirs '{"limits": {"pids": 100}}'
	expect_api "... and another owner's sandbox is 404 to it" 404
fi
sv_stop
sv_done
