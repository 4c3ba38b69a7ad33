#!/usr/bin/env bash
# `agentjail mcp` and its sandbox: the command line (a missing or unknown sandbox, flags that
# only go with --create) fails before any protocol with nothing on stdout; a session bound to
# an existing sandbox survives it being paused, stopped or losing its supervisor between two
# calls (tests/mcp/binding_test.py); --create without --rm leaves the sandbox; SIGTERM in the
# middle of a command ends the session and --rm still deletes the sandbox.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

aj_run mcp no-such-sandbox
expect_eq "mcp of an unknown sandbox: exit 1" "$RC" 1
expect_contains "mcp of an unknown sandbox: says which" "$ERR" no-such-sandbox
expect_eq "mcp of an unknown sandbox: nothing on stdout" "$OUT" ""
aj_run mcp
expect_eq "mcp without a name or --create: exit 125" "$RC" 125
expect_contains "mcp without a name or --create: says so" "$ERR" "--create"
pj_create bound
aj_run mcp --rm bound
expect_eq "mcp NAME --rm: refused (only a sandbox this server made is deleted)" "$RC" 125
aj_run mcp --memory 1GiB bound
expect_eq "mcp NAME with policy flags: refused" "$RC" 125
aj_run mcp --create bound
expect_eq "mcp --create with a name argument: refused" "$RC" 125
# shellcheck disable=SC2086
aj_run mcp --create --name bound $PJ_FLAGS
expect_eq "mcp --create --name of a taken name: exit 4" "$RC" 4
expect_eq "mcp --create of a taken name: nothing on stdout" "$OUT" ""
aj_run mcp --help
expect_contains "mcp --help" "$OUT" "--create"

# shellcheck disable=SC2086
python3 "$AJ_ROOT/tests/mcp/binding_test.py" "$AJ" "$STATE" bound $PJ_FLAGS
expect_eq "the binding script ran to its end" "$?" 0
