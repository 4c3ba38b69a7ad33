#!/usr/bin/env bash
# Commands over the HTTP API with curl: exec streams start, output (stdout and stderr apart,
# text or base64) and exit as JSON lines, with the command's exit code, stdin, env and cwd, a
# timeout (124), 127/126 for commands that cannot start; a client that goes away kills its
# exec. Background processes run on without a client: list, get, stdin, output (kept, from an
# offset, followed), signals, a terminal and its resize; they survive a restart of the daemon.
# Every response is checked against docs/openapi.json.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
sv_start || { not_ok "serve starts ($(tail -5 "$SV_LOG"))"; exit 0; }
sv_create box

# lines EXPR: a Python expression over the JSON lines of the last body as `L` (a list).
lines() {
	printf '%s' "$BODY" | python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin.read().splitlines() if l.strip()]
print(eval(sys.argv[1]))' "$1" 2>/dev/null || echo BROKEN
}

# ---- exec ------------------------------------------------------------------------------------

apij POST /v1/sandboxes/box/exec '{"command": "echo out; echo err >&2; cat; exit 3", "stdin": "from-stdin\n"}'
expect_api "exec: 200" 200
expect_eq "exec: a JSON-lines stream" "$CTYPE" application/x-ndjson
expect_eq "exec: start first, exit last" "$(lines '[L[0]["type"], L[-1]["type"]]')" "['start', 'exit']"
expect_eq "exec: stdout, with stdin's text" "$(lines '"".join(l.get("data","") for l in L if l["type"]=="stdout")')" "out
from-stdin"
expect_eq "exec: stderr apart" "$(lines '"".join(l.get("data","") for l in L if l["type"]=="stderr")')" "err"
expect_eq "exec: the command's exit code" "$(lines 'L[-1]["exit_code"]')" 3
# The two pipes are read as data arrives, so which stream's chunk comes first varies; the
# offsets must still count the bytes of both, with no gap and no overlap.
expect_eq "exec: offsets count both streams" "$(lines '
(lambda C: [c[0] for c in C] == [sum(len(d) for _, d in C[:i]) for i in range(len(C))]
 and sum(len(d) for _, d in C))(sorted((l["offset"], l["data"].encode()) for l in L if "offset" in l))')" 19

apij POST /v1/sandboxes/box/exec '{"argv": ["sh", "-c", "echo $GREETING; pwd"], "env": {"GREETING": "hello"}, "cwd": "/tmp"}'
expect_eq "exec: argv, env and cwd" "$(lines '"".join(l.get("data","") for l in L if l["type"]=="stdout")')" "hello
/tmp"

# Fixed bytes that are never UTF-8 (random ones sometimes are, and then rightly come as text).
apij POST /v1/sandboxes/box/exec '{"command": "printf \"\\377\\376\\200\\301\""}'
expect_eq "exec: bytes that are not UTF-8 come as base64" \
	"$(lines '__import__("base64").b64decode("".join(l.get("data_base64","") for l in L)).hex()')" fffe80c1

apij POST /v1/sandboxes/box/exec '{"command": "printf \"\\342\\202\"; sleep 0.2; printf \"\\254\\n\""}'
expect_eq "exec: a character split across chunks arrives whole, as text" \
	"$(lines '"".join(l.get("data","") for l in L if l["type"]=="stdout")')" "€"

t0=$(date +%s%N)
apij POST /v1/sandboxes/box/exec '{"command": "sleep 30 & sleep 30", "timeout": "1s"}'
expect_eq "exec: timeout: 124 and the limit named" "$(lines '[L[-1]["exit_code"], L[-1]["limit"]]')" "[124, 'timeout']"
check "exec: timeout: ended within 10 s" [ $((($(date +%s%N) - t0) / 1000000)) -lt 10000 ]

apij POST /v1/sandboxes/box/exec '{"argv": ["no-such-command"]}'
expect_api "exec: a command not found: 200 (the stream says it)" 200
expect_eq "exec: a command not found: one exit line, 127" "$(lines '[len(L), L[0]["type"], L[0]["exit_code"]]')" "[1, 'exit', 127]"
apij POST /v1/sandboxes/box/exec '{"argv": ["true"], "cwd": "/no/such/dir"}'
expect_eq "exec: a working directory that does not exist: one exit line, 126" "$(lines '[len(L), L[0]["type"], L[0]["exit_code"]]')" "[1, 'exit', 126]"
apij POST /v1/sandboxes/box/exec '{"argv": ["/etc/hostname"]}'
expect_eq "exec: not executable: 126" "$(lines 'L[0]["exit_code"]')" 126

