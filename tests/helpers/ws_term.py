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
        --paste N sends N bytes (lines of 80) in binary messages of at most 1,000,000 bytes,
        then ^D. --gone resets the connection (no close frame: a tab closed with data unread)
        once the sends and the paste are out (or 5 s after the paste stalled). --ready TEXT waits for TEXT in the output before any of
        that.
    ws_term.py raw URL --ticket T FRAME_HEX [--trail N]
        The handshake by hand, then FRAME_HEX as it is (and N more bytes the daemon will never
        read as frames); prints the close code the daemon sent ("reset": the connection was
        reset instead), and with --trail how the connection ended after more bytes ("end").
    ws_term.py flood URL --ticket T SECONDS PID
        A client that sends pings (125 bytes) and bad text messages for SECONDS and reads
        nothing; then reads what came. Prints what it sent, the daemon's (PID) RSS growth in
        KiB, and the pongs, errors and close it got.
    ws_term.py cap URL N --auth TOKEN [--other URL2 --other-auth TOKEN2]
        Opens N terminals and holds them, then one more ("next": its status), and one at URL2
        as another owner ("other").
"""
import asyncio
import base64
import json
import os
import socket
import struct
import sys
import time
import urllib.parse

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatusCode


def opts(argv):
    o = {"send": [], "resize": None, "wait": None, "ticket": None, "auth": None, "origin": None,
         "close": False, "gone": False, "paste": 0, "trail": 0, "other": None, "other-auth": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--send":
            o["send"].append(argv[i + 1].encode().decode("unicode_escape")); i += 2
        elif a == "--resize":
            o["resize"] = (int(argv[i + 1]), int(argv[i + 2])); i += 3
        elif a == "--wait-for":
            o["wait"] = argv[i + 1]; i += 2
        elif a == "--ready":
            o["ready"] = argv[i + 1]; i += 2
        elif a in ("--ticket", "--auth", "--origin", "--other", "--other-auth"):
            o[a[2:]] = argv[i + 1]; i += 2
        elif a in ("--paste", "--trail"):
            o[a[2:]] = int(argv[i + 1]); i += 2
        elif a in ("--close", "--gone"):
            o[a[2:]] = True; i += 1
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
    while o.get("ready") and o["ready"] not in out["output"]:
        m = await asyncio.wait_for(ws.recv(), 15)
        if isinstance(m, bytes):
            out["output"] += m.decode("utf-8", "replace")
    if o["resize"]:
        await ws.send(json.dumps({"type": "resize", "rows": o["resize"][0], "cols": o["resize"][1]}))
    for s in o["send"]:
        await ws.send(s.encode())
    if o["paste"]:
        try:
            for left in range(o["paste"] // 80, 0, -12500):
                await asyncio.wait_for(ws.send((b"a" * 79 + b"\n") * min(left, 12500)),
                                       5 if o["gone"] else None)
            await ws.send(b"\x04")
        except asyncio.TimeoutError:
            pass
    if o["gone"]:
        sock = ws.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        ws.transport.abort()
        return out
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


def handshake(url, ticket, rcvbuf=None):
    """The upgrade by hand: (socket, status, bytes after the head)."""
    u = urllib.parse.urlsplit(url)
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect((u.hostname, u.port))
    key = base64.b64encode(os.urandom(16)).decode()
    path = u.path + ("?" + u.query if u.query else "")
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Origin: http://{u.netloc}\r\n"
               f"Sec-WebSocket-Protocol: agentjail.terminal.v1, ticket.{ticket}\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            return s, None, b""
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    return s, int(head.split(b" ")[1]), rest


def masked(op, data):
    n = len(data)
    head = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else
                                 bytes([0xFE]) + struct.pack(">H", n) if n < 65536 else
                                 bytes([0xFF]) + struct.pack(">Q", n))
    m = os.urandom(4)
    return head + m + bytes(c ^ m[i & 3] for i, c in enumerate(data))


def frames(buf):
    """Whole frames at the start of buf: ([(op, payload)], rest)."""
    out = []
    while len(buf) >= 2:
        n, h = buf[1] & 0x7F, 2
        if n == 126:
            n, h = struct.unpack(">H", buf[2:4])[0], 4
        elif n == 127:
            n, h = struct.unpack(">Q", buf[2:10])[0], 10
        if len(buf) < h + n:
            break
        out.append((buf[0] & 0x0F, buf[h:h + n]))
        buf = buf[h + n:]
    return out, buf


def raw(url, ticket, frame_hex, trail):
    s, status, rest = handshake(url, ticket)
    if status != 101:
        return {"status": status}
    try:
        s.sendall(bytes.fromhex(frame_hex) + b"\0" * trail)
    except (ConnectionResetError, BrokenPipeError):
        pass
    time.sleep(0.3 if trail else 0)
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
                out = {"status": 101, "close_code": code, "reason": payload[2:].decode()}
                if trail:
                    out["end"] = ending(s)
                return out
    except socket.timeout:
        return {"status": 101, "close_code": None}
    except ConnectionResetError:
        return {"status": 101, "close_code": None, "reset": True}


def ending(s):
    """After the close frame: more bytes go, then how the connection ends: "eof" (the daemon
    shut its side down and read on) or "reset" (it closed with bytes unread)."""
    try:
        s.sendall(b"\0" * 65536)
        time.sleep(0.3)
        while s.recv(65536):
            pass
        return "eof"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except socket.timeout:
        return "open"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1])


def flood(url, ticket, seconds, pid):
    s, status, rest = handshake(url, ticket, rcvbuf=4096)
    if status != 101:
        return {"status": status}
    chunk = (masked(9, b"x" * 125) + masked(1, b"{}")) * 200
    before, sent, end = rss_kib(pid), 0, time.time() + seconds
    s.settimeout(0.2)
    while time.time() < end:
        try:
            sent += s.send(chunk)
        except socket.timeout:
            pass
    grown = rss_kib(pid) - before
    buf, got, end = rest, [], time.time() + 3
    while time.time() < end:
        try:
            chunk = s.recv(1 << 16)
        except socket.timeout:
            if got or buf:
                break
            continue
        if not chunk:
            break
        buf += chunk
    got, _ = frames(buf)
    s.close()
    return {"status": 101, "sent": sent, "rss_growth_kib": grown,
            "pongs": sum(1 for op, _ in got if op == 10),
            "errors": sum(1 for op, p in got if op == 1 and b'"error"' in p),
            "close_code": next((struct.unpack(">H", p[:2])[0] for op, p in got if op == 8), None)}


async def cap(url, n, o):
    headers = {"Authorization": "Bearer " + o["auth"]}
    held, out = [], {}

    async def one(u, h):
        try:
            ws = await websockets.connect(u, subprotocols=["agentjail.terminal.v1"],
                                          extra_headers=h, open_timeout=30)
            held.append(ws)
            return 101
        except InvalidStatusCode as e:
            return e.status_code

    codes = [await one(url, headers) for _ in range(n)]
    out["opened"] = codes.count(101)
    out["next"] = await one(url, headers)
    if o["other"]:
        out["other"] = await one(o["other"], {"Authorization": "Bearer " + o["other-auth"]})
    for ws in held:
        await ws.close()
    return out


def main():
    cmd, url = sys.argv[1], sys.argv[2]
    o = opts(sys.argv[3:])
    if cmd == "session":
        print(json.dumps(asyncio.run(session(url, o))))
    elif cmd == "flood":
        print(json.dumps(flood(url, o["ticket"], float(o["rest"][0]), int(o["rest"][1]))))
    elif cmd == "cap":
        print(json.dumps(asyncio.run(cap(url, int(o["rest"][0]), o))))
    else:
        print(json.dumps(raw(url, o["ticket"], o["rest"][0], o["trail"])))


main()
