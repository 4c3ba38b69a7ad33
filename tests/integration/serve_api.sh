#!/usr/bin/env bash
# agentjail serve over its unix socket, every endpoint's happy path with curl: meta, create
# (201, Location, labels), list with label filters, get by name and id, pause/resume/stop/start
# (generations), snapshots (of a sandbox, all, one, delete; in use: 409), create from a
# snapshot, fork, diff, events (stored and followed until the sandbox's removal), delete (409
# while running, ?force=true); the CLI and the API see the same sandboxes; the Python example
# of docs/api.md runs as written. Every response is checked against docs/openapi.json.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
sv_start || { not_ok "serve starts and answers /v1/health ($(tail -5 "$SV_LOG"))"; exit 0; }
ok "serve starts and answers /v1/health"

# ---- meta ------------------------------------------------------------------------------------

api GET /v1/health
expect_api "health: 200" 200
expect_eq "health: status ok" "$(bj 'd["status"]')" ok
api GET /v1/version
expect_eq "version: the binary's" "$(bj 'd["version"]')" "$("$AJ" version | awk '{print $2; exit}')"
api GET /v1/features
expect_api "features: 200" 200
"$AJ" features --json >"$SV_DIR/features.json"
expect_eq "features: the mode of agentjail features --json" "$(bj 'd["mode"]')" "$(json "$SV_DIR/features.json" 'd["mode"]')"
expect_eq "features: the same landlock ABI" "$(bj 'd["landlock"]["abi"]')" "$(json "$SV_DIR/features.json" 'd["landlock"]["abi"]')"

# ---- create, list, get -------------------------------------------------------------------------

apij POST /v1/sandboxes "{\"name\": \"web\", \"labels\": {\"team\": \"red\", \"env\": \"dev\"}, \"policy\": $SV_POLICY, \"idle_timeout\": \"10m\"}"
expect_api "create: 201" 201
expect_contains "create: Location of the new sandbox" "$HEADERS" "Location: /v1/sandboxes/web"
expect_eq "create: running" "$(bj 'd["state"]')" running
expect_eq "create: generation 1" "$(bj 'd["generation"]')" 1
expect_eq "create: labels" "$(bj 'sorted(d["labels"].items())')" "[('env', 'dev'), ('team', 'red')]"
expect_eq "create: the local owner is \"\"" "$(bj 'd["owner"]')" ""
expect_eq "create: idle_timeout 10m" "$(bj 'd["ttl"]["idle_timeout_ms"]')" 600000
ID=$(bj 'd["id"]')
check "create: id is 16 hex digits" matches "$ID" '^[0-9a-f]{16}$'
sv_create api2 '"labels": {"team": "blue", "env": "dev"}, "start": false'
expect_eq "create start=false: stopped" "$(bj 'd["state"]')" stopped
apij POST /v1/sandboxes "{\"policy\": $SV_POLICY, \"start\": false}"
expect_api "create without a name: 201" 201
GEN=$(bj 'd["name"]')
check "create without a name: sb-<8 hex>" matches "$GEN" '^sb-[0-9a-f]{8}$'

names() { bj '" ".join(sorted(s["name"] for s in d["sandboxes"]))'; }
api GET /v1/sandboxes
expect_eq "list: all three" "$(names)" "$(printf '%s\n' api2 web "$GEN" | sort | tr '\n' ' ' | sed 's/ $//')"
api GET '/v1/sandboxes?label=team=red'
expect_eq "list ?label=team=red" "$(names)" web
api GET '/v1/sandboxes?label=env=dev'
expect_eq "list ?label=env=dev" "$(names)" "api2 web"
api GET '/v1/sandboxes?label=env=dev&label=team=blue'
expect_eq "list with two labels: both must match" "$(names)" api2
api GET '/v1/sandboxes?label=env%3Dprod'
expect_eq "list ?label=env=prod (encoded): none" "$(names)" ""
api GET /v1/sandboxes/web
expect_api "get by name: 200" 200
expect_eq "get by name: the id" "$(bj 'd["id"]')" "$ID"
api GET "/v1/sandboxes/$ID"
expect_eq "get by id: the name" "$(bj 'd["name"]')" web
expect_eq "get: the effective policy's workspace" "$(bj 'd["policy"]["filesystem"]["workspace"]')" /home/user
api GET /v1/sandboxes/nope
expect_api "get an unknown sandbox: 404 not_found" 404 "" not_found

