#!/usr/bin/env python3
"""Bad input to agentjail's E2B API, spoken by hand (standard library only, no SDK), against a
daemon that is already listening (`agentjail serve --e2b-listen`): malformed Connect envelopes
and bodies, wrong types, unknown enums, wrong content types, missing or wrong API keys and
access tokens, another owner's sandbox, sandboxes that are gone, symlinks and ../ that point
out of the sandbox, an upload over the limit, Connect-Timeout-Ms as a command's lifetime. Every
answer must be the documented error (docs/e2b-protocol.md 3, 5, 6, 10) and the daemon must go
on serving. Prints TAP lines; kills every sandbox it made.

    protocol_test.py PORT KEY_ALICE KEY_BOB HOST_DIR READ_TIMEOUT_S

HOST_DIR: a directory on the host that the sandboxes do not see (their /tmp is their own); the
symlink checks point into it and look at it from the host afterwards.
"""
import base64
import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from urllib.parse import quote

PORT, KEY_A, KEY_B, HOST_DIR = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
READ_TIMEOUT = int(sys.argv[5])  # the daemon's --read-timeout
UPLOAD_LIMIT = 64 << 20  # --max-upload's default (src/server/http.c): libevent's body limit
BODY_LIMIT = 1 << 20     # --max-body's default: Connect requests
_failed = [0]
_made = []  # (key, sandboxID) to kill at the end


def check(name, cond, detail=""):
    if cond:
        print(f"ok - {name}", flush=True)
    else:
        _failed[0] += 1
        d = repr(detail).replace("\n", "\\n")[:400]
        print(f"not ok - {name} ({d})", flush=True)


# ---- HTTP -------------------------------------------------------------------------------------

class Resp:
    def __init__(self, status, headers, body, secs):
        self.status, self.headers, self.body, self.secs = status, headers, body, secs
        self.ctype = (headers.get("content-type") or "").split(";")[0].strip()

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return f"HTTP {self.status} {self.ctype} {self.body[:240]!r}"


def raw(method, path, headers=None, body=b"", chunks=None, timeout=60):
    """One request on a fresh connection: body with Content-Length, or chunks (a list of byte
    strings) with Transfer-Encoding: chunked."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    t = time.monotonic()
    try:
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        if chunks is not None:
            c.putheader("Transfer-Encoding", "chunked")
            c.endheaders()
            for ch in chunks:
                c.send(b"%x\r\n%s\r\n" % (len(ch), ch))
            c.send(b"0\r\n\r\n")
        else:
            c.putheader("Content-Length", str(len(body)))
            c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data,
                    time.monotonic() - t)
    except (OSError, http.client.HTTPException) as e:
        return Resp(0, {}, repr(e).encode(), time.monotonic() - t)
    finally:
        c.close()


def control(method, path, key=None, body=None, ctype="application/json", chunks=None):
    h = {}
    if key is not None:
        h["X-API-KEY"] = key
    if body is not None or chunks is not None:
        h["Content-Type"] = ctype
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    return raw(method, path, h, body or b"", chunks)


class Sandbox:
    def __init__(self, key, info):
        self.key, self.id, self.token = key, info["sandboxID"], info["envdAccessToken"]

    def headers(self, token=None, sid=None):
        return {"E2b-Sandbox-Id": sid or self.id, "E2b-Sandbox-Port": "49983",
                "X-Access-Token": self.token if token is None else token}

    def rest(self, method, path, body=b"", ctype=None, token=None, sid=None, chunks=None):
        h = self.headers(token, sid)
        if ctype:
            h["Content-Type"] = ctype
        return raw(method, path, h, body, chunks)

    def unary(self, proc, body, ctype="application/json", token=None):
        h = self.headers(token)
        h["Content-Type"] = ctype
        h["Connect-Protocol-Version"] = "1"
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        return raw("POST", "/" + proc, h, body)

    def stream(self, proc, body, ctype="application/connect+json", token=None, extra=None,
               sid=None):
        h = self.headers(token, sid)
        if ctype is not None:
            h["Content-Type"] = ctype
        h["Connect-Protocol-Version"] = "1"
        h.update(extra or {})
        if not isinstance(body, bytes):
            body = envelope(body)
        return raw("POST", "/" + proc, h, body)

    def sh(self, cmd):
        """Runs a shell line inside; (stdout bytes, end event or the end-stream error)."""
        r = self.stream("process.Process/Start",
                        {"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}, "stdin": False})
        out, end = b"", None
        for flags, m in frames(r.body)[0]:
            ev = (m or {}).get("event", {})
            if "data" in ev:
                out += base64.b64decode(ev["data"].get("stdout", ""))
            if "end" in ev:
                end = ev["end"]
            if flags == 2 and m.get("error"):
                end = m
        return out, end


def envelope(msg, flags=0):
    b = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return bytes([flags]) + struct.pack(">I", len(b)) + b


def frames(data):
    """The envelopes of a stream body as (flags, JSON or None), and what was left over."""
    out = []
    while len(data) >= 5:
        n = struct.unpack(">I", data[1:5])[0]
        if len(data) < 5 + n:
            break
        try:
            m = json.loads(data[5:5 + n])
        except ValueError:
            m = None
        out.append((data[0], m))
        data = data[5 + n:]
    return out, data


def stream_error(r):
    """The error code of a stream that failed as Connect says (HTTP 200, connect+json, one
    end-stream envelope last, nothing after it), else a description of what came instead."""
    fr, rest = frames(r.body)
    if r.status != 200 or r.ctype != "application/connect+json" or not fr or rest:
        return f"not a Connect stream: {r!r}"
    flags, m = fr[-1]
    if flags != 2 or not isinstance(m, dict) or any(f == 2 for f, _ in fr[:-1]):
        return f"no single end-stream envelope last: {fr!r}"
    return (m.get("error") or {}).get("code") or f"no error: {m!r}"


def unary_error(r):
    """A unary call's Connect error: (HTTP status, code) when the body is the JSON error."""
    j = r.json()
    if r.ctype != "application/json" or not isinstance(j, dict):
        return (r.status, f"not a JSON error: {r!r}")
    if not isinstance(j.get("code"), str) or not isinstance(j.get("message"), str):
        return (r.status, f"no code and message: {j!r}")
    return (r.status, j["code"])


