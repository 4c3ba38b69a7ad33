#!/usr/bin/env bash
# Warm pools (serve --warm-pool, docs/api.md "Warm pools"): N started sandboxes kept per
# policy; a create with that policy gets one of them (its id was the pool's), made its owner's
# with the name, labels and times of this create, and nothing of the pool's wait shows
# (labels, events, metrics, files, processes, times); a claimed sandbox is never handed out
# again, and another owner cannot see the pool's or the claimant's; quotas count claims like
# creates; a create with another policy, or a taken name, creates as always and leaves the
# pool alone; the pool refills; the daemon removes its pool's sandboxes when it stops, and a
# crashed daemon's when it starts again. Bad specs are refused at start. The E2B API's
# creates claim from an e2b: pool the same way.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
TA=alice-token-0123456789abcdef
TB=bob-token-0123456789abcdef01
printf '%s\n' "$SV_POLICY" >"$SV_DIR/policy.json"
SPEC="$SV_DIR/policy.json"

# Alice is a token owner as root. Rootless without a delegated cgroup no memory limit can be
# enforced, and a token owner may not lift it: she is the local owner (the unix socket), and
# what needs a second owner is skipped.
if is_root; then
	areq() { apit "$TA" "$@"; }
	areqj() { apitj "$TA" "$@"; }
	AOWNER=alice
else
	areq() { api "$@"; }
	areqj() { apij "$@"; }
	AOWNER=""
fi

# pool_ids: the ids of the pool's sandboxes (owner ":pool"), sorted, one per line
pool_ids() {
	"$AJ" ls --json --state-dir "$STATE" 2>/dev/null |
		python3 -c 'import json,sys; print("\n".join(sorted(s["id"] for s in json.load(sys.stdin) if s["owner"] == ":pool" and s["state"] == "running")))'
}
pool_full() { [ "$(pool_ids | grep -c .)" -ge "$1" ]; }

# ---- refusals -----------------------------------------------------------------------------------

for bad in "x" "$SPEC=0" "$SPEC=1001" "$SPEC=two" "=3" "e2b:base=1" "no-such-preset-or-file.json=1"; do
	out=$(timeout 20 "$AJ" serve --socket "$SV_DIR/bad.sock" --state-dir "$STATE" --warm-pool "$bad" 2>&1)
	rc=$?
	expect_eq "--warm-pool '$bad' is refused: exit 125" "$rc" 125
	expect_contains "--warm-pool '$bad': names the option" "$out" "--warm-pool"
done
check "a refused start leaves no socket" test ! -e "$SV_DIR/bad.sock"

# ---- a pool of 2 ------------------------------------------------------------------------------------

sv_tokens "$TA alice" "$TB bob"
sv_start_tcp --warm-pool "$SPEC=2" --max-sandboxes 1 || { not_ok "serve --warm-pool ($(tail -5 "$SV_LOG"))"; exit 0; }
check "the pool fills to 2 started sandboxes" wait_until 60 pool_full 2
POOL0=$(pool_ids)
api GET /v1/sandboxes
expect_eq "the local owner does not see the pool's sandboxes" "$(bj 'len(d["sandboxes"])')" 0
apit "$TA" GET /v1/sandboxes
expect_eq "nor does a token owner" "$(bj 'len(d["sandboxes"])')" 0
for id in $POOL0; do
	apit "$TA" GET "/v1/sandboxes/$id"
	expect_api "a pool's sandbox by id is 404 to a token owner" 404
	api GET "/v1/sandboxes/$id"
	expect_api "and to the local owner" 404
done

T0=$(date +%s%3N)
areqj POST /v1/sandboxes "{\"name\": \"a-warm\", \"policy\": $SV_POLICY, \"labels\": {\"team\": \"a\"}}"
expect_api "alice creates a-warm: 201" 201
A_ID=$(bj 'd["id"]')
check "a-warm is one of the pool's sandboxes (claimed, not made)" grep -qx "$A_ID" <<<"$POOL0"
expect_eq "a-warm is alice's" "$(bj 'd["owner"]')" "$AOWNER"
expect_eq "a-warm is running" "$(bj 'd["state"]')" running
expect_eq "its labels are the create's only" "$(bj 'd["labels"]')" "{'team': 'a'}"
CREATED=$(bj 'int(__import__("datetime").datetime.fromisoformat(d["created"].replace("Z","+00:00")).timestamp()*1000)')
STARTED=$(bj 'int(__import__("datetime").datetime.fromisoformat(d["started"].replace("Z","+00:00")).timestamp()*1000)')
check "its creation time is the create's ($CREATED >= $T0)" test "$CREATED" -ge "$T0"
check "its start time too ($STARTED >= $T0)" test "$STARTED" -ge "$T0"
areq GET "/v1/sandboxes/a-warm/events"
expect_eq "its history is a create and a start, nothing of the pool's" \
	"$(bj '[e["event"] for e in d["events"]]')" "['create', 'start']"
areq GET "/v1/sandboxes/a-warm/metrics"
check "no metrics sample before the claim" python3 -c '
import json, sys, datetime
d = json.loads(sys.argv[1]); t0 = int(sys.argv[2])
def ms(s): return int(datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000)
s = d.get("samples", d if isinstance(d, list) else [])
sys.exit(any(ms(x["time"]) < t0 for x in s if isinstance(x, dict) and "time" in x))' "$BODY" "$T0"
areqj POST /v1/sandboxes/a-warm/exec '{"argv": ["sh", "-c", "ls -A ~ | wc -l; set -- /proc/[0-9]*; echo $#"]}'
expect_eq "an empty workspace, and no process but init and this command" \
	"$(printf '%s' "$BODY" | python3 -c 'import json,sys; print("".join(json.loads(l).get("data","") for l in sys.stdin if l.strip()))' | xargs)" "0 2"

