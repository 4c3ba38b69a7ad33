#!/usr/bin/env bash
# `agentjail mcp` with a real client: the official MCP TypeScript SDK (npm
# @modelcontextprotocol/sdk, installed once into BUILD/npm) spawns `agentjail mcp --create --rm`
# over stdio, lists the tools and calls each one (tests/mcp/sdk_client.mjs): shell exit codes,
# timeout, output cap, cancellation, write/read/edit round trips, list_dir, snapshot and
# restore, and escapes through the file tools. Then: the sandbox is gone (--rm), no
# supervisor is left.
# rootless: yes
# timeout: 600
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/mcp/lib.bash"
pj_setup

if ! mcp_sdk_install; then
	skip "MCP TypeScript SDK client session" "$MCP_SDK_SKIP"
	exit 0
fi

# shellcheck disable=SC2086
timeout 240 /usr/bin/node "$AJ_ROOT/tests/mcp/sdk_client.mjs" "$MCP_SDK_DIR" "$AJ" "$STATE" sdk $PJ_FLAGS
expect_eq "the SDK client script ran to its end" "$?" 0

aj_run ls --json
expect_eq "--rm: the sandbox was deleted when the session closed" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
check "--rm: no supervisor left for the state directory" pj_wait 10 test -z "$(pj_supervisors)"
