#!/usr/bin/env bash
# E2B's template build API (docs/e2b.md "Building templates") with the real SDK's Template
# builder (tests/e2b/template_test.mjs): a template on an image of the store built end to end
# (files uploaded by hash, every step kind, logs, the cache, a failing step, tags, aliases,
# fromTemplate, another owner kept out), then sandboxes on it with the start command up. Then
# bad input by hand: unknown step kinds, uploads the server did not sign, a COPY whose files
# never came, builds of another owner, and nothing left running afterwards.
# rootless: yes
# timeout: 600
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
. "$AJ_ROOT/tests/image.bash"
img_require
sv_setup
sv_e2b_keys
# Rootless, this pass maps one id: the template's user "user" gives the image files of
# another owner, which its RUNs and sandboxes accept flattened only when the operator says so
# (docs/images.md, "Rootless").
POL=$SV_POLICY
SINGLE=0
if ! is_root && ! grep -qE "^($(id -un 2>/dev/null || echo -)|$(id -u)):" /etc/subuid 2>/dev/null; then
	SINGLE=1
fi
is_root || POL=$(printf '%s' "$SV_POLICY" | python3 -c 'import json,sys; p=json.load(sys.stdin); p["allow_degraded"]=["subids"]; print(json.dumps(p))')
printf '{"base": %s}\n' "$POL" >"$SV_DIR/templates.json"

# The base: busybox and the host's bash (the SDK runs commands with bash), imported by the
# host's administrator, so every owner may build on it.
IMG_RICH_FILES=$(img_bash_files) img_rich "$IMG/tbase" v1 --config.env PATH=/bin:/usr/bin ||
	{ not_ok "the base image is built"; exit 1; }
aj_run --state-dir "$STATE" image import --name tbase:1 "$IMG/tbase"
[ "$RC" = 0 ] || { not_ok "the base image is imported ($ERR)"; exit 1; }

E2B_PORT=$(free_port)
sv_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" || {
	not_ok "serve --e2b-listen starts ($(tail -5 "$SV_LOG"))"
	exit 0
}
URL=http://127.0.0.1:$E2B_PORT

# A loopback server a RUN must not reach (no network in the build policy).
PORT=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$PORT" >/dev/null 2>&1 &
HTTP_PID=$!
IMG_PIDS+=("$HTTP_PID")

sdk=$("$AJ_ROOT/tests/e2b/setup.sh")
case "$sdk" in
*E2B_SDK_DIR=*)
	node=$(command -v node)
	[ -x /usr/bin/node ] && node=/usr/bin/node
	E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=} E2B_API_URL=$URL E2B_SANDBOX_URL=$URL E2B_API_KEY=$KEY \
		E2B_API_KEY2=$KEY2 E2B_TEST_BASE=tbase:1 E2B_TEST_PORT=$PORT E2B_TEST_SINGLE_ID=$SINGLE \
		timeout 500 "$node" "$AJ_ROOT/tests/e2b/template_test.mjs" 2>&1 | grep -E '^(not )?ok '
	;;
*) echo "$sdk" ;;
esac

# ---- bad input by hand ----------------------------------------------------------------------
e2b() { # METHOD PATH [BODY] [KEY]: CODE and BODY of the answer
	local m=$1 p=$2 b=${3:-} k=${4:-$KEY}
	BODY=$(curl -s -o - -w '\n%{http_code}' -X "$m" -H "X-API-KEY: $k" \
		${b:+-H 'Content-Type: application/json' --data-binary "$b"} "$URL$p")
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}
e2b POST /v3/templates '{"name":"bad-input"}'
expect_eq "POST /v3/templates: 202" "$CODE" 202
BID=$(printf '%s' "$BODY" | json /dev/stdin 'd["buildID"]')
e2b POST /v3/templates '{"name":"Bad/Name"}'
check "a name with '/' or capitals: 400 naming the name ($BODY)" \
	eval '[ "$CODE" = 400 ] && [[ $BODY == *"name: "* ]]'
