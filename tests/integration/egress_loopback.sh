#!/usr/bin/env bash
# Egress through the proxy to servers on the host's loopback, as root and rootless: the
# proxy reaches 127.0.0.1 only because network.allow_private names it. HTTP, CONNECT and
# SOCKS5; --allow-host; a denial naming its rule; a direct connect that bypasses the proxy
# lands on the sandbox's own loopback; the plan's variables; and the proxy in a persistent
# sandbox.
# rootless: yes
# timeout: 200
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/egress.bash"

eg_init
eg_ca svc.test
HP=$(free_port)
TP=$(free_port)
EP=$(free_port)
eg_upstream 127.0.0.1 "$HP" "$TP" "$EP" || { not_ok "upstream servers start"; exit 1; }
eg_hosts "127.0.0.1 svc.test other.test"

test_basic() {
	eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"],
	  "allow_private": ["127.0.0.1/32"]}}'
	eg_run --policy "$EG/policy.json" --ro "$EG/ca" -- sh -c '
curl -sS -m 10 -o /dev/null -w "http %{http_code}\n" http://svc.test:$1/h
curl -sS -m 10 -p -o /dev/null -w "connect %{http_code}\n" http://svc.test:$1/c
curl -sS -m 10 --socks5-hostname 127.0.0.1:3128 -o /dev/null -w "socks %{http_code}\n" http://svc.test:$1/s
curl -sS -m 10 --cacert "$3/ca.pem" -o /dev/null -w "tls %{http_code}\n" https://svc.test:$2/t
curl -sS -m 10 -w "\ndenied %{http_code}\n" http://other.test:$1/d
python3 -c "
import errno, socket, sys
def t(name, addr):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(addr)
        print(name, \"CONNECTED\")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
t(\"direct\", (\"127.0.0.1\", int(sys.argv[1])))
" $1
' sh "$HP" "$TP" "$EG/ca"
	expect_eq "exit code" "$RC" 0
	expect_contains "HTTP through the proxy" "$OUT" "http 200"
	expect_contains "CONNECT" "$OUT" "connect 200"
	expect_contains "SOCKS5" "$OUT" "socks 200"
	expect_contains "TLS end to end through CONNECT (no credential: no interception)" "$OUT" \
		"tls 200"
	expect_contains "an unlisted host: 403 naming the policy" "$OUT" \
		"other.test:$HP is not allowed: no rule in network.allow matches it"
	expect_contains "status 403" "$OUT" "denied 403"
	expect_contains "a direct connect bypassing the proxy: ECONNREFUSED (the sandbox's own loopback)" \
		"$OUT" "direct ECONNREFUSED"
	expect_eq "requests reached the upstream" \
		"$(eg_requests 'sorted(r["path"] for r in req if r["path"] in ("/h", "/c", "/s", "/t"))')" \
		"['/c', '/h', '/s', '/t']"
	expect_eq "events: 5 decisions, 1 denied" \
		"$(eg_events '(len(ev), sum(1 for e in ev if e["decision"] == "denied"))')" "(5, 1)"
	expect_eq "events carry the sandbox id" \
		"$(eg_events 'all(e["sandbox"] == ev[0]["sandbox"] and len(e["sandbox"]) == 16 for e in ev)')" True
	expect_eq "report: egress connections" "$(eg_report 'd["egress"]["connections"]')" 5
}

test_allow_host_flag() {
	eg_policy '{"network": {"allow_private": ["127.0.0.1/32"], "mode": "proxy"}}'
	eg_run --policy "$EG/policy.json" --allow-host "svc.test:$HP" -- \
		curl -sS -m 10 -o /dev/null -w "%{http_code}\n" "http://svc.test:$HP/flag"
	expect_eq "--allow-host HOST:PORT" "$OUT" 200
	eg_run --allow-host "svc.test:$HP" --dry-run --json -- true
	expect_eq "--allow-host implies network.mode proxy" \
		"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["policy"]["network"]["mode"], d["policy"]["network"]["allow"])')" \
		"proxy ['svc.test:$HP']"
	eg_run --allow-host "bad host" --dry-run -- true
	expect_eq "--allow-host with a bad host: exit 125" "$RC" 125
	expect_contains "the error names the flag" "$ERR" "--allow-host: "
	eg_run --network host --allow-host svc.test --dry-run -- true
	expect_eq "--allow-host with --network host: refused" "$RC" 125
}

test_plan() {
	eg_run --allow-host "svc.test" --dry-run --json -- true
	printf '%s' "$OUT" >"$EG/plan.json"
	expect_eq "plan: the proxy's address" "$(json "$EG/plan.json" 'd["egress"]["http_proxy"]')" \
		"http://127.0.0.1:3128"
	expect_eq "plan: variables for curl, npm, pip, yarn, Node" \
		"$(json "$EG/plan.json" 'sorted(v for v in d["environment"] if "proxy" in v.lower() or v.startswith(("PIP_", "YARN_", "NODE_")))')" \
		"['ALL_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY', 'NODE_USE_ENV_PROXY', 'NO_PROXY', 'PIP_PROXY', 'YARN_HTTPS_PROXY', 'YARN_HTTP_PROXY', 'all_proxy', 'http_proxy', 'https_proxy', 'no_proxy', 'npm_config_https_proxy', 'npm_config_noproxy', 'npm_config_proxy']"
	expect_eq "plan: no CA variables without credentials" \
		"$(json "$EG/plan.json" '"SSL_CERT_FILE" in d["environment"]')" False
	eg_run --allow-host "svc.test" -- sh -c 'echo "$HTTPS_PROXY|$ALL_PROXY|$NO_PROXY|$npm_config_https_proxy|$PIP_PROXY"'
	expect_eq "inside: the variables' values" "$OUT" \
		"http://127.0.0.1:3128|socks5h://127.0.0.1:3128|localhost,127.0.0.1,::1|http://127.0.0.1:3128|http://127.0.0.1:3128"
	eg_run --allow-host "svc.test" --setenv NO_PROXY=localhost,.internal -- sh -c 'echo "$NO_PROXY"'
	expect_eq "environment.set wins over the proxy's defaults" "$OUT" "localhost,.internal"
}

test_persistent() {
	local state
	state=$(mktmp)/state
	mkdir -p "$state"
	aj_run create --state-dir "$state" --name egp $(rootless_flags) --allow-host "svc.test:$HP" \
		--policy <(echo '{"network": {"mode": "proxy", "allow_private": ["127.0.0.1/32"]}}')
	if [ "$RC" != 0 ]; then
		not_ok "persistent sandbox with the proxy: create (exit $RC: $ERR)"
		return
	fi
	aj_run exec --state-dir "$state" egp -- \
		curl -sS -m 10 -o /dev/null -w "%{http_code}\n" "http://svc.test:$HP/persist"
	expect_eq "persistent sandbox: HTTP through its supervisor's proxy" "$OUT" 200
	aj_run exec --state-dir "$state" egp -- \
		curl -sS -m 10 -o /dev/null -w "%{http_code}\n" "http://other.test:$HP/persist"
	expect_eq "persistent sandbox: a denied host" "$OUT" 403
	# An egress event is stored when its connection ends, which can come after curl exits.
	wait_until 15 sh -c "[ \$(\"$AJ\" events --state-dir '$state' --json egp | grep -c '\"egress\"') -ge 2 ]"
	aj_run events --state-dir "$state" --json egp
	printf '%s\n' "$OUT" >"$EG/pevents.jsonl"
	expect_eq "persistent sandbox: egress events in its event store" \
		"$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
eg = [e for e in ev if (e.get("type") or e.get("event")) == "egress"]
def f(e, k):
    return e.get(k, (e.get("data") or {}).get(k))
print(sorted((f(e, "host"), f(e, "decision")) for e in eg))' "$EG/pevents.jsonl")" \
		"[('other.test', 'denied'), ('svc.test', 'allowed')]"
	"$AJ" rm -f --state-dir "$state" egp >/dev/null 2>&1
}

# A CONNECT tunnel relayed in the kernel (splice): 8 MB sent while the client does not read
# (the proxy must hold back, not lose), the echo read back whole; the client's half-close
# reaches the far side, whose close comes back as EOF.
test_tunnel() {
	eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"],
	  "allow_private": ["127.0.0.1/32"]}}'
	eg_run --policy "$EG/policy.json" -- python3 -c '
