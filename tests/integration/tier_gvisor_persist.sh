#!/usr/bin/env bash
# Persistent sandboxes of the gvisor tier (docs/gvisor.md), beyond tier_gvisor.sh: what the
# supervisor does around the init inside the Sentry, and each front end driving such a
# sandbox. The CLI: an exec's timeout (124) and a signal forwarded to it; a spawned server
# reached through a published port; live updates of the egress rules (the next request is
# refused, naming the rule) and of the memory limit; restore; the idle timer; a terminal
# resized (SIGWINCH, which this Sentry does not send itself); cp of a tree and its errors.
# The HTTP API: exec, a background process with stdin and a signal, a terminal resized, the
# file routes. The real E2B SDK (tests/e2b, a template naming the tier): commands,
# background commands, pty, files and a watch. MCP: the shell and the file tools. After each
# kind of run, /dev/null and the caller's stdio keep their owner and mode.
# passes: main
# timeout: 600
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
. "$AJ_ROOT/tests/tier_gvisor.bash"

if ! is_root; then
	skip "gvisor tier, persistent sandboxes" "the tier needs root (tier_gvisor.sh checks the refusal)"
	exit 0
fi
gv_require
sv_setup
W=$(mktmp)
gv_stdio_setup "$W"

# gv_run ARGS...: agentjail with the caller's stdio files; OUT and ERR are what it wrote.
gv_run() {
	local o e
	o=$(stat -c %s "$GV_OUT") e=$(stat -c %s "$GV_ERR")
	"$AJ" "$@" <"$GV_IN" >>"$GV_OUT" 2>>"$GV_ERR"
	RC=$?
	OUT=$(tail -c +$((o + 1)) "$GV_OUT")
	ERR=$(tail -c +$((e + 1)) "$GV_ERR")
}

# ---- a loopback server for egress, a policy through the proxy -------------------------------

HP=$(free_port)
PUB=$(free_port)
echo served >"$W/index.html"
(cd "$W" && exec timeout 300 python3 -m http.server "$HP" --bind 127.0.0.1) >/dev/null 2>&1 &
HTTP_PID=$!
trap 'kill $HTTP_PID 2>/dev/null; sv_cleanup' EXIT
wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$HP/index.html"
printf '{"tier": "gvisor", "network": {"mode": "proxy", "allow": ["127.0.0.1:%s"], "allow_private": ["127.0.0.1/32"]}}\n' \
	"$HP" >"$W/gv.json"
chmod 644 "$W/gv.json"

gv_run create --policy "$W/gv.json" -p "$PUB:8000" --name gp
[ "$RC" = 0 ] || { not_ok "create gp ($ERR)"; exit 0; }

# ---- exec: timeout and signals -----------------------------------------------------------------

gv_run exec --timeout 1s gp -- sleep 30
expect_eq "exec --timeout: the command is killed, exit 124" "$RC" 124
"$AJ" exec gp -- sh -c 'trap "echo got-term; exit 9" TERM; echo up; while :; do sleep 0.1; done' \
	<"$GV_IN" >"$W/sig.out" 2>>"$GV_ERR" &
SIG=$!
wait_until 15 grep -q up "$W/sig.out"
kill -TERM "$SIG"
wait "$SIG"
expect_eq "exec: SIGTERM to the client reaches the command, whose exit code comes back" \
	"$? $(tail -1 "$W/sig.out")" "9 got-term"
gv_stdio_kept "exec with a timeout and a signal"

# ---- a server spawned inside, reached through the published port -----------------------------

gv_run exec gp -- sh -c 'nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &'
check "published port: the server inside answers on the host's port" \
	wait_until 30 curl -sf -o "$W/pub.html" "http://127.0.0.1:$PUB/"

# ---- live updates ---------------------------------------------------------------------------------