e2b POST /v3/templates '{"name":"tags"}'
check "a template named tags (a path of its own): 400" eval '[ "$CODE" = 400 ]'
e2b POST /v3/templates '{"name":"a..b:-x"}'
check "a name image references refuse: 400 ($BODY)" eval '[ "$CODE" = 400 ]'
e2b POST "/v2/templates/bad-input/builds/$BID" '{"fromImage":"tbase:1","steps":[{"type":"HEALTHCHECK","args":["x"]}]}'
check "an unknown step kind: 400 naming steps[0].type ($BODY)" \
	eval '[ "$CODE" = 400 ] && [[ $BODY == *"steps[0].type"* ]]'
e2b POST "/v2/templates/bad-input/builds/$BID" '{"fromImage":"tbase:1","steps":[{"type":"COPY","args":["../etc","/x"],"filesHash":"'"$(printf '%064d' 0)"'"}]}'
check "a COPY source with ..: 400 naming steps[0].args[0] ($BODY)" \
	eval '[ "$CODE" = 400 ] && [[ $BODY == *"steps[0].args[0]"* ]]'
e2b POST "/v2/templates/bad-input/builds/$BID" '{"fromImage":"tbase:1","steps":[{"type":"COPY","args":["a","/x"],"filesHash":"'"$(printf '%064d' 1)"'"}]}'
check "a COPY whose files were not uploaded: 400 ($BODY)" \
	eval '[ "$CODE" = 400 ] && [[ $BODY == *"were not uploaded"* ]]'
e2b POST "/v2/templates/bad-input/builds/$BID" '{"fromImage":"tbase:1","fromImageRegistry":{"type":"registry","username":"u","password":"p"}}'
check "registry credentials in a template: 400 naming fromImageRegistry ($BODY)" \
	eval '[ "$CODE" = 400 ] && [[ $BODY == *"fromImageRegistry"* ]]'
e2b GET "/templates/bad-input/builds/$BID/status" "" "$KEY2"
expect_eq "another owner's build: 404" "$CODE" 404
e2b GET "/templates/bad-input/builds/$BID/status"
check "a build not started yet is waiting ($BODY)" eval '[ "$CODE" = 200 ] && [[ $BODY == *"\"waiting\""* ]]'
H=$(printf '%064d' 7)
e2b GET "/templates/bad-input/files/$H"
UP=$(printf '%s' "$BODY" | json /dev/stdin 'd["url"]')
check "files: not present, an upload URL on this server ($BODY)" \
	eval '[[ $UP == "$URL/templates/bad-input/files/$H?"* ]]'
CODE=$(printf 'x' | curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @- "${UP/signature=/signature=0}")
expect_eq "an upload with a signature this server did not make: 403" "$CODE" 403
CODE=$(printf 'x' | curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @- "${UP/owner=alice/owner=bob}")
expect_eq "an upload signed for one owner, claimed for another: 403" "$CODE" 403
CODE=$(printf 'not a tar' | curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @- "$UP")
expect_eq "the signed upload: 200" "$CODE" 200
CODE=$(printf 'y' | curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @- "$UP")
expect_eq "the same URL again: 409, the upload stays what it was" "$CODE" 409
e2b GET "/templates/bad-input/files/$H" "" "$KEY2"
check "another owner's upload of the same hash is not theirs ($BODY)" \
	eval '[[ $BODY == *"\"present\":false"* ]]'
e2b POST "/v2/templates/bad-input/builds/$BID" '{"fromImage":"tbase:1","steps":[{"type":"COPY","args":["a","/x"],"filesHash":"'"$H"'"}]}'
expect_eq "a build whose upload is not a tar starts: 202" "$CODE" 202
e2b POST "/v2/templates/bad-input/builds/$BID" '{"fromImage":"tbase:1"}'
expect_eq "a build started twice: 409" "$CODE" 409
st() { e2b GET "/templates/bad-input/builds/$BID/status"; [[ $BODY == *'"status":"error"'* ]]; }
check "... fails, at its COPY step (step 1), with the unpacker's words" \
	eval 'wait_until 60 st && [[ $BODY == *"\"step\":\"1\""* ]] && [[ $BODY == *"upload"* ]]'
