#!/usr/bin/env bash
# Installs the real E2B JS SDK (tests/e2b/package.json: e2b 2.x and @e2b/code-interpreter)
# once into $AJ_BUILD/npm-e2b (default build/npm-e2b), with npm from its registry; later runs
# reuse it. Prints "E2B_SDK_DIR=<node_modules>" on success. When it cannot install (no node or
# npm, registry unreachable, directory not writable) it prints a TAP skip line
# ("ok - e2b SDK install # SKIP reason") and exits 0, so the harness is skipped with a reason.
#
#   tests/e2b/setup.sh            # install (or reuse)
#   eval "$(tests/e2b/setup.sh | grep ^E2B_SDK_DIR=)"
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PREFIX=${AJ_BUILD:-$ROOT/build}/npm-e2b
PKG=$PREFIX/node_modules/e2b

skip() { echo "ok - e2b SDK install # SKIP $*"; exit 0; }

if [ -f "$PKG/package.json" ] && [ -f "$PREFIX/node_modules/@e2b/code-interpreter/package.json" ] &&
	cmp -s "$HERE/package.json" "$PREFIX/package.json"; then
	echo "E2B_SDK_DIR=$PREFIX/node_modules"
	exit 0
fi
NODE=$(command -v node || true)
[ -x /usr/bin/node ] && NODE=/usr/bin/node
[ -n "$NODE" ] || skip "node is not installed"
command -v npm >/dev/null || skip "npm is not installed"
major=$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$major" -ge 20 ] || skip "node >= 20 is needed by the e2b SDK (found $("$NODE" --version 2>/dev/null))"
if ! mkdir -p "$PREFIX" 2>/dev/null || [ ! -w "$PREFIX" ]; then
	skip "the SDK is not installed in $PREFIX and this user cannot install it there"
fi
log=$PREFIX/install.log
cp "$HERE/package.json" "$PREFIX/package.json"
# Several runs may start at once: one installs, the others wait for it.
if ! (flock 9 && [ -f "$PKG/package.json" ] && [ -f "$PREFIX/node_modules/@e2b/code-interpreter/package.json" ] ||
	timeout 300 npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error >"$log" 2>&1) 9>"$PREFIX/.lock"; then
	rm -f "$PREFIX/package.json" # so that the next run tries again
	why=$(tail -n 3 "$log" | tr '\n' ' ' | head -c 300)
	skip "npm could not install the e2b SDK (${why:-no answer from the registry within 300 s; behind a TLS-inspecting proxy node needs NODE_EXTRA_CA_CERTS})"
fi
[ -f "$PKG/package.json" ] || skip "npm ran but $PKG is missing (see $log)"
echo "E2B_SDK_DIR=$PREFIX/node_modules"