# ---- the CLI sees the API's sandboxes and the API the CLI's --------------------------------------

expect_eq "CLI inspect of the API's sandbox: running" "$(pj_state web)" running
pj_create from-cli
api GET /v1/sandboxes/from-cli
expect_api "API get of the CLI's sandbox: 200" 200
expect_eq "API get of the CLI's sandbox: running" "$(bj 'd["state"]')" running

# ---- pause, resume, stop, start --------------------------------------------------------------

# can_freeze: pausing, and snapshots or forks of a running sandbox, need the freezer cgroup
# (root here; a rootless run has none without delegation).
can_freeze() { is_root; }
if can_freeze; then
	api POST /v1/sandboxes/web/pause
	expect_api "pause: 200" 200
	expect_eq "pause: paused" "$(bj 'd["state"]')" paused
	expect_eq "pause: the CLI sees it paused" "$(pj_state web)" paused
	api POST /v1/sandboxes/web/pause
	expect_api "pause a paused sandbox: 409 wrong_state" 409 "" wrong_state
	api POST /v1/sandboxes/web/resume -H 'Content-Type: application/json' -d '{}'
	expect_api "resume (body {}): 200" 200
	expect_eq "resume: running" "$(bj 'd["state"]')" running
else
	api POST /v1/sandboxes/web/pause
	expect_api "pause without a freezer cgroup: 501 not_supported" 501 "" not_supported
	expect_eq "refused pause: still running" "$(pj_state web)" running
	skip "pause and resume over the API" "pausing needs the freezer cgroup, which uid $(id -u) has not"
fi
api POST /v1/sandboxes/web/resume
expect_api "resume a running sandbox: 409" 409 "" wrong_state
api POST /v1/sandboxes/web/start
expect_api "start a running sandbox: 409" 409 "" wrong_state
api POST /v1/sandboxes/web/stop
expect_eq "stop: stopped" "$(bj 'd["state"]')" stopped
api POST /v1/sandboxes/web/start
expect_eq "start: running" "$(bj 'd["state"]')" running
expect_eq "start: generation 2" "$(bj 'd["generation"]')" 2

# ---- files for the snapshot -------------------------------------------------------------------

api PUT '/v1/sandboxes/web/files?path=state.txt' -H 'Content-Type: application/octet-stream' --data-binary 'v1'
expect_api "put a file: 201 created" 201
api PUT '/v1/sandboxes/web/files?path=gone.txt' -H 'Content-Type: application/octet-stream' --data-binary 'g'

# ---- snapshots, from_snapshot, fork, diff ----------------------------------------------------

# Without a freezer a running sandbox cannot be snapshotted or forked: stop it for those.
can_freeze || api POST /v1/sandboxes/web/stop
apij POST /v1/sandboxes/web/snapshots '{"name": "web-s1"}'
expect_api "snapshot: 201" 201
expect_contains "snapshot: Location" "$HEADERS" "Location: /v1/snapshots/web-s1"
expect_eq "snapshot: ready" "$(bj 'd["state"]')" ready
expect_eq "snapshot: source is the sandbox's id" "$(bj 'd["source"]')" "$ID"
SNAP_ID=$(bj 'd["id"]')
apij POST /v1/sandboxes/web/snapshots '{"name": "web-s1"}'
expect_api "snapshot with a taken name: 409 already_exists, field name" 409 name already_exists
api POST /v1/sandboxes/web/snapshots
expect_api "snapshot without a body: 201 with a generated name" 201
AUTO_SNAP=$(bj 'd["name"]')
api GET /v1/sandboxes/web/snapshots
expect_eq "sandbox snapshots: both" "$(bj '" ".join(sorted(s["name"] for s in d["snapshots"]))')" "$(printf '%s\n' "$AUTO_SNAP" web-s1 | sort | tr '\n' ' ' | sed 's/ $//')"
api GET /v1/snapshots
expect_eq "all snapshots: two" "$(bj 'len(d["snapshots"])')" 2
api GET /v1/snapshots/web-s1
expect_eq "get snapshot by name" "$(bj 'd["id"]')" "$SNAP_ID"
api DELETE "/v1/snapshots/$AUTO_SNAP"
if [ "$CODE" = 409 ]; then
	# Whether a stopped sandbox's own stack keeps using the layer its snapshot froze is the
	# manager's business; in use, the answer is 409.
	expect_api "delete a snapshot a sandbox's stack uses: 409" 409 "" wrong_state
