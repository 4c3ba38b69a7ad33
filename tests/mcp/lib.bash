# Helpers for the MCP tests (tests/integration/mcp_*.sh); sourced after tests/lib.sh and
# tests/persist.bash. Not a test itself.
#
# mcp_sdk_install: the official MCP TypeScript SDK (tests/mcp/package.json) in $AJ_BUILD/npm,
# installed once with npm from its registry and reused by later runs and passes. Sets
# MCP_SDK_DIR, or MCP_SDK_SKIP to the reason it is not available (no node or npm, the registry
# cannot be reached, the build directory is not writable for this user).
MCP_NPM_PREFIX=$AJ_BUILD/npm
MCP_SDK_DIR=
MCP_SDK_SKIP=

mcp_sdk_install() {
	local pkg=$MCP_NPM_PREFIX/node_modules/@modelcontextprotocol/sdk log why
	if [ -f "$pkg/package.json" ] && cmp -s "$AJ_ROOT/tests/mcp/package.json" "$MCP_NPM_PREFIX/package.json"; then
		MCP_SDK_DIR=$pkg
		return 0
	fi
	if [ ! -x /usr/bin/node ] || ! command -v npm >/dev/null; then
		MCP_SDK_SKIP="node or npm is not installed (scripts/install-deps installs them)"
		return 1
	fi
	if ! mkdir -p "$MCP_NPM_PREFIX" 2>/dev/null || [ ! -w "$MCP_NPM_PREFIX" ]; then
		MCP_SDK_SKIP="the SDK is not installed in $MCP_NPM_PREFIX and this user cannot install it there (the main pass does)"
		return 1
	fi
	log=$MCP_NPM_PREFIX/install.log
	cp "$AJ_ROOT/tests/mcp/package.json" "$MCP_NPM_PREFIX/package.json"
	# Two passes may start at once: one installs, the other waits for it.
	if ! (flock 9 && [ -f "$pkg/package.json" ] ||
		timeout 240 npm install --prefix "$MCP_NPM_PREFIX" --no-audit --no-fund \
			--no-package-lock --loglevel=error >"$log" 2>&1) 9>"$MCP_NPM_PREFIX/.lock"; then
		rm -f "$MCP_NPM_PREFIX/package.json" # so that the next run tries again
		why=$(tail -n 3 "$log" | tr '\n' ' ' | head -c 300)
		MCP_SDK_SKIP="npm could not install @modelcontextprotocol/sdk (${why:-no answer from the registry within 240 s; behind a TLS-inspecting proxy node needs NODE_EXTRA_CA_CERTS})"
		return 1
	fi
	MCP_SDK_DIR=$pkg
}

# mcp_session ARGS... <<< LINES: runs `agentjail mcp ARGS` with the JSON-RPC lines of stdin;
# the answers go to stdout, the server's stderr to $MCP_ERR_FILE (default /dev/null).
mcp_session() {
	timeout 60 "$AJ" mcp "$@" 2>"${MCP_ERR_FILE:-/dev/null}"
}