def api_error(r, status):
    """True if r is E2B's REST error: that status and {"code": status, "message": "..."}."""
    j = r.json()
    return (r.status == status and r.ctype == "application/json" and isinstance(j, dict) and
            j.get("code") == status and isinstance(j.get("message"), str) and j["message"] != "")


def healthy():
    r = raw("GET", "/health")
    return r.status == 200, r


def still_serving(after, sb):
    ok, r = healthy()
    out, end = sb.sh("echo alive")
    check(f"after {after}: the daemon still answers /health and runs commands",
          ok and out == b"alive\n" and (end or {}).get("exited"), (r, out, end))


def create(key, chunks=None, **body):
    body.setdefault("templateID", "base")
    body.setdefault("timeout", 600)
    if chunks:
        text = json.dumps(body).encode()
        parts = [text[i:i + 7] for i in range(0, len(text), 7)]
        r = control("POST", "/v2/sandboxes", key, chunks=parts)
    else:
        r = control("POST", "/v2/sandboxes", key, body)
    j = r.json()
    if r.status != 201 or not isinstance(j, dict) or "sandboxID" not in j:
        return None, r
    _made.append((key, j["sandboxID"]))
    return Sandbox(key, j), r


# ---- control plane: keys and owners --------------------------------------------------------------

def control_plane():
    a, r = create(KEY_A, chunks=True)
    check("a chunked body on POST /v2/sandboxes is accepted: 201 with a sandboxID and a token",
          a is not None and len(a.token) == 32, r)
    if a is None:
        print("Bail out! no sandbox to test with", flush=True)
        sys.exit(1)
    r = control("POST", "/v2/sandboxes", KEY_A, chunks=[b'{"templateID": ', b'"base", "ti'])
    check("a chunked body that is not JSON: 400 {code: 400}", api_error(r, 400), r)

    for name, key in (("without X-API-KEY", None), ("with a wrong X-API-KEY", "e2b_" + "0" * 32),
                      ("with an empty X-API-KEY", ""), ("with a valid key plus a suffix", KEY_B + " x")):
        r = control("GET", "/v2/sandboxes", key)
        check(f"control plane {name}: 401 {{code: 401, message}}", api_error(r, 401), r)
    r = control("POST", "/v2/sandboxes", None, {"templateID": "base"})
    check("create without X-API-KEY: 401", api_error(r, 401), r)
    r = control("GET", f"/sandboxes/{a.id}", "wrong")
    check("GET a sandbox with a wrong key: 401", api_error(r, 401), r)
    r = control("DELETE", f"/sandboxes/{a.id}", "wrong")
    check("DELETE a sandbox with a wrong key: 401", api_error(r, 401), r)
    r = control("GET", "/health")
    check("GET /health needs no key: 200", r.status == 200, r)

    b, r = create(KEY_B)
    check("bob creates a sandbox of his own", b is not None, r)
    for what, method, path, body in (
            ("GET", "GET", f"/sandboxes/{a.id}", None),
            ("DELETE", "DELETE", f"/sandboxes/{a.id}", None),
            ("connect", "POST", f"/v2/sandboxes/{a.id}/connect", {"timeout": 60}),
            ("setTimeout", "POST", f"/sandboxes/{a.id}/timeout", {"timeout": 60}),
            ("pause", "POST", f"/sandboxes/{a.id}/pause", None)):
        r = control(method, path, KEY_B, body)
        check(f"bob's key cannot {what} alice's sandbox: 404 {{code: 404}} as E2B answers",
              api_error(r, 404), r)
    for path in ("/v2/sandboxes", "/sandboxes", "/v2/sandboxes?state=running,paused"):
        r = control("GET", path, KEY_B)
        ids = [s.get("sandboxID") for s in (r.json() or [])] if r.status == 200 else None
        check(f"bob's list ({path}) has his sandbox and not alice's",
              ids is not None and a.id not in ids and (b is None or b.id in ids), r)
    r = control("GET", "/v2/sandboxes", KEY_A)
    ids = [s.get("sandboxID") for s in (r.json() or [])] if r.status == 200 else None
    check("alice's list has hers and not bob's",
          ids is not None and a.id in ids and (b is None or b.id not in ids), r)
    r = control("GET", f"/sandboxes/{a.id}", KEY_A)
    check("alice's sandbox is still running after bob's DELETE",
          r.status == 200 and (r.json() or {}).get("state") == "running", r)
    if b is not None:
        r = a.rest("GET", "/files?path=%2Fetc%2Fpasswd", sid=b.id)
        check("alice's access token does not open bob's sandbox: 401", api_error(r, 401), r)
    return a, b


