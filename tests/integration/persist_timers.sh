#!/usr/bin/env bash
# Timers of persistent sandboxes: --idle-timeout pauses an idle sandbox (or stops it with
# --idle-action stop), an attached command keeps it awake; --max-lifetime stops it after each
# start; --retention lets `gc` delete a sandbox stopped for that long, and only such ones.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

pj_create idle-stop --idle-timeout 2s --idle-action stop
expect_eq "--idle-timeout/--idle-action recorded" \
	"$(pj_field idle-stop '(d["ttl"]["idle_timeout_ms"], d["ttl"]["idle_action"])')" "(2000, 'stop')"
pj_create lifetime --max-lifetime 2s
pj_create keep --retention 4s
pj_create gone --retention 4s
pj_create plain
if is_root; then
	pj_create idle-pause --idle-timeout 2s
fi

# An attached command keeps its sandbox awake past the idle timeout. Created last and timed
# from the moment the command is seen running, so slow creates cannot eat the idle timeout.
pj_create awake --idle-timeout 2s --idle-action stop
AW_OUT=$(mktmp)/out
"$AJ" exec awake -- sh -c 'echo up; sleep 6' >"$AW_OUT" 2>&1 &
AW=$!
wait_until 10 grep -q up "$AW_OUT"
AW_T0=$(date +%s%N)
expect_eq "the attached exec is running" "$(cat "$AW_OUT")" up

aj_run stop gone
expect_eq "stop: exit 0" "$RC" 0
STOPPED_AT=$(date +%s%N)
aj_run gc
expect_eq "gc right after the stop: exit 0" "$RC" 0
expect_eq "gc: a sandbox within its retention is kept" "$(pj_state gone)" stopped
aj_run stop plain
expect_eq "stop: exit 0" "$RC" 0

expect_eq "idle timeout with --idle-action stop: stopped" "$(pj_wait_state idle-stop stopped 8)" stopped
# 3.5 s into the attached exec, past the 2 s idle timeout.
while [ $((($(date +%s%N) - AW_T0) / 1000000)) -lt 3500 ]; do sleep 0.1; done
expect_eq "an attached exec keeps the sandbox awake past its idle timeout" "$(pj_state awake)" running
if is_root; then
	expect_eq "idle timeout: paused" "$(pj_wait_state idle-pause paused 8)" paused
	aj_run resume idle-pause
	expect_eq "resume after the idle pause: exit 0" "$RC" 0
	pj_x idle-pause true
	expect_eq "resumed: exec works" "$RC" 0
	EVP=$("$AJ" events --json idle-pause | python3 -c '
import json, sys
print(" ".join(json.loads(l)["event"] for l in sys.stdin if l.strip()))')
	expect_eq "idle pause: events" "$EVP" "create start idle pause resume exec exit"
else
	skip "idle timeout pauses" "pausing needs the freezer cgroup, which uid $(id -u) has not"
fi
wait "$AW"
expect_eq "the attached exec ran to its end" "$?" 0
expect_eq "idle once the exec ended: stopped" "$(pj_wait_state awake stopped 8)" stopped
expect_eq "--max-lifetime: stopped" "$(pj_wait_state lifetime stopped 8)" stopped

EV=$("$AJ" events --json idle-stop)
expect_contains "idle stop: idle event with its action" "$EV" '"event":"idle","data":{"action":"stop"}'
expect_contains "idle stop: stop event says why" "$EV" '"reason":"idle timeout"'
EV=$("$AJ" events --json lifetime)
expect_contains "max lifetime: limit event" "$EV" '"limit":"max_lifetime"'
expect_contains "max lifetime: stop event says why" "$EV" '"reason":"maximum lifetime reached"'

# The lifetime counts from each start.
aj_run start lifetime
expect_eq "start after the lifetime stop: exit 0" "$RC" 0
expect_eq "start after the lifetime stop: running" "$(pj_state lifetime)" running
expect_eq "start after the lifetime stop: generation 2" "$(pj_field lifetime 'd["generation"]')" 2
expect_eq "--max-lifetime again after the new start" "$(pj_wait_state lifetime stopped 8)" stopped

# Retention: stopped at least 4 s ago -> deleted by gc; running or without retention -> kept.
while [ $((($(date +%s%N) - STOPPED_AT) / 1000000)) -lt 4300 ]; do sleep 0.1; done
GONE_ID=$(pj_id gone)
aj_run gc --json
expect_eq "gc after the retention: exit 0" "$RC" 0
printf '%s' "$OUT" >"$STATE/../gc.json"
expect_eq "gc --json: one sandbox deleted" "$(json "$STATE/../gc.json" 'd["sandboxes_deleted"]')" 1
expect_eq "gc: the stopped sandbox past its retention is deleted" "$(pj_state gone)" MISSING
check "gc: its workspace directory is removed" [ ! -e "$STATE/sandboxes/$GONE_ID" ]
expect_eq "gc: a running sandbox with a retention is kept" "$(pj_state keep)" running
expect_eq "gc: a stopped sandbox without retention is kept" "$(pj_state plain)" stopped
aj_run events "$GONE_ID"
expect_contains "gc: the deletion is an event" "$OUT" remove

aj_run stop keep
aj_run gc
expect_eq "gc: kept right after its stop" "$(pj_state keep)" stopped
sleep 4.3
aj_run gc
expect_eq "gc: the retention counts from the stop" "$(pj_state keep)" MISSING