import hashlib, os, socket, sys, threading, time
s = socket.create_connection(("127.0.0.1", 3128), 10)
s.sendall(b"CONNECT svc.test:%s HTTP/1.1\r\n\r\n" % sys.argv[1].encode())
head = b""
while not head.endswith(b"\r\n\r\n"):
    head += s.recv(1)
print("status", head.split()[1].decode())
data = os.urandom(8 << 20)
def send():
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
t = threading.Thread(target=send)
t.start()
time.sleep(1.5)  # not reading: the echo piles up in the proxy and the kernel
got = bytearray()
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    got += b
t.join()
print("echo", len(got), hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest())
' "$EP"
	expect_contains "tunnel: established" "$OUT" "status 200"
	expect_contains "tunnel: 8 MB echoed whole and in order, half-close passed on" "$OUT" \
		"echo 8388608 True"
	expect_eq "tunnel: the event counts both directions" \
		"$(eg_events '[(e["bytes_up"], e["bytes_down"]) for e in ev if e["proto"] == "connect"]')" \
		"[(8388608, 8388608)]"
}

test_basic
test_tunnel
test_allow_host_flag
test_plan
# The persistent sandbox's supervisor inherits the resolver settings from `create`.
export AGENTJAIL_EGRESS_HOSTS="$EG/hosts" AGENTJAIL_EGRESS_RESOLV_CONF="$EG/resolv.conf"
test_persistent
