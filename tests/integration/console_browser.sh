#!/usr/bin/env bash
# The web console in a real browser (docs/console.md): Debian's chromium, headless, driven by
# puppeteer-core (tests/console/console_test.mjs) against a daemon on loopback. Logs in with a
# token, sees a sandbox created through the API appear, runs `echo hi` in the terminal and
# reads it from the rendered screen, resizes it (stty size inside), uploads a file and reads it
# back through the API, watches a denied egress request appear highlighted in the events,
# pauses and resumes from the page, and checks that another owner's page lists none of the
# first owner's sandboxes, that a page of another origin can neither get a ticket nor open a
# terminal with one nor log the browser in with a link, and that the console listener logs the
# local owner in from its login URL once, with a session rather than its token. Screenshots of
# the views go to $AJ_BUILD/console-shots (not committed). Without chromium, or without the
# npm registry for puppeteer-core, it is skipped with the reason.
# Main pass only: the browser's part dominates its time; the daemon code it drives (the
# console's routes, terminals over WebSockets, logins) runs under the sanitizers in
# console_api.sh.
# passes: main
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
	skip "the console in a browser" "chromium is not installed (scripts/install-deps installs it)"
	exit 0
fi
out=$("$AJ_ROOT/tests/console/setup.sh")
case "$out" in
*CONSOLE_NODE_MODULES=*) MODS=${out##*CONSOLE_NODE_MODULES=} ;;
*) echo "$out"; exit 0 ;;
esac
if ! pj_can_freeze; then
	skip "the console in a browser" "no cgroup freezer for this user: pause and resume cannot be shown"
	exit 0
fi

TA=alice-console-token-0123456789
TB=bob-console-token-0123456789ab
sv_tokens "$TA alice" "$TB bob"
PPORT=$(free_port)
sv_start_tcp --console-listen "127.0.0.1:0" --preview-listen "127.0.0.1:$PPORT" \
	--preview-domain localhost ||
	{ not_ok "serve --listen --console-listen ($(tail -5 "$SV_LOG"))"; exit 0; }
apitj "$TA" POST /v1/sandboxes '{"name": "console-a", "start": false}'
expect_api "alice's first sandbox" 201
apitj "$TB" POST /v1/sandboxes '{"name": "console-bob", "start": false}'
expect_api "bob's sandbox" 201
apij POST /v1/sandboxes '{"name": "console-local", "start": false}'
expect_api "the local owner's sandbox" 201
LOGIN=$(json "$STATE/console.json" 'd["login_url"]')
LOCAL_TOKEN=$(json "$STATE/console.json" 'd["token"]')

# A page of another origin, for the cross-origin checks.
EVIL=$(mktmp)
echo '<!doctype html><title>another site</title><p>another site</p>' >"$EVIL/index.html"
APORT=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$EVIL" "$APORT" >/dev/null 2>&1 &
SV_PIDS+=($!)
wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$APORT/"

SHOTS=${AJ_BUILD:-$AJ_ROOT/build}/console-shots
rm -rf "$SHOTS"
PROFILE=$(mktmp)/profile
node=$(command -v node)
CONSOLE_NODE_MODULES=$MODS CHROMIUM=$CHROMIUM API="http://127.0.0.1:$SV_PORT" TOKEN_A=$TA \
	TOKEN_B=$TB LOCAL_LOGIN=$LOGIN LOCAL_TOKEN=$LOCAL_TOKEN LOCAL_SANDBOX=console-local \
	ATTACKER="http://127.0.0.1:$APORT/" SHOTS=$SHOTS PROFILE=$PROFILE HOME=$(dirname "$PROFILE") \
	timeout 240 "$node" "$AJ_ROOT/tests/console/console_test.mjs" 2>"$SV_DIR/node.err" |
	grep -E '^(ok|not ok) '
rc=${PIPESTATUS[0]}
if [ "$rc" != 0 ]; then
	not_ok "the browser test exited $rc ($(tail -c 600 "$SV_DIR/node.err" | tr '\n' ' '))"
fi
n=$(ls "$SHOTS"/*.png 2>/dev/null | wc -l)
if [ "$n" -ge 8 ]; then ok "$n screenshots of the views in $SHOTS"; else not_ok "screenshots: $n in $SHOTS"; fi
apit "$TA" GET /v1/sandboxes
expect_eq "no terminal or sandbox of the test is left" "$(bj '[s["name"] for s in d["sandboxes"]]')" "['console-a']"
