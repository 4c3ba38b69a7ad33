#!/usr/bin/env bash
# Persistent sandboxes through their life: create (name, labels, --json), ls with --label
# filters, inspect, pause and resume (processes frozen, memory kept), stop (compute gone,
# workspace kept) and start (generation + 1, files still there), rm and rm -f (nothing left:
# supervisor, init, control socket, cgroups, workspace), and the events each step records.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

# ---- create, ls, inspect -------------------------------------------------------------------

# shellcheck disable=SC2086
aj_run create --json --name life --label team=red --label env=dev $PJ_FLAGS
[ "$RC" = 0 ] || pj_bail "create --json life"
printf '%s' "$OUT" >"$STATE/../create.json"
C=$STATE/../create.json
expect_eq "create --json: name" "$(json "$C" 'd["name"]')" life
expect_eq "create --json: state" "$(json "$C" 'd["state"]')" running
expect_eq "create --json: generation" "$(json "$C" 'd["generation"]')" 1
expect_eq "create --json: labels" "$(json "$C" 'sorted(d["labels"].items())')" \
	"[('env', 'dev'), ('team', 'red')]"
ID=$(json "$C" 'd["id"]')
check "create --json: id is 16 hex digits" matches "$ID" "^[0-9a-f]{16}$"
expect_eq "create --json: empty workspace stack" "$(json "$C" 'd["layers"]')" "[]"
if is_root; then
	check "create: the sandbox has its cgroups" [ -n "$(pj_cgroup_dirs "$ID")" ]
fi
SUP=$(json "$C" 'd["supervisor_pid"]')
check "create --json: the supervisor pid is a live process" kill -0 "$SUP"

pj_create other --label team=blue --label env=dev
expect_eq "create: prints the name" "$OUT" other
# shellcheck disable=SC2086
aj_run create $PJ_FLAGS --stopped
expect_eq "create without --name: exit 0" "$RC" 0
GEN_NAME=$OUT
check "create without --name: generated name sb-<8 hex>" matches "$GEN_NAME" "^sb-[0-9a-f]{8}$"
expect_eq "create --stopped: state" "$(pj_state "$GEN_NAME")" stopped
expect_eq "create --stopped: generation 0" "$(pj_field "$GEN_NAME" 'd["generation"]')" 0

ls_names() {
	"$AJ" ls --json "$@" | python3 -c 'import json,sys; print(" ".join(sorted(s["name"] for s in json.load(sys.stdin))))'
}
expect_eq "ls: all three" "$(ls_names)" "$(printf '%s\n' life other "$GEN_NAME" | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "ls --label team=red" "$(ls_names --label team=red)" life
expect_eq "ls --label env=dev" "$(ls_names --label env=dev)" "life other"
expect_eq "ls --label env=dev --label team=blue" "$(ls_names --label env=dev --label team=blue)" other
expect_eq "ls --label team=green: none" "$(ls_names --label team=green)" ""
expect_eq "ls --label with a key but another value: none" "$(ls_names --label env=prod)" ""
aj_run ls
expect_contains "ls (table): header" "$OUT" "NAME"
expect_contains "ls (table): the sandbox with its id" "$OUT" "$ID"
expect_contains "ls (table): its labels" "$OUT" "env=dev,team=red"

aj_run inspect life
expect_eq "inspect: exit 0" "$RC" 0
printf '%s' "$OUT" >"$STATE/../inspect.json"
I=$STATE/../inspect.json
expect_eq "inspect: id" "$(json "$I" 'd["id"]')" "$ID"
expect_eq "inspect: by id finds the same sandbox" "$(pj_field "$ID" 'd["name"]')" life
expect_eq "inspect: started is set" "$(json "$I" 'd["started"] is not None')" True
expect_eq "inspect: stopped is unset" "$(json "$I" 'd["stopped"]')" None
expect_eq "inspect: the stored policy has the workspace" \
	"$(json "$I" 'd["policy"]["filesystem"]["workspace"]')" /home/user
expect_eq "inspect: default idle action" "$(json "$I" 'd["ttl"]["idle_action"]')" pause

# ---- the sandbox is usable ------------------------------------------------------------------

