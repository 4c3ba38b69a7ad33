#!/usr/bin/env bash
# TCP with bearer tokens: the token file is checked (mode, malformed lines named), --listen
# needs it, requests without a valid token get 401 JSON; owners are isolated (another owner's
# sandbox and snapshot answer 404 on every route and do not show in lists; the unix socket is
# the local owner's); token owners cannot widen the boundary (403 naming the field); quotas
# (--max-sandboxes, --max-memory) answer 429 naming the quota and create nothing.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
TA=alice-token-0123456789abcdef
TB=bob-token-0123456789abcdef01

# ---- the token file and --listen --------------------------------------------------------------

serve_fails() { # NAME EXPECTED-IN-STDERR ARGS...: the daemon refuses to start
	local name=$1 want=$2 out rc
	shift 2
	out=$(timeout 20 "$AJ" serve --socket "$SV_DIR/x.sock" --state-dir "$STATE" "$@" 2>&1)
	rc=$?
	expect_eq "$name: exit 125" "$rc" 125
	expect_contains "$name: says why" "$out" "$want"
}
sv_tokens "$TA alice"
chmod 640 "$SV_DIR/tokens"
serve_fails "a group-readable token file" "mode 0640" --listen "127.0.0.1:$(free_port)" --token-file "$SV_DIR/tokens"
printf '# tokens\n%s alice\n\nshort bob\n' "$TA" >"$SV_DIR/tokens"
chmod 600 "$SV_DIR/tokens"
serve_fails "a too short token" "line 4" --listen "127.0.0.1:$(free_port)" --token-file "$SV_DIR/tokens"
sv_tokens "$TA alice extra"
serve_fails "a line with three fields" "line 1: expected TOKEN OWNER" --listen "127.0.0.1:$(free_port)" --token-file "$SV_DIR/tokens"
sv_tokens "$TA alice" "$TA bob"
serve_fails "a token listed twice" "line 2" --listen "127.0.0.1:$(free_port)" --token-file "$SV_DIR/tokens"
sv_tokens "$TA al/ice"
serve_fails "an owner with a slash" "line 1" --listen "127.0.0.1:$(free_port)" --token-file "$SV_DIR/tokens"
serve_fails "--listen without --token-file" "--token-file" --listen "127.0.0.1:$(free_port)"
check "refused starts leave no socket" test ! -e "$SV_DIR/x.sock"

sv_tokens "# owners" "$TA alice" "" "$TB bob"
sv_start_tcp --max-sandboxes 3 --max-memory 300MiB || { not_ok "serve with TCP ($(tail -5 "$SV_LOG"))"; exit 0; }
ok "serve with --listen and a valid token file"

# ---- 401 ------------------------------------------------------------------------------------------

apit "" GET /v1/sandboxes
expect_api "no Authorization: 401 unauthorized" 401 "" unauthorized
expect_contains "401: WWW-Authenticate: Bearer" "$HEADERS" "WWW-Authenticate: Bearer"
apit "${TA}x" GET /v1/sandboxes
expect_api "a wrong token: 401" 401 "" unauthorized
apit "${TA:0:20}" GET /v1/health
expect_api "a prefix of a token: 401" 401
apit "" GET /v1/health -H "Authorization: Basic $TA"
expect_api "another scheme: 401" 401
apit "" GET /v1/health -H "Authorization: bearer $TA"
expect_api "the scheme is case-insensitive: 200" 200

# ---- owners ---------------------------------------------------------------------------------------

if is_root; then PA='{"limits":{"memory":"100MiB"}}'; else PA='{"limits":{"memory":"100MiB","cpus":null}}'; fi
apitj "$TA" POST /v1/sandboxes "{\"name\": \"a-box\", \"policy\": $PA, \"start\": $(is_root && echo true || echo false)}"
expect_api "alice creates a-box: 201" 201
expect_eq "a-box belongs to alice" "$(bj 'd["owner"]')" alice
A_ID=$(bj 'd["id"]')
if is_root; then
	apit "$TA" PUT '/v1/sandboxes/a-box/files?path=f' -H 'Content-Type: application/octet-stream' --data-binary a
	expect_api "alice writes a file in a-box" 201
fi
apitj "$TA" POST /v1/sandboxes/a-box/snapshots '{"name": "a-snap"}'
A_SNAP_CODE=$CODE
apitj "$TB" POST /v1/sandboxes "{\"name\": \"b-box\", \"policy\": $PA, \"start\": false}"
expect_api "bob creates b-box: 201" 201

