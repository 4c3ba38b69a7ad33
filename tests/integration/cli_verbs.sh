#!/usr/bin/env bash
# The verbs docker and podman users reach for: ps (ls with docker's default, -a, -q), logs
# (spawned commands' output and the sandbox's events: -n, --since, -t, --json, -f until the
# sandbox stops), top (init and what it started, pids as the sandbox sees them), exec -it, and
# fork --name NAME making exactly NAME for one fork. Commands are spawned over the supervisor's
# control socket, as the HTTP API and the MCP server spawn theirs.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

# spawn NAME ARGV-JSON: starts a spawned command in sandbox NAME; prints its exec id.
spawn() {
	local sock
	sock=$("$AJ" inspect "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["socket"])')
	python3 - "$sock" "$2" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(json.dumps({"op": "spawn", "argv": json.loads(sys.argv[2])}).encode())
r = json.loads(s.recv(65536))
print(r["exec"] if r.get("ok") else "error: %s" % r)
EOF
}

pj_create web
pj_create idle --stopped

# ---- ps and ls ---------------------------------------------------------------------------

aj_run ps
expect_eq "ps: exit 0" "$RC" 0
expect_contains "ps lists the running sandbox" "$OUT" "web "
expect_not_contains "ps leaves out a stopped one (docker's default)" "$OUT" "idle "
aj_run ps -a
expect_contains "ps -a lists the stopped one too" "$OUT" "idle "
aj_run ls
expect_contains "ls still lists every sandbox" "$OUT" "idle "
aj_run ps -aq
expect_eq "ps -aq: the names only" "$(printf '%s\n' "$OUT" | sort | tr '\n' ' ')" "idle web "
aj_run ps --json
expect_eq "ps --json: the running ones" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([s["name"] for s in json.load(sys.stdin)])')" "['web']"
aj_run ps extra
expect_eq "ps with an argument: 125" "$RC" 125

# ---- logs ----------------------------------------------------------------------------------

ID1=$(spawn web '["sh", "-c", "echo out-one; echo err-one >&2; echo out-two"]')
check "a command spawned over the control socket ($ID1)" test "$ID1" -gt 0 2>/dev/null
wait_until 10 sh -c "\"$AJ\" events web | grep -q '\"exec\":$ID1,\"exit_code\"'"
pj_x web true
aj_run logs web
expect_eq "logs: exit 0" "$RC" 0
expect_contains "logs: the command's stdout on stdout" "$OUT" "out-one
out-two"
expect_eq "logs: its stderr on stderr" "$ERR" "err-one"
expect_contains "logs: the sandbox's events (create)" "$OUT" "[event] create"
expect_contains "logs: the spawn event" "$OUT" "[event] spawn {\"exec\":$ID1"
expect_contains "logs: an exec's event too" "$OUT" '[event] exec {"exec":'
first_event=$(printf '%s\n' "$OUT" | grep -n 'event\] spawn' | head -1 | cut -d: -f1)
first_out=$(printf '%s\n' "$OUT" | grep -n '^out-one$' | cut -d: -f1)
check "logs: in time order (the spawn before its output)" test "$first_event" -lt "$first_out"

aj_run logs -n 1 web
expect_eq "logs -n 1: one line" "$(printf '%s\n' "$OUT" | wc -l)" 1
expect_contains "logs -n 1: the last one" "$OUT" '[event] exit'
aj_run logs --tail=all web
expect_contains "logs --tail all: everything" "$OUT" "[event] create"
aj_run logs --since 1h web
expect_contains "logs --since 1h: all of it" "$OUT" "out-one"
aj_run logs --since 2099-01-01T00:00:00Z web
expect_eq "logs --since a future time: nothing" "$OUT$ERR" ""
aj_run logs --since yesterday web
expect_eq "logs --since bad: 125" "$RC" 125
expect_contains "logs --since bad: names the option" "$ERR" '--since: expected a time'
aj_run logs -t web
check "logs -t: output lines start with their time" \
	sh -c "printf '%s\n' \"\$1\" | grep -Eq '^20[0-9-]+T[0-9:.]+Z out-one$'" _ "$OUT"
aj_run logs --json web
printf '%s\n' "$OUT" >"$STATE/../logs.jsonl"
expect_eq "logs --json: one object per line, outputs and events" \
	"$(python3 -c '
import json, sys
kinds = set()
for line in open(sys.argv[1]):
    d = json.loads(line)
    kinds.add(d["kind"])
    if d["kind"] == "output" and d["data"] == "err-one\n":
        kinds.add("stderr:" + d["stream"])
print(" ".join(sorted(kinds)))' "$STATE/../logs.jsonl")" "event output stderr:stderr"
aj_run logs ghost
expect_eq "logs of an unknown sandbox: 1" "$RC" 1
aj_run logs
expect_eq "logs without a name: 125" "$RC" 125
aj_run logs idle
expect_eq "logs of a stopped sandbox: 0" "$RC" 0
expect_contains "logs of a stopped sandbox: its events" "$OUT" "[event] create"
expect_contains "logs of a stopped sandbox: says the output is gone" "$ERR" "is stopped"

# -f: the history, then what comes, until the sandbox stops.
F=$STATE/../follow.out
"$AJ" logs -f -n 0 web >"$F" 2>&1 &
LPID=$!
wait_until 10 sh -c "ls /proc/$LPID/fd >/dev/null 2>&1"
sleep 0.5
ID2=$(spawn web '["sh", "-c", "for i in 1 2 3; do echo tick $i; sleep 0.2; done"]')
wait_until 10 grep -q "tick 3" "$F"
expect_eq "logs -f: the new command's output, once each" "$(grep -c '^tick' "$F")" 3
expect_contains "logs -f: its spawn event" "$(cat "$F")" "[event] spawn {\"exec\":$ID2"
expect_not_contains "logs -f -n 0: no history" "$(cat "$F")" "out-one"

# ---- top -------------------------------------------------------------------------------------

ID3=$(spawn web '["sleep", "30"]')
wait_until 10 sh -c "\"$AJ\" top web | grep -q 'sleep 30'"
aj_run top web
expect_eq "top: exit 0" "$RC" 0
expect_contains "top: a header" "$OUT" "PID     HOST_PID"
expect_contains "top: init is PID 1 inside" "$(printf '%s\n' "$OUT" | sed -n 2p)" "agentjail-init"
check "top: init's line starts with pid 1" sh -c "printf '%s\n' \"\$1\" | sed -n 2p | grep -q '^1 '" _ "$OUT"
expect_contains "top: the spawned command" "$OUT" "sleep 30"
aj_run top --json web
printf '%s' "$OUT" >"$STATE/../top.json"
expect_eq "top --json: init is pid 1, its parent outside (0)" "$(json "$STATE/../top.json" '(d[0]["pid"], d[0]["ppid"], d[0]["command"])')" "(1, 0, 'agentjail-init')"
sleep_pid=$(json "$STATE/../top.json" '[p["host_pid"] for p in d if p["command"] == "sleep 30"][0]')
expect_eq "top --json: the host pid is the sleep's" "$(tr '\0' ' ' </proc/"$sleep_pid"/cmdline)" "sleep 30 "
expect_eq "top --json: its parent inside is init" "$(json "$STATE/../top.json" '[p["ppid"] for p in d if p["command"] == "sleep 30"][0]')" 1
INIT_HOST=$(json "$STATE/../top.json" 'd[0]["host_pid"]')
expect_eq "top --json: init's host pid is a child of the supervisor" \
	"$(ps -o ppid= -p "$INIT_HOST" | tr -d ' ')" "$(pj_field web 'd["supervisor_pid"]')"
TOP_UID=$(json "$STATE/../top.json" '[p["uid"] for p in d if p["command"] == "sleep 30"][0]')
pj_x web id -u
expect_eq "top --json: the uid as the sandbox sees it (the sandbox user)" "$TOP_UID" "$OUT"
aj_run top idle
expect_eq "top of a stopped sandbox: 3" "$RC" 3
expect_contains "top of a stopped sandbox: says so" "$ERR" 'is stopped'
aj_run top ghost
expect_eq "top of an unknown sandbox: 1" "$RC" 1

# ---- exec -it ------------------------------------------------------------------------------

aj_run exec -it web -- tty
expect_eq "exec -it: exit 0" "$RC" 0
expect_contains "exec -it: a terminal inside" "$OUT" "/dev/pts/"
aj_run exec -ie X=1 web -- sh -c 'echo $X'
expect_eq "exec -ie NAME=VALUE: a cluster whose last letter takes the value" "$OUT" 1

# ---- fork --name -------------------------------------------------------------------------------

aj_run fork idle --name solo --stopped
expect_eq "fork --name NAME: exit 0" "$RC" 0
expect_eq "fork --name NAME, one fork: exactly NAME" "$OUT" "solo"
expect_eq "... which exists" "$(pj_field solo 'd["name"]')" solo
aj_run fork idle --name many --count 2 --stopped
expect_eq "fork --name P --count 2: P-1 and P-2" "$OUT" "many-1
many-2"
aj_run fork idle --name solo --stopped
expect_eq "fork --name of a taken name: 4" "$RC" 4
expect_contains "... naming it" "$ERR" 'a sandbox named "solo" already exists'

# logs -f ends when the sandbox stops.
aj_run stop web
wait_until 15 pid_gone "$LPID"
check "logs -f ended when the sandbox stopped" pid_gone "$LPID"
wait "$LPID"
expect_eq "logs -f: exit 0 at the end" "$?" 0
expect_contains "logs -f: the stop event came last" "$(tail -1 "$F")" "[event] stop"
