#!/usr/bin/env bash
# `agentjail mcp` spoken to by hand (tests/mcp/protocol_test.py): JSON-RPC errors with their
# exact codes (-32700 malformed JSON or an oversized line, -32600 invalid requests and batches,
# -32601 unknown methods, -32602 wrong parameter types naming the field), notifications never
# answered, the lifecycle (requests before initialize, version negotiation, initialize twice),
# and the server working on after each of them. Then: --rm removed every sandbox.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

# shellcheck disable=SC2086
python3 "$AJ_ROOT/tests/mcp/protocol_test.py" "$AJ" "$STATE" $PJ_FLAGS
expect_eq "the protocol script ran to its end" "$?" 0

aj_run ls --json
expect_eq "--rm: every session's sandbox was deleted" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
check "no supervisor left for the state directory" pj_wait 10 test -z "$(pj_supervisors)"
