#!/usr/bin/env bash
# The daemon holds no sandbox: kill -9 of agentjail serve leaves every running sandbox running
# (their supervisors are separate processes, forked by the daemon's zygote, which dies with
# the daemon, each with a stack canary of its own, exec'd instead once one crashed; without a
# zygote the daemon forks and execs them), and a restarted daemon
# replaces the stale socket
# and serves them again (state, files, events, actions). A socket another daemon listens on,
# or a path that is not a socket, is not taken over. SIGTERM stops accepting at once, lets the
# request in flight finish, exits 0, and leaves the sandboxes running.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
sv_start || { not_ok "serve starts ($(tail -5 "$SV_LOG"))"; exit 0; }
sv_create r1
sv_create r2
api PUT '/v1/sandboxes/r1/files?path=kept.txt' -H 'Content-Type: application/octet-stream' --data-binary 'before the crash'
SUP1=$(pj_field r1 'd["supervisor_pid"]')
SUP2=$(pj_field r2 'd["supervisor_pid"]')
check "the supervisors are not the daemon's children" [ "$(ps -o ppid= -p "$SUP1" | tr -d ' ')" != "$SV_PID" ]
# gone, or a zombie nobody reaped yet
dead() { ! [ -e "/proc/$1" ] || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat"; }
ZYGOTE=$(pgrep -P "$SV_PID" -f '__zygote')
expect_eq "the daemon has one zygote, its child" "$(wc -w <<<"$ZYGOTE")" 1
expect_eq "the zygote forked the supervisors (its title for them)" \
	"$(tr '\0' ' ' <"/proc/$SUP1/cmdline" | sed 's/ *$//')" "agentjail __supervise $(pj_id r1)"
check "... which run in a session of their own, not the zygote's" \
	[ "$(ps -o sid= -p "$SUP1" | tr -d ' ')" != "$(ps -o sid= -p "$ZYGOTE" | tr -d ' ')" ]
expect_eq "... and are the zygote's children (it reaps them)" \
	"$(ps -o ppid= -p "$SUP1" | tr -d ' ')" "$ZYGOTE"
if is_root && [ "$(uname -m)" = x86_64 ]; then
	# The stack canary at %fs:0x28 of each, read through ptrace: forked from the zygote, the
	# supervisors still draw their own.
	if CANARIES=$(python3 "$AJ_ROOT/tests/helpers/canary.py" "$ZYGOTE" "$SUP1" "$SUP2" 2>&1); then
		expect_eq "each supervisor has a stack canary of its own, not the zygote's" \
			"$(tr ' ' '\n' <<<"$CANARIES" | sort -u | wc -l)" 3
		expect_eq "... each with its low byte 0 (no string copy runs past it)" \
			"$(tr ' ' '\n' <<<"$CANARIES" | grep -vc '00$')" 0
	else
		skip "each supervisor has a stack canary of its own" "ptrace refused: $CANARIES"
	fi
else
	skip "each supervisor has a stack canary of its own" \
		"reading it takes ptrace as root, on x86-64 (the main pass checks it)"
fi

# ---- kill -9 and restart ------------------------------------------------------------------------

kill -9 "$SV_PID"
wait "$SV_PID" 2>/dev/null
check "kill -9: the daemon is gone" pid_gone "$SV_PID"
check "kill -9: its zygote is gone with it" pj_wait 10 dead "$ZYGOTE"
check "kill -9: the stale socket file is left behind" test -S "$SOCK"
sleep 0.3
check "kill -9: r1's supervisor still runs" kill -0 "$SUP1"
check "kill -9: r2's supervisor still runs" kill -0 "$SUP2"
expect_eq "kill -9: r1 still running (CLI)" "$(pj_state r1)" running
pj_x r1 cat kept.txt
expect_eq "kill -9: r1 still works (CLI exec)" "$OUT" "before the crash"

sv_start || { not_ok "a restarted daemon replaces the stale socket ($(tail -5 "$SV_LOG"))"; exit 0; }
ok "a restarted daemon replaces the stale socket and serves"
api GET /v1/sandboxes/r1
expect_eq "restart: r1 running" "$(bj 'd["state"]')" running
expect_eq "restart: r1 still generation 1 (not restarted)" "$(bj 'd["generation"]')" 1
expect_eq "restart: same supervisor" "$(pj_field r1 'd["supervisor_pid"]')" "$SUP1"
api GET /v1/sandboxes
expect_eq "restart: both listed" "$(bj '" ".join(sorted(s["name"] + ":" + s["state"] for s in d["sandboxes"]))')" "r1:running r2:running"
api GET '/v1/sandboxes/r1/files?path=kept.txt'
expect_eq "restart: the file written before the crash" "$BODY" "before the crash"
api PUT '/v1/sandboxes/r2/files?path=after.txt' -H 'Content-Type: application/octet-stream' --data-binary 'after'
expect_api "restart: writes work" 201
api POST /v1/sandboxes/r2/stop
expect_eq "restart: actions work (stop)" "$(bj 'd["state"]')" stopped
check "restart: r2's old supervisor is gone after the stop" pj_wait 10 pid_gone "$SUP2"
api GET /v1/sandboxes/r1/events
expect_eq "restart: the events from before the crash" "$(bj '[e["event"] for e in d["events"]][:2]')" "['create', 'start']"

# A supervisor that dies of a signal saying its memory went wrong (SIGABRT, as a failed
# canary check raises it) makes the zygote exec every later supervisor, so that none shares
# the layout the crash may have shown. The sandboxes it forked before keep running.
ZYGOTE=$(pgrep -P "$SV_PID" -f '__zygote')
sv_create r4
sv_create r5
SUP4=$(pj_field r4 'd["supervisor_pid"]')
SUP5=$(pj_field r5 'd["supervisor_pid"]')
kill -ABRT "$SUP4"
check "a supervisor killed by SIGABRT: the zygote says so in the daemon's log" \
	pj_wait 10 grep -q "process $SUP4 (a supervisor, or what one left) died of Aborted; from now on the zygote execs each supervisor" "$SV_LOG"
check "... and keeps running" kill -0 "$ZYGOTE"
check "... the supervisors it forked before keep running" kill -0 "$SUP5"
expect_eq "... their sandboxes too" "$(pj_state r5)" running
expect_eq "... the crashed one is stopped" "$(pj_state r4)" stopped
sv_create r3
SUP3=$(pj_field r3 'd["supervisor_pid"]')
expect_eq "after the crash: sandboxes still start" "$(pj_state r3)" running
expect_contains "... with a supervisor the zygote exec'd" \
	"$(tr '\0' ' ' <"/proc/$SUP3/cmdline")" "__supervise --state-dir"
expect_eq "... and still reaps (its parent)" "$(ps -o ppid= -p "$SUP3" | tr -d ' ')" "$ZYGOTE"

# A zygote that died leaves the daemon starting supervisors itself (fork and exec).
kill -9 "$ZYGOTE"
sv_create r6
expect_eq "without its zygote the daemon still starts sandboxes" "$(pj_state r6)" running
expect_contains "... whose supervisor it forked and exec'd" \
	"$(tr '\0' ' ' <"/proc/$(pj_field r6 'd["supervisor_pid"]')/cmdline")" "__supervise --state-dir"
api DELETE '/v1/sandboxes/r6?force=true'
expect_api "... and removes them" 204
for n in r3 r4 r5; do api DELETE "/v1/sandboxes/$n?force=true"; done

# ---- sockets that are not taken over --------------------------------------------------------------

OUT=$(timeout 20 "$AJ" serve --socket "$SOCK" --state-dir "$STATE" 2>&1)
RC=$?
expect_eq "a second daemon on a live socket: exit 125" "$RC" 125
expect_contains "a second daemon: says another daemon listens" "$OUT" "another daemon is listening"
api GET /v1/health
expect_api "the first daemon still serves" 200
printf 'not a socket\n' >"$SV_DIR/file.sock"
OUT=$(timeout 20 "$AJ" serve --socket "$SV_DIR/file.sock" --state-dir "$STATE" 2>&1)
expect_contains "a regular file at the socket path: refused" "$OUT" "not a socket"
expect_eq "a regular file at the socket path: untouched" "$(cat "$SV_DIR/file.sock")" "not a socket"
if is_root; then
	D=/run/agentjail-test-$$
	timeout 20 "$AJ" serve --socket "$D/sub/api.sock" --state-dir "$STATE" >/dev/null 2>&1 &
	P=$!
	pj_wait 10 test -S "$D/sub/api.sock"
	expect_eq "socket mode 0600 in a new 0700 directory" "$(stat -c %a "$D/sub" "$D/sub/api.sock" | tr '\n' ' ')" "700 600 "
	kill -TERM "$P"
	wait "$P"
	rm -rf "$D"
else
	expect_eq "socket mode 0600" "$(stat -c %a "$SOCK")" 600
fi

# ---- SIGTERM with a request in flight ----------------------------------------------------------------

# A start that waits on the sandbox's lock (held here) is in flight when SIGTERM comes; the
# lock is released only after the daemon has stopped listening.
R2_ID=$(pj_id r2)
R2_LOCK=$STATE/sandboxes/$R2_ID/lock
R2_INO=$(stat -c %i "$R2_LOCK")
flock -o "$R2_LOCK" sleep 120 &
LOCKER=$!
pj_wait 10 sh -c "! flock -n '$R2_LOCK' true" || not_ok "the test holds r2's lock"
curl -sS --max-time 60 --unix-socket "$SOCK" -o "$SV_DIR/inflight.json" -w '%{http_code}' -X POST http://aj/v1/sandboxes/r2/start >"$SV_DIR/inflight.code" &
CURL=$!
# In flight means the daemon waits on the lock: a blocked flock on its inode in /proc/locks.
check "SIGTERM: the request waits on the sandbox's lock" \
	pj_wait 30 sh -c "grep -q -- '-> FLOCK .*:$R2_INO ' /proc/locks"
kill -TERM "$SV_PID"
pj_wait 5 test ! -e "$SOCK"
check "SIGTERM: the socket goes at once" test ! -e "$SOCK"
check "SIGTERM: new connections are refused" [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --unix-socket "$SOCK" http://aj/v1/health)" = 000 ]
sleep 1
check "SIGTERM: the daemon waits for the request in flight" kill -0 "$SV_PID"
kill "$LOCKER" $(pgrep -P "$LOCKER") 2>/dev/null
wait "$LOCKER" 2>/dev/null
wait "$CURL"
expect_eq "SIGTERM: the request in flight completes (200)" "$(cat "$SV_DIR/inflight.code")" 200
expect_eq "SIGTERM: ... with the started sandbox" "$(json "$SV_DIR/inflight.json" 'd["state"]')" running
wait "$SV_PID"
expect_eq "SIGTERM: exit 0" "$?" 0
expect_eq "SIGTERM: r1 keeps running" "$(pj_state r1)" running
expect_eq "SIGTERM: r2 keeps running" "$(pj_state r2)" running
check "SIGTERM: r1's supervisor is the same" kill -0 "$SUP1"

sv_start || not_ok "restart after SIGTERM"
api GET /v1/sandboxes
expect_eq "after SIGTERM and restart: both served, running" "$(bj '" ".join(sorted(s["name"] + ":" + s["state"] for s in d["sandboxes"]))')" "r1:running r2:running"
sv_stop

# ---- the periodic gc: retention is applied without anyone running gc ------------------------

aj_run create --name short --stopped --retention 1ms $PJ_FLAGS
[ "$RC" = 0 ] || pj_bail "create short"
sv_start --gc-interval 1s || not_ok "serve --gc-interval 1s starts"
T=0
while [ "$(pj_state short)" != MISSING ] && [ $T -lt 100 ]; do sleep 0.1; T=$((T + 1)); done
expect_eq "--gc-interval 1s: a stopped sandbox past its retention is deleted by the daemon" \
	"$(pj_state short)" MISSING
sv_stop
aj_run create --name kept --stopped --retention 1ms $PJ_FLAGS
sv_start --gc-interval 0 || not_ok "serve --gc-interval 0 starts"
sleep 2.5
expect_eq "--gc-interval 0: no periodic gc" "$(pj_state kept)" stopped
sv_stop
aj_run serve --gc-interval 0.5s --socket "$SV_DIR/x.sock"
expect_contains "--gc-interval under 1s but not 0: refused, named" "$RC $ERR" "125 agentjail: [usage] --gc-interval: expected 0 or 1s to 24h"
sv_done