def bad_create_bodies():
    for name, body, ctype, status in (
            ("not JSON", b"{templateID", "application/json", 400),
            ("a JSON array", b"[]", "application/json", 400),
            ("timeout as a string", {"templateID": "base", "timeout": "300"}, "application/json", 400),
            ("a negative timeout", {"templateID": "base", "timeout": -1}, "application/json", 400),
            ("envVars not an object", {"templateID": "base", "envVars": [1]}, "application/json", 400),
            ("an envVars value not a string", {"templateID": "base", "envVars": {"A": 1}},
             "application/json", 400),
            ("metadata not strings", {"templateID": "base", "metadata": {"a": 1}}, "application/json", 400),
            ("autoPause not a boolean", {"templateID": "base", "autoPause": "yes"}, "application/json", 400),
            ("templateID a number", {"templateID": 5}, "application/json", 400),
            ("an unknown template", {"templateID": "no-such-template"}, "application/json", 400),
            ("a text/plain body", b'{"templateID": "base"}', "text/plain", 415)):
        r = control("POST", "/v2/sandboxes", KEY_A, body, ctype)
        check(f"create with {name}: {status} {{code: {status}, message}}", api_error(r, status), r)


# ---- sandbox routes: tokens, gone sandboxes ------------------------------------------------------

def tokens(a):
    for name, tok in (("a wrong", "0" * 32), ("an empty", "")):
        r = a.rest("GET", "/files?path=%2Fetc%2Fpasswd", token=tok)
        check(f"GET /files with {name} X-Access-Token: 401 with envd's body", api_error(r, 401), r)
        r = a.unary("filesystem.Filesystem/ListDir", {"path": "/"}, token=tok)
        check(f"ListDir with {name} X-Access-Token: 401 unauthenticated",
              unary_error(r) == (401, "unauthenticated"), r)
        r = a.stream("process.Process/Start",
                     {"process": {"cmd": "/bin/sh", "args": ["-c", "touch /home/user/tokrun"]}},
                     token=tok)
        check(f"Start with {name} X-Access-Token: end-stream unauthenticated",
              stream_error(r) == "unauthenticated", r)
    r = a.rest("POST", "/files?path=tokfile", b"x", "application/octet-stream", token="1" * 32)
    check("POST /files with a wrong token: 401", api_error(r, 401), r)
    r = a.rest("GET", "/files?path=tokfile")
    check("...and nothing was written", api_error(r, 404), r)
    r = a.rest("GET", "/files?path=tokrun")
    check("...and no command ran with a wrong token", api_error(r, 404), r)
    r = raw("GET", "/files?path=x", {"E2b-Sandbox-Id": a.id, "X-Access-Token": a.token})
    check("E2b-Sandbox-Id without E2b-Sandbox-Port: 400", api_error(r, 400), r)


def gone_502(r, sid):
    j = r.json()
    return (r.status == 502 and r.ctype == "application/json" and isinstance(j, dict) and
            j.get("code") == 502 and j.get("sandboxId") == sid and j.get("message"))


def gone(a):
    c, r = create(KEY_A)
    if c is None:
        check("a sandbox to kill", False, r)
        return
    r = control("DELETE", f"/sandboxes/{c.id}", KEY_A)
    check("kill a sandbox: 204", r.status == 204, r)
    r = c.rest("GET", "/files?path=%2Fetc%2Fpasswd")
    check("GET /files of a killed sandbox (its own token): 502 as E2B's proxy", gone_502(r, c.id), r)
    r = c.unary("filesystem.Filesystem/ListDir", {"path": "/"})
    check("ListDir of a killed sandbox: 502", gone_502(r, c.id), r)
    r = c.stream("process.Process/Start", {"process": {"cmd": "/bin/true"}})
    check("Start on a killed sandbox: 502", gone_502(r, c.id), r)
    r = c.stream("filesystem.Filesystem/WatchDir", {"path": "/home/user"})
    check("WatchDir on a killed sandbox: 502", gone_502(r, c.id), r)
    r = c.rest("GET", "/health")
    check("GET /health of a killed sandbox: 502 (the SDK's isRunning() false)", gone_502(r, c.id), r)
    for sid in ("nothex-id", "ffff", "0" * 17, "../../v2/sandboxes"):
        r = a.rest("GET", "/files?path=x", sid=sid)
        check(f"an unknown sandbox id {sid!r}: 502", gone_502(r, sid), r)
    r = a.stream("process.Process/Start", {"process": {"cmd": "/bin/true"}}, sid="zz")
    check("Start with an unknown sandbox id: 502", gone_502(r, "zz"), r)
    r = raw("GET", "/files?path=x", {**a.headers(), "E2b-Sandbox-Port": "8080"})
    check("a sandbox port other than envd's: 502", r.status == 502, r)


