#!/usr/bin/env bash
# Bad input to `agentjail serve --e2b-listen`, spoken by hand (tests/e2b/protocol_test.py,
# curl and Python's standard library, no SDK): malformed Connect envelopes on Start and WatchDir
# (truncated header, length over the body or over --max-body, the compressed and end-stream
# flags, non-JSON, wrong Content-Type: 415), malformed unary bodies, wrong field types and
# unknown enum names (400 invalid_argument as Connect's JSON error), bad create bodies, a
# chunked create, missing or wrong X-API-KEY (401 {"code":401}) and X-Access-Token (401),
# killed and unknown sandboxes (502 as E2B's proxy), another owner's sandbox (404, not listed,
# its token refused), symlinks and ../ out of the sandbox (nothing read from or written to the
# host: the host directory is looked at afterwards), an upload over --max-upload (413, nothing
# written), broken HTTP, Connect-Timeout-Ms as a command's lifetime (the command killed), streams
# silent for longer than --read-timeout kept up by keepalives. After each group the daemon
# still serves; at the end no sandbox is left and it stops with 0.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
key() { printf 'e2b_%s' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
KEY_A=$(key)
KEY_B=$(key)
printf '%s alice\n%s bob\n' "$KEY_A" "$KEY_B" >"$SV_DIR/e2b-keys"
chmod 600 "$SV_DIR/e2b-keys"
printf '{"base": %s}\n' "$SV_POLICY" >"$SV_DIR/templates.json"
# A directory of the host the sandboxes do not see: their /tmp is a tmpfs of their own.
HOST_DIR=$SV_DIR/host
mkdir "$HOST_DIR"
E2B_PORT=$(free_port)
# The default limits (--max-body 1 MiB, --max-upload 64 MiB) are the ones tested; a short
# --read-timeout so that streams silent for longer than it (the SDK's keepalive interval is
# 50 s, the default timeout 30 s) are quick to test.
READ_TIMEOUT=4
sv_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" --read-timeout "${READ_TIMEOUT}s" || {
	not_ok "serve --e2b-listen starts ($(tail -5 "$SV_LOG"))"
	exit 0
}

python3 "$AJ_ROOT/tests/e2b/protocol_test.py" "$E2B_PORT" "$KEY_A" "$KEY_B" "$HOST_DIR" "$READ_TIMEOUT"
expect_eq "the protocol script ran to its end" "$?" 0

expect_eq "the daemon still answers GET /health" \
	"$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$E2B_PORT/health")" 200
expect_eq "no sandbox is left" "$("$AJ" ls --json --state-dir "$STATE" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
sv_stop
expect_eq "SIGTERM: the daemon exits 0 ($(tail -c 600 "$SV_LOG" | tr '\n' ' '))" "$SV_RC" 0
check "no supervisor is left" pj_wait 10 test -z "$(pj_supervisors)"
