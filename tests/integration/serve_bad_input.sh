#!/usr/bin/env bash
# Bad input to agentjail serve: malformed JSON, a body that is not an object, duplicate keys,
# unknown fields (also inside the policy), wrong types, bad values, oversized bodies, wrong
# Content-Types, bad and overlong paths, NUL bytes, unknown or repeated query parameters, wrong
# methods, unknown endpoints, bodies where none belong, broken HTTP. Each answers the documented
# status with an error naming the field, matches docs/openapi.json, and changes nothing.
# Not in the rootless pass: the API parses and answers the same whoever runs the daemon (the
# rootless pass runs serve_api and serve_files for what differs).
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
sv_start --max-body 4KiB --max-upload 64KiB || { not_ok "serve starts ($(tail -5 "$SV_LOG"))"; exit 0; }
sv_create ok-box
BEFORE=$(pj_summary)

bad() { # NAME STATUS FIELD CODE METHOD PATH [JSON]
	local name=$1 status=$2 field=$3 code=$4 method=$5 path=$6
	if [ $# -ge 7 ]; then apij "$method" "$path" "$7"; else api "$method" "$path"; fi
	expect_api "$name: $status $code${field:+, field $field}" "$status" "$field" "$code"
}

# ---- JSON bodies --------------------------------------------------------------------------------

S=/v1/sandboxes
bad "malformed JSON" 400 "" invalid_json POST $S '{"name": '
expect_contains "malformed JSON: the message says where" "$(bj 'd["error"]["message"]')" "line 1"
bad "a JSON array body" 400 "" invalid_json POST $S '[1, 2]'
bad "duplicate keys" 400 "" invalid_json POST $S '{"name": "a", "name": "b"}'
bad "an unknown field" 400 nmae unknown_field POST $S '{"nmae": "x"}'
bad "an unknown policy field" 400 policy.limits.memroy unknown_field POST $S '{"policy": {"limits": {"memroy": 1}}}'
bad "a bad policy value" 400 policy.limits.memory invalid_value POST $S '{"policy": {"limits": {"memory": "lots"}}}'
bad "a policy of the wrong type" 400 policy invalid_type POST $S '{"policy": "workspace-write"}'
bad "a policy field of the wrong type" 400 policy.network.mode invalid_value POST $S '{"policy": {"network": {"mode": 1}}}'
bad "name of the wrong type" 400 name invalid_type POST $S '{"name": 5}'
bad "start of the wrong type" 400 start invalid_type POST $S '{"start": "yes"}'
bad "a label value of the wrong type" 400 labels.team invalid_type POST $S '{"labels": {"team": 1}}'
bad "a label key with =" 400 "labels.a=b" invalid_value POST $S '{"labels": {"a=b": "c"}}'
bad "labels not an object" 400 labels invalid_type POST $S '{"labels": ["a=b"]}'
bad "a name starting with -" 400 name invalid_value POST $S '{"name": "-bad"}'
bad "a name that looks like an id" 400 name invalid_value POST $S '{"name": "0123456789abcdef"}'
bad "a name with a slash" 400 name invalid_value POST $S '{"name": "a/b"}'
bad "a name of 64 characters" 400 name invalid_value POST $S "{\"name\": \"$(printf 'a%.0s' $(seq 64))\"}"
bad "a bad duration" 400 idle_timeout invalid_value POST $S '{"idle_timeout": "forever"}'
bad "a negative duration" 400 max_lifetime invalid_type POST $S '{"max_lifetime": -5}'
bad "a bad idle_action" 400 idle_action invalid_value POST $S '{"idle_action": "sleep"}'
bad "an unknown preset" 400 preset invalid_value POST $S '{"preset": "yolo"}'
bad "preset and policy.preset differ" 400 preset invalid_value POST $S '{"preset": "read-only", "policy": {"preset": "workspace-write"}}'
bad "a taken name" 409 name already_exists POST $S "{\"name\": \"ok-box\", \"policy\": $SV_POLICY}"
bad "fork count 0" 400 count invalid_value POST $S/ok-box/fork '{"count": 0}'
bad "fork count 1001" 400 count invalid_value POST $S/ok-box/fork '{"count": 1001}'
bad "fork count as a string" 400 count invalid_type POST $S/ok-box/fork '{"count": "2"}'
bad "fork prefix not a name" 400 prefix invalid_value POST $S/ok-box/fork '{"prefix": "../x"}'
bad "snapshot name not a name" 400 name invalid_value POST $S/ok-box/snapshots '{"name": "a b"}'
bad "snapshot: an unknown field" 400 ttl unknown_field POST $S/ok-box/snapshots '{"ttl": 5}'
bad "an action with a field" 400 x unknown_field POST $S/ok-box/stop '{"x": 1}'
bad "mkdir without a path" 400 path missing_field POST $S/ok-box/files/mkdir '{"parents": true}'
bad "mkdir with an empty path" 400 path missing_field POST $S/ok-box/files/mkdir '{"path": ""}'
bad "mkdir with a bad mode" 400 mode invalid_value POST $S/ok-box/files/mkdir '{"path": "d", "mode": "0999"}'
bad "mkdir with a setuid mode" 400 mode invalid_value POST $S/ok-box/files/mkdir '{"path": "d", "mode": "4755"}'
bad "move without to" 400 to missing_field POST $S/ok-box/files/move '{"from": "a"}'

# ---- sizes and media types ----------------------------------------------------------------------

head -c 5000 /dev/zero | tr '\0' ' ' >"$SV_DIR/big.json"
printf '{}' >>"$SV_DIR/big.json"
api POST $S -H 'Content-Type: application/json' --data-binary @"$SV_DIR/big.json"
expect_api "a JSON body over --max-body (4KiB): 413 body_too_large" 413 "" body_too_large
api POST $S --data-binary '{"name": "form"}'
expect_api "JSON sent as a form (curl's default type): 415" 415 "" unsupported_media_type
api POST $S -H 'Content-Type: text/plain' --data-binary '{"name": "text"}'
expect_api "JSON as text/plain: 415" 415 "" unsupported_media_type
api PUT "$S/ok-box/files?path=f" -H 'Content-Type: application/json' --data-binary '{}'
expect_api "a file upload as application/json: 415" 415 "" unsupported_media_type
head -c 10000 /dev/urandom >"$SV_DIR/10k"
api PUT "$S/ok-box/files?path=ten-k" -H 'Content-Type: application/octet-stream' --data-binary @"$SV_DIR/10k"
expect_api "an upload over --max-body but under --max-upload: 201" 201
head -c 100000 /dev/urandom >"$SV_DIR/100k"
SV_NO_OPENAPI=1 api PUT "$S/ok-box/files?path=big" -H 'Content-Type: application/octet-stream' --data-binary @"$SV_DIR/100k"
expect_eq "an upload over --max-upload: 413 (from the HTTP layer)" "$CODE" 413
api DELETE "$S/ok-box/files?path=ten-k"

# ---- paths and query parameters -----------------------------------------------------------------

bad "files without path" 400 path missing_field GET "$S/ok-box/files"
bad "files with an empty path" 400 path missing_field GET "$S/ok-box/files?path="
bad "a path of 5000 bytes" 400 path invalid_value GET "$S/ok-box/files?path=$(printf 'a%.0s' $(seq 5000))"
bad "a NUL byte in the path" 400 "" invalid_query GET "$S/ok-box/files?path=ok%00/etc/passwd"
bad "a NUL byte in a reference" 404 "" not_found GET "$S/ok-box%00x"
bad "an encoded slash in a reference" 404 "" not_found GET "$S/ok-box%2Ffiles"
bad "an unknown query parameter" 400 lable unknown_parameter GET "$S?lable=a=b"
bad "a query parameter on a route without any" 400 verbose unknown_parameter GET "$S/ok-box?verbose=1"
bad "a repeated parameter" 400 force invalid_value DELETE "$S/ok-box?force=true&force=false"
bad "a bad boolean" 400 force invalid_value DELETE "$S/ok-box?force=yes"
bad "a label filter without =" 400 label invalid_value GET "$S?label=team"
bad "events after=-1" 400 after invalid_value GET "$S/ok-box/events?after=-1"
bad "events limit=0" 400 limit invalid_value GET "$S/ok-box/events?limit=0"
bad "put with a bad mode" 400 mode invalid_value PUT "$S/ok-box/files?path=m&mode=rwx"
bad "a malformed query" 400 "" invalid_query GET "$S?label"

# ---- methods, endpoints, bodies where none belong -------------------------------------------------

bad "PATCH on the collection" 405 "" method_not_allowed PATCH $S
expect_contains "405: Allow lists the methods" "$HEADERS" "Allow: GET, POST"
bad "PUT on an action" 405 "" method_not_allowed PUT "$S/ok-box/start"
expect_contains "405 on an action: Allow: POST" "$HEADERS" "Allow: POST"
bad "DELETE /v1/health" 405 "" method_not_allowed DELETE /v1/health
bad "HEAD /v1/health" 405 "" method_not_allowed HEAD /v1/health
bad "an unknown endpoint" 404 "" not_found GET /v1/sandboxez
bad "another API version" 404 "" not_found GET /v2/health
bad "a trailing slash" 404 "" not_found GET "$S/"
bad "a double slash" 404 "" not_found GET "/v1//sandboxes"
bad "an unknown action" 404 "" not_found POST "$S/ok-box/explode"
api GET $S -H 'Content-Type: application/json' --data-binary '{}'
expect_api "a GET with a body: 400 unexpected_body" 400 "" unexpected_body

# ---- broken HTTP: the daemon answers (or closes) and goes on --------------------------------------

raw() { # BYTES: sends raw bytes on the socket, prints the status line of the answer
	python3 - "$SOCK" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
try:
    print(s.recv(4096).split(b"\r\n")[0].decode(errors="replace"))
except socket.timeout:
    print("timeout")
EOF
}
expect_contains "a garbage request line: 400" "$(raw 'GARBAGE\r\n\r\n')" " 400"
expect_contains "headers over 16KiB: 400" "$(raw "GET /v1/health HTTP/1.1\r\nX-Big: $(printf 'a%.0s' $(seq 20000))\r\n\r\n")" " 400"
expect_contains "a negative Content-Length: 400" "$(raw 'POST /v1/sandboxes HTTP/1.1\r\nContent-Length: -5\r\n\r\n')" " 400"
api GET /v1/health
expect_api "after all that: still healthy" 200

expect_eq "nothing changed" "$(pj_summary)" "$BEFORE"
check "no stray sandbox directories" [ "$(ls "$STATE/sandboxes" | wc -l)" = 1 ]
sv_done