# ---- Connect streams ------------------------------------------------------------------------------

def streams(a):
    start = {"process": {"cmd": "/bin/sh", "args": ["-c", "touch /home/user/bad-frame-ran"]},
             "stdin": False}
    watch = {"path": "/home/user"}
    for proc, msg in (("process.Process/Start", start), ("filesystem.Filesystem/WatchDir", watch)):
        good = envelope(msg)
        name = proc.split("/")[1]
        big = json.dumps({**msg, "tag": "x" * (BODY_LIMIT + 16)}).encode()
        cases = (
            ("an empty body", b"", "invalid_argument"),
            ("a truncated 5-byte header", good[:3], "invalid_argument"),
            ("a header without its message", good[:5], "invalid_argument"),
            ("a length larger than the body", good[:5] + good[5:-4], "invalid_argument"),
            ("a length of 0xffffffff", b"\0\xff\xff\xff\xff" + good[5:], "invalid_argument"),
            ("a length of 0", b"\0\0\0\0\0" + good[5:], "invalid_argument"),
            ("a body over --max-body (1 MiB)", envelope(big), "resource_exhausted"),
            ("the compressed flag", bytes([1]) + good[1:], "unimplemented"),
            ("the end-stream flag", bytes([2]) + good[1:], "invalid_argument"),
            ("two messages", good + good, "invalid_argument"),
            ("a payload that is not JSON", envelope(b"\x00\xffnot json"), "invalid_argument"),
            ("a JSON array", envelope(b"[1, 2]"), "invalid_argument"),
            ("invalid UTF-8 in a string", envelope(b'{"path": "\xc3\x28"}'), "invalid_argument"),
            ("duplicate keys", envelope(b'{"path": "/", "path": "/tmp"}'), "invalid_argument"),
        )
        for what, body, code in cases:
            r = a.stream(proc, body)
            check(f"{name} with {what}: HTTP 200 and an end-stream {code}",
                  stream_error(r) == code, r)
        for what, ctype in (("application/json", "application/json"),
                            ("application/connect+proto", "application/connect+proto"),
                            ("no Content-Type", None)):
            r = a.stream(proc, good, ctype=ctype)
            check(f"{name} with {what}: 415, not a Connect stream that reads as a success",
                  r.status == 415 and r.ctype != "application/connect+json", r)
        for t in ("abc", "-5", "12345678901", "1.5", ""):
            r = a.stream(proc, good, extra={"Connect-Timeout-Ms": t})
            check(f"{name} with Connect-Timeout-Ms {t!r}: end-stream invalid_argument",
                  stream_error(r) == "invalid_argument", r)
    r = a.rest("GET", "/files?path=bad-frame-ran")
    check("no malformed Start ran its command", api_error(r, 404), r)
    bad_start = (
        ("no process", {"stdin": False}),
        ("cmd a number", {"process": {"cmd": 5}}),
        ("args not strings", {"process": {"cmd": "/bin/true", "args": [1]}}),
        ("envs not strings", {"process": {"cmd": "/bin/true", "envs": {"A": 1}}}),
        ("stdin a string", {"process": {"cmd": "/bin/true"}, "stdin": "yes"}),
        ("pty rows a word", {"process": {"cmd": "/bin/true"}, "pty": {"size": {"rows": "x"}}}),
        ("pty cols over 65535", {"process": {"cmd": "/bin/true"}, "pty": {"size": {"cols": 70000}}}),
        ("a cwd that does not exist", {"process": {"cmd": "/bin/true", "cwd": "/nonexistent"}}),
    )
    for what, msg in bad_start:
        r = a.stream("process.Process/Start", msg)
        check(f"Start with {what}: end-stream invalid_argument",
              stream_error(r) == "invalid_argument", r)
    r = a.stream("filesystem.Filesystem/WatchDir", {"path": "/home/user", "recursive": "yes"})
    check("WatchDir with recursive a string: end-stream invalid_argument",
          stream_error(r) == "invalid_argument", r)
    r = a.stream("filesystem.Filesystem/WatchDir", {"path": 5})
    check("WatchDir with path a number: end-stream invalid_argument",
          stream_error(r) == "invalid_argument", r)
    r = a.unary("process.Process/List", {})
    procs = (r.json() or {}).get("processes")
    check("no process is left running by the bad requests", r.status == 200 and procs == [], r)
    still_serving("malformed Connect streams", a)


