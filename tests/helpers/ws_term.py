#!/usr/bin/python3
"""A client of the terminal's WebSocket (GET /v1/sandboxes/{ref}/terminal) for the tests: the
`websockets` library (python3-websockets) as a real client, and raw frames for what a real
client never sends. Prints one JSON object: what happened.

    ws_term.py session URL [--ticket T] [--auth TOKEN] [--origin O] [--send TEXT]...
                           [--resize R C] [--wait-for TEXT] [--close]
        Opens the terminal; "status" is 101 or the refusal's HTTP status ("refused": its
        body). Each --send types TEXT (with \\r for Enter); --resize sends a resize; output is
        collected until --wait-for appears (or the command exits, or 15 s pass). --close ends
        the connection from this side right after the start message. Then "start", "output",
        "exit", "errors" (text messages of type error), "close_code", "close_reason".
    ws_term.py raw URL --ticket T FRAME_HEX
        The handshake by hand, then FRAME_HEX as it is; prints the close code the daemon sent.
"""
import asyncio
import base64
import json
import os
import socket
import struct
import sys
import urllib.parse

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatusCode


def opts(argv):
    o = {"send": [], "resize": None, "wait": None, "ticket": None, "auth": None, "origin": None,
         "close": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--send":
            o["send"].append(argv[i + 1].encode().decode("unicode_escape")); i += 2
        elif a == "--resize":
            o["resize"] = (int(argv[i + 1]), int(argv[i + 2])); i += 3
        elif a == "--wait-for":
            o["wait"] = argv[i + 1]; i += 2
        elif a in ("--ticket", "--auth", "--origin"):
            o[a[2:]] = argv[i + 1]; i += 2
        elif a == "--close":
            o["close"] = True; i += 1
        else:
            o.setdefault("rest", []).append(a); i += 1
    return o


async def session(url, o):
    protos = ["agentjail.terminal.v1"] + (["ticket." + o["ticket"]] if o["ticket"] else [])
    headers = {"Authorization": "Bearer " + o["auth"]} if o["auth"] else {}
    out = {"status": None, "start": None, "output": "", "exit": None, "errors": [],
           "close_code": None, "close_reason": None}
    try:
        ws = await websockets.connect(url, subprotocols=protos, origin=o["origin"],
                                      extra_headers=headers, open_timeout=15)
    except InvalidStatusCode as e:
        out["status"] = e.status_code
        return out
    out["status"] = 101
    out["subprotocol"] = ws.subprotocol
    out["start"] = json.loads(await asyncio.wait_for(ws.recv(), 15))
    if o["close"]:
        await ws.close()
        out["close_code"] = ws.close_code
        return out
    if o["resize"]:
        await ws.send(json.dumps({"type": "resize", "rows": o["resize"][0], "cols": o["resize"][1]}))
    for s in o["send"]:
        await ws.send(s.encode())
    loop = asyncio.get_running_loop()
    end = loop.time() + 15
    try:
        while loop.time() < end:
            m = await asyncio.wait_for(ws.recv(), end - loop.time())
            if isinstance(m, bytes):
                out["output"] += m.decode("utf-8", "replace")
                if o["wait"] and o["wait"] in out["output"]:
                    break
            else:
                j = json.loads(m)
                if j.get("type") == "exit":
                    out["exit"] = j
                elif j.get("type") == "error":
                    out["errors"].append(j.get("message"))
    except (ConnectionClosed, asyncio.TimeoutError):
        pass
    if ws.open:
        await ws.close()
    out["close_code"] = ws.close_code
    out["close_reason"] = ws.close_reason
    return out


def raw(url, ticket, frame_hex):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    path = u.path + ("?" + u.query if u.query else "")
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: agentjail.terminal.v1, ticket.{ticket}\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            return {"status": None}
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ")[1])
    if status != 101:
        return {"status": status}
    s.sendall(bytes.fromhex(frame_hex))
    code = None
    try:
        while True:
            while len(rest) < 2:
                chunk = s.recv(4096)
                if not chunk:
                    return {"status": 101, "close_code": code}
                rest += chunk
            n = rest[1] & 0x7F
            h = 2 + (2 if n == 126 else 8 if n == 127 else 0)
            while len(rest) < h:
                rest += s.recv(4096)
            if n == 126:
                n = struct.unpack(">H", rest[2:4])[0]
            elif n == 127:
                n = struct.unpack(">Q", rest[2:10])[0]
            while len(rest) < h + n:
                rest += s.recv(4096)
            op, payload, rest = rest[0] & 0x0F, rest[h:h + n], rest[h + n:]
            if op == 8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                return {"status": 101, "close_code": code, "reason": payload[2:].decode()}
    except socket.timeout:
        return {"status": 101, "close_code": None}


def main():
    cmd, url = sys.argv[1], sys.argv[2]
    o = opts(sys.argv[3:])
    if cmd == "session":
        print(json.dumps(asyncio.run(session(url, o))))
    else:
        print(json.dumps(raw(url, o["ticket"], o["rest"][0])))


main()