apit "$TA" GET /v1/sandboxes
expect_eq "alice lists only hers" "$(bj '[s["name"] for s in d["sandboxes"]]')" "['a-box']"
apit "$TB" GET /v1/sandboxes
expect_eq "bob lists only his" "$(bj '[s["name"] for s in d["sandboxes"]]')" "['b-box']"
api GET /v1/sandboxes
expect_eq "the unix socket (local owner) lists neither" "$(bj '[s["name"] for s in d["sandboxes"]]')" "[]"
api GET /v1/sandboxes/a-box
expect_api "the local owner: alice's sandbox is 404" 404 "" not_found
expect_eq "the CLI (the host's administrator) sees alice's sandbox" "$(pj_field a-box 'd["owner"]')" alice

# Every route, as bob, on alice's sandbox (by name and by id): 404, and nothing changes.
BEFORE=$(pj_summary)
J='-H Content-Type:application/json'
O='-H Content-Type:application/octet-stream'
for ref in a-box "$A_ID"; do
	S=/v1/sandboxes/$ref
	while read -r method path body; do
		# shellcheck disable=SC2086
		if [ -n "$body" ]; then apit "$TB" "$method" "$path" $J --data-binary "$body"; else apit "$TB" "$method" "$path"; fi
		expect_api "bob: $method ${path/$A_ID/<id>} on alice's sandbox: 404" 404 "" not_found
	done <<EOF
GET $S
DELETE $S?force=true
POST $S/start
POST $S/stop
POST $S/pause
POST $S/resume
POST $S/snapshots {"name":"stolen"}
GET $S/snapshots
POST $S/fork {"count":1}
GET $S/diff
GET $S/events
GET $S/events?follow=true
GET $S/files?path=f
DELETE $S/files?path=f
GET $S/files/list?path=.
GET $S/files/stat?path=f
POST $S/files/mkdir {"path":"d"}
POST $S/files/move {"from":"f","to":"g"}
EOF
	# shellcheck disable=SC2086
	apit "$TB" PUT "$S/files?path=f" $O --data-binary b
	expect_api "bob: PUT files on alice's sandbox: 404" 404 "" not_found
done
if [ "$A_SNAP_CODE" = 201 ]; then
	apit "$TB" GET /v1/snapshots/a-snap
	expect_api "bob: alice's snapshot: 404" 404
	apit "$TB" DELETE /v1/snapshots/a-snap
	expect_api "bob: delete alice's snapshot: 404" 404
	apit "$TB" GET /v1/snapshots
	expect_eq "bob: no snapshots listed" "$(bj 'd["snapshots"]')" "[]"
	apitj "$TB" POST /v1/sandboxes "{\"name\": \"b-from\", \"from_snapshot\": \"a-snap\", \"policy\": $PA, \"start\": false}"
	expect_api "bob: create from alice's snapshot: refused like an unknown one" 400 from_snapshot
	apit "$TA" GET /v1/snapshots/a-snap
	expect_api "alice: her snapshot: 200" 200
else
	not_ok "alice's snapshot (HTTP $A_SNAP_CODE); its isolation checks were not run"
fi
expect_eq "bob's requests changed nothing" "$(pj_summary)" "$BEFORE"
apitj "$TB" POST /v1/sandboxes "{\"name\": \"a-box\", \"policy\": $PA, \"start\": false}"
expect_api "names are unique on the host: bob cannot take alice's name (409)" 409 name already_exists

# ---- token owners cannot widen the boundary ---------------------------------------------------