else
	expect_api "delete an unused snapshot: 204" 204
	api GET "/v1/snapshots/$AUTO_SNAP"
	expect_api "the deleted snapshot: 404" 404
fi

sv_create from-snap '"from_snapshot": "web-s1"'
expect_eq "create from a snapshot: its base" "$(bj 'd["base_snapshot"]')" "$SNAP_ID"
api GET '/v1/sandboxes/from-snap/files?path=state.txt'
expect_eq "create from a snapshot: the snapshot's file" "$BODY" v1
api DELETE /v1/snapshots/web-s1
expect_api "delete a snapshot in use: 409 wrong_state" 409 "" wrong_state
apij POST /v1/sandboxes "{\"name\": \"x\", \"from_snapshot\": \"no-such\", \"policy\": $SV_POLICY}"
expect_api "create from an unknown snapshot: 400, field from_snapshot" 400 from_snapshot

apij POST /v1/sandboxes/web/fork '{"count": 2, "prefix": "wf"}'
expect_api "fork: 201" 201
expect_eq "fork: the new names" "$(bj '" ".join(d["names"])')" "wf-1 wf-2"
can_freeze || api POST /v1/sandboxes/web/start
api GET /v1/sandboxes/wf-2
expect_eq "fork: running" "$(bj 'd["state"]')" running
expect_eq "fork: the source's labels" "$(bj 'd["labels"]["team"]')" red
api GET '/v1/sandboxes/wf-1/files?path=state.txt'
expect_eq "fork: the source's file" "$BODY" v1

api GET /v1/sandboxes/wf-1/diff
expect_eq "diff of an untouched fork: empty" "$(bj 'd["changes"]')" "[]"
api PUT '/v1/sandboxes/wf-1/files?path=new.txt' -H 'Content-Type: application/octet-stream' --data-binary 'n'
api PUT '/v1/sandboxes/wf-1/files?path=state.txt' -H 'Content-Type: application/octet-stream' --data-binary 'v2'
api DELETE '/v1/sandboxes/wf-1/files?path=gone.txt'
api GET /v1/sandboxes/wf-1/diff
expect_api "diff: 200" 200
expect_eq "diff: added, modified, deleted" "$(bj '" ".join(sorted(c["change"][0] + ":" + c["path"] for c in d["changes"]))')" "a:new.txt d:gone.txt m:state.txt"
api GET '/v1/sandboxes/wf-2/files?path=state.txt'
expect_eq "fork: a sibling's change is not seen" "$BODY" v1

# ---- events ------------------------------------------------------------------------------------

api GET /v1/sandboxes/web/events
expect_api "events: 200" 200
expect_eq "events: create, start, stop, start in order" \
	"$(bj '" ".join([e["event"] for e in d["events"] if e["event"] in ("create","start","stop")][:4])')" \
	"create start stop start"
if can_freeze; then
	expect_eq "events: pause and resume between the first start and the stop" \
		"$(bj '" ".join([e["event"] for e in d["events"]][1:5])')" "start pause resume stop"
fi
FIRST=$(bj 'd["events"][0]["seq"]')
api GET "/v1/sandboxes/web/events?after=$FIRST&limit=1"
expect_eq "events ?after&limit: the next one" "$(bj '[e["event"] for e in d["events"]]')" "['start']"

