#!/usr/bin/env bash
# The attacker has the proxy and a policy that allows every host ("*:*"), and aims it at what
# the address guard must keep out: the cloud metadata endpoint, the host's loopback and its own
# public address (where a listener counts what reaches it), private ranges, and the IPv6 forms
# that smuggle IPv4 addresses; a DNS-rebinding name (public first, loopback after); a name with
# a public and a private address; request smuggling and Host-header fronting; and connections
# that go around the proxy. Upstreams live in a network namespace the test makes; DNS is a local test server.
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"
. "$AJ_ROOT/tests/egress.bash"

LISTENER_PID=
need_root_or_skip "address guard"
eg_init
eg_ca plain.test
eg_netns || { not_ok "network namespace setup"; exit 1; }
eg_upstream 0.0.0.0 80 443 7 "$EG_NS" || { not_ok "upstream servers start"; exit 1; }
DNS_PORT=$(free_port)
eg_dns "$DNS_PORT" "rebind.test=$EG_PUB/127.0.0.1" "mixed.test=$EG_PUB,$EG_PRIV" \
	"plain.test=$EG_PUB" "meta.test=169.254.169.254" || { not_ok "DNS server starts"; exit 1; }

# A listener on the host's loopback (v4 and v6), and on the host's own "public" address (the
# host end of the veth), that counts every connection reaching it.
LPORT=$(free_port)
HOST_PUB=${EG_PUB%.2}.1
python3 -c '
import select, socket, sys, time
d, port, pub = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks = []
for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"), (socket.AF_INET, pub)):
    s = socket.socket(fam)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(64); socks.append(s)
open(d + "/listener.ready", "w").close()
end = time.time() + 170
while time.time() < end:
    r, _, _ = select.select(socks, [], [], 0.2)
    for s in r:
        c, peer = s.accept(); c.close()
        open(d + "/hits", "a").write("%r\n" % (peer,))
' "$EG" "$LPORT" "$HOST_PUB" &
EG_PIDS+=($!)
eg_wait_file "$EG/listener.ready"
hits() { [ -f "$EG/hits" ] && wc -l <"$EG/hits" || echo 0; }

eg_hosts "127.0.0.1 localhost" "::1 localhost"
eg_policy '{"network": {"mode": "proxy", "allow": ["*:*"]}}'

ATTACK='
import socket, sys
port, host_pub = int(sys.argv[1]), sys.argv[2]
def http(raw):
    s = socket.create_connection(("127.0.0.1", 3128), 10)
    s.sendall(raw.encode())
    data = b""
    while True:
        try:
            b = s.recv(65536)
        except OSError:
            break
        if not b:
            break
        data += b
    text = data.decode("latin-1")
    status = text.split(" ")[1] if " " in text else "none"
    return status, text.split("\r\n\r\n", 1)[-1].strip()
def socks(atyp, addr, p):
    s = socket.create_connection(("127.0.0.1", 3128), 10)
    s.sendall(b"\x05\x01\x00"); s.recv(2)
    if atyp == 3:
        body = bytes([len(addr)]) + addr.encode()
    else:
        body = socket.inet_pton(socket.AF_INET if atyp == 1 else socket.AF_INET6, addr)
    s.sendall(b"\x05\x01\x00" + bytes([atyp]) + body + p.to_bytes(2, "big"))
    return s.recv(10)[1]
for name, target in [("meta-literal", "169.254.169.254:80"), ("meta-name", "meta.test:80"),
                     ("loop4", "127.0.0.1:%d" % port), ("loop6", "[::1]:%d" % port),
                     ("mapped", "[::ffff:127.0.0.1]:%d" % port),
                     ("compat", "[::127.0.0.1]:%d" % port),
                     ("nat64", "[64:ff9b::7f00:1]:%d" % port),
                     ("6to4", "[2002:7f00:1::1]:%d" % port),
                     ("ten", "10.213.1.1:80"), ("zero", "0.0.0.0:%d" % port),
                     ("mixed", "mixed.test:80"), ("hostpub", "%s:%d" % (host_pub, port))]:
    st, body = http("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n" % target)
    print(name, st, body.replace("\n", " ")[:300])