pj_x life sh -c 'id -un; pwd; echo kept >state.txt; mkdir -p sub && echo deep >sub/f'
expect_eq "exec: runs as the sandbox user in the workspace" "$OUT" "user
/home/user"
expect_eq "exec: exit 0" "$RC" 0

# ---- pause / resume -------------------------------------------------------------------------

# A counter that a shell keeps in memory and writes into the workspace every 50 ms. Through
# the host side of the workspace (the sandbox's upper directory) it can be read while the
# sandbox is paused, when exec is refused.
UPPER=$STATE/sandboxes/$ID/upper
pj_x life sh -c 'i=0; while :; do i=$((i+1)); echo "$$ $i" >counter.new; mv counter.new counter; sleep 0.05; done </dev/null >/dev/null 2>&1 &'
pj_wait 5 test -s "$UPPER/counter"
counter() { cut -d' ' -f2 "$UPPER/counter" 2>/dev/null; }
loop_pid() { cut -d' ' -f1 "$UPPER/counter" 2>/dev/null; }
c0=$(counter)
sleep 0.3
check "background counter advances while running" [ "$(counter)" -gt "${c0:-0}" ]

if ! is_root; then
	aj_run pause life
	expect_eq "pause without a freezer cgroup: refused (exit 125)" "$RC" 125
	expect_contains "pause without a freezer cgroup: says why" "$ERR" "cgroup"
	expect_eq "pause refused: still running" "$(pj_state life)" running
	skip "pause freezes processes" "pausing needs the freezer cgroup, which uid $(id -u) has not"
else
	LOOP=$(loop_pid)
	aj_run pause life
	expect_eq "pause: exit 0" "$RC" 0
	expect_eq "pause: state paused" "$(pj_state life)" paused
	fz=$(for d in $(pj_cgroup_dirs "$ID"); do
		if [ -f "$d/freezer.state" ]; then cat "$d/freezer.state"; fi
		if [ -f "$d/cgroup.freeze" ]; then sed 's/^1$/FROZEN/' "$d/cgroup.freeze"; fi
	done)
	expect_eq "pause: the sandbox's cgroup is frozen" "$fz" FROZEN
	sleep 0.2
	p1=$(counter)
	sleep 1
	expect_eq "pause: the counter stops advancing" "$(counter)" "$p1"
	pj_x life true
	check "pause: exec is refused while paused" [ "$RC" != 0 ]
	expect_contains "pause: exec says the sandbox is paused" "$ERR" paused
	aj_run resume life
	expect_eq "resume: exit 0" "$RC" 0
	expect_eq "resume: state running" "$(pj_state life)" running
	sleep 0.5
	p2=$(counter)
	check "resume: the counter advances again" [ "${p2:-0}" -gt "${p1:-0}" ]
	# Memory kept: the same process went on counting from where it was frozen; a restart
	# would have begun again at 1 under another pid.
	expect_eq "resume: the same process kept running" "$(loop_pid)" "$LOOP"
	check "resume: the count went on from its frozen value" [ "${p2:-0}" -gt "${p1:-0}" -a "${p2:-0}" -lt $((p1 + 40)) ]

	# A paused sandbox whose supervisor is killed does not stay behind, frozen: the cgroup
	# guard thaws what it kills (v1's frozen tasks take a SIGKILL only once thawed).
	pj_create frozen
	pj_x frozen sh -c 'sleep 300 >/dev/null 2>&1 &'
	aj_run pause frozen
	expect_eq "pause frozen" "$RC" 0
	FID=$(pj_id frozen)
	SP=$(pj_field frozen 'd["supervisor_pid"]')
	FINIT=$(pgrep -P "$SP" -x agentjail-init)
	kill -KILL "$SP"
	gone=
	for _ in $(seq 50); do
		kill -0 "$FINIT" 2>/dev/null || { gone=1; break; }
		sleep 0.1
	done
	check "a paused sandbox's supervisor killed: its init (${FINIT:-?}) is gone within 5 s" \
		sh -c '[ -n "$1" ] && [ -n "$2" ]' sh "$FINIT" "$gone"
	for _ in $(seq 50); do
		[ -z "$(pj_cgroup_dirs "$FID")" ] && break
		sleep 0.1
	done
	expect_eq "... and its cgroups are removed" "$(pj_cgroup_dirs "$FID")" ""
	aj_run rm -f frozen

	# pause returns once the kernel says every task is frozen, not once it was asked to
	# freeze: until then v1 reads FREEZING, v2 "frozen 0". Busy tasks, some forking, make
	# that window wide (most reads right after a bare write of FROZEN say FREEZING); the
	# state is read the moment pause returns. Another sandbox, so that life's events stay
	# as checked below.
	pj_create busy
	pj_x busy sh -c 'for i in $(seq 20); do (while :; do :; done) </dev/null >/dev/null 2>&1 & done
		for i in $(seq 4); do (while :; do /bin/true; done) </dev/null >/dev/null 2>&1 & done'
	BID=$(pj_id busy)
	frozen_now() {
		local d
		for d in $(pj_cgroup_dirs "$BID"); do
			if [ -f "$d/freezer.state" ]; then cat "$d/freezer.state"; fi
			if [ -f "$d/cgroup.events" ]; then
				sed -n 's/^frozen 1$/FROZEN/p; s/^frozen 0$/NOT-FROZEN/p' "$d/cgroup.events"
			fi
		done
	}
	bad=
	for i in $(seq 20); do
		"$AJ" pause busy >/dev/null 2>&1 || bad="$bad $i:pause-failed"
		st=$(frozen_now)
		[ "$st" = FROZEN ] || bad="$bad $i:$(echo $st)"
		"$AJ" resume busy >/dev/null 2>&1
	done
	expect_eq "pause under load: whenever it returns, the cgroup reads frozen" "$bad" ""
	aj_run rm -f busy
