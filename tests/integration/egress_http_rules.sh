#!/usr/bin/env bash
# HTTP rules (docs/policy.md "HTTP rules"): network.allow and network.deny entries that name a
# method and a path prefix, enforced on the requests the proxy sees: plain HTTP, and HTTPS it
# terminates with the sandbox's CA for a host such a rule names. A request outside them gets a
# 403 naming the rule; the event records method and path (never the query, headers or body);
# a tunnel the proxy cannot see into is refused for a host only HTTP rules allow. TLS and HTTP
# servers on the host's loopback, as root and rootless.
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
eg_hosts "127.0.0.1 svc.test"
export SSL_CERT_FILE=$EG/ca/ca.pem # what the proxy trusts towards the upstream

eg_policy '{"network": {"mode": "proxy", "allow_private": ["127.0.0.1/32"],
  "allow": ["GET https://svc.test:'"$TP"'/repos/acme/", "http://svc.test:'"$HP"'/plain/"],
  "deny": ["https://svc.test:'"$TP"'/repos/acme/secret"]}}'
eg_run --policy "$EG/policy.json" -- sh -c '
curl -sS -m 10 -o /dev/null -w "get %{http_code}\n" "https://svc.test:$1/repos/acme/tool?token=q-$3"
curl -sS -m 10 -o /dev/null -w "post %{http_code}\n" -X POST "https://svc.test:$1/repos/acme/tool"
curl -sS -m 10 -w "\nother %{http_code}\n" "https://svc.test:$1/repos/other/"
curl -sS -m 10 -w "\nsecret %{http_code}\n" "https://svc.test:$1/repos/acme/secret/x"
curl -sS -m 10 --path-as-is -o /dev/null -w "dots %{http_code}\n" "https://svc.test:$1/repos/acme/../other/"
curl -sS -m 10 -o /dev/null -w "plain %{http_code}\n" "http://svc.test:$2/plain/a"
curl -sS -m 10 -o /dev/null -w "plainother %{http_code}\n" "http://svc.test:$2/elsewhere"
curl -sS -m 10 --http2 -o /dev/null -w "h2c %{http_code}\n" "http://svc.test:$2/plain/u"
curl -sS -m 10 -o /dev/null -w "lower %{http_code}\n" -X get "http://svc.test:$2/plain/l"
curl -sS -m 10 -p -o /dev/null -w "tunnel %{http_connect}\n" "http://svc.test:$2/plain/b" 2>/dev/null; true
' sh "$TP" "$HP" "$RANDOM"
expect_eq "exit code" "$RC" 0
expect_contains "GET under an https:// rule's prefix: through the proxy's TLS" "$OUT" "get 200"
expect_contains "another method: 403" "$OUT" "post 403"
expect_contains "another path: 403" "$OUT" "other 403"
expect_contains "naming method, path and the rule of the host" "$OUT" \
	"GET /repos/other/ on svc.test:$TP is not allowed: no HTTP rule in network.allow matches it (network.allow[0]"
expect_contains "an HTTP deny rule: 403" "$OUT" "secret 403"
expect_contains "naming it" "$OUT" "is denied by network.deny[0] \"https://svc.test:$TP/repos/acme/secret\""
expect_contains "a path with dot segments: 403" "$OUT" "dots 403"
expect_contains "plain HTTP under an http:// rule" "$OUT" "plain 200"
expect_contains "plain HTTP elsewhere: 403" "$OUT" "plainother 403"
expect_contains "a CONNECT tunnel to a host only HTTP rules allow: 403" "$OUT" "tunnel 403"
expect_contains "an upgrade to HTTP/2 (h2c) where HTTP rules name the host: 403" "$OUT" "h2c 403"
expect_contains "a lower-case method where HTTP rules name the host: 403" "$OUT" "lower 403"
expect_eq "the upstream got the allowed requests only" \
	"$(eg_requests 'sorted(r["path"].split("?")[0] for r in req)')" "['/plain/a', '/repos/acme/tool']"
expect_eq "events: method and path of each request" \
	"$(eg_events '[(e.get("method"), e.get("path"), e["decision"]) for e in ev if e.get("path")][:3]')" \
	"[('GET', '/repos/acme/tool', 'allowed'), ('POST', '/repos/acme/tool', 'denied'), ('GET', '/repos/other/', 'denied')]"
expect_eq "egress events never hold the query" "$(eg_events 'any("token=q-" in json.dumps(e) for e in ev)')" False
expect_contains "the tunnel's denial says why" \
	"$(eg_events '[e.get("reason") for e in ev if e["proto"] == "connect" and e.get("port") == '"$HP"']')" \
	"cannot see requests in a tunnel"

# A host rule with an HTTP deny rule: the proxy terminates TLS to see the requests, so the
# deny rule holds inside what would otherwise be a tunnel.
eg_policy '{"network": {"mode": "proxy", "allow_private": ["127.0.0.1/32"],
  "allow": ["svc.test:*"], "deny": ["https://svc.test:'"$TP"'/admin/"]}}'
eg_run --policy "$EG/policy.json" -- sh -c '
curl -sS -m 10 -o /dev/null -w "ok %{http_code}\n" "https://svc.test:$1/fine"
curl -sS -m 10 -o /dev/null -w "admin %{http_code}\n" "https://svc.test:$1/admin/users"
curl -sS -m 10 --path-as-is -o /dev/null -w "slashes %{http_code}\n" "https://svc.test:$1//admin/users"
curl -sS -m 10 --path-as-is -o /dev/null -w "escaped %{http_code}\n" "https://svc.test:$1/%61dmin/users"
' sh "$TP"
expect_contains "host rule + HTTP deny rule: other requests pass through the interception" "$OUT" "ok 200"
expect_contains "the denied prefix: 403 inside the intercepted session" "$OUT" "admin 403"
expect_contains "not bypassed by an empty segment" "$OUT" "slashes 403"
expect_contains "nor by an escaped letter" "$OUT" "escaped 403"
expect_eq "the upstream never saw an admin request" \
	"$(eg_requests 'sum(1 for r in req if "dmin" in r["path"])')" 0

# Bad input: field-named errors.
eg_policy '{"network": {"mode": "proxy", "allow": ["get https://svc.test/x"]}}'
eg_run --policy "$EG/policy.json" -- true
expect_eq "a lower-case method: exit 125" "$RC" 125
expect_contains "naming the field" "$ERR" "network.allow[0]"
eg_policy '{"network": {"mode": "proxy", "allow": ["GET https://svc.test/x?y=1"]}}'
eg_run --policy "$EG/policy.json" -- true
expect_eq "a query in the prefix: exit 125" "$RC" 125
expect_contains "saying the query is not compared" "$ERR" "the query is not compared"
