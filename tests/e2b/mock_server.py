#!/usr/bin/env python3
# ============================================================================================
#  MOCK SERVER — NOT AGENTJAIL, NOT A SANDBOX, NOT FOR PRODUCTION.
#
#  A throwaway, stdlib-only Python implementation of the E2B wire protocol described in
#  docs/e2b-protocol.md. It exists for two reasons only:
#    1. to prove that the spec is complete enough for the real E2B JS SDK (tests/e2b/
#       e2b_sdk_test.mjs passes against it), and
#    2. to serve as an executable protocol-conformance reference for the C implementation.
#
#  It runs commands directly on the host as the invoking user, with NO isolation. Sandbox
#  paths are mapped under a per-sandbox temp directory (virtual "/x" -> ROOT/<id>/fs/x) for
#  the file APIs only; processes see the host filesystem, their cwd/HOME are the mapped host
#  directories. "Pause" is SIGSTOP. Users are not switched (only $USER/$HOME are set).
#  The real harness never starts it; tests/e2b/run_mock.sh does, for self-checks.
#
#  usage: mock_server.py [--port N] [--api-key KEY] [--root DIR] [--envd-version V]
#                        [--trace FILE]        # JSON lines of every request/response (wire capture)
#  Prints "LISTENING <port>" on stdout once ready.
# ============================================================================================
import argparse
import base64
import datetime as dt
import fcntl
import json
import os
import pty  # noqa: F401  (documented: the PTY path uses os.openpty + TIOCSCTTY)
import queue
import re
import secrets
import shutil
import signal
import socketserver
import stat as statmod
import struct
import subprocess
import sys
import termios
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler

ENVD_PORT = 49983
JUPYTER_PORT = 49999

ARGS = None
LOCK = threading.RLock()
SANDBOXES = {}  # id -> Sandbox
TRACE_LOCK = threading.Lock()


def now_utc():
    return dt.datetime.now(dt.timezone.utc)


def iso(t):
    return t.isoformat().replace("+00:00", "Z")


def trace(rec):
    if not ARGS.trace:
        return
    rec["t"] = time.time()
    with TRACE_LOCK, open(ARGS.trace, "a") as f:
        f.write(json.dumps(rec) + "\n")