fi

# ---- stop / start ---------------------------------------------------------------------------

INIT=$(pj_init_pid life)
SUP=$(pj_field life 'd["supervisor_pid"]')
SOCK=$(pj_field life 'd.get("socket") or ""')
check "inspect: the control socket exists" [ -S "$SOCK" ]
aj_run stop life
expect_eq "stop: exit 0" "$RC" 0
expect_eq "stop: state stopped" "$(pj_state life)" stopped
check "stop: the supervisor is gone" pj_wait 5 pid_gone "$SUP"
check "stop: the sandbox's init is gone" pj_wait 5 pid_gone "${INIT:-0}"
expect_eq "stop: supervisor_pid is null" "$(pj_field life 'd["supervisor_pid"]')" None
expect_eq "stop: stopped time set" "$(pj_field life 'd["stopped"] is not None')" True
check "stop: no control socket left" [ -n "$SOCK" -a ! -e "$SOCK" ]
expect_eq "stop: inspect shows no socket" "$(pj_field life 'd.get("socket") or ""')" ""
expect_eq "stop: no cgroup left" "$(pj_cgroup_dirs "$ID")" ""
c_stop=$(counter)
sleep 0.3
expect_eq "stop: the background counter is gone with the compute" "$(counter)" "$c_stop"
check "stop: the workspace is kept on disk" [ -f "$UPPER/state.txt" ]

aj_run start life
expect_eq "start: exit 0" "$RC" 0
expect_eq "start: state running" "$(pj_state life)" running
expect_eq "start: generation 2" "$(pj_field life 'd["generation"]')" 2
pj_x life sh -c 'cat state.txt sub/f'
expect_eq "start: files written before the stop are there" "$OUT" "kept
deep"
pj_x life sh -c 'ps -eo args | grep -c "[c]ounter.new"'
expect_eq "start: processes of the previous generation did not come back" "$OUT" 0
check "start: a new supervisor" [ "$(pj_field life 'd["supervisor_pid"]')" != "$SUP" ]
aj_run stop life
aj_run start life
expect_eq "stop + start again: generation 3" "$(pj_field life 'd["generation"]')" 3

if is_root; then
	# A paused sandbox stops too: frozen processes are thawed to die.
	pj_x life sh -c 'sleep 300 </dev/null >/dev/null 2>&1 &'
	aj_run pause life
	PINIT=$(pj_init_pid life)
	aj_run stop life
	expect_eq "stop of a paused sandbox: exit 0" "$RC" 0
	expect_eq "stop of a paused sandbox: stopped" "$(pj_state life)" stopped
	check "stop of a paused sandbox: its init is gone" pj_wait 5 pid_gone "${PINIT:-0}"
	expect_eq "stop of a paused sandbox: no cgroup left" "$(pj_cgroup_dirs "$ID")" ""
	aj_run start life
	expect_eq "start after stopping it paused: exit 0" "$RC" 0
