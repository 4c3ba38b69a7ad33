#!/usr/bin/env bash
# The image store with real peers on loopback: Debian's docker-registry, images built with
# umoci and pushed with skopeo, and tests/helpers/regfront.py in front of the registry for
# bearer-token and basic authentication, a tampered blob, a cut connection, a slow one. Pulls
# (digests checked, resumed after an interruption, nothing registered by a killed one),
# imports of every kind of source, export read back by skopeo, names, rm and prune, and bad
# input.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/image.bash"

img_require
S=$IMG/state
mkdir -p "$S"
ai() { aj_run --state-dir "$S" image "$@"; }

img_registry
img_layout "$IMG/layout" v1 || { not_ok "an image layout is built"; exit 1; }
head -c 3000000 /dev/urandom >"$IMG/big"
img_layout "$IMG/layout" big "$IMG/big:/data/big" || { not_ok "a larger image is built"; exit 1; }
img_push "$IMG/layout:v1" "$REG/test/busybox:v1" || { not_ok "skopeo pushes the image"; exit 1; }
img_push "$IMG/layout:big" "$REG/test/big:v1" || { not_ok "skopeo pushes the larger image"; exit 1; }
WANT=$(skopeo inspect --tls-verify=false "docker://$REG/test/busybox:v1" | json /dev/stdin 'd["Digest"]')

layers_count() { find "$S/images/layers" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l; }
names() { "$AJ" --state-dir "$S" image ls --json | json /dev/stdin '" ".join(sorted(n for i in d for n in i["names"]))'; }

test_pull() {
	ai pull --insecure -q "$REG/test/busybox:v1"
	expect_eq "pull: exit 0 ($ERR)" "$RC" 0
	expect_eq "pull: prints the manifest digest the registry has" "$OUT" "$WANT"
	expect_eq "pull: the image is named" "$(names)" "$REG/test/busybox:v1"
	check "pull: the layer is unpacked, busybox in it" \
		sh -c "ls $S/images/layers/*/bin/busybox"
	ai inspect "$REG/test/busybox:v1"
	expect_eq "inspect: Cmd" "$(printf '%s' "$OUT" | json /dev/stdin 'd["config"]["cmd"]')" "['/bin/sh']"
	img_front count
	ai pull --insecure -q "$FRONT/test/busybox:v1"
	expect_eq "a second pull (another name, the same image): exit 0" "$RC" 0
	expect_eq "it fetches no blob the store has" \
		"$(front_requests count 'sum(1 for r in req if "/blobs/" in r["path"])')" 0
	ai pull -q "$REG/test/busybox:v1"
	expect_eq "plain HTTP without --insecure: refused (125)" "$RC" 125
	expect_contains "and the hint says --insecure" "$ERR" "needs --insecure"
}

test_auth() {
	printf '{"auths": {"127.0.0.1:%s": {"auth": "%s"}}}' "$1" "$(printf 'alice:s3cret' | base64)" \
		>"$IMG/auth-$1.json"
}

test_bearer() {
	img_front bearer --bearer alice:s3cret
	ai pull --insecure -q "$FRONT/test/busybox:v1"
	expect_eq "bearer: without credentials, refused (125)" "$RC" 125
	expect_contains "bearer: the token service's answer is named" "$ERR" "answered 401"
	expect_contains "bearer: with a hint to log in" "$ERR" "podman login or docker login"
	test_auth "$FRONT_PORT"
	ai pull --insecure -q --authfile "$IMG/auth-$FRONT_PORT.json" "$FRONT/test/busybox:v1"
	expect_eq "bearer: with the auth file's credentials (exit $RC: $ERR)" "$OUT" "$WANT"
	expect_eq "bearer: a token was fetched with basic credentials" \
		"$(front_requests bearer 'sum(1 for r in req if r["path"].startswith("/token") and r["status"] == 200 and r["auth"] == "Basic")')" 1
	expect_eq "bearer: the manifest was fetched with it" \
		"$(front_requests bearer 'sum(1 for r in req if "/manifests/" in r["path"] and r["status"] == 200 and r["auth"] == "Bearer")')" 1
}

