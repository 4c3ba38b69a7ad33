#!/usr/bin/env bash
# Bad input to the persistent-sandbox verbs: each case ends with its documented exit code (1
# no such sandbox or snapshot, 3 wrong state or in use, 4 name taken, 125 usage and other
# errors; exec, whose exit code is the command's, says 125 for all of its own failures, see
# docs/cli.md), a message that names the object or the flag, and nothing changed: the sandboxes and
# snapshots (names, states, generations, labels, layers) and the state directory's workspaces
# are the same before and after.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

H=$(mktmp)
echo data >"$H/file"
pj_create up --label role=up
pj_create down --stopped
pj_x up sh -c 'echo base >f'
# Snapshots of a running sandbox freeze it; without a freezer cgroup it is stopped for that.
is_root || aj_run stop up
aj_run snapshot up --name snap
[ "$RC" = 0 ] || pj_bail "snapshot up"
is_root || aj_run start up
pj_create user-of-snap --from snap --stopped
pj_create taken-1 --stopped
if is_root; then
	pj_create frozen
	aj_run pause frozen
	[ "$RC" = 0 ] || pj_bail "pause frozen"
fi

BEFORE=$(pj_summary)
DIRS_BEFORE=$(ls "$STATE/sandboxes" | sort | tr '\n' ' ')
LAYERS_BEFORE=$(ls "$STATE/layers" | sort | tr '\n' ' ')

# case NAME WANT_RC NEEDLE ARGS...: runs agentjail ARGS; checks the exit code and that stderr
# contains NEEDLE.
case_() {
	local name=$1 want=$2 needle=$3
	shift 3
	aj_run "$@"
	expect_eq "$name: exit $want" "$RC" "$want"
	[ -n "$needle" ] && expect_contains "$name: message" "$ERR" "$needle"
	return 0
}

# ---- unknown sandbox or snapshot: 1 ------------------------------------------------------

for verb in start stop pause resume rm inspect snapshot fork diff events; do
	case_ "$verb of an unknown sandbox" 1 'no sandbox "ghost"' "$verb" ghost
done
# exec's exit code is the command's: its own failures are all 125 (docs/cli.md).
case_ "exec in an unknown sandbox" 125 'no sandbox "ghost"' exec ghost -- true
case_ "cp to an unknown sandbox" 1 'no sandbox "ghost"' cp "$H/file" ghost:/home/user/
case_ "rm -f of an unknown sandbox" 1 'no sandbox "ghost"' rm -f ghost
case_ "create --from an unknown snapshot" 1 'no snapshot "ghost"' create --name never $PJ_FLAGS --from ghost
case_ "snapshots rm of an unknown snapshot" 1 'no snapshot "ghost"' snapshots rm ghost
case_ "stop of two sandboxes, one unknown: the known one is still acted on" 1 'no sandbox "ghost"' stop ghost down

# ---- wrong state: 3 ------------------------------------------------------------------------

case_ "exec in a stopped sandbox" 125 'sandbox "down" is stopped' exec down -- true
case_ "cp to a stopped sandbox" 3 'is stopped' cp "$H/file" down:/home/user/
case_ "pause of a stopped sandbox" 3 'is stopped' pause down
case_ "resume of a stopped sandbox" 3 'is stopped' resume down
case_ "stop of a stopped sandbox" 3 'is stopped' stop down
case_ "start of a running sandbox" 3 'is running' start up
case_ "resume of a running sandbox" 3 'is running' resume up
case_ "rm of a running sandbox without -f" 3 'is running' rm up
if is_root; then
	case_ "pause of a paused sandbox" 3 'is paused' pause frozen
	case_ "start of a paused sandbox" 3 'is paused' start frozen
	case_ "exec in a paused sandbox" 125 'sandbox "frozen" is paused' exec frozen -- true
fi

# ---- in use: 3 -----------------------------------------------------------------------------

case_ "snapshots rm of a snapshot a sandbox was made from" 3 'is in use by sandbox "' snapshots rm snap

# ---- names taken: 4 ------------------------------------------------------------------------

case_ "create with a taken name" 4 'a sandbox named "up" already exists' create --name up $PJ_FLAGS
case_ "create --stopped with a taken name" 4 'already exists' create --name down --stopped $PJ_FLAGS
case_ "snapshot with a taken name" 4 'a snapshot named "snap" already exists' snapshot up --name snap
is_root && case_ "fork onto a taken name" 4 'a sandbox named "taken-1" already exists' fork up --name taken-1 --stopped
case_ "fork of a stopped sandbox onto a taken name" 4 'a sandbox named "taken-1" already exists' fork down --name taken-1 --stopped

