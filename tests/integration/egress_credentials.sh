#!/usr/bin/env bash
# Credentials: the sandbox holds a placeholder, the upstream (a TLS server with a test CA in a
# network namespace) receives the real secret, also inside Basic credentials as git sends
# them; a placeholder sent to a host the credential is not bound to arrives unchanged; curl,
# git, Python and Node trust the per-sandbox CA through the variables and the bundle the
# sandbox gets; events name the credential, never its value.
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/egress.bash"

need_root_or_skip "credential injection"
eg_init
eg_ca api.test plain.test
eg_netns || { not_ok "network namespace setup"; exit 1; }
eg_upstream 0.0.0.0 80 443 7 "$EG_NS" || { not_ok "upstream servers start"; exit 1; }
eg_hosts "$EG_PUB api.test plain.test wrongname.test"
SECRET="ghp_real-secret-$RANDOM$RANDOM"
FILE_SECRET="file-secret-$RANDOM"
printf '%s\n' "$FILE_SECRET" >"$EG/keyfile"
chmod 600 "$EG/keyfile"
export EGRESS_TEST_SECRET=$SECRET
eg_policy '{"network": {"mode": "proxy", "allow": ["api.test", "plain.test", "wrongname.test"]},
  "environment": {"allow": ["EGRESS_TEST_*"]},
  "credentials": {
    "GH_TOKEN": {"from_env": "EGRESS_TEST_SECRET", "hosts": ["api.test", "wrongname.test"]},
    "API_KEY": {"from_file": "'"$EG/keyfile"'", "hosts": ["api.test"],
                "header": "X-Api-Key", "format": "key {}"}}}'

NODE_CLIENT='
const http = require("http"), tls = require("tls");
const req = http.request({host: "127.0.0.1", port: 3128, method: "CONNECT", path: "api.test:443"});
req.on("connect", (res, sock) => {
  const t = tls.connect({socket: sock, servername: "api.test"}, () => {
    t.write("GET /node HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " +
            process.env.GH_TOKEN + "\r\nConnection: close\r\n\r\n");
  });
  let data = "";
  t.on("data", d => data += d);
  t.on("end", () => console.log("node", data.split("\r\n")[0]));
  t.on("error", e => console.log("node error", e.message));
});
req.end();'

