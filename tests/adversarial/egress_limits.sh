#!/usr/bin/env bash
# The attacker floods the proxy: more concurrent connections than network.max_connections,
# more bytes than network.max_bytes, and malformed SOCKS and HTTP. Containment: refusals with
# the limit named (HTTP 429, SOCKS 0x02), one limit event each, the proxy still serving
# within the limits; and the run's report counting it all.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"
. "$AJ_ROOT/tests/egress.bash"

eg_init
eg_ca svc.test
HP=$(free_port)
TP=$(free_port)
EP=$(free_port)
eg_upstream 127.0.0.1 "$HP" "$TP" "$EP" || { not_ok "upstream servers start"; exit 1; }
eg_hosts "127.0.0.1 svc.test"

CONNS='
import socket, sys, time
ep = int(sys.argv[1])
def tunnel():
    s = socket.create_connection(("127.0.0.1", 3128), 10)
    s.sendall(b"CONNECT svc.test:%d HTTP/1.1\r\n\r\n" % ep)
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    return s, head.split(b" ")[1].decode() if b" " in head else "none"
held = [tunnel() for _ in range(5)]
print("statuses", " ".join(st for _, st in held))
ok = [s for s, st in held if st == "200"]
ok[0].sendall(b"ping")
print("echo", ok[0].recv(10).decode())
# Closed from this side, then read to the end: the proxy has let go of each one when its EOF
# comes back, however loaded the machine is.
for s, _ in held:
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()
time.sleep(0.2)
s, st = tunnel()
print("after", st)
'

test_connections() {
	eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"],
	  "allow_private": ["127.0.0.1/32"], "max_connections": 3}}'
	eg_run --policy "$EG/policy.json" -- python3 -c "$CONNS" "$EP"
	expect_line "3 tunnels within the limit, 2 refused with 429" statuses "200 200 200 429 429"
	expect_line "the admitted ones work" echo ping
	expect_line "once they closed, a new connection is admitted" after 200
	expect_eq "refusals name network.max_connections" \
		"$(eg_events 'sorted(set(e["rule"] for e in ev if e["decision"] == "denied"))')" \
		"['network.max_connections']"
	expect_eq "one limit event" \
		"$(grep -c '"event":"limit","limit":"network.max_connections"' "$EVENTS")" 1
	expect_eq "report: peak connections 5, denied 2" \
		"$(eg_report '(d["egress"]["peak_connections"], d["egress"]["denied"])')" "(5, 2)"
}

test_bytes() {
	eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"],
	  "allow_private": ["127.0.0.1/32"], "max_bytes": "256KiB"}}'
	eg_run --policy "$EG/policy.json" -- sh -c '
curl -sS -m 10 -o /tmp/big -w "first %{http_code}\n" "http://svc.test:$1/big?n=4000000" 2>/dev/null
echo "got $(wc -c </tmp/big)"
curl -sS -m 10 -w "\nsecond %{http_code}\n" "http://svc.test:$1/after" 2>/dev/null
' sh "$HP"
	local got
	got=$(line_of got)
	check "the download was cut near the limit ($got bytes of 4000000)" \
		[ "${got:-0}" -lt 1000000 ]
	expect_contains "later requests: 429 naming network.max_bytes" "$OUT" \
		"the sandbox's egress byte limit (network.max_bytes) is used up"
	expect_contains "status 429" "$OUT" "second 429"
	expect_eq "one limit event" "$(grep -c '"limit":"network.max_bytes"' "$EVENTS")" 1
	expect_eq "nothing after the limit reached the upstream" \
		"$(eg_requests 'sum(1 for r in req if r["path"] == "/after")')" 0
}

MALFORMED='
import socket
def talk(data, n=64):
    s = socket.create_connection(("127.0.0.1", 3128), 10)
    s.sendall(data)
    s.settimeout(5)
    try:
        return s.recv(n)
    except OSError:
        return b""
print("socks-noauth", talk(b"\x05\x01\x02").hex())
print("socks-bind", talk(b"\x05\x01\x00" + b"\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50")[2:4].hex())
print("socks-atyp", talk(b"\x05\x01\x00" + b"\x05\x01\x00\x09\x00\x00")[2:4].hex())
print("garbage", talk(b"\x16\x03\x01\x02\x00\r\n\r\n").split(b" ")[1].decode())
print("nul", talk(b"GET http://svc.test/ HTTP/1.1\r\nX: a\x00b\r\n\r\n").split(b" ")[1].decode())
'

test_malformed() {
	eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"],
	  "allow_private": ["127.0.0.1/32"]}}'
	eg_run --policy "$EG/policy.json" -- python3 -c "$MALFORMED"
	expect_line "SOCKS without the no-auth method: 05ff" socks-noauth 05ff
	expect_line "SOCKS BIND: reply 7 (command not supported)" socks-bind 0507
	expect_line "SOCKS unknown address type: reply 8" socks-atyp 0508
	expect_line "binary garbage: 400" garbage 400
	expect_line "NUL in a header: 400" nul 400
	expect_eq "exit code" "$RC" 0
}

test_connections
test_bytes
test_malformed
