#!/usr/bin/env bash
# Egress through the supervisor's proxy to servers in a network namespace the test makes:
# HTTP (absolute URI, keep-alive, chunked and large bodies), CONNECT and SOCKS5 to allowed
# hosts; 403 naming the rule for denied ones; private addresses only through
# allow_private; and the events and report counters of each decision.
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/egress.bash"

need_root_or_skip "egress through a network namespace"
eg_init
eg_ca api.test plain.test
eg_netns || { not_ok "network namespace setup"; exit 1; }
eg_upstream 0.0.0.0 80 443 7 "$EG_NS" || { not_ok "upstream servers start"; exit 1; }
eg_hosts "$EG_PUB plain.test www.test api.test evil.test" "$EG_PRIV intranet.test"

eg_policy '{"network": {"mode": "proxy", "allow": ["plain.test", "www.test", "plain.test:7",
  "intranet.test", "evil.test"], "deny": ["evil.test"]}}'

test_http() {
	eg_run --policy "$EG/policy.json" -- sh -c '
curl -sS -m 10 -o /dev/null -w "keepalive %{http_code} %{num_connects}\n" \
    http://plain.test/a http://plain.test/b http://plain.test/c
head -c 2000000 /dev/urandom > /tmp/blob; sha256sum /tmp/blob | cut -c1-64 > /tmp/blob.sha
curl -sS -m 20 -H "Transfer-Encoding: chunked" --data-binary @/tmp/blob http://www.test/up \
    | python3 -c "import json,sys; d=json.load(sys.stdin); print(\"chunked\", d[\"body_len\"], d[\"body_sha256\"] == open(\"/tmp/blob.sha\").read().strip())"
curl -sS -m 20 -o /dev/null -w "big %{http_code} %{size_download}\n" "http://plain.test/big?n=30000000"
curl -sS -m 10 http://plain.test/chunked | python3 -c "import json,sys; print(\"chunkedresp\", json.load(sys.stdin)[\"path\"])"
curl -sS -m 10 -p -o /dev/null -w "connect %{http_code}\n" http://plain.test/via-connect
curl -sS -m 10 --socks5-hostname 127.0.0.1:3128 -o /dev/null -w "socks %{http_code}\n" http://plain.test/via-socks
curl -sS -m 10 -o /dev/null -w "head %{http_code}\n" -I http://plain.test/head
'
	expect_eq "exit code" "$RC" 0
	expect_contains "keep-alive: three requests over one connection" "$OUT" "keepalive 200 1"
	expect_contains "chunked 2 MB upload arrives intact" "$OUT" "chunked 2000000 True"
	expect_contains "30 MB download" "$OUT" "big 200 30000000"
	expect_contains "chunked response" "$OUT" "chunkedresp /chunked"
	expect_contains "HTTPS-style CONNECT tunnel" "$OUT" "connect 200"
	expect_contains "SOCKS5 with a name" "$OUT" "socks 200"
	expect_contains "HEAD" "$OUT" "head 200"
	expect_eq "Host header is the URL's authority" \
		"$(eg_requests '[v for r in req if r["path"] == "/a" for k, v in r["headers"] if k == "Host"]')" \
		"['plain.test']"
	expect_eq "no proxy header reaches the server" \
		"$(eg_requests 'sum(1 for r in req for k, v in r["headers"] if k.lower().startswith("proxy-"))')" 0
	expect_eq "events: one allowed decision per request or tunnel" \
		"$(eg_events 'sum(1 for e in ev if e["decision"] == "allowed")')" 9
	expect_eq "events carry host, port, rule, address, bytes and duration" \
		"$(eg_events '[sorted(k for k in e if k not in ("time",)) for e in ev if e.get("method") == "GET"][0]')" \
		"['address', 'bytes_down', 'bytes_up', 'decision', 'duration_ms', 'event', 'host', 'method', 'path', 'port', 'proto', 'rule', 'sandbox', 'status']"
	expect_eq "the download's bytes are counted" \
		"$(eg_events '[e["bytes_down"] > 30000000 for e in ev if e.get("method") == "GET" and e["bytes_down"] > 1000000][0]')" True
	expect_eq "protocols seen" "$(eg_events 'sorted(set(e["proto"] for e in ev))')" \
		"['connect', 'http', 'socks']"
	expect_eq "report: egress counters" \
		"$(eg_report '[d["egress"][k] for k in ("allowed", "denied", "failed")]')" "[9, 0, 0]"
	expect_eq "report: bytes down" "$(eg_report 'd["egress"]["bytes_down"] > 30000000')" True
	expect_eq "plan: egress-proxy layer enforced" \
		"$(eg_report '[l["state"] for l in d["plan"]["layers"] if l["layer"] == "egress-proxy"][0]')" \
		enforced
	expect_eq "plan: environment names the proxy variables" \
		"$(eg_report 'all(v in d["plan"]["environment"] for v in ("HTTP_PROXY", "https_proxy", "ALL_PROXY", "NO_PROXY", "npm_config_https_proxy", "PIP_PROXY"))')" True
}