# --------------------------------------------------------------------------------------------
# Connect protocol helpers
# --------------------------------------------------------------------------------------------
CONNECT_HTTP_STATUS = {  # connect code -> HTTP status for *unary* errors
    "canceled": 499, "unknown": 500, "invalid_argument": 400, "deadline_exceeded": 504,
    "not_found": 404, "already_exists": 409, "permission_denied": 403,
    "resource_exhausted": 429, "failed_precondition": 400, "aborted": 409,
    "out_of_range": 400, "unimplemented": 501, "internal": 500, "unavailable": 503,
    "data_loss": 500, "unauthenticated": 401,
}


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def envelope(flags, payload: bytes) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --------------------------------------------------------------------------------------------
# Sandbox model
# --------------------------------------------------------------------------------------------
class Sandbox:
    def __init__(self, body):
        self.id = "i" + secrets.token_hex(10)
        self.template = body.get("templateID") or "base"
        self.metadata = dict(body.get("metadata") or {})
        self.env_vars = dict(body.get("envVars") or {})
        self.auto_pause = bool(body.get("autoPause", False))
        self.allow_internet = body.get("allow_internet_access")
        timeout = body.get("timeout")
        self.timeout = 300 if timeout is None else int(timeout)
        self.started_at = now_utc()
        self.end_at = self.started_at + dt.timedelta(seconds=self.timeout)
        self.state = "running"
        self.token = secrets.token_hex(16)
        self.procs = {}  # pid -> Proc
        self.root = os.path.join(ARGS.root, self.id, "fs")
        for d in ("home/user", "root", "tmp"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        self.watchers = {}

    # virtual path <-> host path
    def home(self, user):
        return "/root" if user == "root" else "/home/" + user

    def vpath(self, path, user):
        if not path:
            path = self.home(user)
        if path.startswith("~"):
            path = self.home(user) + path[1:]
        if not path.startswith("/"):
            path = self.home(user) + "/" + path
        return os.path.normpath(path).replace("//", "/")

    def hpath(self, vpath):
        return os.path.join(self.root, vpath.lstrip("/"))

    def to_vpath(self, hpath):
        rel = os.path.relpath(hpath, self.root)
        return "/" if rel == "." else "/" + rel

    def info_json(self, detail=True):
        d = {
            "templateID": self.template,
            "alias": self.template,
            "sandboxID": self.id,
            "clientID": "mock",
            "startedAt": iso(self.started_at),
            "endAt": iso(self.end_at),
            "cpuCount": 2,
            "memoryMB": 512,
            "diskSizeMB": 1024,
            "metadata": self.metadata,
            "state": self.state,
            "envdVersion": ARGS.envd_version,
        }
        if detail:
            d["envdAccessToken"] = self.token
            d["domain"] = None
            d["allowInternetAccess"] = self.allow_internet
            d["lifecycle"] = {"onTimeout": "pause" if self.auto_pause else "kill", "autoResume": False}
        return d

    def conn_json(self):
        return {
            "sandboxID": self.id,
            "templateID": self.template,
            "alias": self.template,
            "clientID": "mock",
            "envdVersion": ARGS.envd_version,
            "envdAccessToken": self.token,
            "trafficAccessToken": None,
            "domain": None,
        }

    def pause(self):
        self.state = "paused"
        for p in list(self.procs.values()):
            p.signal_group(signal.SIGSTOP)

    def resume(self):
        self.state = "running"
        for p in list(self.procs.values()):
            p.signal_group(signal.SIGCONT)

    def kill(self):
        self.state = "killed"
        for p in list(self.procs.values()):
            p.signal_group(signal.SIGCONT)
            p.signal_group(signal.SIGKILL)
        for k in list(getattr(self, "kernels", {}).values()):
            k.close()
        shutil.rmtree(os.path.join(ARGS.root, self.id), ignore_errors=True)


def reaper():
    """Timeout expiry: kill (autoPause false) or pause (autoPause true)."""
    while True:
        time.sleep(0.2)
        t = now_utc()
        with LOCK:
            for sid, s in list(SANDBOXES.items()):
                if s.state == "running" and t >= s.end_at:
                    if s.auto_pause:
                        s.pause()
                    else:
                        s.kill()
                        del SANDBOXES[sid]


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------
class Proc:
    def __init__(self, sbx, req, user, timeout_s):
        cfg = req.get("process") or {}
        cmd = cfg.get("cmd") or ""
        args = list(cfg.get("args") or [])
        envs = cfg.get("envs") or {}
        self.sbx = sbx
        self.config = {"cmd": cmd, "args": args, "envs": envs}
        if cfg.get("cwd") is not None:
            self.config["cwd"] = cfg["cwd"]
        self.tag = req.get("tag")
        self.subs = []
        self.lock = threading.Lock()
        self.ended = None
        self.master = None
        self.stdin = None
        vcwd = sbx.vpath(cfg.get("cwd") or "", user)
        hcwd = sbx.hpath(vcwd)
        if not os.path.isdir(hcwd):
            raise RpcError("invalid_argument", "cwd '%s' does not exist" % vcwd)
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
            "HOME": sbx.hpath(sbx.home(user)),
            "USER": user,
            "LOGNAME": user,
        }
        env.update(sbx.env_vars)
        env.update(envs)
        pty_cfg = req.get("pty")
        try:
            if pty_cfg is not None:
                size = pty_cfg.get("size") or {}
                master, slave = os.openpty()
                fcntl.ioctl(slave, termios.TIOCSWINSZ,
                            struct.pack("HHHH", size.get("rows", 24), size.get("cols", 80), 0, 0))

                def set_ctty():
                    os.setsid()
                    fcntl.ioctl(0, termios.TIOCSCTTY, 0)

                self.popen = subprocess.Popen([cmd] + args, cwd=hcwd, env=env, stdin=slave,
                                              stdout=slave, stderr=slave, preexec_fn=set_ctty,
                                              close_fds=True)
                os.close(slave)
                self.master = master
            else:
                want_stdin = req.get("stdin")
                want_stdin = True if want_stdin is None else bool(want_stdin)
                self.popen = subprocess.Popen([cmd] + args, cwd=hcwd, env=env,
                                              stdin=subprocess.PIPE if want_stdin else subprocess.DEVNULL,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              start_new_session=True, close_fds=True)
                self.stdin = self.popen.stdin
        except OSError as e:
            raise RpcError("invalid_argument", "error starting process '%s': %s" % (cmd, e))
        self.pid = self.popen.pid
        sbx.procs[self.pid] = self
        if timeout_s and timeout_s > 0:  # Connect-Timeout-Ms of Start bounds the process' life
            self.timer = threading.Timer(timeout_s, lambda: self.signal_group(signal.SIGKILL))
            self.timer.daemon = True
            self.timer.start()
        else:
            self.timer = None

    def start_io(self):
        readers = []
        if self.master is not None:
            readers.append(threading.Thread(target=self._read, args=(self.master, "pty", True), daemon=True))
        else:
            readers.append(threading.Thread(target=self._read, args=(self.popen.stdout.fileno(), "stdout", False), daemon=True))
            readers.append(threading.Thread(target=self._read, args=(self.popen.stderr.fileno(), "stderr", False), daemon=True))
        for r in readers:
            r.start()
        threading.Thread(target=self._wait, args=(readers,), daemon=True).start()

    def _read(self, fd, kind, is_pty):
        while True:
            try:
                data = os.read(fd, 32768 if not is_pty else 16384)
            except OSError:
                break
            if not data:
                break
            self.emit({"data": {kind: b64(data)}})

    def _wait(self, readers):
        rc = self.popen.wait()
        for r in readers:
            r.join(timeout=1.0)
        if self.timer:
            self.timer.cancel()
        if rc < 0:
            sig = -rc
            name = {9: "killed", 15: "terminated", 2: "interrupt", 1: "hangup"}.get(sig, "signal %d" % sig)
            end = {"exitCode": -1, "exited": False, "status": "signal: " + name, "error": "signal: " + name}
        else:
            end = {"exited": True, "status": "exit status %d" % rc}
            if rc != 0:
                end["exitCode"] = rc
                end["error"] = "exit status %d" % rc
        with self.lock:
            self.ended = end
            subs = list(self.subs)
        for q in subs:
            q.put({"end": end})
        with LOCK:
            self.sbx.procs.pop(self.pid, None)
        for fd in (self.master,):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def emit(self, ev):
        with self.lock:
            subs = list(self.subs)
        for q in subs:
            q.put(ev)

    def subscribe(self):
        q = queue.Queue()
        with self.lock:
            if self.ended is not None:
                q.put({"end": self.ended})
            self.subs.append(q)
        return q

    def unsubscribe(self, q):
        with self.lock:
            if q in self.subs:
                self.subs.remove(q)

    def signal_group(self, sig):
        try:
            os.killpg(self.pid, sig)
        except OSError:
            try:
                os.kill(self.pid, sig)
            except OSError:
                pass

    def info(self):
        d = {"config": self.config, "pid": self.pid}
        if self.tag is not None:
            d["tag"] = self.tag
        return d


# --------------------------------------------------------------------------------------------
# Filesystem helpers
# --------------------------------------------------------------------------------------------
def go_perm_string(st):
    s = statmod.filemode(st.st_mode)
    if statmod.S_ISLNK(st.st_mode):
        s = "L" + s[1:]  # Go's os.FileMode.String() marks symlinks with 'L'
    elif statmod.S_ISREG(st.st_mode):
        s = "-" + s[1:]
    return s


