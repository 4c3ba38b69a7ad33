# Helpers for the image tests (tests/*/image_*.sh); sourced after tests/lib.sh. Not a test
# itself: tests/run only runs *.sh.
#
# A real registry (Debian's docker-registry) on a loopback port, with its storage in the
# test's directory; tests/helpers/regfront.py in front of it where a test needs
# authentication or a misbehaving registry; images built with umoci from busybox-static and
# pushed with skopeo. Every process started here stops by itself (registry: killed at exit;
# front: --stop-after) and listens on 127.0.0.1 only.

IMG_PIDS=()
img_cleanup() {
	local p
	for p in "${IMG_PIDS[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	IMG_PIDS=()
}
trap 'img_cleanup; _aj_cleanup' EXIT

# img_require: skips the whole file (exit 0) when a tool the image tests use is missing.
img_require() {
	local t
	for t in docker-registry skopeo umoci busybox; do
		if ! command -v "$t" >/dev/null; then
			skip "image tests" "$t is not installed (scripts/install-deps installs it)"
			exit 0
		fi
	done
	IMG=$(mktmp)
}

# img_registry: starts a registry; sets REG_PORT and REG (127.0.0.1:PORT).
img_registry() {
	REG_PORT=$(free_port)
	REG=127.0.0.1:$REG_PORT
	mkdir -p "$IMG/registry"
	cat >"$IMG/registry/config.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $IMG/registry/data
  delete:
    enabled: true
http:
  addr: $REG
log:
  level: error
EOF
	docker-registry serve "$IMG/registry/config.yml" >"$IMG/registry/log" 2>&1 &
	IMG_PIDS+=($!)
	wait_until 20 curl -sf -o /dev/null "http://$REG/v2/" || {
		not_ok "the registry starts on $REG"
		exit 1
	}
}

# img_front NAME ARGS...: a front for the registry (regfront.py options); sets FRONT_PORT and
# FRONT (127.0.0.1:PORT); its requests are logged in $IMG/front-NAME/requests.
img_front() {
	local name=$1 dir
	shift
	dir=$IMG/front-$name
	mkdir -p "$dir"
	FRONT_PORT=$(free_port)
	FRONT=127.0.0.1:$FRONT_PORT
	python3 "$AJ_ROOT/tests/helpers/regfront.py" "$FRONT_PORT" "$REG_PORT" "$dir" \
		--stop-after 240 "$@" >"$dir/log" 2>&1 &
	IMG_PIDS+=($!)
	wait_until 10 test -e "$dir/ready" || {
		not_ok "the registry front $name starts"
		exit 1
	}
}

# front_requests NAME EXPR: a Python expression over the front's requests as `req`.
front_requests() {
	python3 -c '
import json, sys
req = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(eval(sys.argv[2]))' "$IMG/front-$1/requests" "$2"
}

# img_layout DIR TAG [FILE...]: an OCI layout at DIR with image TAG: busybox as /bin/sh and a
# few applets, the FILEs (given as SRC:DEST) added, Cmd /bin/sh, PATH=/bin.
img_layout() {
	local dir=$1 tag=$2 b=$IMG/bundle.$$ f
	shift 2
	[ -d "$dir" ] || umoci init --layout "$dir" >/dev/null
	umoci new --image "$dir:$tag" >/dev/null &&
		umoci unpack --rootless --image "$dir:$tag" "$b" >/dev/null 2>&1 || return 1
	mkdir -p "$b/rootfs/bin" "$b/rootfs/etc" "$b/rootfs/tmp"
	cp "$(command -v busybox)" "$b/rootfs/bin/busybox"
	for f in sh ls cat echo id touch mkdir rm stat wc head sleep env pwd; do
		ln -sf busybox "$b/rootfs/bin/$f"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$b/rootfs/etc/passwd"
	printf 'root:x:0:\n' >"$b/rootfs/etc/group"
	for f in "$@"; do
		mkdir -p "$(dirname "$b/rootfs/${f#*:}")"
		cp -a "${f%%:*}" "$b/rootfs/${f#*:}"
	done
	umoci repack --image "$dir:$tag" "$b" >/dev/null &&
		umoci config --image "$dir:$tag" --config.cmd /bin/sh --config.env PATH=/bin \
			>/dev/null || return 1
	rm -rf "$b"
}

# img_push LAYOUT:TAG HOST/REPO:TAG: copies an image from a layout into a registry.
img_push() {
	skopeo copy --quiet --dest-tls-verify=false "oci:$1" "docker://$2" >/dev/null
}

# img_rich DIR TAG [UMOCI-CONFIG-ARGS...]: an OCI layout at DIR with image TAG for running:
# busybox with every applet in /bin, users root, app (1000:1000, home /home/app) and nobody,
# groups root, app and staff (50, app a member); the config from the arguments (umoci config
# flags), PATH=/bin by default. IMG_RICH_FILES="SRC:DEST ..." copies host files in.
img_rich() {
	local dir=$1 tag=$2 b=$IMG/bundle.$$ a
	shift 2
	[ -d "$dir" ] || umoci init --layout "$dir" >/dev/null
	umoci new --image "$dir:$tag" >/dev/null &&
		umoci unpack --rootless --image "$dir:$tag" "$b" >/dev/null 2>&1 || return 1
	mkdir -p "$b/rootfs/bin" "$b/rootfs/etc" "$b/rootfs/tmp" "$b/rootfs/home/app" "$b/rootfs/root"
	chmod 1777 "$b/rootfs/tmp"
	cp "$(command -v busybox)" "$b/rootfs/bin/busybox"
	for a in $(busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$b/rootfs/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
		>"$b/rootfs/etc/passwd"
	printf 'root:x:0:\nstaff:x:50:app\napp:x:1000:\nnogroup:x:65534:\n' >"$b/rootfs/etc/group"
	printf 'from the image\n' >"$b/rootfs/etc/motd"
	ln -s /run/resolv.conf "$b/rootfs/etc/resolv.conf"
	for a in ${IMG_RICH_FILES:-}; do
		mkdir -p "$(dirname "$b/rootfs/${a#*:}")"
		cp -L "${a%%:*}" "$b/rootfs/${a#*:}"
	done
	umoci repack --image "$dir:$tag" "$b" >/dev/null &&
		umoci config --image "$dir:$tag" --config.env PATH=/bin "$@" >/dev/null || return 1
	rm -rf "$b"
}

# img_bash_files: IMG_RICH_FILES for the host's bash and the libraries it loads.
img_bash_files() {
	local f out="/bin/bash:/bin/bash"
	for f in $(ldd /bin/bash | grep -o '/[^ ]*'); do
		out="$out $f:$f"
	done
	echo "$out"
}