test_denied() {
	eg_run --policy "$EG/policy.json" -- sh -c '
curl -sS -m 10 -w "\nstatus %{http_code}\n" http://evil.test/x
curl -sS -m 10 -w "\nstatus %{http_code}\n" http://unlisted.test/x
curl -sS -m 10 -p -o /dev/null -w "connect %{http_connect}\n" http://evil.test/ 2>/dev/null
python3 - <<EOF
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
s.sendall(b"\x05\x01\x00\x03" + bytes([9]) + b"evil.test" + (80).to_bytes(2, "big"))
print("socks-reply", s.recv(10)[1])
EOF
'
	expect_contains "denied host: 403 naming the deny rule" "$OUT" \
		'agentjail egress proxy: evil.test:80 is denied by network.deny[0] "evil.test"'
	expect_contains "status 403" "$OUT" "status 403"
	expect_contains "unlisted host: 403 saying no allow rule matches" "$OUT" \
		"unlisted.test:80 is not allowed: no rule in network.allow matches it"
	expect_contains "CONNECT to a denied host: 403" "$OUT" "connect 403"
	expect_contains "SOCKS to a denied host: reply 0x02 (not allowed by ruleset)" "$OUT" \
		"socks-reply 2"
	expect_eq "denials are events naming the rule" \
		"$(eg_events '[(e["decision"], e["rule"]) for e in ev if e["host"] == "evil.test"][0]')" \
		"('denied', 'network.deny[0] \"evil.test\"')"
	expect_eq "every denial is an event" \
		"$(eg_events 'sum(1 for e in ev if e["decision"] == "denied")')" 4
	expect_eq "nothing reached the upstream" \
		"$(eg_requests 'sum(1 for r in req if r["path"] == "/x")')" 0
	expect_eq "report: 4 denied" "$(eg_report 'd["egress"]["denied"]')" 4
}

test_private() {
	eg_run --policy "$EG/policy.json" -- \
		curl -sS -m 10 -w "\nstatus %{http_code}\n" http://intranet.test/p
	expect_contains "a name resolving to 10.x: 403 (address guard)" "$OUT" \
		"intranet.test resolves to $EG_PRIV (private, RFC 1918 10.0.0.0/8)"
	eg_policy '{"network": {"mode": "proxy", "allow": ["intranet.test"],
	  "allow_private": ["10.213.0.0/16"]}}'
	eg_run --policy "$EG/policy.json" -- \
		curl -sS -m 10 -o /dev/null -w "status %{http_code}\n" http://intranet.test/p
	expect_contains "allowed once network.allow_private names its range" "$OUT" "status 200"
	expect_eq "and it reached the private address" \
		"$(eg_requests 'sum(1 for r in req if r["path"] == "/p")')" 1
}

test_socks_raw() {
	eg_policy '{"network": {"mode": "proxy", "allow": ["plain.test:7"]}}'
	eg_run --policy "$EG/policy.json" -- python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
s.sendall(b"\x05\x01\x00\x03\x0aplain.test\x00\x07")
r = s.recv(10)
print("reply", r[1])
s.sendall(b"not http at all\n")
print("echo", s.recv(100).decode().strip())
'
	expect_contains "SOCKS5 to a non-HTTP port allowed host:port by host:port" "$OUT" "reply 0"
	expect_contains "bytes flow both ways" "$OUT" "echo not http at all"
	expect_eq "event for the SOCKS tunnel" \
		"$(eg_events '[(e["proto"], e["port"], e["bytes_up"], e["bytes_down"]) for e in ev][0]')" \
		"('socks', 7, 16, 16)"
}

test_http
test_denied
test_private
test_socks_raw