test_basic() {
	img_front basic --basic alice:s3cret
	test_auth "$FRONT_PORT"
	ai pull --insecure -q --authfile "$IMG/auth-$FRONT_PORT.json" "$FRONT/test/busybox:v1"
	expect_eq "basic: with the credentials" "$OUT" "$WANT"
	printf '{"auths": {"127.0.0.1:%s": {"auth": "%s"}}}' "$FRONT_PORT" \
		"$(printf 'alice:wrong' | base64)" >"$IMG/wrong.json"
	ai pull --insecure -q --authfile "$IMG/wrong.json" "$FRONT/test/other:v1"
	expect_eq "basic: wrong credentials, refused (125)" "$RC" 125
	expect_contains "basic: says so" "$ERR" "refused the credentials"
}

test_tamper() {
	local layer
	layer=$(skopeo inspect --tls-verify=false "docker://$REG/test/big:v1" | json /dev/stdin 'd["Layers"][0]')
	img_front tamper --tamper "$layer"
	ai pull --insecure -q "$FRONT/test/big:v1"
	expect_eq "a tampered blob: refused (125)" "$RC" 125
	expect_contains "naming the blob and what it hashes to" "$ERR" \
		"blob $layer: the content has the digest"
	expect_not_contains "and the image is not registered" "$(names)" "test/big"
	# The refused blob's bytes go, and no layer is half unpacked. A blob still in flight
	# when the pull stopped (the config, under load) keeps its partial file for the next
	# pull to resume, as a cut connection's does.
	local left
	left=$(ls -d "$S/images/blobs/.partial-${layer#sha256:}" "$S"/images/layers/.tmp-* 2>/dev/null)
	expect_eq "nothing of it is left half-made" "$left" ""
	img_front cut --cut "$layer:100000"
	ai pull --insecure -q "$FRONT/test/big:v1"
	expect_eq "a connection cut midway: the pull completes (exit $RC: $ERR)" "$RC" 0
	expect_eq "the blob was resumed with a range request" \
		"$(front_requests cut 'sum(1 for r in req if r["status"] == 206 and r["range"] == "bytes=100000-")')" 1
	"$AJ" --state-dir "$S" image rm "$FRONT/test/big:v1" >/dev/null
	"$AJ" --state-dir "$S" image prune >/dev/null
}

# A pull killed midway registers nothing; what it fetched is resumed by the next pull.
test_killed() {
	local pid have
	img_front slow --rate 400000
	"$AJ" --state-dir "$S" image pull --insecure -q "$FRONT/test/big:v1" >/dev/null 2>&1 &
	pid=$!
	wait_until 20 sh -c "[ \$(cat $S/images/blobs/.partial-* 2>/dev/null | wc -c) -gt 200000 ]"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	expect_not_contains "killed midway: the image is not registered" "$(names)" "test/big"
	have=$(cat "$S"/images/blobs/.partial-* 2>/dev/null | wc -c)
	check "killed midway: what arrived is kept ($have bytes)" test "$have" -gt 0
	img_front fast
	ai pull --insecure -q "$FRONT/test/big:v1"
	expect_eq "the next pull completes (exit $RC: $ERR)" "$RC" 0
	expect_eq "resuming the kept bytes" \
		"$(front_requests fast "sum(1 for r in req if r['status'] == 206 and r['range'] == 'bytes=$have-')")" 1
	check "the big file is there" sh -c "ls $S/images/layers/*/data/big"
}

