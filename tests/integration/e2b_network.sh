#!/usr/bin/env bash
# The E2B SDK's methods for what agentjail has natively, with the real SDK: updateNetwork()
# (tests/e2b/network_test.mjs, docs/e2b.md "Changing a sandbox's network") on a template whose
# proxy allows two loopback servers, narrowed, restored, never widened past the template, and
# each change an event; and snapshots and forks (tests/e2b/snapshot_test.mjs).
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
sv_e2b_keys
P1=$(free_port)
P2=$(free_port)
W=$(mktmp)
(cd "$W" && exec timeout 280 python3 -m http.server --bind 127.0.0.1 "$P1") >/dev/null 2>&1 &
(cd "$W" && exec timeout 280 python3 -m http.server --bind 127.0.0.1 "$P2") >/dev/null 2>&1 &
python3 -c '
import json, sys
pol = json.loads(sys.argv[1])
web = dict(pol)
web["network"] = {"mode": "proxy", "allow": ["127.0.0.1:" + sys.argv[2], "127.0.0.1:" + sys.argv[3]],
                  "allow_private": ["127.0.0.1/32"]}
print(json.dumps({"base": pol, "web": web}))' "$SV_POLICY" "$P1" "$P2" >"$SV_DIR/templates.json"
E2B_PORT=$(free_port)
sv_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" || {
	not_ok "serve --e2b-listen starts ($(tail -5 "$SV_LOG"))"
	exit 0
}
wait_until 10 eval "curl -s -o /dev/null http://127.0.0.1:$P2/" || not_ok "the loopback servers start"
sdk=$("$AJ_ROOT/tests/e2b/setup.sh")
case "$sdk" in
*E2B_SDK_DIR=*)
	node=$(command -v node)
	[ -x /usr/bin/node ] && node=/usr/bin/node
	E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=} E2B_API_URL=http://127.0.0.1:$E2B_PORT \
		E2B_SANDBOX_URL=http://127.0.0.1:$E2B_PORT E2B_API_KEY=$KEY E2B_TEST_TEMPLATE=web \
		E2B_TEST_PORTS="$P1,$P2" timeout 200 "$node" "$AJ_ROOT/tests/e2b/network_test.mjs" 2>&1 |
		grep -E '^(not )?ok '
	# A snapshot or fork of a running sandbox freezes it for the copy.
	if pj_can_freeze; then
		E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=} E2B_API_URL=http://127.0.0.1:$E2B_PORT \
			E2B_SANDBOX_URL=http://127.0.0.1:$E2B_PORT E2B_API_KEY=$KEY \
			timeout 200 "$node" "$AJ_ROOT/tests/e2b/snapshot_test.mjs" 2>&1 |
			grep -E '^(not )?ok ' | sed 's/^\(not \)\{0,1\}ok - /&snapshots: /'
	else
		skip "snapshots, forks and getMetrics through the SDK" "no cgroup freezer for this user: a running sandbox cannot be snapshotted or forked (they answer 501, docs/e2b.md), and it has no cgroup figures"
	fi
	;;
*) echo "$sdk" ;;
esac
aj_run events --json
check "each change is an update event of the sandbox" eval '[ "$(printf "%s" "$OUT" | grep -c "\"update\"")" -ge 4 ]'
curl -s -o /dev/null -H "X-API-KEY: $KEY" "http://127.0.0.1:$E2B_PORT/v2/sandboxes"
aj_run snapshots --json
expect_eq "no snapshot is left" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
expect_eq "no sandbox is left" "$("$AJ" ls --json --state-dir "$STATE" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
sv_stop
expect_eq "SIGTERM: the daemon exits 0" "$SV_RC" 0
