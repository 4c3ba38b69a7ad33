#!/usr/bin/env bash
# `agentjail run` with bad input: each case ends with the documented exit code (125 for
# agentjail's own errors, 126 command not executable, 127 command not found), a message that
# names the flag or policy field, a --report file that says what went wrong, and nothing left
# behind on the host (cgroup directories, temporary files, files in the workspace).
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
OUTDIR=$T/out
PRIV_TMP=$T/tmpdir
mkdir -p "$WS" "$OUTDIR" "$PRIV_TMP"
echo data >"$WS/file"
cd "$WS" || exit 1
R=$OUTDIR/report.json
RL=$(rootless_flags)

BEFORE=$T/cgroups.before
cgroup_snapshot "$BEFORE"
RUN_BEFORE=$(ls -A /run/agentjail 2>/dev/null | sort | tr '\n' ' ')
IDS=()

# run_case NAME WANT_RC ARGS...: runs `agentjail run --report R ARGS` in the workspace with a
# private TMPDIR; checks the exit code and that the report exists and agrees on it.
run_case() {
	local name=$1 want=$2
	shift 2
	rm -f "$R"
	TMPDIR=$PRIV_TMP aj_run "$@"
	expect_eq "$name: exit code" "$RC" "$want"
	IDS+=("$(report_field "$R" 'd["sandbox"]')")
	[ "$RC" = "$want" ] || return 0
	expect_eq "$name: report exit_code" "$(report_field "$R" 'd["exit_code"]')" "$want"
}

# agentjail_error NAME LAYER NEEDLE...: stderr and the report's error name the layer and
# contain every NEEDLE.
agentjail_error() {
	local name=$1 layer=$2 n msg
	shift 2
	[ "$RC" = 125 ] || return 0 # already reported by run_case; the rest would only repeat it
	expect_contains "$name: stderr names the layer" "$ERR" "agentjail: [$layer]"
	expect_eq "$name: report error.layer" "$(report_field "$R" 'd["error"]["layer"]')" "$layer"
	msg=$(report_field "$R" 'd["error"]["message"]')
	for n in "$@"; do
		expect_contains "$name: stderr says $n" "$ERR" "$n"
		expect_contains "$name: report says $n" "$msg" "$n"
	done
}

# ---- command line ----------------------------------------------------------------------

run_case "unknown flag" 125 run --report "$R" --bogus -- true
agentjail_error "unknown flag" usage 'unknown option "--bogus"'
expect_contains "unknown flag: hint" "$ERR" "see --help"

run_case "flag without its value" 125 run --report "$R" --memory
agentjail_error "flag without its value" usage "--memory needs a value (SIZE)"

run_case "empty size" 125 run --report "$R" --memory= -- true
agentjail_error "empty size" policy '--memory: expected a size' 'got ""'

run_case "bad size" 125 run --report "$R" --memory 12parsecs -- true
agentjail_error "bad size" policy '--memory: expected a size such as 512MiB' '"12parsecs"'

run_case "bad duration" 125 run --report "$R" --timeout soon -- true
agentjail_error "bad duration" policy '--timeout: expected a duration' '"soon"'

run_case "bad count" 125 run --report "$R" --pids many -- true
agentjail_error "bad count" policy '--pids: expected a non-negative whole number' '"many"'

run_case "bad network mode" 125 run --report "$R" --network bridge -- true
agentjail_error "bad network mode" usage '--network: expected none, host or proxy, got "bridge"'

run_case "bad output action" 125 run --report "$R" --output-action drop -- true
agentjail_error "bad output action" usage '--output-action: expected truncate or kill'

run_case "bad --setenv" 125 run --report "$R" --setenv NOEQUALS -- true
agentjail_error "bad --setenv" usage '--setenv: expected NAME=VALUE, got "NOEQUALS"'

run_case "bad --env" 125 run --report "$R" --env 1BAD -- true
agentjail_error "bad --env" usage '--env: "1BAD" is not a variable name'

run_case "relative --ro" 125 run --report "$R" --ro relative/dir -- true
agentjail_error "relative --ro" usage '--ro: expected an absolute path, got "relative/dir"'

run_case "unknown degraded layer" 125 run --report "$R" --allow-degraded network -- true
agentjail_error "unknown degraded layer" policy 'allow_degraded[0]' '"network" is not a layer'

run_case "boundary syscall group" 125 run --report "$R" --allow-syscalls namespaces -- true
agentjail_error "boundary syscall group" policy 'syscalls.allow[0]' 'cannot be relaxed'