# A pool sandbox goes to bob; alice's stays hers.
check "the pool refills after a claim" wait_until 60 pool_full 2
if is_root; then
POOLB=$(pool_ids)
apitj "$TB" POST /v1/sandboxes "{\"policy\": $SV_POLICY}"
expect_api "bob creates a sandbox: 201" 201
B_ID=$(bj 'd["id"]')
check "bob's is a pool sandbox too" grep -qx "$B_ID" <<<"$POOLB"
check "not alice's" test "$B_ID" != "$A_ID"
expect_eq "its default name is a fresh create's" "$(bj 'd["name"]')" "sb-${B_ID:0:8}"
apit "$TB" GET /v1/sandboxes/a-warm
expect_api "bob cannot see alice's claimed sandbox" 404
apitj "$TB" POST /v1/sandboxes "{\"policy\": $SV_POLICY}"
expect_api "bob's quota (--max-sandboxes 1) counts the claim: 429" 429
else
	skip "a second owner's claim and quota" "rootless without a delegated cgroup, token owners cannot create started sandboxes (no memory limit can be enforced)"
	B_ID=none
fi
check "the pool refills to 2" wait_until 60 pool_full 2
POOL1=$(pool_ids)
check "with new sandboxes, never a claimed one" test -z "$(comm -12 <(echo "$POOL1") <(printf '%s\n%s\n' "$A_ID" "$B_ID" | sort))"

# A taken name (names are unique across owners): refused, and the pool keeps its sandbox.
apij POST /v1/sandboxes "{\"name\": \"a-warm\", \"policy\": $SV_POLICY}"
expect_api "a taken name: 409" 409
expect_eq "the pool still has both" "$(pool_ids)" "$POOL1"
# Another policy: made, not claimed.
OTHER=$(python3 -c 'import json,sys; p=json.loads(sys.argv[1]); p["hostname"]="other"; print(json.dumps(p))' "$SV_POLICY")
areq DELETE "/v1/sandboxes/a-warm?force=true"
expect_api "alice removes a-warm" 204
areqj POST /v1/sandboxes "{\"name\": \"a-other\", \"policy\": $OTHER}"
expect_api "a create with another policy: 201" 201
check "it is not from the pool" bash -c '! grep -qx "$1" <<<"$2"' _ "$(bj 'd["id"]')" "$POOL1"
expect_eq "the pool still has both" "$(pool_ids)" "$POOL1"
areq DELETE "/v1/sandboxes/a-other?force=true"

# ---- stop and start -----------------------------------------------------------------------------

sv_stop
expect_eq "the daemon stops cleanly" "$SV_RC" 0
expect_eq "its pool's sandboxes are removed with it" "$(pool_ids)" ""
expect_eq "the claimed ones stay" "$("$AJ" ls --json --state-dir "$STATE" | python3 -c 'import json,sys; print(sorted(s["owner"] for s in json.load(sys.stdin)))')" "$(is_root && echo "['bob']" || echo "[]")"
sv_start_tcp --warm-pool "$SPEC=1" || { not_ok "serve again ($(tail -5 "$SV_LOG"))"; exit 0; }
check "a new pool fills" wait_until 60 pool_full 1
kill -9 "$SV_PID"
wait "$SV_PID" 2>/dev/null
LEFT=$(pool_ids)
check "a killed daemon leaves its pool's sandboxes" test -n "$LEFT"
sv_start_tcp --warm-pool "$SPEC=1" || { not_ok "serve after a kill ($(tail -5 "$SV_LOG"))"; exit 0; }
check "the next start removes them and fills anew" wait_until 60 bash -c \
	'ids=$("$0" ls --json --state-dir "$1" | python3 -c "import json,sys; print(\" \".join(s[\"id\"] for s in json.load(sys.stdin) if s[\"owner\"] == \":pool\"))"); [ -n "$ids" ] && [[ " $ids " != *" $2 "* ]]' "$AJ" "$STATE" "$LEFT"
sv_stop

# ---- the E2B API ------------------------------------------------------------------------------------

sv_e2b_keys
E2B_PORT=$(free_port)
printf '{"base": %s}\n' "$SV_POLICY" >"$SV_DIR/templates.json"
sv_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" --warm-pool "e2b:base=1" ||
	{ not_ok "serve with an E2B pool ($(tail -5 "$SV_LOG"))"; exit 0; }
check "the E2B template's pool fills" wait_until 60 pool_full 1
POOLE=$(pool_ids)
CODE=$(curl -s -o "$SV_DIR/e2b.json" -w '%{http_code}' -X POST -H "X-API-KEY: $KEY" \
	-H 'Content-Type: application/json' -d '{"templateID": "base", "timeout": 60}' \
	"http://127.0.0.1:$E2B_PORT/sandboxes")
expect_eq "Sandbox.create over the E2B API: 201" "$CODE" 201
E_ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandboxID"])' "$SV_DIR/e2b.json" 2>/dev/null)
check "it is the pool's sandbox ($E_ID)" grep -qx "$E_ID" <<<"$POOLE"
expect_eq "now alice's, with E2B's label and lifetime" \
	"$("$AJ" inspect --json --state-dir "$STATE" "$E_ID" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["owner"], d["labels"], d["ttl"]["max_lifetime_ms"])')" \
	"alice {'e2b/template': 'base'} 60000"
sv_stop
