#!/usr/bin/env bash
# Image sandboxes through the front ends: the HTTP API's `image` and `user` fields (local owner
# and a token owner, who sees its own images and the administrator's), and an E2B templateID
# that names an image. Commands run over the API in the image's root.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
. "$AJ_ROOT/tests/image.bash"

img_require
sv_setup
img_rich "$IMG/plain" v1 --config.env GREETING=hi || { not_ok "image is built"; exit 1; }
aj_run --state-dir "$STATE" image import --name plain:1 "$IMG/plain"
expect_eq "the image is imported for the local owner" "$RC" 0
sv_tokens "tok-alice-0123456789 alice"
KEY=e2b_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s alice\n' "$KEY" >"$SV_DIR/e2b-keys"
chmod 600 "$SV_DIR/e2b-keys"
printf '{"base": %s}\n' "$SV_POLICY" >"$SV_DIR/templates.json"
E2B_PORT=$(free_port)
sv_start_tcp --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" || {
	not_ok "serve starts ($(tail -5 "$SV_LOG"))"
	exit 0
}

out() {
	printf '%s' "$BODY" | python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin.read().splitlines() if l.strip()]
print("".join(l.get("data", "") for l in L if l["type"] == "stdout"), end="")' 2>/dev/null
}

sv_create imgbox '"image": "plain:1"'
expect_eq "POST /v1/sandboxes with image: the policy names it by digest" \
	"$(bj 'd["policy"]["rootfs"]["image"][:7]')" "sha256:"
apij POST /v1/sandboxes/imgbox/exec '{"command": "echo $(id -u) $GREETING; ls /bin/busybox"}'
expect_eq "exec runs in the image's root, as root, with its Env" "$(out)" \
	"$(printf '0 hi\n/bin/busybox')"
sv_create imguser '"image": "plain:1", "user": "app"'
apij POST /v1/sandboxes/imguser/exec '{"command": "id -u"}'
expect_eq "user: the image's user runs the commands" "$(out)" 1000
apij POST /v1/sandboxes "{\"name\": \"bad\", \"image\": \"nope:1\", \"policy\": $SV_POLICY}"
expect_api "an image the store lacks: 400 naming image" 400 image
apij POST /v1/sandboxes "{\"name\": \"bad\", \"image\": \"plain:1\", \"policy\": {\"rootfs\": {\"image\": \"other:1\"}}}"
expect_api "image differing from policy.rootfs.image: 400" 400 image
apij POST /v1/sandboxes "{\"name\": \"bad\", \"image\": \"plain:1\", \"user\": \"a b\"}"
expect_api "a malformed user: 400 naming user" 400 user

if is_root; then
	apitj tok-alice-0123456789 POST /v1/sandboxes '{"name": "alicebox", "image": "plain:1"}'
	expect_api "a token owner uses the administrator's image" 201
	DIGEST=$(bj 'd["policy"]["rootfs"]["image"]')
	apitj tok-alice-0123456789 POST /v1/sandboxes "{\"name\": \"alicebox2\", \"image\": \"$DIGEST\"}"
	expect_api "and names it by a digest the administrator names" 201
else
	skip "a token owner uses the administrator's image" \
		"rootless without a delegated cgroup: token owners cannot drop the memory limit"
fi

# E2B: a templateID no template has is an image name.
curl -s -o "$SV_DIR/e2b.json" -w '%{http_code}' -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' \
	--data-binary '{"templateID": "plain:1"}' "http://127.0.0.1:$E2B_PORT/sandboxes" >"$SV_DIR/code"
expect_eq "E2B: a templateID naming an image creates a sandbox (201)" "$(cat "$SV_DIR/code")" 201
E2B_ID=$(json "$SV_DIR/e2b.json" 'd["sandboxID"]')
aj_run --state-dir "$STATE" exec "$E2B_ID" -- sh -c 'echo $(id -u) $HOME; pwd; grep -c ^user: /etc/passwd'
expect_eq "its commands run as user (added, uid 1000), in /home/user (the workspace)" "$OUT" \
	"$(printf '1000 /home/user\n/home/user\n1')"
curl -s -o "$SV_DIR/e2b.json" -w '%{http_code}' -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' \
	--data-binary '{"templateID": "nosuch"}' "http://127.0.0.1:$E2B_PORT/sandboxes" >"$SV_DIR/code"
expect_eq "E2B: neither a template nor an image: 400" "$(cat "$SV_DIR/code")" 400
check "naming the template" grep -q "template 'nosuch' is not available" "$SV_DIR/e2b.json"
curl -s -o /dev/null -X DELETE -H "X-API-KEY: $KEY" "http://127.0.0.1:$E2B_PORT/sandboxes/$E2B_ID"
sv_done
