#!/usr/bin/env bash
# The secret store (docs/policy.md "credentials", from_secret): `agentjail secret` keeps
# values readable only by agentjail's user and never prints them; a policy's credential names
# one and the egress proxy injects it on the way out (a TLS upstream on loopback sees it, the
# sandbox holds a placeholder); an update is in force at the next start, a removed secret
# stops a start with the field named; /v1/secrets is the owner's; the E2B SDK's Secret API and
# Sandbox.create's network rules with ${e2b.secrets.NAME} go the same way
# (tests/e2b/secrets_test.mjs). At the end no file the run produced holds a value.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/egress.bash"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
eg_init
eg_ca svc.test
HP=$(free_port)
TP=$(free_port)
EP=$(free_port)
eg_upstream 127.0.0.1 "$HP" "$TP" "$EP" || { not_ok "upstream servers start"; exit 1; }
eg_hosts "127.0.0.1 svc.test"
V1="sv1-$RANDOM$RANDOM-value"
V2="sv2-$RANDOM$RANDOM-value"
V3="sv3-$RANDOM$RANDOM-value"
sec() { # like aj_run, with the test's standard input (the value)
	local o e
	o=$(mktemp) e=$(mktemp)
	"$AJ" --state-dir "$STATE" secret "$@" >"$o" 2>"$e"
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
}

# ---- the store --------------------------------------------------------------------------------

sec create GH_Token <<<"$V1"
expect_eq "secret create: exit 0" "$RC" 0
expect_eq "prints the name, lower-cased" "$OUT" "gh_token"
printf '%s' "$V3" >"$SV_DIR/v3"
sec create --from-file "$SV_DIR/v3" api-key
expect_eq "secret create --from-file: exit 0" "$RC" 0
sec ls
expect_contains "ls: the names" "$OUT" "gh_token"
expect_not_contains "ls: never a value" "$OUT" "$V1"
sec inspect GH_TOKEN
expect_eq "inspect: by name, without case; version 1" "$(printf '%s' "$OUT" | json /dev/stdin 'd["name"], d["version"]')" "('gh_token', 1)"
ID=$(printf '%s' "$OUT" | json /dev/stdin 'd["id"]')
sec inspect "$ID"
expect_eq "inspect: by id" "$(printf '%s' "$OUT" | json /dev/stdin 'd["name"]')" "gh_token"
dir=$(dirname "$(find "$STATE/secrets" -name gh_token.value)")
expect_eq "the store: directories 0700, files 0600" \
	"$(stat -c %a "$STATE/secrets" "$dir" "$dir/gh_token.value" "$dir/gh_token.json" | tr '\n' ' ')" "700 700 600 600 "
expect_eq "the value file holds the value without the newline" "$(cat "$dir/gh_token.value")" "$V1"
sec create gh_token <<<x
expect_eq "a name taken: exit 4" "$RC" 4
expect_contains "saying so" "$ERR" 'secret "gh_token" exists'
sec create tabbed <<<$'a\tb'
expect_eq "a value with control characters: exit 125" "$RC" 125
expect_contains "naming the value" "$ERR" "value: the secret holds control characters"
sec create 'no spaces' <<<v
expect_eq "a bad name: exit 125" "$RC" 125
expect_contains "naming the name" "$ERR" 'name: "no spaces" is not a secret name'
sec create empty </dev/null
expect_eq "an empty value: exit 125" "$RC" 125
sec create sec_0123 <<<v
expect_eq "a name that would read as an id (sec_...): exit 125" "$RC" 125
sec rm nosuch
expect_eq "rm of no secret: exit 1" "$RC" 1
expect_contains "saying so" "$ERR" 'no secret "nosuch"'
expect_eq "failed creates leave nothing" "$(ls "$dir" | sort | tr '\n' ' ')" "api-key.json api-key.value gh_token.json gh_token.value "

# ---- injection by the proxy --------------------------------------------------------------------

eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"], "allow_private": ["127.0.0.1/32"]},
  "credentials": {
    "GH_TOKEN": {"from_secret": "gh_token", "hosts": ["svc.test:'"$TP"'"]},
    "API_KEY": {"from_secret": "API-KEY", "hosts": ["svc.test:'"$TP"'"], "header": "X-Api-Key",
                "format": "key {}", "replace": true}}}'
