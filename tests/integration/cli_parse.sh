#!/usr/bin/env bash
# The command line as docker and podman users type it, through the real binary: --opt value,
# --opt=value, -x value, -xVALUE, combined switches (-it, -vt 5s), "--" ending options, options
# after the arguments, the shared options before the verb, and bad input: unknown options with
# the nearest one suggested, missing values, options of another verb, ambiguous clusters. What
# an option did is read back from `run --dry-run --json` (the effective policy).
# rootless: yes
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS"
cd "$WS" || exit 1
export AGENTJAIL_CONFIG=none AGENTJAIL_STATE_DIR=$T/state
RL=$(rootless_flags)
# Rootless without a delegated cgroup a memory limit needs to be accepted as degraded.
is_root || RL="$RL --allow-degraded memory"
P=$T/plan.json

# plan EXPR ARGS...: `run ARGS --dry-run --json -- true`, then EXPR over the plan.
plan() {
	local expr=$1
	shift
	aj_run run $RL "$@" --dry-run --json -- true
	[ "$RC" = 0 ] || { echo "error: exit $RC: $ERR"; return; }
	printf '%s' "$OUT" >"$P"
	json "$P" "$expr"
}
usage_error() { # NAME NEEDLE ARGS...
	local name=$1 needle=$2
	shift 2
	aj_run "$@"
	expect_eq "$name: exit 125" "$RC" 125
	expect_contains "$name: $needle" "$ERR" "$needle"
}

# ---- the forms of a value ------------------------------------------------------------------

expect_eq "--memory 512MiB" "$(plan 'd["limits"]["memory_bytes"]' --memory 512MiB)" 536870912
expect_eq "--memory=512MiB" "$(plan 'd["limits"]["memory_bytes"]' --memory=512MiB)" 536870912
expect_eq "-m 512MiB" "$(plan 'd["limits"]["memory_bytes"]' -m 512MiB)" 536870912
expect_eq "-m512MiB (attached)" "$(plan 'd["limits"]["memory_bytes"]' -m512MiB)" 536870912
expect_eq "-t5s" "$(plan 'd["limits"]["timeout_ms"]' -t5s)" 5000
expect_eq "repeated: the last one wins" "$(plan 'd["limits"]["pids"]' --pids 10 --pids=20)" 20
expect_eq "repeatable options accumulate" \
	"$(plan 'd["policy"]["environment"]["allow"][-2:]' -e AA --env=BB)" "['AA', 'BB']"

# ---- combined short options ------------------------------------------------------------------

aj_run run $RL -vt 5s --dry-run -- true
expect_eq "-vt 5s: a switch and a value-taking letter last" "$RC" 0
expect_contains "-vt 5s: -v took effect (the plan printed)" "$OUT" "timeout"
expect_contains "-vt 5s: -t took 5s" "$OUT" "5s"
usage_error "-vtv: a value-taking letter inside a cluster" '-t takes a value (DURATION): in "-vtv"' run -vtv 5s -- true
expect_eq "-t5s: a value-taking letter first takes the rest" "$(plan 'd["limits"]["timeout_ms"]' -t1m)" 60000
usage_error "-vz: an unknown letter in a cluster" 'unknown option "-z" in "-vz"' run -vz -- true
usage_error "-memory: a long option with one dash" 'did you mean --memory?' run -memory 1G -- true

# ---- where options end -------------------------------------------------------------------------

aj_run run $RL --dry-run --json -- --memory 5
printf '%s' "$OUT" >"$P"
expect_eq "-- ends the options: what follows is the command" "$(json "$P" 'd["policy"]["limits"]["memory"]')" \
	"$(plan 'd["policy"]["limits"]["memory"]')"
aj_run run $RL --dry-run ls --memory 5
expect_eq "run: the command starts at the first argument (its options are its own)" "$RC" 0
aj_run rm ghost --force
expect_eq "rm NAME --force: an option after the argument" "$RC" 1
expect_contains "... is taken as the option, not a name" "$ERR" 'no sandbox "ghost"'
expect_not_contains "... and --force is not a name" "$ERR" '"--force"'
aj_run rm -- --force
expect_contains "rm -- --force: after --, an argument" "$ERR" 'no sandbox "--force"'

# ---- the shared options before the verb --------------------------------------------------------

aj_run --state-dir "$T/front" ls --json
expect_eq "--state-dir DIR before the verb" "$RC" 0
check "... is the state directory used" test -e "$T/front"
aj_run --json ls
expect_eq "--json before the verb: JSON" "$OUT" "[]"
aj_run --state-dir="$T/front" --json --log-level info ls
expect_contains "several shared options before the verb" "$ERR" "state directory $T/front (command line)"
aj_run --verbose run $RL --dry-run -- true
expect_contains "--verbose before run: the plan" "$OUT" "seccomp"
aj_run ls --state-dir "$T/after" -v
expect_contains "... and after the verb" "$ERR" "state directory $T/after"
usage_error "a verb's option before the verb" "--count is an option of fork: write it after the verb" --count 2 fork x
usage_error "an unknown option before the verb" 'unknown option "--bogus"' --bogus ls
aj_run --help run
expect_eq "--help before the verb: the verb's help" "$RC" 0
expect_contains "... its usage" "$OUT" "usage: agentjail run"
aj_run help run
expect_eq "agentjail help run: the same" "$OUT" "$("$AJ" run --help)"

# ---- bad input ----------------------------------------------------------------------------------

usage_error "a misspelt option" 'did you mean --memory?' run --memroy 1G -- true
usage_error "a misspelt option of create" 'did you mean --name?' create --nmae x
usage_error "a beginning of an option" 'did you mean --timeout?' run --timeo 5s -- true
usage_error "a misspelt shared option" 'did you mean --json?' ls --jsno
usage_error "nothing near" 'see --help for the options of this command' ls --zzzzzzzz
usage_error "an option of another verb (gc --count)" '--count is an option of fork' gc --count 3
usage_error "an option of another verb (stop --force)" '--force is an option of rm' stop --force x
usage_error "a missing value" '--memory needs a value (SIZE)' run --memory
usage_error "a missing value, short" '-e needs a value (NAME=VALUE)' exec -e
usage_error "a missing value at the end of a cluster" '-e needs a value (NAME=VALUE)' exec -ie
usage_error "a value given to a switch" '--json takes no value' ls --json=yes
usage_error "a bad choice lists the choices" '--network: expected none, host or proxy, got "bridge"' run --network bridge -- true
usage_error "a value out of range" '--workers: expected 1 to 256' serve --workers 999
usage_error "a misspelt command" 'did you mean create?' crate
usage_error "ps with another verb's option" '--count is an option of fork' ps --count 1
