#!/usr/bin/env python3
"""JSON-RPC and MCP lifecycle edge cases against `agentjail mcp`, spoken by hand (no SDK):
malformed JSON, missing method, unknown method, wrong param types, notifications that must get
no answer, requests before initialize, batches, an oversized line, then proof that the server
still works. Prints TAP lines.

    protocol_test.py AGENTJAIL STATE_DIR [EXTRA_MCP_ARGS...]
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcpclient import Server as _Server, check, failures  # noqa: E402

AJ, STATE, EXTRA = sys.argv[1], sys.argv[2], sys.argv[3:]


def Server(name):
    return _Server(AJ, ["--state-dir", STATE, "--create", "--rm", "--name", name] + EXTRA)


def err_code(m):
    return (m or {}).get("error", {}).get("code")


def err_msg(m):
    return (m or {}).get("error", {}).get("message", "")


def init(s, version="2025-11-25", rid=1):
    return s.call({"jsonrpc": "2.0", "id": rid, "method": "initialize",
                   "params": {"protocolVersion": version, "capabilities": {},
                              "clientInfo": {"name": "protocol-test", "version": "1"}}})


def before_initialize():
    s = Server("proto-a")
    m = s.call({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    check("before initialize: tools/list is refused with -32600", err_code(m) == -32600, m)
    check("before initialize: the error says to initialize", "initialize" in err_msg(m), m)
    m = s.call({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    check("before initialize: ping is answered", m == {"jsonrpc": "2.0", "id": 2, "result": {}}, m)
    m = s.call({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": 5}})
    check("initialize: a number as protocolVersion is -32602", err_code(m) == -32602, m)
    check("initialize: the error names params.protocolVersion", "params.protocolVersion" in err_msg(m), m)
    m = s.call({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": []}})
    check("initialize: capabilities not an object is -32602 naming it", err_code(m) == -32602 and "params.capabilities" in err_msg(m), m)
    m = init(s, "1999-01-01", rid=5)
    res = (m or {}).get("result", {})
    check("initialize: an unknown version gets the server's latest (2025-11-25)", res.get("protocolVersion") == "2025-11-25", m)
    check("initialize: serverInfo agentjail with a version",
          res.get("serverInfo", {}).get("name") == "agentjail" and res.get("serverInfo", {}).get("version"), m)
    check("initialize: capabilities.tools", "tools" in res.get("capabilities", {}), m)
    check("initialize: instructions name the workspace", "/home/user" in res.get("instructions", ""), m)
    m = init(s, rid=6)
    check("initialize twice: -32600", err_code(m) == -32600, m)
    rc, err = s.close()
    check("closing stdin ends the server with status 0", rc == 0, f"{rc} {err[-300:]}")


def negotiation():
    s = Server("proto-b")
    m = init(s, "2025-06-18")
    check("initialize: 2025-06-18 is supported and echoed",
          (m or {}).get("result", {}).get("protocolVersion") == "2025-06-18", m)
    rc, _ = s.close()
    check("second server ends cleanly", rc == 0, rc)


def malformed(s):
    s.send_raw(b'{"jsonrpc": "2.0", "id": 10, "method": \n')
    m = s.recv()
    check("invalid JSON: -32700", err_code(m) == -32700, m)
    check("invalid JSON: answered with id null", m is not None and "id" in m and m["id"] is None, m)
    s.send_raw(b"\xff\xfe not json at all\n")
    m = s.recv()
    check("bytes that are not JSON (nor UTF-8): -32700", err_code(m) == -32700, m)
    m = s.call({"jsonrpc": "2.0", "id": 11})
    check("missing method: -32600 with the request's id", err_code(m) == -32600 and m.get("id") == 11, m)
    m = s.call({"id": 12, "method": "ping"})
    check("missing jsonrpc: -32600", err_code(m) == -32600 and m.get("id") == 12, m)
    m = s.call({"jsonrpc": "1.0", "id": 13, "method": "ping"})
    check("jsonrpc 1.0: -32600", err_code(m) == -32600, m)
    m = s.call({"jsonrpc": "2.0", "id": 14, "method": 42})
    check("method not a string: -32600", err_code(m) == -32600, m)
    m = s.call({"jsonrpc": "2.0", "id": None, "method": "ping"})
    check("id null: -32600 (MCP forbids null ids)", err_code(m) == -32600 and m.get("id") is None, m)
    m = s.call({"jsonrpc": "2.0", "id": 15, "method": "no/such/method"})
    check("unknown method: -32601 with its id", err_code(m) == -32601 and m.get("id") == 15, m)
    check("unknown method: the message names it", "no/such/method" in err_msg(m), m)
    m = s.call([{"jsonrpc": "2.0", "id": 16, "method": "ping"}])
    check("a batch: refused with -32600 (no batches since 2025-06-18)", err_code(m) == -32600 and m.get("id") is None, m)
    m = s.call("just a string")
    check("a JSON string, not an object: -32600", err_code(m) == -32600, m)
    m = s.call({"jsonrpc": "2.0", "id": 17, "method": "tools/list", "params": [1, 2]})
    check("params as an array: -32602", err_code(m) == -32602, m)
    m = s.call({"jsonrpc": "2.0", "id": 18, "method": "tools/list", "params": "x"})
    check("params as a string: -32600", err_code(m) == -32600, m)


def wrong_params(s):
    m = s.call({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"name": 5}})
    check("tools/call name 5: -32602 naming params.name", err_code(m) == -32602 and "params.name" in err_msg(m), m)
    m = s.call({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {"name": "shell", "arguments": "ls"}})
    check("tools/call arguments a string: -32602 naming params.arguments",
          err_code(m) == -32602 and "params.arguments" in err_msg(m), m)
    m = s.call({"jsonrpc": "2.0", "id": 22, "method": "tools/call", "params": {"name": "rm_rf"}})
    check("tools/call of an unknown tool: -32602 naming it", err_code(m) == -32602 and "rm_rf" in err_msg(m), m)
    m = s.call({"jsonrpc": "2.0", "id": 23, "method": "tools/call", "params": {}})
    check("tools/call without a name: -32602", err_code(m) == -32602, m)
    m = s.call({"jsonrpc": "2.0", "id": 24, "method": "tools/list", "params": {"cursor": 7}})
    check("tools/list cursor 7: -32602 naming params.cursor", err_code(m) == -32602 and "params.cursor" in err_msg(m), m)
    m = s.call({"jsonrpc": "2.0", "id": 25, "method": "tools/call",
                "params": {"name": "shell", "arguments": {"command": ["ls"]}}})
    r = (m or {}).get("result", {})
    check("a tool argument of the wrong type: a tool result with isError (SEP-1303)", r.get("isError") is True, m)
    check("... naming arguments.command", "arguments.command" in json.dumps(r), m)
    m = s.call({"jsonrpc": "2.0", "id": 26, "method": "tools/call",
                "params": {"name": "shell", "arguments": {"command": "true", "timeout_seconds": 99999}}})
    check("timeout_seconds beyond the maximum: a tool error naming it",
          (m or {}).get("result", {}).get("isError") is True and "timeout_seconds" in json.dumps(m), m)


def notifications(s):
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    s.send({"jsonrpc": "2.0", "method": "no/such/notification", "params": {"x": 1}})
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "not an object"})
    s.send({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "shell", "arguments": {"command": "touch /home/user/from-notification"}}})
    s.send({"jsonrpc": "2.0", "id": 99, "result": {}})  # a response: this server asked nothing
    s.send_raw(b"\n   \n\r\n")  # empty lines
    m = s.call({"jsonrpc": "2.0", "id": "after-notes", "method": "ping"})
    check("notifications (known, unknown, malformed), a response and empty lines get no answer:"
          " the next message is the ping's", m == {"jsonrpc": "2.0", "id": "after-notes", "result": {}}, m)
    m = s.call({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
                "params": {"name": "shell", "arguments": {"command": "test -e /home/user/from-notification && echo ran || echo not-run"}}})
    check("a tools/call sent as a notification is not run",
          (m or {}).get("result", {}).get("structuredContent", {}).get("stdout") == "not-run\n", m)


def oversized(s):
    big = b'{"jsonrpc":"2.0","id":40,"method":"ping","params":{"pad":"' + b"x" * (17 << 20) + b'"}}\n'
    t0 = time.time()
    s.send_raw(big)
    m = s.recv(60)
    check("a 17 MiB line: -32700 with id null", err_code(m) == -32700 and m.get("id") is None, m)
    check("... saying it is too long", "16 MiB" in err_msg(m), m)
    m = s.call({"jsonrpc": "2.0", "id": 41, "method": "ping"})
    check("after the oversized line the server answers the next request", m == {"jsonrpc": "2.0", "id": 41, "result": {}}, m)
    check("the oversized line took under 30 s", time.time() - t0 < 30)
    s.send_raw(b'{"jsonrpc":"2.0","id":42,"method":"ping","params":{"pad":"' + b"y" * (8 << 20) + b'"}}\n')
    m = s.recv(60)
    check("an 8 MiB message (under the bound) is answered", m == {"jsonrpc": "2.0", "id": 42, "result": {}}, str(m)[:200])


def works_after(s):
    m = s.call({"jsonrpc": "2.0", "id": 50, "method": "tools/list"})
    names = sorted(t["name"] for t in (m or {}).get("result", {}).get("tools", []))
    check("after all that: tools/list", names == ["edit_file", "list_dir", "read_file", "restore", "shell", "snapshot", "write_file"], m)
    m = s.call({"jsonrpc": "2.0", "id": "s-1", "method": "tools/call",
                "params": {"name": "shell", "arguments": {"command": "echo still here"}}})
    check("after all that: a string id is echoed and the shell works",
          (m or {}).get("id") == "s-1" and m["result"]["structuredContent"]["stdout"] == "still here\n", m)


def main():
    before_initialize()
    negotiation()
    s = Server("proto-c")
    check("initialize the main session", "result" in (init(s) or {}))
    malformed(s)
    wrong_params(s)
    notifications(s)
    oversized(s)
    works_after(s)
    rc, err = s.close()
    check("the server ends with status 0 when stdin closes", rc == 0, f"{rc} {err[-300:]}")
    check("nothing but protocol on stdout (stderr has the diagnostics)", "agentjail mcp" in err, err[-300:])
    if failures():
        sys.stderr.write(err[-3000:])


main()