apij POST /v1/sandboxes/box/exec '{"argv": []}'
expect_api "exec: an empty argv: 400" 400 argv invalid_type
apij POST /v1/sandboxes/box/exec '{"argv": ["true"], "command": "true"}'
expect_api "exec: argv and command both: 400" 400 argv invalid_value
apij POST /v1/sandboxes/box/exec '{}'
expect_api "exec: neither: 400" 400 argv missing_field
apij POST /v1/sandboxes/box/exec '{"argv": ["true"], "cwd": "tmp"}'
expect_api "exec: a relative cwd: 400" 400 cwd invalid_value
apij POST /v1/sandboxes/box/exec '{"argv": ["true"], "bogus": 1}'
expect_api "exec: an unknown field: 400" 400 bogus unknown_field
apij POST /v1/sandboxes/nosuch/exec '{"argv": ["true"]}'
expect_api "exec: an unknown sandbox: 404" 404 "" not_found

# sleepers_are N: whether the count of the sleeps below is N (the count left in SLEEPERS).
sleepers_are() {
	apij POST /v1/sandboxes/box/exec '{"command": "ps -eo args | grep -c \"^sleep 30[01]\""}'
	SLEEPERS=$(lines '"".join(l.get("data","") for l in L if l["type"]=="stdout").strip()')
	[ "$SLEEPERS" = "$1" ]
}

# A client that goes away: its command and what it started are killed.
GONE_OUT=$(mktmp)/out
curl -s -N --max-time 120 --unix-socket "$SOCK" -H 'Content-Type: application/json' \
	--data-binary '{"command": "sleep 300 & echo started; exec sleep 301"}' \
	http://aj/v1/sandboxes/box/exec >"$GONE_OUT" &
GONE=$!
wait_until 15 grep -q started "$GONE_OUT"
wait_until 15 sleepers_are 2
expect_eq "exec: a streamed command and its child run" "$SLEEPERS" 2
kill "$GONE"
wait "$GONE" 2>/dev/null
wait_until 15 sleepers_are 0
expect_eq "exec: the client went away: its command and children are gone" "$SLEEPERS" 0

# ---- the supervisor connection an exec leaves for the next (exec_direct.c) ----------------------

# daemon_conns: connections accepted on the sandbox's control socket, open now (the daemon's to
# its supervisor; no other client of this test is connected at that moment).
BOX_SOCK=$("$AJ" inspect box | python3 -c 'import json, sys; print(json.load(sys.stdin)["socket"])')
daemon_conns() { ss -xn state connected 2>/dev/null | grep -c -F " $BOX_SOCK "; }
apij POST /v1/sandboxes/box/exec '{"command": "true"}'
wait_until 5 [ "$(daemon_conns)" = 1 ]
expect_eq "exec: its connection to the supervisor is kept for the next exec" "$(daemon_conns)" 1
for i in $(seq 20); do
	apij POST /v1/sandboxes/box/exec "{\"command\": \"exit $((i % 7))\"}"
	[ "$(lines 'L[-1]["exit_code"]')" = $((i % 7)) ] || break
done
expect_eq "20 execs on the kept connection: each its own exit code" "$i:$(lines 'L[-1]["exit_code"]')" "20:$((20 % 7))"
expect_eq "... one connection still, none leaked" "$(daemon_conns)" 1

# ---- background processes ----------------------------------------------------------------------

apij POST /v1/sandboxes/box/processes '{"argv": ["sh", "-c", "echo ready; read x; echo got $x; exit 5"], "stdin": true, "tag": "worker"}'
expect_api "process: 201" 201
P=$(bj 'd["id"]')
expect_contains "process: Location" "$HEADERS" "Location: /v1/sandboxes/box/processes/$P"
expect_eq "process: running, tagged" "$(bj '[d["running"], d["tag"]]')" "[True, 'worker']"
api GET /v1/sandboxes/box/processes
expect_api "processes: 200" 200
expect_eq "processes: listed" "$(bj '[p["tag"] for p in d["processes"] if p["id"]=='"$P"']')" "['worker']"
apij POST "/v1/sandboxes/box/processes/$P/stdin" '{"data": "abc\n", "eof": true}'
expect_api "stdin: 204" 204
api GET "/v1/sandboxes/box/processes/$P/output?follow=true"
expect_eq "output followed: attached, output, exit" \
	"$(lines '[L[0]["type"], "".join(l.get("data","") for l in L if l["type"]=="stdout"), L[-1]["exit_code"]]')" \
	"['attached', 'ready\ngot abc\n', 5]"