check "... and names no template" eval 'e2b GET /templates/aliases/bad-input; [ "$CODE" = 404 ]'

# fromTemplate names an owner's template, never an image to pull.
e2b POST /v3/templates '{"name":"child-of-nothing"}'
CB=$(printf '%s' "$BODY" | json /dev/stdin 'd["buildID"]')
e2b POST "/v2/templates/child-of-nothing/builds/$CB" '{"fromTemplate":"no-such-template"}'
cst() { e2b GET "/templates/child-of-nothing/builds/$CB/status"; [[ $BODY == *'"status":"error"'* ]]; }
check "fromTemplate of a template nobody built fails naming it, with no pull" \
	eval 'wait_until 30 cst && [[ $BODY == *"you have no template"* ]] && [[ $BODY != *"pull"* ]]'

# An owner runs two builds at a time: the third is refused, and nothing is left of it.
slow() {
	e2b POST /v3/templates "{\"name\":\"slow-$1\"}"
	SB=$(printf '%s' "$BODY" | json /dev/stdin 'd["buildID"]')
	e2b POST "/v2/templates/slow-$1/builds/$SB" '{"fromImage":"tbase:1","steps":[{"type":"RUN","args":["sleep 6"]}]}'
}
slow 1; C1=$CODE; slow 2; C2=$CODE; slow 3
check "two builds start, the third of the same owner is 429 ($C1 $C2 $CODE: $BODY)" \
	eval '[ "$C1$C2$CODE" = 202202429 ] && [[ $BODY == *"2 builds of yours are running"* ]]'
e2b GET "/templates/slow-3/builds/$SB/status"
check "... the refused one is still waiting, to be started later ($BODY)" \
	eval '[[ $BODY == *"\"waiting\""* ]]'
e2b POST /v3/templates '{"name":"slow-other"}' "$KEY2"
OB=$(printf '%s' "$BODY" | json /dev/stdin 'd["buildID"]')
e2b POST "/v2/templates/slow-other/builds/$OB" '{"fromImage":"tbase:1"}' "$KEY2"
expect_eq "another owner's build starts meanwhile" "$CODE" 202

# gc: builds ended a week ago and uploads unused for a week go; recent ones stay.
OLD=$STATE/builds/$BID/ # ended (the bad upload's)
for f in "$OLD"* "$OLD"; do touch -h -d '8 days ago' "$f"; done
UPL=$(ls "$STATE"/builds/files/*/*.tar | head -1)
touch -d '8 days ago' "$UPL"
NB=$(ls -d "$STATE"/builds/*-*-*-*-*/ | wc -l)
aj_run --state-dir "$STATE" gc --json
check "gc removes the old build and the unused upload ($OUT)" \
	eval '[ ! -e "$OLD" ] && [ ! -e "$UPL" ] && [[ $OUT == *"\"builds_deleted\": 2"* ]]'
expect_eq "... and keeps the others" "$(ls -d "$STATE"/builds/*-*-*-*-*/ | wc -l)" $((NB - 1))

kill "$HTTP_PID" 2>/dev/null
curl -s -o /dev/null -H "X-API-KEY: $KEY" "$URL/v2/sandboxes"
expect_eq "no sandbox is left" "$("$AJ" ls --json --state-dir "$STATE" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
check "the builds end by themselves: none is left running" \
	wait_until 60 eval '! pgrep -f "__build-job --state-dir $STATE" >/dev/null'
# A build's process writes its stderr to runner.log: nothing there (under the sanitizers,
# no report either).
expect_eq "the builds' processes reported nothing on stderr" \
	"$(grep -H . "$STATE"/builds/*/runner.log 2>/dev/null | head -20; for f in "$STATE"/builds/*/runner.log; do [ -s "$f" ] && cat "${f%/*}/template.json" "${f%/*}/status.json"; done)" ""
sv_stop
expect_eq "SIGTERM: the daemon exits 0" "$SV_RC" 0