# A follower sees what happens after it started, then the end of the stream at removal.
FOLLOW=$SV_DIR/follow.ndjson
curl -sN --max-time 30 --unix-socket "$SOCK" -D "$SV_DIR/follow.hdr" "http://aj/v1/sandboxes/wf-2/events?follow=true" >"$FOLLOW" &
FPID=$!
pj_wait 10 grep -q '"event":"start"' "$FOLLOW"
api POST /v1/sandboxes/wf-2/stop
api DELETE '/v1/sandboxes/wf-2'
expect_api "delete of a stopped sandbox: 204" 204
if wait "$FPID"; then ok "follow: the stream ends after the removal"; else not_ok "follow: the stream did not end (curl $?)"; fi
expect_eq "follow: stored, then live events, then remove" \
	"$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1]) if "keepalive" not in l))' "$FOLLOW")" \
	"create start stop remove"
CTYPE=$(sed -n 's/^[Cc]ontent-[Tt]ype: *\([^\r]*\).*/\1/p' "$SV_DIR/follow.hdr")
CODE=200
_sv_openapi GET /v1/sandboxes/wf-2/events "$FOLLOW"

# Keepalive lines on an idle stream (a daemon with --keepalive 1s).
SOCK_MAIN=$SOCK PID_MAIN=$SV_PID
SOCK=$SV_DIR/ka.sock
sv_start --keepalive 1s || not_ok "a second daemon with --keepalive 1s"
curl -sN --max-time 15 --unix-socket "$SOCK" "http://aj/v1/sandboxes/web/events?follow=true&after=999999999" >"$SV_DIR/ka.ndjson" &
KA=$!
pj_wait 12 sh -c "[ \$(grep -c '\"keepalive\":true' '$SV_DIR/ka.ndjson') -ge 3 ]"
kill "$KA" 2>/dev/null
wait "$KA" 2>/dev/null
# Timed by the lines' own clock, so a slow start of the stream does not matter.
expect_eq "follow: a keepalive line a second on an idle stream" "$(python3 -c '
import datetime, json, sys
L = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t = [datetime.datetime.fromisoformat(l["time"].replace("Z", "+00:00")).timestamp() for l in L if l.get("keepalive")][:3]
print(len(t) == 3 and all(0.5 <= b - a <= 1.5 for a, b in zip(t, t[1:])), len(L) == len([l for l in L if l.get("keepalive")]))' "$SV_DIR/ka.ndjson")" "True True"
sv_stop
SOCK=$SOCK_MAIN SV_PID=$PID_MAIN

# ---- delete ----------------------------------------------------------------------------------

api DELETE /v1/sandboxes/web
expect_api "delete a running sandbox without force: 409" 409 "" wrong_state
api DELETE '/v1/sandboxes/api2'
expect_api "delete a stopped sandbox: 204" 204
check "delete: its workspace is gone" test ! -e "$STATE/sandboxes/$(pj_id api2)"
api GET /v1/sandboxes/api2
expect_api "the deleted sandbox: 404" 404
WEB_SUP=$(pj_field web 'd["supervisor_pid"]')
api DELETE '/v1/sandboxes/web?force=true'
expect_api "delete ?force=true of a running sandbox: 204" 204
check "delete ?force=true: its supervisor is gone" pj_wait 10 pid_gone "$WEB_SUP"
expect_eq "delete: the CLI does not know it any more" "$(pj_state web)" MISSING

# ---- the Python example of docs/api.md ----------------------------------------------------------

sed -n '/<!-- python-example:start -->/,/<!-- python-example:end -->/p' "$AJ_ROOT/docs/api.md" |
	sed '1,2d;$d' | sed '$d' >"$SV_DIR/example.py"
OUT=$(AGENTJAIL_SOCKET=$SOCK AGENTJAIL_POLICY=$SV_POLICY python3 "$SV_DIR/example.py" 2>&1)
expect_eq "docs/api.md Python example: runs as written" "$OUT" "created py-demo running
read hello from python
listed hello.txt
deleted"

sv_stop
expect_eq "SIGTERM: the daemon exits 0" "$SV_RC" 0
check "SIGTERM: the socket is removed" test ! -e "$SOCK"
sv_done