run_case "unknown syscall group" 125 run --report "$R" --allow-syscalls nosuch -- true
agentjail_error "unknown syscall group" policy 'syscalls.allow[0]' 'not a group'

run_case "limit below the minimum" 125 run --report "$R" --memory 1MiB -- true
agentjail_error "limit below the minimum" policy 'limits.memory' 'at least 8MiB'

run_case "no command" 125 run --report "$R" --
agentjail_error "no command" usage 'missing the command to run'

aj_run frobnicate
expect_eq "unknown subcommand: exit code" "$RC" 125
expect_contains "unknown subcommand: message" "$ERR" 'unknown command "frobnicate"'

# ---- policy files ----------------------------------------------------------------------

P=$T/policy.json
printf '{"version": 1,\n "limits": {"memory": "1GiB"}\n' >"$P"
run_case "malformed JSON" 125 run --report "$R" --policy "$P" -- true
agentjail_error "malformed JSON" policy "policy file \"$P\", line 3"

printf '{"version": 1, "limits": {"memroy": "1GiB"}}' >"$P"
run_case "unknown policy field" 125 run --report "$R" --policy "$P" -- true
agentjail_error "unknown policy field" policy "policy file \"$P\"" \
	"limits.memroy: unknown field (expected one of: memory, pids"

printf '{"version": 1, "filesystem": {"read_only": "/opt"}}' >"$P"
run_case "wrong type" 125 run --report "$R" --policy "$P" -- true
agentjail_error "wrong type" policy "filesystem.read_only: expected an array of strings, got a string"

printf '{"version": 1, "limits": {"pids": "10"}}' >"$P"
run_case "count as a string" 125 run --report "$R" --policy "$P" -- true
agentjail_error "count as a string" policy "limits.pids: expected a non-negative whole number"

printf '{"version": 2}' >"$P"
run_case "policy version 2" 125 run --report "$R" --policy "$P" -- true
agentjail_error "policy version 2" policy "version: this agentjail reads policy version 1"

printf '{"limits": {"memory": 1,\n "memory": 2}}' >"$P"
run_case "duplicate key" 125 run --report "$R" --policy "$P" -- true
agentjail_error "duplicate key" policy "duplicate object key"

printf '{"preset": "yolo"}' >"$P"
run_case "unknown preset in a file" 125 run --report "$R" --policy "$P" -- true
agentjail_error "unknown preset in a file" policy 'preset: unknown preset "yolo"'

run_case "unknown --preset" 125 run --report "$R" --preset yolo -- true
agentjail_error "unknown --preset" policy 'unknown preset "yolo" (expected workspace-write or read-only)'

run_case "missing policy file" 125 run --report "$R" --policy "$T/nope.json" -- true
agentjail_error "missing policy file" policy "$T/nope.json"

# ---- workspace and paths -----------------------------------------------------------------

run_case "missing workspace" 125 run --report "$R" --workspace "$T/missing" -- true
agentjail_error "missing workspace" usage "--workspace \"$T/missing\"" "No such file or directory"

printf '{"filesystem": {"workspace": "%s/missing"}}' "$T" >"$P"
run_case "missing workspace in a policy" 125 run --report "$R" --policy "$P" -- true
agentjail_error "missing workspace in a policy" policy "filesystem.workspace" "$T/missing"

run_case "workspace /" 125 run --report "$R" --workspace / -- true
agentjail_error "workspace /" policy 'filesystem.workspace: "/" is a system directory'

run_case "workspace /etc" 125 run --report "$R" --workspace /etc -- true
agentjail_error "workspace /etc" policy 'filesystem.workspace: "/etc" is a system directory'

run_case "workspace is a file" 125 run --report "$R" --workspace "$WS/file" -- true
agentjail_error "workspace is a file" policy "filesystem.workspace" "Not a directory"

run_case "--rw /usr" 125 run --report "$R" --rw /usr -- true
agentjail_error "--rw /usr" policy 'filesystem.read_write[0]: "/usr" is' 'host system directory'

run_case "--rw /" 125 run --report "$R" --rw / -- true
agentjail_error "--rw /" policy 'filesystem.read_write[0]'

run_case "--ro /proc" 125 run --report "$R" --ro /proc/1 -- true
agentjail_error "--ro /proc" policy 'filesystem.read_only[0]' 'kernel interface'

