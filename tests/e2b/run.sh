#!/usr/bin/env bash
# Runs the real-SDK harness (e2b_sdk_test.mjs) against an E2B-compatible server that is
# already listening, e.g. agentjail's E2B API. Installs the SDK first if needed (setup.sh);
# prints TAP lines only, so tests/run-style runners can consume the output.
#
#   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
#   E2B_API_KEY=e2b_... tests/e2b/run.sh
#
# Optional: E2B_TEST_SKIP / E2B_TEST_ONLY (regex), E2B_TEST_STRICT_PATHS=0,
# E2B_TEST_CODE_INTERPRETER=1, E2B_TEST_TEMPLATE, E2B_TEST_VERBOSE=1 (see the .mjs header).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
sdk=$("$HERE/setup.sh")
case "$sdk" in
*E2B_SDK_DIR=*) export E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=} ;;
*) echo "$sdk"; exit 0 ;;
esac
node=$(command -v node); [ -x /usr/bin/node ] && node=/usr/bin/node
exec timeout "${E2B_TEST_TIMEOUT:-600}" "$node" "$HERE/e2b_sdk_test.mjs"