get() { gv_run exec gp -- curl --noproxy '' -s -m 10 -w ' %{http_code}' "http://127.0.0.1:$HP/index.html"; }
get
expect_eq "egress through the proxy: the allowed host" "$OUT" "served
 200"
gv_run update gp --deny-host "127.0.0.1:$HP" --memory 384m
check "update --deny-host --memory: live ($OUT $ERR)" eval '[ "$RC" = 0 ] && [[ $OUT == *"(live)"* ]]'
get
check "after the update: the proxy's 403 naming the rule ($OUT)" \
	eval '[[ $OUT == *" 403" ]] && [[ $OUT == *"network.deny[0]"* ]]'
expect_eq "after the update: the memory limit recorded" \
	"$(pj_field gp 'd["policy"]["limits"]["memory"]')" $((384 << 20))
gv_stdio_kept "published port, update"

# ---- restore ---------------------------------------------------------------------------------------

gv_run exec gp -- sh -c 'echo one > f'
gv_run snapshot --name gp-one gp
gv_run exec gp -- sh -c 'echo two > f'
gv_run restore gp gp-one
expect_eq "restore: exit 0" "$RC" 0
gv_run exec gp -- cat f
expect_eq "restore: the snapshot's content, on gVisor's kernel again" "$OUT" one
expect_eq "restore: running" "$(pj_state gp)" running

# ---- a terminal, resized; cp of a tree ---------------------------------------------------------------

TO=$(python3 - "$AJ" <<'EOF'
import fcntl, os, pty, select, struct, sys, termios, time
aj = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    os.execv(aj, [aj, "exec", "-t", "gp", "--", "sh", "-c",
                  "stty size; echo ready; read x; echo got:$x; "
                  "trap 'echo WINCH; stty size; exit 4' WINCH; echo waiting; "
                  "while :; do sleep 0.1; done"])
out, sent, end = b"", 0, time.time() + 30
while time.time() < end:
    if sent == 0 and b"ready" in out:
        os.write(fd, b"typed\r")
        sent = 1
    elif sent == 1 and b"waiting" in out:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.kill(pid, 28)  # SIGWINCH, as a terminal emulator does
        sent = 2
    if not select.select([fd], [], [], 0.2)[0]:
        continue
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
print(out.decode(errors="replace").replace("\r", ""))
print("rc=%d" % os.waitstatus_to_exitcode(st))
EOF
)
expect_contains "exec -t: the size asked for" "$TO" "30 100"
expect_contains "exec -t: a resize reaches the command as SIGWINCH" "$TO" "WINCH
40 120"
expect_contains "exec -t: typed input" "$TO" "got:typed"

mkdir -p "$W/tree/sub"
echo a >"$W/tree/a.txt"
head -c 1000000 /dev/urandom >"$W/tree/sub/big.bin"
gv_run cp "$W/tree" gp:/home/user/
expect_eq "cp a tree in: exit 0" "$RC" 0
gv_run cp gp:/home/user/tree "$W/back"
expect_eq "cp a tree out: exit 0" "$RC" 0
check "cp: the tree came back byte for byte" diff -r "$W/tree" "$W/back"
gv_run cp "$W/tree/a.txt" gp:/usr/planted
check "cp into a read-only directory: refused with the errno inside ($ERR)" \
	eval '[ "$RC" = 125 ] && [[ $ERR == *"Permission denied"* ]]'
gv_run cp gp:/home/user/nope "$W/nope"
check "cp of a missing file: refused ($ERR)" \
	eval '[ "$RC" = 125 ] && [[ $ERR == *"No such file or directory"* ]]'
gv_stdio_kept "exec -t, cp"

# ---- the idle timer ------------------------------------------------------------------------------

gv_run create --tier gvisor --idle-timeout 2s --idle-action stop --name gidle
expect_eq "idle timeout: created" "$RC" 0
expect_eq "idle timeout: stopped when idle" "$(pj_wait_state gidle stopped 15)" stopped
gv_run rm -f gidle