test_injection() {
	eg_run --policy "$EG/policy.json" -- sh -c '
echo "placeholder $GH_TOKEN"
echo "secret-source-var ${EGRESS_TEST_SECRET:-unset}"
for f in /proc/self/environ /etc/ssl/certs/ca-certificates.crt /etc/agentjail/*; do
  grep -l -F "$1" "$f"; grep -l -F "$2" "$f"
done | sed "s/^/leak /"
grep -c "BEGIN CERTIFICATE" /etc/agentjail/egress-ca.crt | sed "s/^/ca-certs /"
openssl x509 -noout -subject -in /etc/agentjail/egress-ca.crt | sed "s/^/ca-subject /"
tail -c 2000 /etc/ssl/certs/ca-certificates.crt | grep -q "END CERTIFICATE" && echo "bundle-ok"
[ "$(grep -c "BEGIN CERT" /etc/ssl/certs/ca-certificates.crt)" -gt 1 ] && echo "bundle-has-host-cas"
curl -sS -m 10 -o /dev/null -w "curl %{http_code}\n" -H "Authorization: Bearer $GH_TOKEN" https://api.test/bearer
curl -sS -m 10 -o /dev/null -w "basic %{http_code}\n" -u "x-access-token:$GH_TOKEN" https://api.test/basic
git -c http.lowSpeedTime=10 ls-remote "https://x-access-token:$GH_TOKEN@api.test/git/repo.git" >/dev/null 2>&1; echo "git done"
python3 -c "import urllib.request as u; r = u.urlopen(u.Request(\"https://api.test/python\", headers={\"Authorization\": \"token $GH_TOKEN\"}), timeout=10); print(\"python\", r.status)"
if python3 -c "import requests" 2>/dev/null; then
  python3 -c "import requests; print(\"requests\", requests.get(\"https://api.test/requests\", headers={\"Authorization\": \"token $GH_TOKEN\"}, timeout=10).status_code)" 2>&1 | tail -1
else echo "requests unavailable"; fi
node -e "$3" 2>&1
curl -sS -m 10 -o /dev/null -w "unbound %{http_code}\n" -H "Authorization: Bearer $GH_TOKEN" https://plain.test/unbound
curl -sS -m 10 -o /dev/null -w "plainhttp %{http_code}\n" -H "Authorization: Bearer $GH_TOKEN" http://api.test/cleartext
curl -sS -m 10 -w "\nwrongname %{http_connect}\n" -H "Authorization: Bearer $GH_TOKEN" https://wrongname.test/x 2>/dev/null
true
' sh ghp_real-secret- file-secret- "$NODE_CLIENT"
	local ph
	ph=$(printf '%s\n' "$OUT" | awk '$1 == "placeholder" {print $2}')
	expect_eq "exit code" "$RC" 0
	case "$ph" in
	ajph_????????????????????????????????????????) ok "the sandbox holds a placeholder" ;;
	*) not_ok "the sandbox holds a placeholder (got '$ph')" ;;
	esac
	expect_contains "the variable the secret comes from is not passed in, allowlist or not" \
		"$OUT" "secret-source-var unset"
	expect_not_contains "no secret (by its prefix) in the environment, bundle, /etc/agentjail" \
		"$OUT" "leak "
	expect_contains "the sandbox's CA file holds one certificate" "$OUT" "ca-certs 1"
	expect_contains "named after the sandbox" "$OUT" "ca-subject subject=O = agentjail, CN = agentjail egress CA for sandbox"
	expect_contains "the distribution bundle path ends with the sandbox CA" "$OUT" "bundle-ok"
	expect_contains "and still holds the host's CAs" "$OUT" "bundle-has-host-cas"
	expect_contains "curl through TLS interception" "$OUT" "curl 200"
	expect_eq "the upstream saw the real token (Bearer)" \
		"$(eg_requests '[v for r in req if r["path"] == "/bearer" for k, v in r["headers"] if k == "Authorization"]')" \
		"['Bearer $SECRET']"
	expect_eq "the header of the file credential was added" \
		"$(eg_requests '[v for r in req if r["path"] == "/bearer" for k, v in r["headers"] if k == "X-Api-Key"]')" \
		"['key $FILE_SECRET']"
	local basic
	basic="Basic $(printf 'x-access-token:%s' "$SECRET" | base64 -w0)"
	expect_eq "Basic credentials rewritten (curl -u)" \
		"$(eg_requests '[v for r in req if r["path"] == "/basic" for k, v in r["headers"] if k == "Authorization"]')" \
		"['$basic']"
	expect_eq "git: challenged, then its Basic credentials carry the real token" \
		"$(eg_requests '[v for r in req if r["path"].startswith("/git/") for k, v in r["headers"] if k == "Authorization"][:1]')" \
		"['$basic']"
	expect_contains "Python urllib trusts the sandbox CA (SSL_CERT_FILE)" "$OUT" "python 200"
	expect_eq "and its token arrived" \
		"$(eg_requests '[v for r in req if r["path"] == "/python" for k, v in r["headers"] if k == "Authorization"]')" \
		"['token $SECRET']"
	if printf '%s' "$OUT" | grep -q "requests unavailable"; then
		skip "Python requests trusts the sandbox CA" "python3-requests is not installed"
	else
		expect_contains "Python requests trusts the sandbox CA (REQUESTS_CA_BUNDLE)" "$OUT" \
			"requests 200"
	fi
	expect_contains "Node trusts the sandbox CA (NODE_EXTRA_CA_CERTS)" "$OUT" "node HTTP/1.1 200 OK"
	expect_contains "unbound host: tunnelled end to end" "$OUT" "unbound 200"
	expect_eq "a placeholder sent to an unbound host arrives unchanged" \
		"$(eg_requests '[v for r in req if r["path"] == "/unbound" for k, v in r["headers"] if k == "Authorization"]')" \
		"['Bearer $ph']"
	expect_eq "no secret in cleartext HTTP, even to a bound host" \
		"$(eg_requests '[v for r in req if r["path"] == "/cleartext" for k, v in r["headers"] if k == "Authorization"]')" \
		"['Bearer $ph']"
	expect_contains "a bound host whose certificate does not verify: 502" "$OUT" "wrongname 502"
	expect_contains "saying why (event)" \
		"$(eg_events '[e.get("error") for e in ev if e["host"] == "wrongname.test"]')" \
		"TLS to wrongname.test ($EG_PUB) failed: certificate verification failed"
	expect_eq "nothing was sent to it" \
		"$(eg_requests 'sum(1 for r in req if r["path"] == "/x")')" 0
	expect_eq "events name the credentials that went out" \
		"$(eg_events '[e.get("credentials") for e in ev if e.get("host") == "api.test" and e.get("method") == "GET"][0]')" \
		"['GH_TOKEN', 'API_KEY']"
	expect_eq "each intercepted request is an event of its own" \
		"$(eg_events 'sum(1 for e in ev if e["proto"] == "https" and e.get("method")) >= 6')" True
	if grep -qF -e "$SECRET" -e "$FILE_SECRET" "$EVENTS" "$REPORT"; then
		not_ok "no secret in the events or the report"
	else
		ok "no secret in the events or the report"
	fi
	expect_eq "report: credentials injected, TLS intercepted" \
		"$(eg_report 'd["egress"]["credentials_injected"] >= 5 and d["egress"]["tls_intercepted"] >= 5')" True
	expect_eq "report: the plan names the credentials, not their values" \
		"$(eg_report 'd["plan"]["egress"]["credentials"]')" "['GH_TOKEN', 'API_KEY']"
}

test_missing_secret() {
	eg_policy '{"network": {"mode": "proxy", "allow": ["api.test"]},
	  "credentials": {"T": {"from_env": "EGRESS_TEST_UNSET_VAR", "hosts": ["api.test"]}}}'
	eg_run --policy "$EG/policy.json" -- true
	expect_eq "a credential whose variable is unset: exit 125" "$RC" 125
	expect_contains "the error names the field" "$ERR" \
		"credentials.T.from_env: the variable EGRESS_TEST_UNSET_VAR is not set"
}

test_injection
test_missing_secret