# Below a host system directory is still the host's system: a sandbox given /usr/local/bin
# or /etc/ssl writable can plant programs or CA certificates the host then trusts.
run_case "--rw /usr/local/bin" 125 run --report "$R" $RL --rw /usr/local/bin -- true
agentjail_error "--rw /usr/local/bin" policy 'filesystem.read_write[0]'
run_case "workspace /etc/ssl" 125 run --report "$R" $RL --workspace /etc/ssl -- true
agentjail_error "workspace /etc/ssl" policy 'filesystem.workspace'

# A mask in a writable area whose target is gone may have been moved away by an earlier
# run: refused rather than silently skipped.
run_case "--mask missing inside the workspace" 125 run --report "$R" $RL --mask "$WS/gone" -- true
agentjail_error "--mask missing inside the workspace" policy 'filesystem.mask[0]' "$WS/gone"

# The report and the event log must not land where the sandbox writes (it could plant a
# symlink there between runs); refused, and then nothing is written there at all.
rm -f "$R"
TMPDIR=$PRIV_TMP aj_run run $RL --report "$WS/report.json" -- true
expect_eq "--report inside the workspace: exit code" "$RC" 125
expect_contains "--report inside the workspace: message" "$ERR" \
	"--report \"$WS/report.json\" lies inside what the sandbox may write"
check "--report inside the workspace: no file is written there" test ! -e "$WS/report.json"
rm -f "$WS/report.json"
TMPDIR=$PRIV_TMP aj_run run $RL --events "$WS/events.jsonl" -- true
expect_eq "--events inside the workspace: exit code" "$RC" 125
expect_contains "--events inside the workspace: message" "$ERR" "--events \"$WS/events.jsonl\""
check "--events inside the workspace: no file is written there" test ! -e "$WS/events.jsonl"
rm -f "$WS/events.jsonl"

run_case "relative --cwd" 125 run --report "$R" --cwd src -- true
agentjail_error "relative --cwd" policy 'cwd'

# ---- the command -------------------------------------------------------------------------

run_case "command not found" 127 run --report "$R" $RL -- no-such-command-aj
expect_contains "command not found: stderr" "$ERR" '"no-such-command-aj" inside the sandbox: command not found'
expect_eq "command not found: report error is null (not an agentjail error)" \
	"$(report_field "$R" 'd["error"]')" None
expect_eq "command not found: exec_error.stage" "$(report_field "$R" 'd["exec_error"]["stage"]')" exec
expect_eq "command not found: report status agrees with the exit code" \
	"$(report_field "$R" 'd["status"]')" "{'kind': 'exited', 'code': 127}"

run_case "absolute path not found" 127 run --report "$R" $RL -- "$WS/no-such-file"
expect_contains "absolute path not found: stderr" "$ERR" "command not found"

printf '#!/bin/sh\necho should not run\n' >"$WS/not-exec"
chmod 644 "$WS/not-exec"
run_case "not executable" 126 run --report "$R" $RL -- "$WS/not-exec"
expect_contains "not executable: stderr" "$ERR" "\"$WS/not-exec\" inside the sandbox: Permission denied"
expect_not_contains "not executable: it did not run" "$OUT" "should not run"
expect_eq "not executable: exec_error.stage" "$(report_field "$R" 'd["exec_error"]["stage"]')" exec

mkdir -p "$WS/adir"
run_case "a directory as the command" 126 run --report "$R" $RL -- "$WS/adir"

run_case "--cwd missing inside" 126 run --report "$R" $RL --cwd /no/such/dir -- true
expect_contains "--cwd missing inside: stderr" "$ERR" 'chdir "/no/such/dir" inside the sandbox: No such file or directory'
expect_eq "--cwd missing inside: exec_error.stage" "$(report_field "$R" 'd["exec_error"]["stage"]')" chdir

run_case "--cwd is a file" 126 run --report "$R" $RL --cwd "$WS/file" -- true
expect_contains "--cwd is a file: stderr" "$ERR" "Not a directory"

# ---- nothing left behind -----------------------------------------------------------------

left=$(cgroup_run_dirs "${IDS[@]}")
expect_eq "no sandbox cgroup directory is left" "$left" ""
expect_eq "no new directory under the cgroup parents" "$(cgroup_new_dirs "$BEFORE")" ""
expect_eq "no temporary files in TMPDIR" "$(ls -A "$PRIV_TMP")" ""
expect_eq "the workspace holds only what the test put there" \
	"$(ls -A "$WS" | tr '\n' ' ')" "adir file not-exec "
expect_eq "no new entries in /run/agentjail" \
	"$(ls -A /run/agentjail 2>/dev/null | sort | tr '\n' ' ')" "$RUN_BEFORE"
