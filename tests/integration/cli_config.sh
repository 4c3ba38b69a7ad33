#!/usr/bin/env bash
# The configuration file (docs/cli.md, "Configuration file"): where it is looked for, what
# each field does to the verbs, the order against the command line, the environment and the
# policy file, `config show` with the source of every value, and bad files refused naming the
# file and the field.
# rootless: yes
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
C=$T/config.json
WS=$T/ws
mkdir -p "$WS" "$T/home"
cd "$WS" || exit 1
RL=$(rootless_flags)

# ---- where it is looked for ------------------------------------------------------------------

if is_root; then want=/etc/agentjail/config.json; else want=$T/home/.config/agentjail/config.json; fi
HOME=$T/home aj_run config show
expect_eq "config show: exit 0" "$RC" 0
expect_contains "config show: the file looked for ($want)" "$OUT" "configuration file: $want"
if ! is_root; then
	HOME=$T/home XDG_CONFIG_HOME=$T/xdg aj_run config show
	expect_contains "rootless: \$XDG_CONFIG_HOME first" "$OUT" "configuration file: $T/xdg/agentjail/config.json"
fi
AGENTJAIL_CONFIG=none aj_run config show
expect_contains "AGENTJAIL_CONFIG=none: no file" "$OUT" "configuration file: none"
AGENTJAIL_CONFIG=$T/missing.json aj_run config
expect_eq "a missing file is no configuration: exit 0" "$RC" 0
expect_contains "... and says so" "$OUT" "configuration file: $T/missing.json"
expect_contains "... not found" "$OUT" "not found"
expect_contains "config show: defaults say default" "$OUT" "preset                 workspace-write"

# ---- the fields --------------------------------------------------------------------------------

mkdir -p "$T/conf"
C=$T/conf/config.json
cat >"$C" <<EOF
{"state_dir": "$T/state", "preset": "read-only", "policy": "policy.json",
 "limits": {"memory": "1GiB", "pids": 100, "timeout": "90s"},
 "registry_mirror": "https://mirror.example/", "log_level": "warn"}
EOF
echo '{"limits": {"pids": 50}}' >"$T/conf/policy.json"
export AGENTJAIL_CONFIG=$C

aj_run config show --json
printf '%s' "$OUT" >"$T/show.json"
expect_eq "config show --json: found" "$(json "$T/show.json" 'd["found"]')" True
expect_eq "state_dir from the file" "$(json "$T/show.json" '(d["values"]["state_dir"]["value"], d["values"]["state_dir"]["source"])')" "('$T/state', '$C')"
expect_eq "a relative policy path resolves against the file's directory" \
	"$(json "$T/show.json" 'd["values"]["policy"]["value"]')" "$T/conf/policy.json"
expect_eq "limits.memory from the file" "$(json "$T/show.json" '(d["values"]["limits.memory"]["value"], d["values"]["limits.memory"]["source"])')" "(1073741824, '$C')"
expect_eq "limits.open_files from the defaults" "$(json "$T/show.json" 'd["values"]["limits.open_files"]["source"]')" default
expect_eq "registry_mirror shown" "$(json "$T/show.json" 'd["values"]["registry_mirror"]["value"]')" "https://mirror.example/"

aj_run run $RL --dry-run --json -- true
printf '%s' "$OUT" >"$T/plan.json"
expect_eq "run: the file's preset" "$(json "$T/plan.json" 'd["policy"]["preset"]')" read-only
expect_eq "run: the file's limits under the policy file's (pids 50 from policy.json)" \
	"$(json "$T/plan.json" '(d["limits"]["memory_bytes"] if d["limits"]["memory_bytes"] else "none", d["limits"]["pids"], d["limits"]["timeout_ms"])')" \
	"$(is_root && echo "(1073741824, 50, 90000)" || echo "('none', 50, 90000)")"
