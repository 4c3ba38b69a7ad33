#!/usr/bin/env bash
# Self-check of the harness and of docs/e2b-protocol.md: starts the MOCK server
# (tests/e2b/mock_server.py, stdlib Python, protocol reference only -- not agentjail) on an
# ephemeral port and runs the real-SDK harness against it. Prints the harness' TAP lines.
#
#   tests/e2b/run_mock.sh [--trace FILE]   # FILE: JSON lines of every request (wire capture)
#   E2B_MOCK_ENVD_VERSION=0.3.0 tests/e2b/run_mock.sh   # advertise another envd version
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
sdk=$("$HERE/setup.sh")
case "$sdk" in
*E2B_SDK_DIR=*) export E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=} ;;
*) echo "$sdk"; exit 0 ;;
esac
trace_args=()
[ "${1:-}" = --trace ] && trace_args=(--trace "$2")
out=$(mktemp)
python3 "$HERE/mock_server.py" --port 0 --api-key e2b_mock_key --envd-version "${E2B_MOCK_ENVD_VERSION:-0.5.7}" "${trace_args[@]}" >"$out" 2>"$out.err" &
mock=$!
trap 'kill $mock 2>/dev/null; wait $mock 2>/dev/null; rm -f "$out" "$out.err"' EXIT
for _ in $(seq 50); do grep -q LISTENING "$out" && break; sleep 0.1; done
port=$(awk '/LISTENING/{print $2}' "$out")
[ -n "$port" ] || { echo "not ok - mock server did not start ($(cat "$out.err"))"; exit 1; }
export E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_API_KEY=e2b_mock_key
export E2B_TEST_STRICT_PATHS=0 E2B_TEST_CODE_INTERPRETER=${E2B_TEST_CODE_INTERPRETER:-1}
timeout 300 /usr/bin/env node "$HERE/e2b_sdk_test.mjs"
