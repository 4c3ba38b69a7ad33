#!/usr/bin/env python3
"""A front for a local registry, for the image tests: it forwards every request to the real
registry behind it (Debian's docker-registry) and adds what a test needs around it.

  regfront.py LISTEN_PORT REGISTRY_PORT DIR [--bearer USER:PASS] [--basic USER:PASS]
              [--tamper DIGEST] [--cut DIGEST:BYTES] [--stop-after SECONDS]

--bearer: /v2/ requests need "Authorization: Bearer <token>"; without it the answer is 401 with
  a Bearer challenge whose realm is this front's /token, which hands out a token for the right
  basic credentials (anonymous when USER:PASS is "-").
--basic: requests need those basic credentials (401 with a Basic challenge otherwise).
--tamper DIGEST: the blob DIGEST is served with its first byte changed.
--cut DIGEST:BYTES: the first request for blob DIGEST ends after BYTES bytes (the connection
  closes); later ones are served whole (with Range, as the registry answers it).
--rate BYTES: blobs are sent at about BYTES a second (so that a test can interrupt a pull).
Every request is appended to DIR/requests as a JSON line (method, path, headers of interest,
status). Writes DIR/ready when listening. Stops by itself after --stop-after (default 300).
"""
import base64
import http.client
import http.server
import json
import os
import secrets
import sys
import threading
import time

args = sys.argv[1:]
LISTEN, UPSTREAM, DIR = int(args[0]), int(args[1]), args[2]
opts = {}
i = 3
while i < len(args):
    opts[args[i]] = args[i + 1]
    i += 2
TOKENS = set()
CUT_DONE = set()
LOCK = threading.Lock()


def creds_ok(header, pair):
    if pair == "-":
        return True
    if not header or not header.startswith("Basic "):
        return False
    try:
        return base64.b64decode(header[6:]).decode() == pair
    except Exception:
        return False


class Front(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def record(self, status):
        entry = {"method": self.command, "path": self.path, "status": status,
                 "range": self.headers.get("Range"),
                 "auth": (self.headers.get("Authorization") or "").split(" ")[0]}
        with LOCK, open(os.path.join(DIR, "requests"), "a") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.record(status)

    def challenge(self):
        if "--bearer" in opts:
            realm = "http://127.0.0.1:%d/token" % LISTEN
            return 'Bearer realm="%s",service="front",scope="repository:%s:pull"' % (
                realm, self.repo())
        return 'Basic realm="front"'

    def repo(self):
        p = self.path.split("?")[0].split("/")
        if len(p) > 3 and p[1] == "v2":
            for k, part in enumerate(p):
                if part in ("manifests", "blobs"):
                    return "/".join(p[2:k])
        return ""

    def authorized(self):
        h = self.headers.get("Authorization")
        if "--bearer" in opts:
            return bool(h) and h.startswith("Bearer ") and h[7:] in TOKENS
        if "--basic" in opts:
            return creds_ok(h, opts["--basic"])
        return True

    def token(self):
        if not creds_ok(self.headers.get("Authorization"), opts["--bearer"]):
            return self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                              [("WWW-Authenticate", 'Basic realm="token"')])
        tok = secrets.token_hex(16)
        TOKENS.add(tok)
        self.reply(200, json.dumps({"token": tok, "expires_in": 300}).encode(),
                   [("Content-Type", "application/json")])

    def do_GET(self):
        if self.path.startswith("/token"):
            return self.token()
        if not self.authorized():
            return self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                              [("WWW-Authenticate", self.challenge()),
                               ("Content-Type", "application/json")])
        self.forward()

    do_HEAD = do_GET

    def forward(self):
        conn = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=30)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() in ("accept", "range")}
        conn.request(self.command, self.path, headers=hdrs)
        r = conn.getresponse()
        body = r.read()
        digest = self.path.rsplit("/", 1)[-1]
        if "/blobs/" in self.path and opts.get("--tamper") == digest and body:
            body = bytes([body[0] ^ 0xff]) + body[1:]
        cut = opts.get("--cut", "")
        if "/blobs/" in self.path and cut.startswith(digest + ":") and digest not in CUT_DONE:
            CUT_DONE.add(digest)
            n = int(cut.rsplit(":", 1)[1])
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("connection", "transfer-encoding"):
                    self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[:n])
            self.wfile.flush()
            self.record(-r.status)
            self.close_connection = True
            return
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.record(r.status)
        if self.command == "HEAD":
            return
        rate = int(opts.get("--rate", 0))
        if not rate or "/blobs/" not in self.path:
            self.wfile.write(body)
            return
        step = max(rate // 10, 1)
        for k in range(0, len(body), step):
            self.wfile.write(body[k:k + step])
            self.wfile.flush()
            time.sleep(0.1)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", LISTEN), Front)
threading.Timer(float(opts.get("--stop-after", 300)), srv.shutdown).start()
open(os.path.join(DIR, "ready"), "w").close()
srv.serve_forever()