# ---- bad names: 125 -------------------------------------------------------------------------

for n in "" "with space" "-dash" ".dot" "a/b" "../up" "ünï" "x:y" \
	"$(printf 'n%.0s' $(seq 64))" 0123456789abcdef; do
	case_ "create --name '$n'" 125 "--name" create --name "$n" $PJ_FLAGS --stopped
	case_ "snapshot --name '$n'" 125 "is not valid" snapshot up --name "$n"
done
case_ "fork --name with a slash" 125 "name" fork down --stopped --name "a/b"
case_ "fork --name too long for a sandbox name" 125 "name" fork down --stopped --name "$(printf 'p%.0s' $(seq 70))"

# ---- bad labels: 125 ----------------------------------------------------------------------

case_ "create --label without =" 125 '--label: expected KEY=VALUE, got "novalue"' create --name lab $PJ_FLAGS --label novalue
case_ "create --label with an empty key" 125 '--label: expected KEY=VALUE' create --name lab $PJ_FLAGS --label =v
case_ "create --label twice with one key" 125 '--label' create --name lab $PJ_FLAGS --label k=1 --label k=2
case_ "ls --label without =" 125 '--label: expected KEY=VALUE' ls --label role

# ---- other bad flags and arguments: 125 --------------------------------------------------

case_ "create --idle-timeout not a duration" 125 '--idle-timeout' create --name t1 $PJ_FLAGS --idle-timeout soon
case_ "create --idle-action unknown" 125 '--idle-action: expected pause or stop' create --name t2 $PJ_FLAGS --idle-action sleep
case_ "create --max-lifetime negative" 125 '--max-lifetime' create --name t3 $PJ_FLAGS --max-lifetime -5s
case_ "create --retention not a duration" 125 '--retention' create --name t4 $PJ_FLAGS --retention forever
case_ "create with an unknown option" 125 'unknown option' create --name t5 $PJ_FLAGS --bogus
case_ "create with a stray argument" 125 'unexpected argument' create --name t6 $PJ_FLAGS stray
case_ "create with a bad policy flag" 125 '--memory' create --name t7 --memory lots
case_ "gc with another verb's option (--count)" 125 'unknown option "--count"' gc --count 3
case_ "snapshot with fork's --stopped" 125 'unknown option "--stopped"' snapshot down --stopped
case_ "restore with snapshot's --retention" 125 'unknown option "--retention"' restore down snap --retention 1h
case_ "stop with rm's --force" 125 'unknown option "--force"' stop --force down
case_ "fork --count 0" 125 '--count' fork down --count 0 --stopped
case_ "fork --count 1001" 125 '--count' fork down --count 1001 --stopped
case_ "fork --count not a number" 125 '--count' fork down --count many
case_ "exec without a command" 125 'missing the command' exec up
case_ "exec without a sandbox" 125 'missing the sandbox name' exec
case_ "exec --timeout not a duration" 125 '--timeout' exec --timeout soon up -- true
case_ "exec --env without =" 125 '--env: expected NAME=VALUE' exec --env NOVALUE up -- true
case_ "start without a name" 125 'missing the sandbox name' start
case_ "inspect without a name" 125 'missing the sandbox name' inspect
case_ "snapshot without a name" 125 'usage' snapshot
case_ "snapshots with an unknown action" 125 'expected ls or rm' snapshots purge
case_ "diff with two names" 125 'unexpected argument' diff up down
case_ "cp with one argument" 125 'expected SRC and DST' cp "$H/file"
case_ "cp to a relative sandbox path" 125 'absolute' cp "$H/file" up:home/user

# ---- nothing changed -----------------------------------------------------------------------

AFTER=$(pj_summary)
while IFS= read -r line; do
	kind=${line%% *}
	rest=${line#* }
	name=$(echo "$rest" | cut -d' ' -f2)
	now=$(printf '%s\n' "$AFTER" | grep -F -- "$kind ${rest%% *} ")
	expect_eq "unchanged: $kind $name" "$now" "$line"
done <<<"$BEFORE"
expect_eq "no sandbox or snapshot added" "$(comm -13 <(printf '%s\n' "$BEFORE" | cut -d' ' -f1-3 | sort) \
	<(printf '%s\n' "$AFTER" | cut -d' ' -f1-3 | sort) | tr '\n' ';')" ""
expect_eq "no workspace directory added or removed" "$(ls "$STATE/sandboxes" | sort | tr '\n' ' ')" "$DIRS_BEFORE"
expect_eq "no layer directory added or removed" "$(ls "$STATE/layers" | sort | tr '\n' ' ')" "$LAYERS_BEFORE"
pj_x up cat f
expect_eq "the running sandbox still works" "$OUT" base
