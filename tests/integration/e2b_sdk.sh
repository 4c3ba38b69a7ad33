#!/usr/bin/env bash
# The real E2B JS SDK against `agentjail serve --e2b-listen` (docs/e2b.md): the harness of
# tests/e2b (e2b_sdk_test.mjs, 61 tests of the control plane, commands, pty, files, watchers,
# signed URLs, pause/resume, expiry, errors), configured only by E2B_API_URL, E2B_SANDBOX_URL
# and E2B_API_KEY, as a user's code would be. The SDK comes from npm (tests/e2b/setup.sh);
# without node or the registry every case is reported skipped with the reason, never passed.
#
# Skipped with their reason: user "root" on the host-root template (a sandbox on the host's
# root has no real root: it runs as the sandbox user; the image template below runs it as the
# image's root), the pause cases where the host gives no freezer (rootless without a delegated cgroup),
# and @e2b/code-interpreter (not provided). Afterwards: no sandbox is left, and the daemon
# stops cleanly (exit 0; under the sanitizers also no leak).
# rootless: yes
# timeout: 600
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
sv_e2b_keys
# Rootless without a delegated cgroup the base template must not ask for limits it cannot get.
printf '{"base": %s}\n' "$SV_POLICY" >"$SV_DIR/templates.json"
E2B_PORT=$(free_port)
PREVIEW_PORT=$(free_port)
sv_start --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" \
	--preview-listen "127.0.0.1:$PREVIEW_PORT" --preview-domain localhost || {
	not_ok "serve --e2b-listen starts ($(tail -5 "$SV_LOG"))"
	exit 0
}

ROOT_WHY="a sandbox on the host's root has no real root: user root runs as the sandbox user (docs/e2b.md); the image template runs it as root"
PAUSE_WHY="no cgroup freezer for this user: pausing answers 501 (docs/e2b.md)"
skip_re='user "root"'
pause_re='betaPause|resumes a paused|resumes after pause|onTimeout = pause'
pj_can_freeze || skip_re="$skip_re|$pause_re"

out=$(E2B_API_URL=http://127.0.0.1:$E2B_PORT E2B_SANDBOX_URL=http://127.0.0.1:$E2B_PORT \
	E2B_API_KEY=$KEY E2B_TEST_SKIP=$skip_re E2B_TEST_CODE_INTERPRETER=0 \
	E2B_PREVIEW_PORT=$PREVIEW_PORT "$AJ_ROOT/tests/e2b/run.sh" 2>&1)
# The harness's skips get the reason why.
printf '%s\n' "$out" | ROOT_WHY=$ROOT_WHY PAUSE_WHY=$PAUSE_WHY PAUSE_RE=$pause_re python3 -c '
import os, re, sys
for line in sys.stdin.read().splitlines():
    if line.endswith("# SKIP matched E2B_TEST_SKIP"):
        why = os.environ["PAUSE_WHY"] if re.search(os.environ["PAUSE_RE"], line) else os.environ["ROOT_WHY"]
        line = line.replace("matched E2B_TEST_SKIP", why)
    elif line.endswith("# SKIP E2B_TEST_CODE_INTERPRETER=0"):
        line = line.replace("E2B_TEST_CODE_INTERPRETER=0", "@e2b/code-interpreter (port 49999) is not provided (docs/e2b.md)")
    print(line)'
case "$out" in
*"ok - "*) ;;
*) not_ok "the harness ran (output: $(printf '%s' "$out" | tail -5))" ;;
esac
case "$out" in
*"e2b SDK install # SKIP"*) exit 0 ;;
esac

# An image template: a templateID naming an image of the store (the host's bash in it, as
# the SDK runs commands with bash). The commands and files cases run in the image's root; user
# "root" is the image's root there.
. "$AJ_ROOT/tests/image.bash"
if command -v umoci >/dev/null && command -v busybox >/dev/null; then
	IMG=$(mktmp)
	IMG_RICH_FILES=$(img_bash_files) img_rich "$IMG/e2b" v1 --config.env PATH=/bin:/usr/bin &&
		aj_run --state-dir "$STATE" image import --name e2b-image:1 "$IMG/e2b"
	if [ "${RC:-1}" = 0 ]; then
		out=$(E2B_API_URL=http://127.0.0.1:$E2B_PORT E2B_SANDBOX_URL=http://127.0.0.1:$E2B_PORT \
			E2B_API_KEY=$KEY E2B_TEST_TEMPLATE=e2b-image:1 E2B_TEST_CODE_INTERPRETER=0 \
			E2B_TEST_SKIP="$(is_root || echo 'user .root.')" \
			E2B_TEST_ONLY='^(Sandbox.create|commands.run: (stdout|non-zero|default user|user .root.|cwd option)|files.(write text|write relative))' \
			"$AJ_ROOT/tests/e2b/run.sh" 2>&1)
		printf '%s\n' "$out" | grep -E '^(not )?ok ' | grep -v '# SKIP' | sed 's/^\(not \)\{0,1\}ok - /&image template: /'
		is_root || skip 'image template: commands.run: user "root"' \
			"rootless: the one id mapped is the sandbox user's, there is no root to switch to"
	else
		not_ok "image template: the image is built and imported"
	fi
else
	skip "image template" "umoci or busybox is missing (scripts/install-deps installs them)"
fi

# What the harness made it also killed; sandboxes that expired are removed when found.
curl -s -o /dev/null -H "X-API-KEY: $KEY" "http://127.0.0.1:$E2B_PORT/v2/sandboxes"
expect_eq "no sandbox is left" "$("$AJ" ls --json --state-dir "$STATE" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
sv_stop
expect_eq "SIGTERM: the daemon exits 0" "$SV_RC" 0
check "no supervisor is left" pj_wait 10 test -z "$(pj_supervisors)"