probe() {
	eg_run --state-dir "$STATE" --policy "$EG/policy.json" -- sh -c '
echo "placeholder $GH_TOKEN"
curl -sS -m 10 -o /dev/null -w "tls %{http_code}\n" -H "Authorization: Bearer $GH_TOKEN" \
  -H "X-Api-Key: the-sandbox-own" https://svc.test:$1/'"$1"'
' sh "$TP"
}
probe one
expect_eq "run with from_secret: exit 0" "$RC" 0
expect_contains "through the interception" "$OUT" "tls 200"
expect_not_contains "the sandbox holds no value" "$OUT" "$V1"
expect_eq "the upstream saw the stored value (a placeholder rewritten)" \
	"$(eg_requests '[v for r in req if r["path"] == "/one" for k, v in r["headers"] if k == "Authorization"]')" \
	"['Bearer $V1']"
expect_eq "replace: the credential's header replaced the request's own" \
	"$(eg_requests '[v for r in req if r["path"] == "/one" for k, v in r["headers"] if k == "X-Api-Key"]')" \
	"['key $V3']"
sec update gh_token <<<"$V2"
expect_eq "secret update: exit 0" "$RC" 0
sec inspect gh_token
expect_eq "version 2" "$(printf '%s' "$OUT" | json /dev/stdin 'd["version"]')" 2
probe two
expect_eq "the next start reads the new value" \
	"$(eg_requests '[v for r in req if r["path"] == "/two" for k, v in r["headers"] if k == "Authorization"]')" \
	"['Bearer $V2']"
aj_run run --state-dir "$STATE" --dry-run --json $(rootless_flags) --policy "$EG/policy.json" -- true
expect_contains "the plan names the secret" "$OUT" '"from_secret": "gh_token"'
expect_not_contains "never its value" "$OUT" "$V2"

# A persistent sandbox: the secret must exist at create; its supervisor reads it at start.
eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"], "allow_private": ["127.0.0.1/32"]},
  "credentials": {"T": {"from_secret": "missing-one", "hosts": ["svc.test"]}}}'
aj_run --state-dir "$STATE" create --name sec-bad $(rootless_flags) --policy "$EG/policy.json"
expect_eq "create naming no secret: exit 125" "$RC" 125
expect_contains "the error names the field and the secret" "$ERR" 'credentials.T.from_secret: no secret "missing-one"'
aj_run --state-dir "$STATE" ls -q
expect_eq "and no sandbox was made" "$OUT" ""
sec create temp <<<tmp-value
eg_policy '{"network": {"mode": "proxy", "allow": ["svc.test:*"], "allow_private": ["127.0.0.1/32"]},
  "credentials": {"T": {"from_secret": "temp", "hosts": ["svc.test"]}}}'
sec rm temp
eg_run --state-dir "$STATE" --policy "$EG/policy.json" -- true
expect_eq "a run whose secret was removed: exit 125" "$RC" 125
expect_contains "naming the field" "$ERR" 'credentials.T.from_secret: no secret "temp"'

# ---- /v1/secrets ---------------------------------------------------------------------------------