def broken_http(a):
    """Requests cut off or garbled at the HTTP level."""
    head = ("POST /process.Process/Start HTTP/1.1\r\nHost: x\r\n"
            f"E2b-Sandbox-Id: {a.id}\r\nE2b-Sandbox-Port: 49983\r\nX-Access-Token: {a.token}\r\n"
            "Content-Type: application/connect+json\r\nContent-Length: 1000\r\n\r\n").encode()
    for what, data in (("a body cut off before its Content-Length", head + b"\0\0\0\0\x10{"),
                       ("a request line of garbage", b"\x00\x01GARBAGE\r\n\r\n"),
                       ("headers cut off", head[:60])):
        s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        try:
            got = s.recv(4096)
        except OSError:
            got = b""
        s.close()
        ok, r = healthy()
        check(f"{what}: the connection ends ({got[:40]!r}), the daemon serves on", ok, r)


# ---- Connect unary calls -------------------------------------------------------------------------

def background(a, cmd, stdin=True):
    """Starts a command, reads its start event and leaves: it runs on (envd's rule). Its pid."""
    h = a.headers()
    body = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}, "stdin": stdin})
    req = (f"POST /process.Process/Start HTTP/1.1\r\nHost: x\r\n"
           + "".join(f"{k}: {v}\r\n" for k, v in h.items())
           + "Content-Type: application/connect+json\r\n"
           + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    s.sendall(req)
    buf = b""
    while b'"pid"' not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    s.close()
    i = buf.find(b'{"event"')
    try:
        return json.loads(buf[i:buf.index(b"}}}", i) + 3])["event"]["start"]["pid"]
    except (ValueError, KeyError):
        return None


def polled_watcher(a):
    """CreateWatcher still works after the bad calls, and hands out what happened once."""
    a.unary("filesystem.Filesystem/MakeDir", {"path": "/home/user/watched"})
    r = a.unary("filesystem.Filesystem/CreateWatcher", {"path": "/home/user/watched"})
    wid = (r.json() or {}).get("watcherId")
    check("CreateWatcher: 200 with a watcherId", r.status == 200 and isinstance(wid, str), r)
    a.sh("touch /home/user/watched/f1")
    events = []
    for _ in range(30):
        r = a.unary("filesystem.Filesystem/GetWatcherEvents", {"watcherId": wid})
        events += (r.json() or {}).get("events") or []
        if events or r.status != 200:
            break
        time.sleep(0.1)
    check("GetWatcherEvents: the file made in the directory, as EVENT_TYPE_CREATE",
          {"name": "f1", "type": "EVENT_TYPE_CREATE"} in events, (r, events))
    r = a.unary("filesystem.Filesystem/GetWatcherEvents", {"watcherId": wid})
    check("GetWatcherEvents again: nothing new", r.status == 200 and r.json() == {"events": []}, r)
    r = a.unary("filesystem.Filesystem/RemoveWatcher", {"watcherId": wid})
    check("RemoveWatcher: 200 {}", r.status == 200 and r.json() == {}, r)
    r = a.unary("filesystem.Filesystem/GetWatcherEvents", {"watcherId": wid})
    check("GetWatcherEvents of the removed watcher: 404 not_found",
          unary_error(r) == (404, "not_found"), r)


def unary(a):
    J = "application/json"
    cases = (
        ("ListDir", b"{not json", J),
        ("ListDir", b"[]", J),
        ("ListDir", b'"a string"', J),
        ("ListDir", b'{"path": 5}', J),
        ("ListDir", b'{"path": "/", "depth": "x"}', J),
        ("ListDir", b'{"path": "/", "depth": -1}', J),
        ("ListDir", b'{"path": "/", "depth": 1.5}', J),
        ("ListDir", b'{"path": "/", "path": "/tmp"}', J),
        ("ListDir", b'{"path": "a\\u0000b"}', J),
        ("Stat", b'{"path": ["a"]}', J),
        ("Stat", b'{"path": null}', J),
        ("MakeDir", b'{"path": {}}', J),
        ("Move", b'{"source": "/tmp", "destination": 1}', J),
        ("Remove", b'{}', J),
        ("CreateWatcher", b'{"path": "/home/user", "recursive": "yes"}', J),
        ("GetWatcherEvents", b'{"watcherId": 5}', J),
        ("RemoveWatcher", b'{}', J),
    )
    for proc, body, ctype in cases:
        r = a.unary("filesystem.Filesystem/" + proc, body, ctype)
        check(f"{proc} with {body.decode(errors='replace')}: HTTP 400 invalid_argument",
              unary_error(r) == (400, "invalid_argument"), r)
    r = a.unary("filesystem.Filesystem/GetWatcherEvents", {"watcherId": "w1-nope"})
    check("GetWatcherEvents of an unknown watcher: 404 not_found",
          unary_error(r) == (404, "not_found"), r)
    polled_watcher(a)
    pid = background(a, "read line; sleep 600")
    check("a background command for the process calls", isinstance(pid, int), pid)
    sel = {"pid": pid}
    pcases = (
        ("SendSignal", {"process": sel, "signal": "SIGNAL_SIGFOO"}),
        ("SendSignal", {"process": sel, "signal": "SIGKILL"}),
        ("SendSignal", {"process": sel, "signal": {"x": 1}}),
        ("SendSignal", {"process": sel, "signal": 2}),
        ("SendSignal", {"process": {"pid": "one"}, "signal": "SIGNAL_SIGKILL"}),
        ("SendSignal", {"signal": "SIGNAL_SIGKILL"}),
        ("SendInput", {"process": sel, "input": {"stdin": 5}}),
        ("SendInput", {"process": sel, "input": {"stdin": "!!not base64!!"}}),
        ("SendInput", {"process": sel}),
        ("Update", {"process": sel, "pty": {"size": {"rows": "a", "cols": 80}}}),
        ("Update", {"process": sel, "pty": {"size": {"rows": 24, "cols": -1}}}),
        ("Update", {"process": sel, "pty": {"size": "24x80"}}),
    )
    for proc, body in pcases:
        r = a.unary("process.Process/" + proc, body)
        check(f"{proc} with {json.dumps(body)}: HTTP 400 invalid_argument",
              unary_error(r) == (400, "invalid_argument"), r)
    r = a.unary("process.Process/List", {})
    alive = [p.get("pid") for p in (r.json() or {}).get("processes", [])]
    check("the command is still running after the bad calls", pid in alive, r)
    r = a.unary("process.Process/SendSignal", {"process": sel, "signal": "SIGNAL_SIGKILL"})
    check("...and a good SendSignal kills it: 200 {}", r.status == 200 and r.json() == {}, r)
    r = a.unary("process.Process/SendSignal", {"process": {"pid": 999999}, "signal": 15})
    check("SendSignal to an unknown pid (the enum as its number): 404 not_found",
          unary_error(r) == (404, "not_found"), r)
    r = a.unary("process.Process/Nope", {})
    check("an unknown procedure: 501 unimplemented", unary_error(r) == (501, "unimplemented"), r)
    for ctype in ("text/plain", "application/proto", "application/connect+json"):
        r = a.unary("filesystem.Filesystem/ListDir", {"path": "/"}, ctype)
        check(f"a unary call as {ctype}: 415", r.status == 415, r)
    r = a.unary("filesystem.Filesystem/ListDir", b'{"path": "' + b"x" * (BODY_LIMIT + 8) + b'"}')
    check("a unary body over --max-body: 429 resource_exhausted",
          unary_error(r) == (429, "resource_exhausted"), r)
    still_serving("malformed unary calls", a)


# ---- files: symlinks, ../, the upload limit ------------------------------------------------------

def read_host(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def files(a):
    secret = os.urandom(12).hex().encode()
    with open(os.path.join(HOST_DIR, "secret"), "wb") as f:
        f.write(secret)
    out, end = a.sh(f"ln -s /etc/shadow shadowlink && ln -s / rootlink && "
                    f"ln -s {HOST_DIR} hostlink && ln -s {HOST_DIR}/secret filelink && "
                    f"ln -s /usr usrlink && cat /etc/passwd")
    check("a command makes symlinks to /etc/shadow, /, the host directory, /usr",
          (end or {}).get("exited") and (end or {}).get("exitCode", 0) == 0, (out, end))
    inside_passwd = out
    shadow = read_host("/etc/shadow")

    for p in ("shadowlink", "rootlink/etc/shadow", "../../etc/shadow", "/etc/shadow"):
        r = a.rest("GET", "/files?path=" + quote(p))
        check(f"GET /files?path={p}: 404 (the sandbox has no /etc/shadow), never the host's",
              api_error(r, 404) and (not shadow or shadow not in r.body), r)
    for p in ("hostlink/secret", "filelink", f"rootlink{HOST_DIR}/secret",
              f"../../..{HOST_DIR}/secret", f"/home/user/../..{HOST_DIR}/secret",
              f"/proc/1/root{HOST_DIR}/secret", f"/proc/self/root{HOST_DIR}/secret",
              f"/proc/1/cwd/../../../..{HOST_DIR}/secret"):
        r = a.rest("GET", "/files?path=" + quote(p))
        check(f"GET /files?path={p}: 404, not the host file", api_error(r, 404) and secret not in r.body, r)
    r = a.rest("GET", "/files?path=" + quote("rootlink/etc/passwd"))
    check("GET rootlink/etc/passwd: the sandbox's own /etc/passwd (the link resolved inside)",
          r.status == 200 and r.body == inside_passwd and inside_passwd, (r, inside_passwd))
    r = a.rest("GET", "/files?path=" + quote("../../../../../etc/passwd"))
    check("GET ../../../../../etc/passwd: cleaned to the sandbox's /etc/passwd",
          r.status == 200 and r.body == inside_passwd, r)
    r = raw("GET", "/files/../../etc/passwd?path=x", a.headers())
    check("../ in the URL path is no route: 404", r.status == 404 and r.body != inside_passwd, r)
    r = a.unary("filesystem.Filesystem/ListDir", {"path": "hostlink"})
    check("ListDir hostlink: not_found, not the host directory",
          unary_error(r) == (404, "not_found") and b"secret" not in r.body, r)
    r = a.unary("filesystem.Filesystem/ListDir", {"path": f"rootlink{HOST_DIR}"})
    check("ListDir rootlink/HOST_DIR: not_found", unary_error(r) == (404, "not_found"), r)

    writes = (
        ("hostlink/escape1", "escape1"),
        (f"rootlink{HOST_DIR}/escape2", "escape2"),
        (f"../../..{HOST_DIR}/escape3", "escape3"),
        (f"/proc/1/root{HOST_DIR}/escape4", "escape4"),
    )
    for p, name in writes:
        r = a.rest("POST", "/files?path=" + quote(p), b"PWNED", "application/octet-stream")
        check(f"POST /files?path={p}: answered ({r.status}); nothing on the host at HOST_DIR/{name}",
              r.status in (200, 400, 403, 404) and not os.path.exists(os.path.join(HOST_DIR, name)),
              r)
    out, _ = a.sh(f"cat {HOST_DIR}/escape2")
    check("the write through rootlink landed inside the sandbox (its own /tmp)", out == b"PWNED", out)
    b = "agentjailboundary"
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"../../..{HOST_DIR}/escape5\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            f"PWNED\r\n--{b}--\r\n").encode()
    r = a.rest("POST", "/files", body, f"multipart/form-data; boundary={b}")
    check("a multipart filename with ../ to the host directory: nothing on the host",
          r.status == 200 and not os.path.exists(os.path.join(HOST_DIR, "escape5")), r)
    r = a.rest("POST", "/files?path=filelink", b"PWNED", "application/octet-stream")
    check("POST through a symlink to the host's file: the host file is unchanged",
          read_host(os.path.join(HOST_DIR, "secret")) == secret, r)
    esc = f"aj-e2b-escape-{os.getpid()}"
    for p in (f"rootlink/etc/{esc}", f"usrlink/{esc}", f"shadowlink"):
        r = a.rest("POST", "/files?path=" + quote(p), b"PWNED", "application/octet-stream")
        check(f"POST /files?path={p}: 403 read-only, nothing written on the host",
              api_error(r, 403) and not os.path.exists(f"/etc/{esc}") and
              not os.path.exists(f"/usr/{esc}"), r)
    r = a.unary("filesystem.Filesystem/MakeDir", {"path": "hostlink/newdir"})
    check(f"MakeDir hostlink/newdir: answered ({r.status}); no directory on the host",
          r.status in (200, 400, 403, 404) and
          not os.path.exists(os.path.join(HOST_DIR, "newdir")), r)
    for p in ("hostlink/secret", f"rootlink{HOST_DIR}/secret", f"../../..{HOST_DIR}"):
        r = a.unary("filesystem.Filesystem/Remove", {"path": p})
        check(f"Remove {p}: the host file is still there",
              read_host(os.path.join(HOST_DIR, "secret")) == secret, r)
    r = a.unary("filesystem.Filesystem/Move",
                {"source": "hostlink/secret", "destination": "/home/user/stolen"})
    check("Move hostlink/secret: not_found, the host file stays",
          unary_error(r) == (404, "not_found") and
          read_host(os.path.join(HOST_DIR, "secret")) == secret, r)
    r = a.rest("GET", "/files?path=stolen")
    check("...and nothing came in", api_error(r, 404), r)
    check("the host directory holds only the secret afterwards",
          sorted(os.listdir(HOST_DIR)) == ["secret"], os.listdir(HOST_DIR))


def curl_upload(a, size, chunked):
    data = os.path.join(HOST_DIR, "big")
    with open(data, "wb") as f:
        f.truncate(size)
    args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "120"]
    for k, v in a.headers().items():
        args += ["-H", f"{k}: {v}"]
    if chunked:
        args += ["-H", "Transfer-Encoding: chunked"]
    args += ["-F", f"file=@{data};filename=/home/user/big",
             f"http://127.0.0.1:{PORT}/files?path=%2Fhome%2Fuser%2Fbig"]
    try:
        code = subprocess.run(args, capture_output=True, text=True, timeout=150).stdout
    finally:
        os.unlink(data)
    return code


def upload_limit(a):
    code = curl_upload(a, 2 << 20, False)
    check("a 2 MiB multipart upload (over --max-body, under --max-upload): 200", code == "200", code)
    r = a.unary("filesystem.Filesystem/Stat", {"path": "/home/user/big"})
    size = ((r.json() or {}).get("entry") or {}).get("size")
    check("...of 2 MiB", size == str(2 << 20), r)
    a.unary("filesystem.Filesystem/Remove", {"path": "/home/user/big"})
    for chunked in (False, True):
        how = "chunked" if chunked else "with Content-Length"
        code = curl_upload(a, UPLOAD_LIMIT + 1024, chunked)
        check(f"a multipart upload over --max-upload (64 MiB), {how}: 413", code == "413", code)
        r = a.rest("GET", "/files?path=big")
        check(f"...nothing was written ({how})", api_error(r, 404), r)
    still_serving("uploads over the limit", a)


# ---- Connect-Timeout-Ms ----------------------------------------------------------------------------

def deadlines(a):
    r = a.stream("process.Process/Start",
                 {"process": {"cmd": "/bin/sleep", "args": ["30"]}, "stdin": False, "tag": "dl"},
                 extra={"Connect-Timeout-Ms": "1000"})
    fr, _ = frames(r.body)
    check("sleep 30 with Connect-Timeout-Ms: 1000 ends within 5 s",
          r.status == 200 and r.secs < 5, (r.secs, r))
    check("...with a start event first and end-stream deadline_exceeded",
          fr and "start" in ((fr[0][1] or {}).get("event") or {}) and
          stream_error(r) == "deadline_exceeded", fr)
    gone_in = None
    for i in range(40):
        r = a.unary("process.Process/List", {})
        if r.status == 200 and not any(p.get("tag") == "dl" for p in r.json()["processes"]):
            gone_in = i
            break
        time.sleep(0.1)
    check("...and the command was killed, not just left (gone from List)", gone_in is not None, r)
    r = a.stream("filesystem.Filesystem/WatchDir", {"path": "/home/user"},
                 extra={"Connect-Timeout-Ms": "500"})
    fr, _ = frames(r.body)
    check("WatchDir with Connect-Timeout-Ms: 500 ends within 4 s with deadline_exceeded",
          r.secs < 4 and stream_error(r) == "deadline_exceeded", (r.secs, r))
    msg = ((fr[-1][1] or {}).get("error") or {}).get("message") if fr else None
    check("...whose message is the deadline's, not a stopped sandbox's",
          msg == "context deadline exceeded", msg)
    r = a.stream("process.Process/Start", {"process": {"cmd": "/bin/true"}, "stdin": False},
                 extra={"Connect-Timeout-Ms": "5000"})
    fr, _ = frames(r.body)
    ends = [m["event"]["end"] for _, m in fr if (m or {}).get("event", {}).get("end")]
    check("a command that ends before its Connect-Timeout-Ms: exit 0, end-stream {}",
          ends and ends[0].get("exited") and fr[-1] == (2, {}), fr)


def quiet_streams(a):
    """Streams silent for longer than --read-timeout, with the SDK's Keepalive-Ping-Interval
    (50 s): the daemon's keepalives must keep the connection up until the command ends."""
    secs = READ_TIMEOUT * 2 + 1
    ka = {"Keepalive-Ping-Interval": "50"}
    got = {}
    jobs = (
        ("start", lambda: a.stream("process.Process/Start",
                                   {"process": {"cmd": "/bin/sleep", "args": [str(secs)]}},
                                   extra=ka)),
        ("watch", lambda: a.stream("filesystem.Filesystem/WatchDir", {"path": "/home/user"},
                                   extra={**ka, "Connect-Timeout-Ms": str(secs * 1000)})),
    )
    threads = [threading.Thread(target=lambda n=n, f=f: got.__setitem__(n, f())) for n, f in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = got.get("start")
    fr, _ = frames(r.body) if r else ([], b"")
    ends = [m["event"]["end"] for _, m in fr if (m or {}).get("event", {}).get("end")]
    check(f"sleep {secs}, silent past --read-timeout ({READ_TIMEOUT} s): keepalives, then exit 0",
          ends and ends[0].get("exited") and fr[-1] == (2, {}) and
          any((m or {}).get("event", {}).get("keepalive") == {} for _, m in fr), r)
    r = got.get("watch")
    fr, _ = frames(r.body) if r else ([], b"")
    check(f"a silent WatchDir lives past --read-timeout to its own deadline ({secs} s)",
          r is not None and r.secs >= secs - 0.5 and stream_error(r) == "deadline_exceeded" and
          any(m == {"keepalive": {}} for _, m in fr), r)


def finish():
    for key, sid in _made:
        r = control("DELETE", f"/sandboxes/{sid}", key)
        check(f"kill {sid}: 204 (or already gone)", r.status in (204, 404), r)
    ok, r = healthy()
    check("after all of it the daemon answers /health", ok, r)
    for key in (KEY_A, KEY_B):
        r = control("GET", "/v2/sandboxes", key)
        check("no sandbox is listed any more", r.status == 200 and r.json() == [], r)


def main():
    a, _ = control_plane()
    bad_create_bodies()
    tokens(a)
    gone(a)
    streams(a)
    broken_http(a)
    unary(a)
    files(a)
    upload_limit(a)
    deadlines(a)
    quiet_streams(a)
    finish()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for key, sid in _made:
            control("DELETE", f"/sandboxes/{sid}", key)