test_import() {
	local fresh=$IMG/s2
	mkdir -p "$fresh" "$IMG/s3"
	aj_run --state-dir "$fresh" image import --name local/dir:v1 "$IMG/layout"
	expect_eq "import: a layout with two images and no --platform to pick one: refused" "$RC" 125
	skopeo copy --quiet "oci:$IMG/layout:v1" "oci:$IMG/one:v1" >/dev/null
	aj_run --state-dir "$fresh" image import --name local/dir:v1 "$IMG/one"
	expect_eq "import: an OCI layout directory (exit $RC: $ERR)" "$OUT" "local/dir:v1"
	skopeo copy --quiet "oci:$IMG/layout:v1" "oci-archive:$IMG/archive.tar:local/arch:v1" >/dev/null
	aj_run --state-dir "$fresh" image import "$IMG/archive.tar"
	expect_eq "import: an OCI archive, named by its ref.name ($ERR)" "$OUT" "local/arch:v1"
	skopeo copy --quiet "oci:$IMG/layout:v1" "docker-archive:$IMG/docker.tar:local/dock:v1" >/dev/null
	aj_run --state-dir "$fresh" image import "$IMG/docker.tar"
	expect_eq "import: a docker save archive, named by its RepoTags ($ERR)" "$OUT" "local/dock:v1"
	mkdir -p "$IMG/rootfs/bin"
	cp "$(command -v busybox)" "$IMG/rootfs/bin/"
	tar czf "$IMG/rootfs.tgz" -C "$IMG/rootfs" .
	aj_run --state-dir "$fresh" image import "$IMG/rootfs.tgz"
	expect_eq "import: a rootfs tarball without --name: refused (125)" "$RC" 125
	expect_contains "naming --name" "$ERR" "name it with --name"
	aj_run --state-dir "$fresh" image import --name myroot "$IMG/rootfs.tgz"
	expect_eq "import: a rootfs tarball with --name" "$OUT" "myroot:latest"
	aj_run --state-dir "$fresh" image export local/dir:v1 "$IMG/out.tar"
	expect_eq "export: exit 0" "$RC" 0
	if is_root; then
		expect_eq "export: skopeo reads it, the same digest" \
			"$(skopeo inspect "oci-archive:$IMG/out.tar" | json /dev/stdin 'd["Digest"]')" \
			"$(skopeo inspect "oci:$IMG/one:v1" | json /dev/stdin 'd["Digest"]')"
	else
		skip "export: skopeo reads it" "skopeo unpacks an oci-archive with chown, as root only"
	fi
	aj_run --state-dir "$IMG/s3" image import "$IMG/out.tar"
	expect_eq "export: imported again elsewhere, under its name ($ERR)" "$OUT" "local/dir:v1"
	aj_run --state-dir "$fresh" image rm local/dir:v1 local/arch:v1 local/dock:v1 myroot
	expect_eq "rm: four names" "$RC" 0
	aj_run --state-dir "$fresh" image ls -q
	expect_eq "rm: no image left" "$OUT" ""
	aj_run --state-dir "$fresh" image prune
	expect_contains "prune: removes what no image uses" "$OUT" "removed"
	expect_eq "prune: no layer left" \
		"$(find "$fresh/images/layers" -mindepth 1 -maxdepth 1 | wc -l)" 0
}

test_bad_input() {
	ai pull --insecure "Not/Valid"
	expect_eq "a bad reference: 125" "$RC" 125
	expect_contains "naming the bad part" "$ERR" "\"Not\" is not a repository name component"
	ai pull
	expect_eq "pull without a reference: 125" "$RC" 125
	ai frobnicate
	expect_eq "an unknown subcommand: 125" "$RC" 125
	expect_contains "naming it" "$ERR" "unknown subcommand \"frobnicate\""
	ai import "$IMG/nonexistent"
	expect_eq "import of a missing file: 125" "$RC" 125
	ai inspect nosuch:image
	expect_eq "inspect of an unknown image: exit 1 (no such object)" "$RC" 1
	expect_contains "says so, with how to get it" "$ERR" "agentjail image pull nosuch:image"
	ai pull --insecure -q "$REG/test/missing:v1"
	expect_eq "a missing image: exit 1" "$RC" 1
	expect_contains "the registry's answer is named" "$ERR" "answered 404"
}

test_pull
test_bearer
test_basic
test_tamper
test_killed
test_import
test_bad_input
