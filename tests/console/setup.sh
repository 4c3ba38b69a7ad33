#!/usr/bin/env bash
# Installs puppeteer-core (tests/console/package-lock.json) once into $AJ_BUILD/npm-console-test
# (default build/npm-console-test) with `npm ci`: the lockfile's versions, no install scripts,
# and never a browser of its own (puppeteer-core has none; PUPPETEER_SKIP_DOWNLOAD besides).
# The browser is Debian's chromium (scripts/install-deps). Prints "CONSOLE_NODE_MODULES=<dir>"
# on success; otherwise a TAP skip line with the reason, and exits 0.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PREFIX=${AJ_BUILD:-$ROOT/build}/npm-console-test
PKG=$PREFIX/node_modules/puppeteer-core/package.json

skip() { echo "ok - puppeteer-core install # SKIP $*"; exit 0; }

if [ -f "$PKG" ] && cmp -s "$HERE/package-lock.json" "$PREFIX/package-lock.json"; then
	echo "CONSOLE_NODE_MODULES=$PREFIX/node_modules"
	exit 0
fi
command -v node >/dev/null || skip "node is not installed"
command -v npm >/dev/null || skip "npm is not installed"
if ! mkdir -p "$PREFIX" 2>/dev/null || [ ! -w "$PREFIX" ]; then
	skip "puppeteer-core is not installed in $PREFIX and this user cannot install it there"
fi
log=$PREFIX/install.log
# Several runs may start at once: one installs, the others wait for it.
if ! (flock 9 && [ -f "$PKG" ] && cmp -s "$HERE/package-lock.json" "$PREFIX/package-lock.json" || {
	cp "$HERE/package.json" "$HERE/package-lock.json" "$PREFIX/" &&
		PUPPETEER_SKIP_DOWNLOAD=1 timeout 300 npm ci --prefix "$PREFIX" --ignore-scripts \
			--no-audit --no-fund --loglevel=error >"$log" 2>&1
}) 9>"$PREFIX/.lock"; then
	rm -f "$PREFIX/package-lock.json" # so that the next run tries again
	why=$(tail -n 3 "$log" 2>/dev/null | tr '\n' ' ' | head -c 300)
	skip "npm could not install puppeteer-core (${why:-no answer from the registry within 300 s})"
fi
[ -f "$PKG" ] || skip "npm ran but $PKG is missing (see $log)"
echo "CONSOLE_NODE_MODULES=$PREFIX/node_modules"
