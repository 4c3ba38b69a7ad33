#!/usr/bin/env bash
# apt-get install into an image sandbox, as users do: a Debian bookworm minbase (made by
# scripts/install-deps with mmdebstrap) imported as a rootfs tarball; a .deb built with
# dpkg-deb, in a repository apt-ftparchive indexes, served over HTTP on loopback; apt reaching
# it through the egress proxy (the one allowed host). Root inside installs it in a persistent
# sandbox, where it stays across stop and start, and in a one-shot run, where it goes with
# the run; the sandbox user runs it; diff names the system's new files.
# rootless: yes
# timeout: 400
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/image.bash"

ROOTFS=/var/cache/agentjail-tests/bookworm-minbase.tar
if [ ! -s "$ROOTFS" ] || ! command -v dpkg-deb >/dev/null || ! command -v apt-ftparchive >/dev/null; then
	skip "apt-get in an image sandbox" \
		"$ROOTFS, dpkg-deb or apt-ftparchive is missing (scripts/install-deps, as root, makes them)"
	exit 0
fi
T=$(mktmp)
S=$T/state
WS=$T/ws
mkdir -p "$WS"
RF=$(rootless_flags)
as() { aj_run --state-dir "$S" "$@"; }

as image import --name debian:12 "$ROOTFS"
expect_eq "the Debian root is imported" "$RC" 0

# The package: a program and its manual's directory, as dpkg-deb builds them.
P=$T/pkg/ajhello_1.0_all
mkdir -p "$P/DEBIAN" "$P/usr/bin" "$T/repo"
printf 'Package: ajhello\nVersion: 1.0\nArchitecture: all\nMaintainer: agentjail tests <t@localhost>\nDescription: prints a greeting\n' \
	>"$P/DEBIAN/control"
printf '#!/bin/sh\necho hello from a package\n' >"$P/usr/bin/ajhello"
chmod 755 "$P/usr/bin/ajhello"
dpkg-deb --root-owner-group --build "$P" "$T/repo/" >/dev/null 2>&1
(cd "$T/repo" && apt-ftparchive packages . >Packages 2>/dev/null)
PORT=$(free_port)
(cd "$T/repo" && exec timeout 300 python3 -m http.server --bind 127.0.0.1 "$PORT") >/dev/null 2>&1 &
HTTP=$!
trap 'kill $HTTP 2>/dev/null; _aj_cleanup' EXIT
wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/Packages" || not_ok "the repository is served"
printf '{"network": {"mode": "proxy", "allow": ["127.0.0.1:%s"], "allow_private": ["127.0.0.1"]}}\n' \
	"$PORT" >"$T/policy.json"
# Only the test's repository (Debian's mirrors are not an allowed host), through the proxy
# even for 127.0.0.1: no_proxy names it (inside, it is the sandbox's own loopback; the
# repository is on the host's), and apt honours no_proxy over its own setting, so it goes for
# apt. Rootless, the one id mapped is root's, so apt cannot drop to _apt.
APT='env -u no_proxy -u NO_PROXY apt-get -q -o Dir::Etc::SourceList=/etc/apt/sources.list.d/test.list -o Dir::Etc::SourceParts=- -o Acquire::http::Proxy=$http_proxy'
is_root || APT="$APT -o APT::Sandbox::User=root"
SETUP="echo 'deb [trusted=yes] http://127.0.0.1:$PORT ./' >/etc/apt/sources.list.d/test.list"

# Rootless here means single-id mode (the pass's user has no subordinate ids), and Debian's
# root has files of other owners: refused unless the caller accepts the flattening.
if ! is_root; then
	# shellcheck disable=SC2086
	as run $RF --image debian:12 -- true
	expect_eq "single-id mode on an image with other owners: refused (exit 125)" "$RC" 125
	expect_contains "naming the layer and the remedy" "$ERR" "--allow-degraded subids"
	RF="$RF --allow-degraded subids"
fi
# shellcheck disable=SC2086
as create $RF --name apt-p --image debian:12 --policy "$T/policy.json"
expect_eq "create --image debian:12 with the repository allowed: exit 0 ($ERR)" "$RC" 0
as exec -u root apt-p -- sh -c "$SETUP && $APT update && $APT install -y ajhello"
expect_eq "apt-get update and install as root, through the proxy: exit 0" "$RC" 0
expect_contains "apt fetched the package from the repository" "$OUT" "ajhello 1.0"
if is_root; then
	as exec -u nobody apt-p -- sh -c 'id -u; ajhello'
	expect_eq "another user runs what root installed" "$OUT" "$(printf '65534\nhello from a package')"
else
	as exec apt-p -- sh -c 'id -u; ajhello'
	expect_eq "rootless: the sandbox user (root, the one id) runs what it installed" "$OUT" \
		"$(printf '0\nhello from a package')"
fi
as stop apt-p
as start apt-p
as exec apt-p -- sh -c 'dpkg -s ajhello | grep ^Status; ajhello'
expect_eq "stop and start: the package stays installed" "$OUT" \
	"$(printf 'Status: install ok installed\nhello from a package')"
as stop apt-p
as diff apt-p
expect_contains "diff names the system's new file" "$OUT" "A usr/bin/ajhello"
as rm -f apt-p

# shellcheck disable=SC2086
aj_run --state-dir "$S" run $RF -w "$WS" --image debian:12 --policy "$T/policy.json" -- \
	sh -c "$SETUP && $APT update >/dev/null && $APT install -y ajhello >/dev/null && ajhello"
expect_eq "a one-shot run installs and runs the package" "$OUT" "hello from a package"
# shellcheck disable=SC2086
aj_run --state-dir "$S" run $RF -w "$WS" --image debian:12 -- sh -c 'command -v ajhello || echo gone'
expect_eq "and it goes with the run" "$OUT" gone
