#!/usr/bin/env python3
"""`agentjail mcp NAME` bound to an existing sandbox that changes under it: paused, its
supervisor killed, stopped, all between two tool calls; then a session without --rm leaving
its sandbox, and SIGTERM in the middle of a long command. Prints TAP lines.

    binding_test.py AGENTJAIL STATE_DIR EXISTING_SANDBOX [EXTRA_CREATE_ARGS...]
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcpclient import Server, check, failures, skip  # noqa: E402

AJ, STATE, NAME, EXTRA = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def aj(*args):
    p = subprocess.run([AJ, args[0], "--state-dir", STATE, *args[1:]], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def inspect(name):
    rc, out, _ = aj("inspect", name)
    return json.loads(out) if rc == 0 else {}


def wait_gone(pid, seconds):
    end = time.time() + seconds
    while time.time() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def survives_changes():
    s = Server(AJ, ["--state-dir", STATE, NAME])
    m = s.initialize()
    check("bind to an existing sandbox by name", "result" in (m or {}), m)
    out, r = s.shell("echo one > /home/user/kept; echo $((6*7))")
    check("shell in the bound sandbox", out == "42\n", r)

    rc, _, err = aj("pause", NAME)
    if rc != 0 and os.getuid() != 0:
        skip("paused meanwhile: the next call resumes it",
             f"pausing needs the freezer cgroup, which uid {os.getuid()} has not")
    else:
        check("(the sandbox was paused from outside)", inspect(NAME).get("state") == "paused", err)
        out, r = s.shell("cat /home/user/kept")
        check("paused meanwhile: the next call resumes it", out == "one\n", r)
        check("paused meanwhile: it is running again", inspect(NAME).get("state") == "running")

    gen = inspect(NAME).get("generation")
    sup = inspect(NAME).get("supervisor_pid")
    os.kill(sup, signal.SIGKILL)
    check("(its supervisor was killed)", wait_gone(sup, 10))
    out, r = s.shell("cat /home/user/kept")
    check("supervisor gone meanwhile: the next call restarts the sandbox and reconnects",
          out == "one\n", r)
    check("supervisor gone meanwhile: a new compute generation", inspect(NAME).get("generation") == gen + 1,
          inspect(NAME))

    aj("stop", NAME)
    check("(the sandbox was stopped from outside)", inspect(NAME).get("state") == "stopped")
    r = s.tool("read_file", {"path": "kept"})
    check("stopped meanwhile: a file tool starts it again", (r or {}).get("content", [{}])[0].get("text") == "one\n", r)
    check("stopped meanwhile: running again", inspect(NAME).get("state") == "running")
    rc, err = s.close()
    check("session on an existing sandbox ends with status 0", rc == 0, err[-300:])
    check("without --create the sandbox stays after the session", inspect(NAME).get("state") == "running")


def keeps_without_rm():
    s = Server(AJ, ["--state-dir", STATE, "--create", "--name", "kept-sb"] + EXTRA)
    check("--create without --rm: initialize", "result" in (s.initialize() or {}))
    rc, _ = s.close()
    check("--create without --rm: the sandbox stays", rc == 0 and inspect("kept-sb").get("name") == "kept-sb")
    aj("rm", "-f", "kept-sb")


def sigterm_mid_call():
    s = Server(AJ, ["--state-dir", STATE, "--create", "--rm", "--name", "term-sb"] + EXTRA)
    s.initialize()
    sup = inspect("term-sb").get("supervisor_pid")
    s.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "shell", "arguments": {"command": "sleep 60"}}})
    time.sleep(1)
    t0 = time.time()
    s.p.send_signal(signal.SIGTERM)
    try:
        rc = s.p.wait(20)
    except subprocess.TimeoutExpired:
        s.p.kill()
        rc = "hung"
    check("SIGTERM during a long command: the server ends promptly with status 0",
          rc == 0 and time.time() - t0 < 10, f"rc={rc} after {time.time() - t0:.1f}s")
    check("SIGTERM: --rm still deleted the sandbox", inspect("term-sb") == {})
    check("SIGTERM: its supervisor is gone", sup is not None and wait_gone(sup, 10))


def main():
    survives_changes()
    keeps_without_rm()
    sigterm_mid_call()
    return failures()


main()