# ---- the HTTP API and the E2B API on one daemon ------------------------------------------------

sv_e2b_keys
printf '{"base": {}, "gvisor": {"tier": "gvisor"}}\n' >"$SV_DIR/templates.json"
E2B_PORT=$(free_port)
"$AJ" serve --socket "$SOCK" --state-dir "$STATE" --e2b-listen "127.0.0.1:$E2B_PORT" \
	--e2b-keys "$SV_DIR/e2b-keys" --e2b-templates "$SV_DIR/templates.json" \
	<"$GV_IN" >>"$GV_OUT" 2>>"$GV_ERR" &
SV_PID=$!
SV_PIDS+=("$SV_PID")
sv_wait_health 15 || { not_ok "serve starts ($(tail -5 "$GV_ERR"))"; exit 0; }
apij POST /v1/sandboxes '{"name": "ga", "policy": {"tier": "gvisor"}}'
[ "$CODE" = 201 ] || { not_ok "create ga over the API (HTTP $CODE: $BODY)"; exit 0; }

# lines EXPR: a Python expression over the JSON lines of the last body as `L`.
lines() {
	printf '%s' "$BODY" | python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin.read().splitlines() if l.strip()]
print(eval(sys.argv[1]))' "$1" 2>/dev/null || echo BROKEN
}
apij POST /v1/sandboxes/ga/exec '{"command": "uname -r; cat; exit 3", "stdin": "from-stdin\n"}'
expect_eq "API exec: output with stdin's text, the exit code" \
	"$(lines '["".join(l.get("data","") for l in L if l["type"]=="stdout"), L[-1]["exit_code"]]')" \
	"['4.4.0\nfrom-stdin\n', 3]"
apij POST /v1/sandboxes/ga/processes '{"command": "trap \"echo term; exit 7\" TERM; read x; echo got $x; while :; do sleep 0.1; done", "stdin": true}'
P=$(bj 'd["id"]')
apij POST "/v1/sandboxes/ga/processes/$P/stdin" '{"data": "abc\n"}'
check "API process: stdin reaches it" sv_wait_output ga "$P" "got abc"
apij POST "/v1/sandboxes/ga/processes/$P/signal" '{"signal": "SIGTERM"}'
api GET "/v1/sandboxes/ga/processes/$P/output?follow=true"
expect_eq "API process: a signal, its exit code" \
	"$(lines '[[l.get("data","") for l in L if l["type"]=="stdout"][-1], L[-1]["exit_code"]]')" \
	"['term\n', 7]"
apij POST /v1/sandboxes/ga/processes '{"argv": ["sh", "-c", "stty size; read x; stty size"], "tty": true, "rows": 30, "cols": 100, "stdin": true}'
P=$(bj 'd["id"]')
check "API terminal: the first size" sv_wait_output ga "$P" 100
apij POST "/v1/sandboxes/ga/processes/$P/resize" '{"rows": 40, "cols": 120}'
expect_api "API terminal: resize 204" 204
apij POST "/v1/sandboxes/ga/processes/$P/stdin" '{"data": "\n"}'
api GET "/v1/sandboxes/ga/processes/$P/output?follow=true"
expect_eq "API terminal: the size asked for, then the new one" \
	"$(lines '"".join(l.get("data","") for l in L if l["type"]=="pty").split()')" \
	"['30', '100', '40', '120']"

head -c 300000 /dev/urandom >"$W/up.bin"
OCT=(-H 'Content-Type: application/octet-stream')
api PUT "/v1/sandboxes/ga/files?path=/home/user/d/up.bin&parents=true" "${OCT[@]}" --data-binary "@$W/up.bin"
expect_api "API files: PUT 201" 201
# The helpers keep the body as text (no NUL bytes): the binary download goes to a file.
curl -s --max-time 60 --unix-socket "$SOCK" -o "$W/down.bin" \
	"http://aj/v1/sandboxes/ga/files?path=/home/user/d/up.bin"