aj_run run $RL --preset workspace-write --pids 7 --timeout 5s --dry-run --json -- true
printf '%s' "$OUT" >"$T/plan.json"
expect_eq "run: flags win over the file" \
	"$(json "$T/plan.json" '(d["policy"]["preset"], d["limits"]["pids"], d["limits"]["timeout_ms"])')" \
	"('workspace-write', 7, 5000)"
echo '{"limits": {}}' >"$T/other.json"
aj_run run $RL --policy "$T/other.json" --dry-run --json -- true
printf '%s' "$OUT" >"$T/plan.json"
expect_eq "run --policy replaces the file's policy; its limits still apply" \
	"$(json "$T/plan.json" '(d["limits"]["pids"], d["limits"]["timeout_ms"])')" "(100, 90000)"

# The state directory: --state-dir, then AGENTJAIL_STATE_DIR, then the file.
aj_run ls -v
expect_contains "ls: the file's state directory" "$ERR" "state directory $T/state ($C)"
AGENTJAIL_STATE_DIR=$T/envstate aj_run ls -v
expect_contains "AGENTJAIL_STATE_DIR wins over the file" "$ERR" "state directory $T/envstate (AGENTJAIL_STATE_DIR)"
AGENTJAIL_STATE_DIR=$T/envstate aj_run --state-dir "$T/cli" ls -v
expect_contains "--state-dir wins over both" "$ERR" "state directory $T/cli (command line)"
check "the file's state directory was made and used" test -f "$T/state/state.db" -o -d "$T/state"

# log_level: the file's, unless the command line says otherwise.
sed -i 's/"log_level": "warn"/"log_level": "info"/' "$C"
aj_run ls
expect_contains "log_level info from the file: ls says its state directory" "$ERR" "state directory"
aj_run --log-level warn ls
expect_not_contains "--log-level warn wins over the file" "$ERR" "state directory"
aj_run config show --log-level error
expect_contains "config show: the command line's log level, named" "$OUT" "command line"

# ---- bad files -------------------------------------------------------------------------------------

bad() {
	local name=$1 content=$2 needle=$3
	printf '%s' "$content" >"$T/bad.json"
	AGENTJAIL_CONFIG=$T/bad.json aj_run ls
	expect_eq "$name: exit 125" "$RC" 125
	expect_contains "$name: names the file" "$ERR" "configuration file \"$T/bad.json\""
	expect_contains "$name: says what" "$ERR" "$needle"
}
bad "malformed JSON" '{"state_dir": ' 'line 1'
bad "not an object" '[1]' 'expected a JSON object'
bad "an unknown field" '{"stat_dir": "/x"}' 'stat_dir: unknown field'
bad "a bad preset" '{"preset": "open"}' 'preset: unknown preset "open"'
bad "a bad limit" '{"limits": {"memory": "lots"}}' 'limits.memory'
bad "an unknown limit" '{"limits": {"memroy": "1G"}}' 'limits.memroy: unknown field'
bad "a bad log level" '{"log_level": "loud"}' 'log_level: expected error, warn, info or debug'
bad "a number for a path" '{"state_dir": 5}' 'state_dir: expected a string'
if ! is_root; then
	printf '{}' >"$T/unreadable.json"
	chmod 000 "$T/unreadable.json"
	AGENTJAIL_CONFIG=$T/unreadable.json aj_run ls
	expect_eq "a file that is there but unreadable: 125" "$RC" 125
	expect_contains "... naming it" "$ERR" "configuration file \"$T/unreadable.json\""
	unset AGENTJAIL_CONFIG
	HOME=/root aj_run config show
	export AGENTJAIL_CONFIG=$C
	expect_eq "a HOME this user may not search: no configuration, no error" "$RC" 0
	expect_contains "... config show says why" "$OUT" "/root/.config/agentjail/config.json (Permission denied)"
fi
AGENTJAIL_CONFIG=$T/bad.json aj_run version
expect_eq "version does not read the file" "$RC" 0
AGENTJAIL_CONFIG=$T/bad.json aj_run features --json
expect_eq "... features does (a bad file is an error everywhere it applies)" "$RC" 125