def entry_info(sbx, vpath):
    hp = sbx.hpath(vpath)
    st = os.lstat(hp)
    e = {
        "name": os.path.basename(vpath) or "/",
        "path": vpath,
        "permissions": go_perm_string(st),
        "owner": "user",
        "group": "user",
        "modifiedTime": iso(dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc)),
    }
    mode = statmod.S_IMODE(st.st_mode)
    ftype = None
    if statmod.S_ISLNK(st.st_mode):
        target = os.path.realpath(hp)
        e["symlinkTarget"] = sbx.to_vpath(target) if target.startswith(sbx.root) else target
        try:
            tst = os.stat(hp)
            mode = statmod.S_IMODE(tst.st_mode)
            ftype = "FILE_TYPE_DIRECTORY" if statmod.S_ISDIR(tst.st_mode) else "FILE_TYPE_FILE"
        except OSError:
            ftype = None
            mode = 0
    elif statmod.S_ISDIR(st.st_mode):
        ftype = "FILE_TYPE_DIRECTORY"
    elif statmod.S_ISREG(st.st_mode):
        ftype = "FILE_TYPE_FILE"
    if ftype:
        e["type"] = ftype
    if st.st_size:
        e["size"] = str(st.st_size)  # int64 -> JSON string
    if mode:
        e["mode"] = mode
    return e


# --------------------------------------------------------------------------------------------
# HTTP server
# --------------------------------------------------------------------------------------------
class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True