check "API files: GET gives the bytes back" cmp "$W/up.bin" "$W/down.bin"
api GET "/v1/sandboxes/ga/files/list?path=/home/user/d"
expect_eq "API files: list" "$(bj '[(e["name"], e["type"], e["size"]) for e in d["entries"]]')" \
	"[('up.bin', 'file', 300000)]"
api GET "/v1/sandboxes/ga/files/stat?path=/home/user/d"
expect_eq "API files: stat" "$(bj 'd["type"]')" dir
api GET "/v1/sandboxes/ga/files?path=/home/user/d"
expect_api "API files: GET of a directory: 400" 400 path is_a_directory
api GET "/v1/sandboxes/ga/files?path=/home/user/none"
expect_api "API files: GET of a missing file: 404" 404
api PUT "/v1/sandboxes/ga/files?path=/usr/x" "${OCT[@]}" --data-binary x
expect_api "API files: PUT into a read-only directory: 403" 403
api DELETE "/v1/sandboxes/ga/files?path=/home/user/d&recursive=true"
expect_api "API files: DELETE 204" 204
gv_stdio_kept "the HTTP API (exec, processes, a terminal, files)"

# The real E2B SDK on a template naming the tier: its commands, pty, files and watch cases.
out=$(E2B_API_URL=http://127.0.0.1:$E2B_PORT E2B_SANDBOX_URL=http://127.0.0.1:$E2B_PORT \
	E2B_API_KEY=$KEY E2B_TEST_TEMPLATE=gvisor E2B_TEST_CODE_INTERPRETER=0 \
	E2B_TEST_ONLY='^(Sandbox.create with|commands.run: (stdout|non-zero)|commands.run background|commands.run stdin|pty.create|files.write (text|relative|multiple)|files.(list \(depth|getInfo)|files.watchDir: create)' \
	"$AJ_ROOT/tests/e2b/run.sh" 2>&1)
printf '%s\n' "$out" | grep -E '^(not )?ok ' | grep -v 'E2B_TEST_ONLY' | sed 's/^\(not \)\{0,1\}ok - /&E2B SDK, gvisor template: /'
case "$out" in
*"ok - "*) ;;
*) not_ok "E2B SDK: the harness ran (output: $(printf '%s' "$out" | tail -5))" ;;
esac
gv_stdio_kept "the E2B API (commands, pty, files, watch)"
sv_stop
expect_eq "serve: stops cleanly" "$SV_RC" 0

# ---- MCP on the CLI's sandbox -------------------------------------------------------------------

python3 - "$AJ" "$STATE" <"$GV_IN" 2>>"$GV_ERR" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["AJ_ROOT"], "tests", "mcp"))
from mcpclient import Server, check
s = Server(sys.argv[1], ["--state-dir", sys.argv[2], "gp"])
s.initialize()
out, r = s.shell("uname -r; id -u")
check("MCP shell: on gVisor's kernel, as the sandbox user", out == "4.4.0\n1000\n", r)
r = s.tool("write_file", {"path": "notes/a.md", "content": "line one\nline two\n"})
check("MCP write_file", not (r or {}).get("isError"), r)
r = s.tool("read_file", {"path": "notes/a.md"})
text = "".join(c.get("text", "") for c in (r or {}).get("content", []))
check("MCP read_file: the content back", "line one\nline two" in text, r)
r = s.tool("list_dir", {"path": "notes"})
check("MCP list_dir: the file listed", "a.md" in str(r), r)
r = s.tool("read_file", {"path": "/etc/shadow"})
check("MCP read_file of /etc/shadow: an error inside the sandbox", (r or {}).get("isError"), r)
rc, err = s.close()
check("MCP: the session ends cleanly", rc == 0, err[-300:])
EOF
gv_stdio_kept "MCP (shell, file tools)"

gv_run rm -f gp
sv_done
