"""A minimal MCP-over-stdio peer for the shell-driven tests: starts `agentjail mcp ARGS`,
writes JSON-RPC lines, reads answers with a timeout. Not a test itself."""
import json
import os
import select
import subprocess
import time

_failed = [0]


def check(name, cond, detail=""):
    """Prints one TAP line."""
    if cond:
        print(f"ok - {name}", flush=True)
    else:
        _failed[0] += 1
        d = str(detail).replace("\n", "\\n")[:400]
        print(f"not ok - {name} ({d})", flush=True)


def skip(name, reason):
    print(f"ok - {name} # SKIP {reason}", flush=True)


def failures():
    return _failed[0]


class Server:
    def __init__(self, aj, args):
        self.p = subprocess.Popen([aj, "mcp"] + args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""
        self.next_id = 1000

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def recv(self, timeout=20):
        """The next message, or None when none comes within timeout. A line that is not
        JSON comes back as {"unparseable": ...}: stdout must carry protocol only."""
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return {"unparseable": line[:200].decode(errors="replace")}

    def call(self, obj, timeout=20):
        self.send(obj)
        return self.recv(timeout)

    def initialize(self, version="2025-11-25"):
        return self.call({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": version, "capabilities": {},
                                     "clientInfo": {"name": "agentjail-tests", "version": "1"}}})

    def tool(self, name, args, timeout=60):
        """tools/call; the result object, or the whole message when there is none."""
        self.next_id += 1
        m = self.call({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                       "params": {"name": name, "arguments": args}}, timeout)
        return (m or {}).get("result", m)

    def shell(self, command, timeout=60):
        r = self.tool("shell", {"command": command}, timeout) or {}
        return (r.get("structuredContent") or {}).get("stdout"), r

    def close(self, timeout=15):
        self.p.stdin.close()
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "hung"
        err = self.p.stderr.read().decode(errors="replace")
        return rc, err