print("socks-v4-loop", socks(1, "127.0.0.1", port))
print("socks-v6-loop", socks(4, "::1", port))
print("socks-mapped", socks(4, "::ffff:127.0.0.1", port))
print("socks-meta", socks(1, "169.254.169.254", 80))
print("socks-name-loop", socks(3, "localhost", port))
st, body = http("GET http://rebind.test/first HTTP/1.1\r\nConnection: close\r\n\r\n")
print("rebind-1", st)
st, body = http("GET http://rebind.test:%d/second HTTP/1.1\r\nConnection: close\r\n\r\n" % port)
print("rebind-2", st, body.replace("\n", " ")[:300])
st, body = http("POST http://plain.test/smuggle HTTP/1.1\r\nContent-Length: 4\r\n"
                "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
print("smuggle", st, body[:120])
st, body = http("GET http://plain.test/front HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
print("front", st)
st, body = http("GET http://plain.test@127.0.0.1:%d/ HTTP/1.1\r\n\r\n" % port)
print("userinfo", st)
st, body = http("GET http://plain.test/ HTTP/1.1\r\nX-Big: " + "a" * 70000 + "\r\n\r\n")
print("bighead", st)
'

test_guard() {
	eg_run --policy "$EG/policy.json" -- python3 -c "$ATTACK" "$LPORT" "$HOST_PUB"
	local n
	for n in meta-literal meta-name loop4 loop6 mapped compat nat64 6to4 ten zero mixed hostpub; do
		expect_eq "CONNECT $n: 403" "$(line_of "$n" | cut -d' ' -f1)" 403
	done
	expect_contains "metadata: the reason names it" "$(line_of meta-literal)" \
		"the cloud metadata endpoint"
	expect_contains "a name resolving to metadata: named too" "$(line_of meta-name)" \
		"meta.test resolves to 169.254.169.254"
	expect_contains "IPv4-mapped loopback is loopback" "$(line_of mapped)" \
		"IPv4-mapped IPv6 form of loopback"
	expect_contains "NAT64 form of loopback" "$(line_of nat64)" "NAT64"
	expect_contains "6to4 form of loopback" "$(line_of 6to4)" "6to4"
	expect_contains "the host's own public address: refused as the host's" "$(line_of hostpub)" \
		"$HOST_PUB is an address of the host agentjail runs on"
	expect_contains "a name with a public and a private address is refused whole" \
		"$(line_of mixed)" "resolves to $EG_PRIV"
	for n in socks-v4-loop socks-v6-loop socks-mapped socks-meta socks-name-loop; do
		expect_eq "SOCKS $n: reply 2 (not allowed by ruleset)" "$(line_of "$n")" 2
	done
	expect_eq "rebinding: the first lookup (public) is allowed" "$(line_of rebind-1 | cut -d' ' -f1)" 200
	expect_eq "rebinding: the second lookup (loopback) is refused" \
		"$(line_of rebind-2 | cut -d' ' -f1)" 403
	expect_contains "rebinding: the proxy resolved again and checked again" "$(line_of rebind-2)" \
		"rebind.test resolves to 127.0.0.1"
	expect_eq "rebinding: the name was resolved once per request" \
		"$(grep -c '^rebind.test 1$' "$EG/dns.log")" 2
	expect_eq "smuggling: Content-Length with Transfer-Encoding refused" \
		"$(line_of smuggle | cut -d' ' -f1)" 400
	expect_eq "fronting: the request is served" "$(line_of front)" 200
	expect_eq "fronting: the upstream saw the URL's host, not the Host header's" \
		"$(eg_requests '[v for r in req if r["path"] == "/front" for k, v in r["headers"] if k == "Host"]')" \
		"['plain.test']"
	expect_eq "userinfo in the URL refused" "$(line_of userinfo)" 400
	expect_eq "a 70 KB request head: 431" "$(line_of bighead)" 431
	expect_eq "nothing reached the host's loopback or public-address listener" "$(hits)" 0
	expect_eq "no request reached the smuggling target" \
		"$(eg_requests 'sum(1 for r in req if r["path"] == "/smuggle")')" 0
	expect_eq "every refusal is an event" \
		"$(eg_events 'sum(1 for e in ev if e["decision"] == "denied")')" 18
	expect_eq "address-guard refusals name the guard as the rule" \
		"$(eg_events 'sorted(set(e["rule"] for e in ev if e["decision"] == "denied"))')" \
		"['address guard (network.allow_private)']"
	# Control: the listener does count what reaches it.
	python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close()' "$LPORT"
	wait_until 10 at_least 1 hits
	expect_eq "host: the listener counts a host connection (control)" "$(hits)" 1
}

# Connections around the proxy. With no Landlock TCP rules in the namespaces tier, the network
# namespace alone keeps them in: outside addresses have no route, and the sandbox's 127.0.0.1
# is its own (a server it starts is reachable there, the host's listener on the same port is
# not).
BYPASS='
import errno, socket, sys
pub, hostpub, lport = sys.argv[1], sys.argv[2], int(sys.argv[3])
def t(name, fn):
    try:
        fn()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
def tcp(addr, fam=socket.AF_INET):
    s = socket.socket(fam); s.settimeout(3)
    try: s.connect(addr)
    finally: s.close()
def udp(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05plain\x04test\x00\x00\x01\x00\x01", addr)
    finally: s.close()
def serve_self():
    srv = socket.socket(); srv.bind(("127.0.0.1", 8080)); srv.listen()
    tcp(("127.0.0.1", 8080)); srv.accept()[0].close(); srv.close()
t("direct-http", lambda: tcp((pub, 80)))
t("direct-proxy-port", lambda: tcp((pub, 3128)))
t("direct-dns", lambda: udp((pub, 53)))
t("host-loopback", lambda: tcp(("127.0.0.1", lport)))
t("host-loopback6", lambda: tcp(("::1", lport), socket.AF_INET6))
t("host-public", lambda: tcp((hostpub, lport)))
t("loopback-other-port", lambda: tcp(("127.0.0.1", 3129)))
t("proxy-port-taken", lambda: socket.socket().bind(("127.0.0.1", 3128)))
t("serve-self", serve_self)
'

test_bypass() {
	local before
	before=$(hits)
	eg_run --policy "$EG/policy.json" -- python3 -c "$BYPASS" "$EG_PUB" "$HOST_PUB" "$LPORT"
	expect_eq "landlock-net is off in this tier: the namespace is the boundary" \
		"$(eg_report '[l["state"] for l in d["plan"]["layers"] if l["layer"] == "landlock-net"][0]')" off
	expect_line "a direct connect to an allowed host's port 80: ENETUNREACH (no route)" \
		direct-http ENETUNREACH
	expect_line "a direct connect on the proxy's port number: ENETUNREACH (no route)" \
		direct-proxy-port ENETUNREACH
	expect_line "UDP to a resolver outside: ENETUNREACH" direct-dns ENETUNREACH
	expect_line "the host's 127.0.0.1 listener's port: ECONNREFUSED (the sandbox's own loopback)" \
		host-loopback ECONNREFUSED
	expect_line "the host's ::1 listener's port: ECONNREFUSED" host-loopback6 ECONNREFUSED
	expect_line "the host's own address: ENETUNREACH" host-public ENETUNREACH
	expect_line "another loopback port: ECONNREFUSED" loopback-other-port ECONNREFUSED
	expect_line "the proxy's port cannot be taken over: EADDRINUSE" proxy-port-taken EADDRINUSE
	expect_line "a server on the sandbox's own loopback serves the sandbox" serve-self OK
	expect_eq "the host's listeners saw none of it" "$(hits)" "$before"
	expect_eq "the upstream saw none of it" \
		"$(eg_requests 'sum(1 for r in req if r["path"] == "/")')" 0
}

test_guard
test_bypass
