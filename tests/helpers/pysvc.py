#!/usr/bin/env python3
"""The tests' Python evaluations as a service, so that a test does not start an interpreter
for each JSON field it reads (a third of an API test's time went to that).

    pysvc.py PORT_FILE

lib.sh starts one per test file in the background. It listens on an ephemeral loopback TCP
port (written to PORT_FILE once it listens), which bash reaches with its own /dev/tcp: no
process is started per call, and each call is a connection of its own, so background jobs of
a test can call it at the same time as the test. It ends with the test's shell (its parent:
PR_SET_PDEATHSIG) or after an hour.

A request is NUL-terminated fields: their count, the operation, its arguments.
  eval EXPR FILE       print(eval(EXPR)) with d the JSON document in FILE, json and sys
                       imported: what lib.sh's json() and serve.bash's bj() printed
  openapi METHOD PATH STATUS CONTENT_TYPE BODY_FILE
                       openapi_check.py's verdict on a response
The reply is the exit status the command-line form would have had, a newline, what it would
have printed on stdout, an ASCII record separator (0x1e), what it would have printed on
stderr, and the end of the connection.
"""
import contextlib
import ctypes
import json
import os
import signal
import socketserver
import sys
import threading
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openapi_check  # noqa: E402

SPEC = None
SPEC_LOCK = threading.Lock()


def spec():
    global SPEC
    with SPEC_LOCK:
        if SPEC is None:
            path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../docs/openapi.json")
            with open(path) as f:
                SPEC = json.load(f)
        return SPEC


def op_eval(expr, path):
    with open(path) as f:
        d = json.load(f)
    return 0, "%s\n" % (eval(expr, {"json": json, "sys": sys, "d": d}),), ""


def op_openapi(method, path, status, ctype, body_file):
    with open(body_file, encoding="utf-8", errors="replace") as f:
        body = f.read()
    try:
        openapi_check.check(spec(), method, path, int(status), ctype, body)
    except openapi_check.Invalid as e:
        return 1, "%s\n" % e, ""
    return 0, "", ""


OPS = {"eval": (op_eval, 2), "openapi": (op_openapi, 5)}


def read_request(sock):
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
        fields = buf.split(b"\0")
        if len(fields) > 1:
            n = int(fields[0])
            if len(fields) > n:
                return [f.decode("utf-8", "surrogateescape") for f in fields[1:n]]


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        req = read_request(self.request)
        if not req or req[0] not in OPS or len(req) != OPS[req[0]][1] + 1:
            reply = "2\n\x1epysvc: a bad request: %r\n" % (req,)
        else:
            try:
                status, out, err = OPS[req[0]][0](*req[1:])
            except Exception:  # what the command-line form printed on stderr and exit 1
                status, out, err = 1, "", traceback.format_exc()
            reply = "%d\n%s\x1e%s" % (status, out, err)
        self.request.sendall(reply.encode("utf-8", "surrogateescape"))


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: ends with the test
    if os.getppid() == 1:
        return 0
    srv = Server(("127.0.0.1", 0), Handler)
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, sys.argv[1])
    threading.Timer(3600, lambda: os._exit(0)).start()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