export AGENTJAIL_EGRESS_HOSTS=$EG/hosts AGENTJAIL_EGRESS_RESOLV_CONF=$EG/resolv.conf SSL_CERT_FILE=$EG/ca/ca.pem
sv_e2b_keys
E2B_PORT=$(free_port)
python3 -c '
import json, sys
pol = json.loads(sys.argv[1])
web = dict(pol)
web["network"] = {"mode": "proxy", "allow": ["svc.test:" + sys.argv[2]], "allow_private": ["127.0.0.1/32"]}
print(json.dumps({"base": pol, "web": web}))' "$SV_POLICY" "$TP" >"$SV_DIR/templates.json"
sv_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" || {
	not_ok "serve starts ($(tail -5 "$SV_LOG"))"
	exit 0
}
api() { # METHOD PATH [BODY]: CODE and BODY
	BODY=$(curl -s --unix-socket "$SOCK" -X "$1" -H 'Content-Type: application/json' \
		${3:+--data "$3"} -w '\n%{http_code}' "http://aj$2")
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}
api POST /v1/secrets '{"name": "From-Api", "value": "'"$V2"'", "metadata": {"team": "a"}}'
expect_eq "POST /v1/secrets: 201" "$CODE" 201
expect_eq "the metadata back, not the value" "$(printf '%s' "$BODY" | json /dev/stdin 'd["name"], d["metadata"], "value" in d')" "('from-api', {'team': 'a'}, False)"
api GET /v1/secrets
expect_eq "GET /v1/secrets: the local owner's" "$(printf '%s' "$BODY" | json /dev/stdin '[s["name"] for s in d["secrets"]]')" "['api-key', 'from-api', 'gh_token']"
api PUT /v1/secrets/from-api '{"value": "'"$V3"'"}'
expect_eq "PUT: version 2" "$CODE $(printf '%s' "$BODY" | json /dev/stdin 'd["version"]')" "200 2"
api POST /v1/secrets '{"name": "x", "value": ""}'
expect_eq "an empty value: 400 naming the field" "$CODE $(printf '%s' "$BODY" | json /dev/stdin 'd["error"]["field"]')" "400 value"
api POST /v1/secrets '{"name": "gh_token", "value": "v"}'
expect_eq "a name taken: 409" "$CODE" 409
api POST /v1/secrets '{"name": "x", "value": "v", "colour": 1}'
expect_eq "an unknown field: 400 naming it" "$CODE $(printf '%s' "$BODY" | json /dev/stdin 'd["error"]["field"]')" "400 colour"
api POST /v1/secrets "{\"name\": \"big\", \"value\": \"v\", \"metadata\": $(python3 -c 'import json; print(json.dumps({"k%d" % i: "x" * 1024 for i in range(64)}))')}"
expect_eq "metadata too large for the store: 400 naming it" "$CODE $(printf '%s' "$BODY" | json /dev/stdin 'd["error"]["field"]')" "400 metadata"
api GET /v1/secrets/big
expect_eq "and nothing was kept" "$CODE" 404
api DELETE /v1/secrets/from-api
expect_eq "DELETE: 204" "$CODE" 204
api GET /v1/secrets/from-api
expect_eq "then 404" "$CODE" 404

# ---- E2B: Secret and Sandbox.create's network rules --------------------------------------------

sdk=$("$AJ_ROOT/tests/e2b/setup.sh")
case "$sdk" in
*E2B_SDK_DIR=*)
	node=$(command -v node)
	[ -x /usr/bin/node ] && node=/usr/bin/node
	E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=} E2B_API_URL=http://127.0.0.1:$E2B_PORT \
		E2B_SANDBOX_URL=http://127.0.0.1:$E2B_PORT E2B_API_KEY=$KEY E2B_TEST_TEMPLATE=web \
		E2B_TEST_HOST="svc.test:$TP" E2B_TEST_VALUE="$V1" E2B_OTHER_KEY="$KEY2" \
		timeout 200 "$node" "$AJ_ROOT/tests/e2b/secrets_test.mjs" 2>&1 | grep -E '^(not )?ok '
	expect_eq "E2B: the upstream saw the secret the rule named" \
		"$(eg_requests '[v for r in req if r["path"] == "/e2b" for k, v in r["headers"] if k == "Authorization"]')" \
		"['Bearer $V1']"
	;;
*) echo "$sdk" ;;
esac
api GET /v1/secrets
expect_eq "the E2B key's secrets are its own, not the local owner's" "$(printf '%s' "$BODY" | json /dev/stdin '[s["name"] for s in d["secrets"]]')" "['api-key', 'gh_token']"
sv_stop

# ---- no value anywhere but the store -------------------------------------------------------------

leaks=$(grep -rlF -e "$V1" -e "$V2" -e "$V3" -e tmp-value "$STATE" "$SV_DIR" "$EG" 2>/dev/null |
	grep -v -e '/secrets/[0-9a-f]*/[a-z0-9_-]*\.value$' -e "/v3$" -e "/up/requests.jsonl$" -e "/up/log$")
expect_eq "no value in any file of the run but the store's (state, events, logs, reports)" "$leaks" ""
sv_done