for pair in 'filesystem.read_write:{"filesystem":{"read_write":["/etc"]}}' \
	'filesystem.read_only:{"filesystem":{"read_only":["/root"]}}' \
	'environment.allow:{"environment":{"allow":["*"]}}' \
	'network.mode:{"network":{"mode":"host"}}' \
	'syscalls.allow:{"syscalls":{"allow":["ptrace"]}}' \
	'allow_degraded:{"allow_degraded":["landlock"]}' \
	'network.allow_private:{"network":{"mode":"proxy","allow":["x.test"],"allow_private":["10.0.0.0/8"]}}' \
	'credentials:{"network":{"mode":"proxy","allow":["x.test"]},"credentials":{"T":{"from_file":"/etc/hostname","hosts":["x.test"]}}}' \
	'tier:{"tier":"landlock"}' \
	'network.publish:{"network":{"publish":["0.0.0.0:0:80"]}}' \
	'network.host_ports:{"network":{"host_ports":[5432]}}' \
	'filesystem.mask:{"filesystem":{"mask":["/home/user/.ssh"]}}'; do
	f=${pair%%:*} p=${pair#*:}
	apitj "$TA" POST /v1/sandboxes "{\"name\": \"wide\", \"policy\": $p}"
	expect_api "token owner with policy.$f: 403 forbidden, field policy.$f" 403 "policy.$f" forbidden
done
for pair in 'limits.memory:{"limits":{"memory":null}}' 'limits.pids:{"limits":{"pids":null}}' \
	'limits.pids:{"limits":{"pids":100000}}' 'network.max_connections:{"network":{"mode":"proxy","allow":["x.test"],"max_connections":null}}'; do
	f=${pair%%:*} p=${pair#*:}
	apitj "$TA" POST /v1/sandboxes "{\"name\": \"lift\", \"start\": false, \"policy\": $p}"
	expect_api "token owner lifting $f ($p): 403 forbidden, field policy.$f" 403 "policy.$f" forbidden
done
apitj "$TA" POST /v1/sandboxes '{"name": "lower", "start": false, "policy": {"limits": {"pids": 64, "memory": "100MiB", "cpus": null}}}'
expect_api "token owner lowering limits: 201" 201
apit "$TA" DELETE "/v1/sandboxes/lower?force=true"
apij POST /v1/sandboxes '{"name": "wide-local", "start": false, "policy": {"filesystem": {"read_only": ["/usr/share"]}}}'
expect_api "the local owner may grant host paths, as with the CLI" 201
api DELETE /v1/sandboxes/wide-local

# ---- quotas (3 sandboxes, 300MiB of memory limits per owner) ----------------------------------

mk() { # OWNER-TOKEN NAME MEMORY
	apitj "$1" POST /v1/sandboxes "{\"name\": \"$2\", \"start\": false, \"policy\": {\"limits\": {\"memory\": $3, \"cpus\": null}}}"
}
mk "$TA" a-2 '"100MiB"'
expect_api "quota: alice's second sandbox (200 of 300MiB): 201" 201
mk "$TA" a-big '"200MiB"'
expect_api "quota: 200MiB more than the 100 left: 429" 429 policy.limits.memory quota_exceeded
expect_contains "quota: the message names the memory quota" "$(bj 'd["error"]["message"]')" "memory quota"
mk "$TA" a-nolimit null
expect_api "quota: a token owner cannot ask for no memory limit at all: 403" 403 policy.limits.memory forbidden
mk "$TA" a-3 '"100MiB"'
expect_api "quota: alice's third sandbox: 201" 201
mk "$TA" a-4 '"1MiB"'
expect_api "quota: a fourth (max 3): 429" 429 "" quota_exceeded
expect_contains "quota: the message names the sandbox quota" "$(bj 'd["error"]["message"]')" "sandbox quota"
apitj "$TA" POST /v1/sandboxes/a-2/fork '{"count": 1, "start": false}'
expect_api "quota: a fork beyond it: 429" 429 "" quota_exceeded
apit "$TA" GET /v1/sandboxes
expect_eq "quota: refused requests made nothing" "$(bj '" ".join(sorted(s["name"] for s in d["sandboxes"]))')" "a-2 a-3 a-box"
mk "$TB" b-2 '"150MiB"'
expect_api "quota: per owner: bob still has room" 201
apit "$TA" DELETE '/v1/sandboxes/a-3?force=true'
mk "$TA" a-4 '"100MiB"'
expect_api "quota: after a delete there is room again" 201
PIDS=()
for i in 1 2 3 4 5; do
	mk "$TB" "b-par-$i" '"10MiB"' >/dev/null 2>&1 &
	PIDS+=($!)
done
wait "${PIDS[@]}"
apit "$TB" GET /v1/sandboxes
expect_eq "quota: five concurrent creates cannot all take bob's one free slot" "$(bj 'len(d["sandboxes"])')" 3
api GET /v1/sandboxes
apij POST /v1/sandboxes '{"name": "local-1", "start": false}'
expect_api "quota: the local owner has none" 201

sv_done
