#!/usr/bin/env bash
# The README's first quick-start command, scripts/demo, as a user runs it: it must end with
# exit 0, show every layer of the plan, keep every attempted breach blocked and the host
# untouched (the demo's workspace gets result.txt, its .git/hooks no hook). Main pass only: the
# demo builds and runs the tree's normal build, which the sanitized pass would only repeat.
# passes: main
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"

out=$(cd "$AJ_ROOT" && scripts/demo 2>&1)
rc=$?
expect_eq "scripts/demo: exit 0" "$rc" 0
expect_contains "the plan is shown layer by layer" "$out" "landlock-scope     enforced"
expect_contains "the report is read back" "$out" "== agentjail exited with 0; the report says:"
n=$(printf '%s\n' "$out" | grep -c '^[a-z].* blocked: ')
expect_eq "every attempted breach is blocked (11)" "$n" 11
expect_not_contains "no breach allowed" "$out" "ALLOWED"
expect_contains "the fork bomb hit the pids limit and the run went on" "$out" "limits hit: pids"
expect_contains "the host keeps the result" "$out" "result.txt"
expect_not_contains "no hook was planted on the host" "$out" "pre-commit
"