class ClientGone(Exception):
    pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "e2b-mock/0"

    def log_message(self, fmt, *a):
        if os.environ.get("E2B_MOCK_VERBOSE"):
            sys.stderr.write("mock: " + (fmt % a) + "\n")

    # ---- plumbing -------------------------------------------------------------------------
    def read_body(self):
        if getattr(self, "_body", None) is not None:
            return self._body
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(chunks)
        else:
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
        self._body = body
        self._trace_req["body_len"] = len(body)
        self._trace_req["body"] = body[:1500].decode("utf-8", "replace")
        return body

    def send_bytes(self, status, body: bytes, ctype="application/json", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._trace_req["status"] = status
        self._trace_req["resp"] = body[:1500].decode("utf-8", "replace")
        self._trace_req["resp_headers"] = dict(extra or {}, **{"Content-Type": ctype})

    def send_json(self, status, obj, extra=None):
        self.send_bytes(status, json.dumps(obj).encode(), "application/json", extra)

    def send_empty(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self._trace_req["status"] = status

    def api_error(self, status, msg):
        self.send_json(status, {"code": status, "message": msg})

    def start_chunked(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._trace_req["status"] = 200
        self._trace_req["frames"] = []

    def write_chunk(self, data: bytes):
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            raise ClientGone()
        fr = self._trace_req.get("frames")
        if fr is not None and len(fr) < 40:
            fr.append(data.hex())

    def end_chunked(self):
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass

    # ---- dispatch -------------------------------------------------------------------------
    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def dispatch(self):
        self._body = None
        u = urllib.parse.urlsplit(self.path)
        self.url_path = u.path
        self.query = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        self.raw_query = u.query
        self._trace_req = {"method": self.command, "path": self.path, "headers": dict(self.headers.items())}
        try:
            sid = self.headers.get("E2b-Sandbox-Id")
            port = self.headers.get("E2b-Sandbox-Port")
            if not sid and not port:
                m = re.match(r"^(\d+)-([A-Za-z0-9]+)\.", self.headers.get("Host", ""))
                if m:
                    port, sid = m.group(1), m.group(2)
            if not sid and not port and self.url_path == "/files" and self.query.get("signature"):
                # uploadUrl()/downloadUrl() URLs carry no sandbox id when E2B_SANDBOX_URL is one
                # shared address: find the sandbox whose access token produced the signature.
                sid = self.sandbox_for_signature()
                port = str(ENVD_PORT) if sid else None
            if sid or port:
                if not sid or not port:
                    self.send_bytes(400, b"missing header\n", "text/plain; charset=utf-8")
                else:
                    self.sandbox_route(sid, port)
            else:
                self.control_route()
        except ClientGone:
            pass
        except Exception as e:  # pragma: no cover
            traceback.print_exc()
            try:
                self.api_error(500, "mock internal error: %s" % e)
            except Exception:
                pass
        finally:
            # drain an unread body so keep-alive stays in sync
            if self._body is None and self.command in ("POST", "PUT", "PATCH", "DELETE"):
                try:
                    self.read_body()
                except Exception:
                    self.close_connection = True
            trace(self._trace_req)

    # ---- control plane --------------------------------------------------------------------
    def control_route(self):
        p, m = self.url_path, self.command
        if p == "/health" and m == "GET":
            return self.send_empty(200)
        key = self.headers.get("X-API-KEY")
        if not key or key != ARGS.api_key:
            return self.api_error(401, "Invalid API key, it must start with 'e2b_' prefix")
        if p == "/v2/sandboxes" and m == "POST":
            return self.create()
        if p in ("/v2/sandboxes", "/sandboxes") and m == "GET":
            return self.list_sandboxes(v2=(p == "/v2/sandboxes"))
        mm = re.match(r"^/(v2/)?sandboxes/([^/]+)(/[a-z]+)?$", p)
        if mm:
            v2, sid, tail = mm.group(1), urllib.parse.unquote(mm.group(2)), mm.group(3) or ""
            with LOCK:
                sbx = SANDBOXES.get(sid)
            if tail == "" and m == "GET" and not v2:
                if not sbx:
                    return self.api_error(404, "sandbox \"%s\" doesn't exist or you don't have access to it" % sid)
                return self.send_json(200, sbx.info_json())
            if tail == "" and m == "DELETE" and not v2:
                if not sbx:
                    return self.api_error(404, "sandbox \"%s\" doesn't exist or you don't have access to it" % sid)
                with LOCK:
                    sbx.kill()
                    SANDBOXES.pop(sid, None)
                return self.send_empty(204)
            if tail == "/timeout" and m == "POST" and not v2:
                body = self.json_body()
                if body is None or not isinstance(body.get("timeout"), int) or body["timeout"] < 0:
                    return self.api_error(400, "Error when parsing request: timeout must be a non-negative integer")
                if not sbx:
                    return self.api_error(404, "sandbox \"%s\" doesn't exist or you don't have access to it" % sid)
                with LOCK:
                    sbx.end_at = now_utc() + dt.timedelta(seconds=body["timeout"])
                return self.send_empty(204)
            if tail == "/pause" and m == "POST" and not v2:
                self.json_body()
                if not sbx:
                    return self.api_error(404, "sandbox \"%s\" doesn't exist or you don't have access to it" % sid)
                if sbx.state == "paused":
                    return self.api_error(409, "Error pausing sandbox - sandbox '%s' is already paused" % sid)
                with LOCK:
                    sbx.pause()
                return self.send_empty(204)
            if tail in ("/connect", "/resume") and m == "POST":
                body = self.json_body() or {}
                timeout = body.get("timeout")
                if timeout is None:
                    timeout = 300 if (v2 or tail == "/resume") else None
                if timeout is None or (not isinstance(timeout, int)) or timeout < 0:
                    return self.api_error(400, "Error when parsing request: timeout is required")
                if not sbx:
                    return self.api_error(404, "Paused sandbox %s not found" % sid)
                with LOCK:
                    new_end = now_utc() + dt.timedelta(seconds=timeout)
                    if sbx.state == "running":
                        if tail == "/resume":
                            return self.api_error(409, "Sandbox %s is already running" % sid)
                        if new_end > sbx.end_at:  # connect only extends a running sandbox
                            sbx.end_at = new_end
                        return self.send_json(200, sbx.conn_json())
                    sbx.resume()
                    sbx.end_at = new_end
                    return self.send_json(201, sbx.conn_json())
        return self.api_error(404, "no route %s %s" % (m, p))

    def json_body(self):
        raw = self.read_body()
        if not raw:
            return {}
        try:
            v = json.loads(raw)
        except ValueError:
            return None
        return v if isinstance(v, dict) else None

    def create(self):
        body = self.json_body()
        if body is None or not isinstance(body.get("templateID"), str):
            return self.api_error(400, "Error when parsing request: templateID is required")
        t = body.get("timeout")
        if t is not None and (not isinstance(t, int) or t < 0 or t > 86400):
            return self.api_error(400, "Timeout cannot be greater than 24 hours")
        sbx = Sandbox(body)
        with LOCK:
            SANDBOXES[sbx.id] = sbx
        return self.send_json(201, sbx.conn_json())

    def list_sandboxes(self, v2):
        q = self.query
        states = []
        for s in q.get("state", []):
            states += [x for x in s.split(",") if x]
        if not states:
            states = ["running", "paused"] if v2 else ["running"]
        filt = {}
        if q.get("metadata"):
            # Wire: metadata=<pct(form(pct(k)=pct(v)&...))> (three layers, see the spec).
            # parse_qs removed the outer layer; like the E2B API, unescape the whole string once
            # more, split on '&' and '=', then unescape key and value.
            for pair in urllib.parse.unquote_plus(q["metadata"][0]).split("&"):
                if not pair:
                    continue
                if "=" not in pair:
                    return self.api_error(400, "invalid key value pair in query")
                k, v = pair.split("=", 1)
                filt[urllib.parse.unquote_plus(k)] = urllib.parse.unquote_plus(v)
        with LOCK:
            items = [s for s in SANDBOXES.values() if s.state in states]
        items = [s for s in items if all(s.metadata.get(k) == v for k, v in filt.items())]
        if q.get("template"):
            items = [s for s in items if s.template == q["template"][0]]
        order = (q.get("order") or ["desc"])[0]
        items.sort(key=lambda s: (s.started_at, s.id), reverse=(order != "asc"))
        if not v2:
            return self.send_json(200, [s.info_json(detail=False) for s in items])
        try:
            limit = int((q.get("limit") or ["100"])[0])
        except ValueError:
            return self.api_error(400, "limit must be an integer")
        if limit < 1 or limit > 100:
            return self.api_error(400, "limit must be between 1 and 100")
        start = 0
        tok = (q.get("nextToken") or [""])[0]
        if tok:
            try:
                last_id = base64.urlsafe_b64decode(tok.encode()).decode()
            except Exception:
                return self.api_error(400, "invalid next token")
            ids = [s.id for s in items]
            start = ids.index(last_id) + 1 if last_id in ids else len(ids)
        page = items[start:start + limit]
        extra = {"X-Total-Running": str(sum(1 for s in items if s.state == "running"))}
        if start + limit < len(items):
            extra["X-Next-Token"] = base64.urlsafe_b64encode(page[-1].id.encode()).decode()
        return self.send_json(200, [s.info_json(detail=False) for s in page], extra)

    # ---- sandbox side ---------------------------------------------------------------------
    def sandbox_route(self, sid, port):
        with LOCK:
            sbx = SANDBOXES.get(sid)
        if not sbx or sbx.state != "running":
            return self.send_json(502, {"sandboxId": sid, "message": "The sandbox was not found", "code": 502})
        if port == str(JUPYTER_PORT):
            return self.jupyter(sbx)
        if port != str(ENVD_PORT):
            return self.send_json(502, {"sandboxId": sid, "message": "The sandbox is running but port is not open", "port": port})
        p, m = self.url_path, self.command
        if p == "/health" and m == "GET":
            return self.send_empty(204)
        tok = self.headers.get("X-Access-Token")
        if tok != sbx.token:
            if not (p == "/files" and m in ("GET", "POST") and tok is None and self.query.get("signature")):
                return self.api_error(401, "unauthorized access, please provide a valid access token or method signing if supported")
            err = self.check_signature(sbx, "read" if m == "GET" else "write")
            if err:
                return self.api_error(401, err)
        user = self.basic_user()
        if p == "/files" and m == "GET":
            return self.files_get(sbx, (self.query.get("username") or [user])[0])
        if p == "/files" and m == "POST":
            return self.files_post(sbx, (self.query.get("username") or [user])[0])
        if p == "/envs" and m == "GET":
            return self.send_json(200, sbx.env_vars)
        mm = re.match(r"^/(process\.Process|filesystem\.Filesystem)/([A-Za-z]+)$", p)
        if mm and m == "POST":
            return self.rpc(sbx, mm.group(1), mm.group(2), user)
        return self.api_error(404, "not found")

    def expected_signature(self, sbx, op, path, user, exp):
        import hashlib
        raw = "%s:%s:%s:%s" % (path, op, user, sbx.token)
        if exp is not None:
            raw += ":%s" % exp
        return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")

    def check_signature(self, sbx, op):
        q = self.query
        sig = (q.get("signature") or [""])[0]
        exp = (q.get("signature_expiration") or [None])[0]
        want = self.expected_signature(sbx, op, (q.get("path") or [""])[0], (q.get("username") or [""])[0], exp)
        if not secrets.compare_digest(sig, want):
            return "invalid signature"
        if exp is not None and int(exp) < time.time():
            return "signature is already expired"
        return None

    def sandbox_for_signature(self):
        op = "read" if self.command == "GET" else "write"
        with LOCK:
            cands = list(SANDBOXES.values())
        for sbx in cands:
            if self.check_signature(sbx, op) is None:
                return sbx.id
        return None

    # ---- @e2b/code-interpreter (port 49999), python only, one persistent python3 per context --
    def jupyter(self, sbx):
        p, m = self.url_path, self.command
        if p == "/health" and m == "GET":
            return self.send_bytes(200, b'"OK"')
        if p == "/execute" and m == "POST":
            req = self.json_body() or {}
            if req.get("context_id") and req.get("language"):
                return self.send_bytes(400, b"Only one of context_id or language can be provided", "text/plain")
            lang = (req.get("language") or "python").lower()
            if lang not in ("python", "python3"):
                return self.send_bytes(500, ("language %s is not supported by the mock" % lang).encode(), "text/plain")
            ctx = kernel_for(sbx, req.get("context_id") or "default")
            if ctx is None:
                return self.send_bytes(404, ("Context %s not found" % req.get("context_id")).encode(), "text/plain")
            self._trace_req["status"] = 200
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for line in ctx.execute(req.get("code", ""), req.get("env_vars") or {}):
                self.write_chunk(line.encode() + b"\n")
            self.write_chunk(b'{"type": "end_of_execution"}\n')
            self.end_chunked()
            return
        if p == "/contexts" and m == "POST":
            req = self.json_body() or {}
            ctx = new_kernel(sbx, req.get("cwd") or "/home/user")
            return self.send_json(200, ctx.describe())
        if p == "/contexts" and m == "GET":
            return self.send_json(200, [k.describe() for k in sbx_kernels(sbx).values()])
        mm = re.match(r"^/contexts/([^/]+)(/restart)?$", p)
        if mm:
            kid = mm.group(1)
            ks = sbx_kernels(sbx)
            if kid not in ks:
                return self.send_bytes(404, ("Context %s not found" % kid).encode(), "text/plain")
            if mm.group(2) and m == "POST":
                ks[kid].restart()
                return self.send_bytes(200, b"null")
            if not mm.group(2) and m == "DELETE":
                ks.pop(kid).close()
                return self.send_bytes(200, b"null")
        return self.send_bytes(404, b"Not Found", "text/plain")

    def basic_user(self):
        a = self.headers.get("Authorization", "")
        if a.startswith("Basic "):
            try:
                return base64.b64decode(a[6:]).decode().split(":", 1)[0] or "user"
            except Exception:
                pass
        return "user"  # the sandbox's default user

    def files_get(self, sbx, user):
        path = (self.query.get("path") or [""])[0]
        vp = sbx.vpath(path, user)
        hp = sbx.hpath(vp)
        if not os.path.exists(hp):
            return self.api_error(404, "path '%s' does not exist" % vp)
        if os.path.isdir(hp):
            return self.api_error(400, "path '%s' is a directory" % vp)
        with open(hp, "rb") as f:
            data = f.read()
        return self.send_bytes(200, data, "application/octet-stream")

    def files_post(self, sbx, user):
        ctype = self.headers.get("Content-Type", "")
        body = self.read_body()
        qpath = (self.query.get("path") or [None])[0]
        out = []
        if ctype.startswith("application/octet-stream"):
            if not qpath:
                return self.api_error(400, "path query parameter is required for raw body upload")
            if self.headers.get("Content-Encoding", "") == "gzip":
                import gzip
                body = gzip.decompress(body)
            out.append(self.write_file(sbx, sbx.vpath(qpath, user), body))
        elif ctype.startswith("multipart/"):
            mb = re.search(r'boundary="?([^";]+)"?', ctype)
            if not mb:
                return self.api_error(400, "error parsing multipart form: no boundary")
            for headers, content in parse_multipart(body, mb.group(1).encode()):
                cd = headers.get("content-disposition", "")
                nm = re.search(r'(?:^|;)\s*name="([^"]*)"', cd)
                if not nm or nm.group(1) != "file":
                    continue
                fn = re.search(r'filename="([^"]*)"', cd)
                # undici escapes only LF, CR and '"' in multipart names (WHATWG); undo just those.
                fname = (fn.group(1).replace("%0A", "\n").replace("%0D", "\r").replace("%22", '"')) if fn else ""
                target = qpath if qpath else fname
                vp = sbx.vpath(target, user)
                if any(o["path"] == vp for o in out):
                    return self.api_error(400, "you cannot upload multiple files to the same path '%s' in one upload request" % vp)
                res = self.write_file(sbx, vp, content)
                if isinstance(res, tuple):
                    return self.api_error(*res)
                out.append(res)
        else:
            return self.api_error(400, "unsupported content type: %s, expected multipart/form-data or application/octet-stream" % ctype)
        for o in out:
            if isinstance(o, tuple):
                return self.api_error(*o)
        return self.send_json(200, out)

    def write_file(self, sbx, vp, data):
        hp = sbx.hpath(vp)
        if os.path.isdir(hp):
            return (400, "path is a directory: %s" % vp)
        os.makedirs(os.path.dirname(hp), exist_ok=True)
        with open(hp, "wb") as f:
            f.write(data)
        return {"path": vp, "name": os.path.basename(vp), "type": "file"}

    # ---- Connect RPC ----------------------------------------------------------------------
    def rpc(self, sbx, service, method, user):
        ctype = self.headers.get("Content-Type", "")
        raw = self.read_body()
        streaming = ctype.startswith("application/connect+")
        try:
            if streaming:
                if len(raw) < 5:
                    raise RpcError("invalid_argument", "missing request envelope")
                flags, n = struct.unpack(">BI", raw[:5])
                req = json.loads(raw[5:5 + n] or b"{}")
            else:
                req = json.loads(raw or b"{}")
        except ValueError as e:
            return self.rpc_unary_error(RpcError("invalid_argument", "bad json: %s" % e))
        tm = self.headers.get("Connect-Timeout-Ms")
        timeout_s = int(tm) / 1000.0 if tm and tm.isdigit() else 0
        ka = self.headers.get("Keepalive-Ping-Interval")
        keepalive_s = int(ka) if ka and ka.isdigit() and int(ka) > 0 else 90
        key = service + "/" + method
        if streaming:
            stream_methods = {
                "process.Process/Start": self.rpc_start,
                "process.Process/Connect": self.rpc_connect,
                "filesystem.Filesystem/WatchDir": self.rpc_watch,
            }
            fn = stream_methods.get(key)
            self.start_chunked("application/connect+json")
            err = None
            try:
                if fn is None:
                    raise RpcError("unimplemented", "%s is not implemented" % key)
                fn(sbx, req, user, timeout_s, keepalive_s)
            except RpcError as e:
                err = e
            except ClientGone:
                return
            end = {} if err is None else {"error": {"code": err.code, "message": err.message}}
            try:
                self.write_chunk(envelope(2, json.dumps(end).encode()))
            except ClientGone:
                return
            self.end_chunked()
            return
        unary = {
            "process.Process/List": self.rpc_list,
            "process.Process/SendInput": self.rpc_send_input,
            "process.Process/SendSignal": self.rpc_send_signal,
            "process.Process/Update": self.rpc_update,
            "process.Process/CloseStdin": self.rpc_close_stdin,
            "filesystem.Filesystem/Stat": self.rpc_stat,
            "filesystem.Filesystem/MakeDir": self.rpc_makedir,
            "filesystem.Filesystem/Move": self.rpc_move,
            "filesystem.Filesystem/ListDir": self.rpc_listdir,
            "filesystem.Filesystem/Remove": self.rpc_remove,
            "filesystem.Filesystem/CreateWatcher": self.rpc_create_watcher,
            "filesystem.Filesystem/GetWatcherEvents": self.rpc_get_watcher_events,
            "filesystem.Filesystem/RemoveWatcher": self.rpc_remove_watcher,
        }
        fn = unary.get(key)
        if fn is None:
            return self.rpc_unary_error(RpcError("unimplemented", "%s is not implemented" % key))
        try:
            res = fn(sbx, req, user)
        except RpcError as e:
            return self.rpc_unary_error(e)
        return self.send_json(200, res)

    def rpc_unary_error(self, e):
        self.send_json(CONNECT_HTTP_STATUS.get(e.code, 500), {"code": e.code, "message": e.message})

    def send_msg(self, obj):
        self.write_chunk(envelope(0, json.dumps(obj, separators=(",", ":")).encode()))

    def pump(self, proc, q, timeout_s, keepalive_s):
        deadline = time.monotonic() + timeout_s if timeout_s else None
        try:
            while True:
                wait = keepalive_s
                if deadline is not None:
                    wait = min(wait, max(0.0, deadline - time.monotonic()))
                try:
                    ev = q.get(timeout=wait)
                except queue.Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise RpcError("deadline_exceeded", "context deadline exceeded")
                    self.send_msg({"event": {"keepalive": {}}})
                    continue
                self.send_msg({"event": ev})
                if "end" in ev:
                    return
        finally:
            proc.unsubscribe(q)

    def find_proc(self, sbx, sel):
        sel = sel or {}
        with LOCK:
            if "pid" in sel:
                p = sbx.procs.get(int(sel["pid"]))
                if not p:
                    raise RpcError("not_found", "process with pid %s not found" % sel["pid"])
                return p
            if "tag" in sel:
                for p in sbx.procs.values():
                    if p.tag == sel["tag"]:
                        return p
                raise RpcError("not_found", "process with tag %s not found" % sel["tag"])
        raise RpcError("invalid_argument", "process selector is required")

    def rpc_start(self, sbx, req, user, timeout_s, keepalive_s):
        with LOCK:
            proc = Proc(sbx, req, user, timeout_s)
            q = proc.subscribe()
        proc.start_io()
        self.send_msg({"event": {"start": {"pid": proc.pid}}})
        self.pump(proc, q, timeout_s, keepalive_s)

    def rpc_connect(self, sbx, req, user, timeout_s, keepalive_s):
        proc = self.find_proc(sbx, req.get("process"))
        q = proc.subscribe()
        self.send_msg({"event": {"start": {"pid": proc.pid}}})
        self.pump(proc, q, timeout_s, keepalive_s)

    def rpc_list(self, sbx, req, user):
        with LOCK:
            procs = [p.info() for p in sbx.procs.values() if p.ended is None]
        return {"processes": procs} if procs else {}

    def rpc_send_input(self, sbx, req, user):
        proc = self.find_proc(sbx, req.get("process"))
        inp = req.get("input") or {}
        if "pty" in inp:
            if proc.master is None:
                raise RpcError("failed_precondition", "tty not assigned to process")
            os.write(proc.master, base64.b64decode(inp["pty"]))
        elif "stdin" in inp:
            if proc.stdin is None:
                raise RpcError("failed_precondition", "stdin not enabled or closed")
            try:
                proc.stdin.write(base64.b64decode(inp["stdin"]))
                proc.stdin.flush()
            except OSError as e:
                raise RpcError("internal", "error writing to stdin of process '%d': %s" % (proc.pid, e))
        return {}

    def rpc_close_stdin(self, sbx, req, user):
        proc = self.find_proc(sbx, req.get("process"))
        if proc.master is not None:
            raise RpcError("failed_precondition", "cannot close stdin for PTY process")
        if proc.stdin is not None:
            proc.stdin.close()
            proc.stdin = None
        return {}

    def rpc_send_signal(self, sbx, req, user):
        proc = self.find_proc(sbx, req.get("process"))
        sig = req.get("signal")
        signum = {"SIGNAL_SIGKILL": signal.SIGKILL, "SIGNAL_SIGTERM": signal.SIGTERM, 9: signal.SIGKILL, 15: signal.SIGTERM}.get(sig)
        if signum is None:
            raise RpcError("unimplemented", "invalid signal: %s" % sig)
        proc.signal_group(signum)
        return {}

    def rpc_update(self, sbx, req, user):
        proc = self.find_proc(sbx, req.get("process"))
        ptyc = req.get("pty")
        if ptyc is not None:
            if proc.master is None:
                raise RpcError("failed_precondition", "tty not assigned to process")
            size = ptyc.get("size") or {}
            fcntl.ioctl(proc.master, termios.TIOCSWINSZ,
                        struct.pack("HHHH", size.get("rows", 0), size.get("cols", 0), 0, 0))
            try:
                os.killpg(proc.pid, signal.SIGWINCH)
            except OSError:
                pass
        return {}

    def rpc_stat(self, sbx, req, user):
        vp = sbx.vpath(req.get("path", ""), user)
        if not os.path.lexists(sbx.hpath(vp)):
            raise RpcError("not_found", "file not found: stat %s: no such file or directory" % vp)
        return {"entry": entry_info(sbx, vp)}

    def rpc_makedir(self, sbx, req, user):
        vp = sbx.vpath(req.get("path", ""), user)
        hp = sbx.hpath(vp)
        if os.path.exists(hp):
            if os.path.isdir(hp):
                raise RpcError("already_exists", "directory already exists: %s" % vp)
            raise RpcError("invalid_argument", "path already exists but it is not a directory: %s" % vp)
        os.makedirs(hp)
        return {"entry": {"name": os.path.basename(vp), "type": "FILE_TYPE_DIRECTORY", "path": vp}}

    def rpc_move(self, sbx, req, user):
        src = sbx.vpath(req.get("source", ""), user)
        dst = sbx.vpath(req.get("destination", ""), user)
        if not os.path.lexists(sbx.hpath(src)):
            raise RpcError("not_found", "source file not found: rename %s %s: no such file or directory" % (src, dst))
        os.makedirs(os.path.dirname(sbx.hpath(dst)), exist_ok=True)
        os.rename(sbx.hpath(src), sbx.hpath(dst))
        return {"entry": entry_info(sbx, dst)}

    def rpc_listdir(self, sbx, req, user):
        vp = sbx.vpath(req.get("path", ""), user)
        depth = int(req.get("depth") or 1)
        hp = sbx.hpath(vp)
        if not os.path.exists(hp):
            raise RpcError("not_found", "path not found: lstat %s: no such file or directory" % vp)
        if not os.path.isdir(hp):
            raise RpcError("invalid_argument", "path is not a directory: %s" % vp)
        entries = []

        def walk(d, vd, level):
            for name in sorted(os.listdir(d)):
                child_v = vd.rstrip("/") + "/" + name
                entries.append(entry_info(sbx, child_v))
                hc = os.path.join(d, name)
                if level < depth and os.path.isdir(hc) and not os.path.islink(hc):
                    walk(hc, child_v, level + 1)

        walk(hp, vp, 1)
        return {"entries": entries} if entries else {}

    def rpc_remove(self, sbx, req, user):
        vp = sbx.vpath(req.get("path", ""), user)
        hp = sbx.hpath(vp)
        if os.path.isdir(hp) and not os.path.islink(hp):
            shutil.rmtree(hp)
        elif os.path.lexists(hp):
            os.unlink(hp)
        return {}  # removing a missing path is not an error (os.RemoveAll)

    # WatchDir by polling (stdlib has no inotify). Names are relative to the watched dir.
    def snapshot(self, hp, recursive):
        snap = {}
        for dirpath, dirnames, filenames in os.walk(hp):
            for n in dirnames + filenames:
                full = os.path.join(dirpath, n)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                snap[os.path.relpath(full, hp)] = (st.st_mtime_ns, st.st_size, st.st_mode)
            if not recursive:
                break
        return snap

    def diff(self, old, new):
        evs = []
        for n in new:
            if n not in old:
                evs.append((n, "EVENT_TYPE_CREATE"))
                if statmod.S_ISREG(new[n][2]) and new[n][1] > 0:
                    evs.append((n, "EVENT_TYPE_WRITE"))
            elif old[n][:2] != new[n][:2]:
                evs.append((n, "EVENT_TYPE_WRITE"))
            elif old[n][2] != new[n][2]:
                evs.append((n, "EVENT_TYPE_CHMOD"))
        for n in old:
            if n not in new:
                evs.append((n, "EVENT_TYPE_REMOVE"))
        return evs

    def rpc_watch(self, sbx, req, user, timeout_s, keepalive_s):
        vp = sbx.vpath(req.get("path", ""), user)
        hp = sbx.hpath(vp)
        if not os.path.exists(hp):
            raise RpcError("not_found", "path %s not found" % vp)
        if not os.path.isdir(hp):
            raise RpcError("invalid_argument", "path %s not a directory" % vp)
        recursive = bool(req.get("recursive"))
        include_entry = bool(req.get("includeEntry"))
        self.send_msg({"start": {}})  # WatchDirResponse: the oneof is top-level (no "event" wrapper)
        deadline = time.monotonic() + timeout_s if timeout_s else None
        last_sent = time.monotonic()
        snap = self.snapshot(hp, recursive)
        while True:
            time.sleep(0.05)
            if deadline is not None and time.monotonic() >= deadline:
                raise RpcError("deadline_exceeded", "context deadline exceeded")
            with LOCK:
                if sbx.state == "killed":
                    raise RpcError("unavailable", "sandbox is gone")
            new = self.snapshot(hp, recursive) if os.path.isdir(hp) else {}
            for name, typ in self.diff(snap, new):
                fe = {"name": name, "type": typ}
                if include_entry and typ != "EVENT_TYPE_REMOVE":
                    try:
                        fe["entry"] = entry_info(sbx, vp.rstrip("/") + "/" + name)
                    except OSError:
                        pass
                self.send_msg({"filesystem": fe})
                last_sent = time.monotonic()
            snap = new
            if time.monotonic() - last_sent >= keepalive_s:
                self.send_msg({"keepalive": {}})
                last_sent = time.monotonic()

    def rpc_create_watcher(self, sbx, req, user):
        vp = sbx.vpath(req.get("path", ""), user)
        hp = sbx.hpath(vp)
        if not os.path.isdir(hp):
            raise RpcError("not_found", "path %s not found" % vp)
        wid = secrets.token_hex(8)
        sbx.watchers[wid] = (hp, bool(req.get("recursive")), self.snapshot(hp, bool(req.get("recursive"))))
        return {"watcherId": wid}

    def rpc_get_watcher_events(self, sbx, req, user):
        wid = req.get("watcherId")
        if wid not in sbx.watchers:
            raise RpcError("not_found", "watcher with id %s not found" % wid)
        hp, rec, snap = sbx.watchers[wid]
        new = self.snapshot(hp, rec)
        sbx.watchers[wid] = (hp, rec, new)
        evs = [{"name": n, "type": t} for n, t in self.diff(snap, new)]
        return {"events": evs} if evs else {}

    def rpc_remove_watcher(self, sbx, req, user):
        sbx.watchers.pop(req.get("watcherId"), None)
        return {}


KERNEL_DRIVER = r"""
import ast, json, sys, traceback
out = sys.stdout
g = {"__name__": "__main__"}
class W:
    def __init__(self, name): self.name = name
    def write(self, s):
        if s:
            out.write(json.dumps({"type": self.name, "text": s}) + "\n"); out.flush()
        return len(s)
    def flush(self): pass
n = 0
for line in sys.stdin:
    req = json.loads(line)
    n += 1
    out.write(json.dumps({"type": "number_of_executions", "execution_count": n}) + "\n")
    so, se = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = W("stdout"), W("stderr")
    try:
        tree = ast.parse(req["code"], mode="exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), g)
        if last is not None:
            v = eval(compile(last, "<cell>", "eval"), g)
            if v is not None:
                t = repr(v)
                if len(t) > 1 and t[0] == t[-1] == "'":
                    t = t[1:-1]
                out.write(json.dumps({"type": "result", "text": t, "is_main_result": True}) + "\n")
    except BaseException as e:
        out.write(json.dumps({"type": "error", "name": type(e).__name__, "value": str(e),
                              "traceback": traceback.format_exc()}) + "\n")
    finally:
        sys.stdout, sys.stderr = so, se
    out.write("__E2B_MOCK_DONE__\n"); out.flush()
"""


class Kernel:
    def __init__(self, sbx, cwd):
        self.id = secrets.token_hex(8)
        self.sbx = sbx
        self.cwd = cwd
        self.lock = threading.Lock()
        self.start()

    def start(self):
        env = dict(os.environ, HOME=self.sbx.hpath("/home/user"), USER="user", PYTHONUNBUFFERED="1")
        env.update(self.sbx.env_vars)
        hcwd = self.sbx.hpath(self.cwd)
        os.makedirs(hcwd, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-u", "-c", KERNEL_DRIVER], cwd=hcwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)

    def describe(self):
        return {"id": self.id, "language": "python", "cwd": self.cwd}

    def execute(self, code, env_vars):
        with self.lock:
            if env_vars:
                code = "import os\nos.environ.update(%r)\n%s" % (dict(env_vars), code)
            self.proc.stdin.write((json.dumps({"code": code}) + "\n").encode())
            self.proc.stdin.flush()
            while True:
                line = self.proc.stdout.readline()
                if not line:
                    yield json.dumps({"type": "error", "name": "UnexpectedEndOfExecution",
                                      "value": "kernel died", "traceback": ""})
                    return
                line = line.decode().rstrip("\n")
                if line == "__E2B_MOCK_DONE__":
                    return
                yield line

    def restart(self):
        self.close()
        self.start()

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass


def sbx_kernels(sbx):
    if not hasattr(sbx, "kernels"):
        sbx.kernels = {}
    return sbx.kernels


def kernel_for(sbx, cid):
    ks = sbx_kernels(sbx)
    with LOCK:
        if cid == "default":
            if "default" not in ks:
                k = Kernel(sbx, "/home/user")
                ks["default"] = k
            return ks["default"]
        return ks.get(cid)


def new_kernel(sbx, cwd):
    k = Kernel(sbx, cwd)
    with LOCK:
        sbx_kernels(sbx)[k.id] = k
    return k


def parse_multipart(body, boundary):
    delim = b"--" + boundary
    parts = body.split(delim)
    for part in parts[1:]:
        if part.startswith(b"--"):
            break
        part = part[2:] if part.startswith(b"\r\n") else part
        head, _, content = part.partition(b"\r\n\r\n")
        if content.endswith(b"\r\n"):
            content = content[:-2]
        headers = {}
        for line in head.split(b"\r\n"):
            if b":" in line:
                k, v = line.split(b":", 1)
                headers[k.decode().strip().lower()] = v.decode("utf-8", "replace").strip()
        yield headers, content


def main():
    global ARGS
    ap = argparse.ArgumentParser(description="MOCK E2B-compatible server (protocol reference only)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--api-key", default=os.environ.get("E2B_MOCK_API_KEY", "e2b_mock_key"))
    ap.add_argument("--root", default=None)
    ap.add_argument("--envd-version", default="0.5.7")
    ap.add_argument("--trace", default=None)
    ARGS = ap.parse_args()
    if ARGS.root is None:
        import tempfile
        ARGS.root = tempfile.mkdtemp(prefix="e2b-mock-")
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    srv = Server((ARGS.host, ARGS.port), Handler)
    threading.Thread(target=reaper, daemon=True).start()
    print("LISTENING %d" % srv.server_address[1], flush=True)

    def bye(*_):
        with LOCK:
            for s in list(SANDBOXES.values()):
                s.kill()
        shutil.rmtree(ARGS.root, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGINT, bye)
    srv.serve_forever()


if __name__ == "__main__":
    main()
