#!/usr/bin/env bash
# Spawned commands in a persistent sandbox: the supervisor holds their stdio, so output is kept
# and can be followed, replayed and re-attached to after a client went away; stdin is written
# through the supervisor; a terminal can be resized; a slow follower slows the command down
# instead of losing output; the output cap and the timeout apply.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

pj_create pr --output-limit 4MiB
SOCK=$("$AJ" inspect pr | python3 -c 'import json,sys; print(json.load(sys.stdin)["socket"])')
[ -S "$SOCK" ] || pj_bail "inspect shows the control socket"

# line_of NAME: the value of the line "NAME value" in $OUT.
line_of() { sed -n "s/^$1 //p" <<<"$OUT" | head -1; }

# py SCRIPT: runs SCRIPT with `c` connected to the sandbox and `S` the socket path; prints
# "name value" lines that the checks below read.
py() {
	OUT=$(cd "$AJ_ROOT/tests/helpers" && timeout 90 python3 -c "
import sys, time, base64
from ctl import connect, b64
S = sys.argv[1]
c = connect(S)
$1" "$SOCK" 2>&1)
	RC=$?
}

py '
r = c.call({"op": "spawn", "argv": ["sh", "-c", "echo out; echo err >&2; read x; echo got:$x; exit 7"],
            "stdin": True, "attach": True, "tag": "t1"})
print("spawn_ok", r.get("ok"))
c.call({"op": "input", "exec": r["exec"], "data": b64(b"abc\n")})
out, ex, contiguous = c.collect()
print("stdout", out.get("stdout"))
print("stderr", out.get("stderr"))
print("exit", ex["exit_code"])
print("contiguous", contiguous)
c2 = connect(S)
a = c2.call({"op": "attach", "exec": r["exec"], "from": 0})
print("reattach_running", a["running"])
out2, ex2, _ = c2.collect()
print("replayed", out2.get("stdout"))
c3 = connect(S)
c3.call({"op": "attach", "exec": r["exec"], "from": 0})
whole = b"".join(base64.b64decode(m["data"]) for m in c3.events() if m.get("event") == "output")
c3.call({"op": "attach", "exec": r["exec"], "from": 5})
part = b"".join(base64.b64decode(m["data"]) for m in c3.events() if m.get("event") == "output")
print("from5", part == whole[5:], len(whole))
procs = c2.call({"op": "procs"})["procs"]
print("listed", [(p["tag"], p["running"], p["exit"]["exit_code"]) for p in procs if p["exec"] == r["exec"]])
e = c2.call({"op": "input", "exec": r["exec"], "data": b64(b"x")})
print("input_after_end", e.get("ok"), e.get("error", {}).get("errno"))
e = c2.call({"op": "attach", "exec": 999999})
print("unknown", e.get("ok"))
'
expect_eq "spawn: accepted" "$(line_of spawn_ok)" True
expect_eq "stdout kept apart" "$(line_of stdout)" "b'out\\ngot:abc\\n'"
expect_eq "stderr kept apart" "$(line_of stderr)" "b'err\\n'"
expect_eq "input reached the command's stdin; its exit code" "$(line_of exit)" 7
expect_eq "offsets contiguous" "$(line_of contiguous)" True
expect_eq "re-attach after the end: not running" "$(line_of reattach_running)" False
expect_eq "re-attach from 0 replays everything" "$(line_of replayed)" "b'out\\ngot:abc\\n'"
expect_eq "re-attach from offset 5 replays from byte 5 on" "$(line_of from5)" "True 16"
expect_eq "procs lists it with tag, state and exit" "$(line_of listed)" "[('t1', False, 7)]"
expect_eq "input to an ended command: refused" "$(line_of input_after_end)" "False 3"
expect_eq "attach to an unknown command: refused" "$(line_of unknown)" False

# The client goes away; the command runs on and its output is there for the next client.
py '
r = c.call({"op": "spawn", "argv": ["sh", "-c", "sleep 1; echo late; exit 5"]})
print("id", r["exec"])
c.close()
time.sleep(1.5)
c = connect(S)
c.call({"op": "attach", "exec": r["exec"], "from": 0})
out, ex, _ = c.collect()
print("late", out.get("stdout"), ex["exit_code"])
'
expect_eq "output of a command whose client left is kept" "$(line_of late)" "b'late\\n' 5"

# A terminal: a real pty inside, the size asked for, resizable, input echoed.
py '
r = c.call({"op": "spawn", "argv": ["sh", "-c", "tty; stty size; read y; stty size; echo Y=$y"],
            "tty": True, "rows": 30, "cols": 100, "attach": True, "stdin": True})
# Resized only once the first size is printed; the events read meanwhile go back in the queue.
seen, first = [], b""
for m in c.events(20):
    seen.append(m)
    if m.get("event") == "output":
        first += base64.b64decode(m["data"])
    if b"30 100" in first or m.get("event") == "exit":
        break
c.pending[:0] = seen
print("resize", c.call({"op": "resize", "exec": r["exec"], "rows": 40, "cols": 120}).get("ok"))
c.call({"op": "input", "exec": r["exec"], "data": b64(b"zz\n")})
out, ex, _ = c.collect()
print("pty", out.get("pty"))
print("exit", ex["exit_code"])
'
PTY=$(line_of pty)
expect_contains "tty: a pty inside" "$PTY" "/dev/pts/"
expect_contains "tty: the size asked for" "$PTY" "30 100"
expect_contains "tty: resized" "$PTY" "40 120"
expect_contains "tty: input reached the command" "$PTY" "Y=zz"
expect_eq "tty: exit code" "$(line_of exit)" 0

# The terminal's last output can reach its master after the master already said EIO: 300
# short terminal commands, each ending right after its last line, lose none of them.
py '
lost = 0
for k in range(300):
    r = c.call({"op": "spawn", "argv": ["sh", "-c", "stty size; echo last-%d" % k], "tty": True,
                "rows": 30, "cols": 100, "attach": True})
    out, ex, _ = c.collect()
    lost += ("last-%d" % k).encode() not in out.get("pty", b"")
print("tty_lost", lost)
'
expect_eq "tty: no command of 300 lost its last line" "$(line_of tty_lost)" 0

# A follower that does not read for 2 s: the command is held back, nothing is lost.
py '
r = c.call({"op": "spawn", "argv": ["sh", "-c", "head -c 3000000 /dev/zero; echo end"],
            "attach": True})
time.sleep(2)
other = connect(S)
made = [p["output_bytes"] for p in other.call({"op": "procs"})["procs"] if p["exec"] == r["exec"]][0]
print("held_back", made < 3000000)
out, ex, contiguous = c.collect()
print("all", len(out.get("stdout", b"")), contiguous, ex["output_truncated"])
'
expect_eq "a slow follower holds the command back" "$(line_of held_back)" True
expect_eq "then receives every byte, in order" "$(line_of all)" "3000004 True False"

# Over the policy's output cap (4 MiB): truncated and reported.
py '
r = c.call({"op": "spawn", "argv": ["sh", "-c", "head -c 6000000 /dev/zero"], "attach": True})
out, ex, _ = c.collect(30)
print("capped", len(out.get("stdout", b"")), ex["output_truncated"], ex["output_bytes"])
'
expect_eq "output cap: stops at 4 MiB, reported" "$(line_of capped)" "4194304 True 6000000"

# timeout_ms kills the command (and what it started): 124.
py '
t0 = time.time()
r = c.call({"op": "spawn", "argv": ["sh", "-c", "sleep 60 & sleep 60"], "attach": True,
            "timeout_ms": 500})
out, ex, _ = c.collect(20)
print("timeout", ex["exit_code"], ex.get("limit"), time.time() - t0 < 10)
'
expect_eq "timeout_ms: exit 124, limit timeout, promptly" "$(line_of timeout)" "124 timeout True"

# Bad requests are refused with a reason, and the supervisor keeps serving.
py '
for req in ({"op": "spawn"}, {"op": "spawn", "argv": []}, {"op": "spawn", "argv": [1]},
            {"op": "input", "exec": 1, "data": 5}, {"op": "resize", "exec": 1}):
    e = c.call(req)
    print("bad", e.get("ok"), bool(e.get("error", {}).get("message")))
r = c.call({"op": "spawn", "argv": ["true"], "attach": True})
print("after", c.collect()[1]["exit_code"])
'
expect_eq "bad requests: each refused with a message" "$(grep -c '^bad False True$' <<<"$OUT")" 5
expect_eq "bad requests: the supervisor still serves" "$(line_of after)" 0