api GET "/v1/sandboxes/box/processes/$P/output"
expect_api "output kept: 200" 200
expect_eq "output kept: all of it, and the exit" "$(bj '["".join(c["data"] for c in d["output"]), d["running"], d["exit"]["exit_code"]]')" "['ready\ngot abc\n', False, 5]"
api GET "/v1/sandboxes/box/processes/$P/output?from=6"
expect_eq "output from an offset" "$(bj 'repr("".join(c["data"] for c in d["output"]))')" "'got abc\\n'"
api GET "/v1/sandboxes/box/processes/$P"
expect_eq "process: ended, its exit" "$(bj '[d["running"], d["exit"]["exit_code"]]')" "[False, 5]"
apij POST "/v1/sandboxes/box/processes/$P/stdin" '{"data": "late"}'
expect_api "stdin to an ended process: 404" 404

apij POST /v1/sandboxes/box/processes '{"command": "trap \"echo term; exit 7\" TERM; echo up; while :; do sleep 0.1; done"}'
P2=$(bj 'd["id"]')
check "signal: the process is up" sv_wait_output box "$P2" up
apij POST "/v1/sandboxes/box/processes/$P2/signal" '{"signal": "SIGTERM"}'
expect_api "signal: 204" 204
api GET "/v1/sandboxes/box/processes/$P2/output?follow=true"
expect_eq "signal: the process saw SIGTERM" "$(lines '[l.get("data","") for l in L if l["type"]=="stdout"][-1:] + [L[-1]["exit_code"]]')" "['term\n', 7]"
apij POST "/v1/sandboxes/box/processes/$P2/signal" '{"signal": "BOGUS"}'
expect_api "signal: an unknown name: 400" 400 signal invalid_value
api GET /v1/sandboxes/box/processes/999999
expect_api "process: unknown: 404" 404
api GET /v1/sandboxes/box/processes/abc
expect_api "process: not a number: 404" 404

# A terminal, resized.
apij POST /v1/sandboxes/box/processes '{"argv": ["sh", "-c", "stty size; read x; stty size"], "tty": true, "rows": 30, "cols": 100, "stdin": true}'
P3=$(bj 'd["id"]')
check "tty: the first size is printed" sv_wait_output box "$P3" 100
apij POST "/v1/sandboxes/box/processes/$P3/resize" '{"rows": 40, "cols": 120}'
expect_api "resize: 204" 204
apij POST "/v1/sandboxes/box/processes/$P3/stdin" '{"data": "\n"}'
api GET "/v1/sandboxes/box/processes/$P3/output?follow=true"
expect_eq "tty: the size asked for, then the new one" \
	"$(lines '"".join(l.get("data","") for l in L if l["type"]=="pty").split()')" "['30', '100', '40', '120']"
apij POST "/v1/sandboxes/box/processes/$P/resize" '{"rows": 10, "cols": 10}'
expect_api "resize: an ended process: 404" 404

# A background process survives a restart of the daemon.
apij POST /v1/sandboxes/box/processes '{"command": "sleep 1; echo after-restart"}'
P4=$(bj 'd["id"]')
kill -9 "$SV_PID"
# kill returns before the process has exited; until then its listening socket still takes
# connections, and a new daemon would rightly refuse to take over a live socket.
wait "$SV_PID" 2>/dev/null
sv_start || { not_ok "serve restarts ($(tail -5 "$SV_LOG"))"; exit 0; }
api GET "/v1/sandboxes/box/processes/$P4/output?follow=true"
expect_eq "daemon restarted: the process ran on, its output kept" \
	"$(lines '["".join(l.get("data","") for l in L if l["type"]=="stdout"), L[-1]["exit_code"]]')" "['after-restart\n', 0]"

# ---- restore ----------------------------------------------------------------------------------

apij POST /v1/sandboxes/box/exec '{"command": "echo one > f"}'
# Without a freezer (rootless, no delegated cgroup) a running sandbox cannot be snapshotted.
is_rootless_pass && api POST /v1/sandboxes/box/stop
apij POST /v1/sandboxes/box/snapshots '{"name": "box-one"}'
expect_api "snapshot: 201" 201
is_rootless_pass && api POST /v1/sandboxes/box/start
apij POST /v1/sandboxes/box/exec '{"command": "echo two > f"}'
apij POST /v1/sandboxes/box/restore '{"snapshot": "box-one"}'
expect_api "restore: 200" 200
expect_eq "restore: running again, a new generation" "$(bj '[d["state"], d["generation"] > 1]')" "['running', True]"
apij POST /v1/sandboxes/box/exec '{"command": "cat f"}'
expect_eq "restore: the snapshot's content" "$(lines '"".join(l.get("data","") for l in L if l["type"]=="stdout")')" "one"
apij POST /v1/sandboxes/box/restore '{"snapshot": "nope"}'
expect_api "restore: an unknown snapshot: 404" 404 snapshot not_found

sv_done