fi

# ---- rm ------------------------------------------------------------------------------------

aj_run rm other
expect_eq "rm of a running sandbox without -f: exit 3" "$RC" 3
expect_contains "rm without -f: says it is running" "$ERR" running
expect_eq "rm without -f: still running" "$(pj_state other)" running

OID=$(pj_id other)
OSUP=$(pj_field other 'd["supervisor_pid"]')
OINIT=$(pj_init_pid other)
OSOCK=$(pj_field other 'd.get("socket") or ""')
aj_run rm -f other
expect_eq "rm -f of a running sandbox: exit 0" "$RC" 0
expect_eq "rm -f: gone from inspect" "$(pj_state other)" MISSING
expect_eq "rm -f: gone from ls" "$(ls_names --label team=blue)" ""
check "rm -f: the supervisor is gone" pj_wait 5 pid_gone "$OSUP"
check "rm -f: the init is gone" pj_wait 5 pid_gone "${OINIT:-0}"
check "rm -f: the workspace directory is removed" [ ! -e "$STATE/sandboxes/$OID" ]
check "rm -f: no control socket left" [ -n "$OSOCK" -a ! -e "$OSOCK" ]
expect_eq "rm -f: no cgroup left" "$(pj_cgroup_dirs "$OID")" ""

GID=$(pj_id "$GEN_NAME")
aj_run rm "$GEN_NAME"
expect_eq "rm of a stopped sandbox: exit 0" "$RC" 0
check "rm: the workspace directory is removed" [ ! -e "$STATE/sandboxes/$GID" ]
aj_run rm "$GEN_NAME"
expect_eq "rm again: no such sandbox (exit 1)" "$RC" 1

# ---- events --------------------------------------------------------------------------------

types() {
	"$AJ" events --json "$1" | python3 -c '
import json, sys
print(" ".join(json.loads(l)["event"] for l in sys.stdin if l.strip()))'
}
EV=$(types life)
if is_root; then
	want="create start exec exit exec exit pause resume stop start exec exit exec exit stop start exec exit pause stop start"
else
	want="create start exec exit exec exit stop start exec exit exec exit stop start"
fi
expect_eq "events: the lifecycle in order" "$EV" "$want"
"$AJ" events --json life >"$STATE/../events.jsonl"
ev_field() {
	python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(eval(sys.argv[2]))' "$STATE/../events.jsonl" "$1"
}
expect_eq "events: every line names the sandbox by id" \
	"$(ev_field 'sorted(set(e["sandbox"] for e in ev))')" "['$ID']"
if is_root; then GENS="[1, 2, 3, 4]"; else GENS="[1, 2, 3]"; fi
expect_eq "events: start carries the generation" \
	"$(ev_field '[e["data"]["generation"] for e in ev if e["event"] == "start"]')" "$GENS"
expect_eq "events: exec carries the argv" \
	"$(ev_field '[e["data"]["argv"][0] for e in ev if e["event"] == "exec"][0]')" sh
expect_eq "events: exit carries the exit code" \
	"$(ev_field '[e["data"]["exit_code"] for e in ev if e["event"] == "exit"][0]')" 0
expect_eq "events: stop says why" \
	"$(ev_field '[e["data"]["reason"] for e in ev if e["event"] == "stop"][0]')" "stop requested"
aj_run events other
expect_eq "events of a removed sandbox by name: no such sandbox (exit 1)" "$RC" 1
EVO=$(types "$OID")
expect_eq "events of a removed sandbox by id: kept, ending in remove" "${EVO##* }" remove
aj_run events --json
expect_contains "events (all): includes other sandboxes" "$OUT" "$OID"

aj_run rm -f life
expect_eq "rm -f life: exit 0" "$RC" 0
expect_eq "at the end: no sandbox left" "$(ls_names)" ""
expect_eq "at the end: no supervisor of this state directory left" "$(pj_supervisors)" ""
