#!/usr/bin/env python3
"""Upstream servers for the egress tests: they stand in for the internet, on an address the
test chose (loopback, or a network namespace the test made).

  egress_upstream.py DIR ADDR HTTP_PORT [TLS_PORT CERT KEY] [--echo-port N] [--ttl SECONDS]

HTTP (and HTTPS with CERT/KEY) answer every request with a JSON document describing it:
method, path, headers (as received) and the body's length and SHA-256, so tests can check
what the proxy forwarded. /big?n=BYTES answers BYTES bytes (throughput), /chunked answers a
chunked body, /git/... answers 401 with a Basic challenge until a request carries
Authorization (git sends credentials only when challenged). The echo port returns every byte it receives (for SOCKS and CONNECT tests of
non-HTTP traffic). Every request is appended to DIR/requests.jsonl; DIR/ready appears once
all listeners are up. The process exits after --ttl seconds (default 120).
"""
import hashlib
import http.server
import json
import os
import socket
import socketserver
import ssl
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without this, Nagle's algorithm holds the
    # body back for a delayed ACK (40 ms per request on a reused connection).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(n) if n else b""

    def _answer(self):
        body = self._body()
        rec = {
            "method": self.command,
            "path": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_len": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "tls": isinstance(self.connection, ssl.SSLSocket),
            "server": self.server.server_address[0],
        }
        with LOCK:
            with open(os.path.join(DIR, "requests.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\n")
        if self.path.startswith("/git/") and "Authorization" not in self.headers:
            # git sends credentials only after a challenge
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/big"):
            n = int(self.path.split("n=")[1]) if "n=" in self.path else 1 << 20
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                self.wfile.write(chunk[: min(n, len(chunk))])
                n -= len(chunk)
            return
        out = json.dumps(rec).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.path.startswith("/chunked"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(out), 7):
                part = out[i:i + 7]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_HEAD = _answer


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, addr, tls_ctx=None):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        self.tls_ctx = tls_ctx
        super().__init__(addr, Handler)

    def get_request(self):
        sock, peer = super().get_request()
        if self.tls_ctx:
            sock = self.tls_ctx.wrap_socket(sock, server_side=True)
        return sock, peer


def echo(addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)

    def serve(c):
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    return
                c.sendall(d)

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def main():
    global DIR
    args = sys.argv[1:]
    ttl, echo_port = 120, None
    if "--ttl" in args:
        i = args.index("--ttl")
        ttl = float(args[i + 1])
        del args[i:i + 2]
    if "--echo-port" in args:
        i = args.index("--echo-port")
        echo_port = int(args[i + 1])
        del args[i:i + 2]
    DIR, addr, http_port = args[0], args[1], int(args[2])
    servers = [Server((addr, http_port))]
    if len(args) >= 6:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args[4], args[5])
        servers.append(Server((addr, int(args[3])), ctx))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    if echo_port:
        threading.Thread(target=echo, args=(addr, echo_port), daemon=True).start()
    time.sleep(0.2)
    open(os.path.join(DIR, "ready"), "w").close()
    time.sleep(ttl)


LOCK = threading.Lock()
DIR = "."
if __name__ == "__main__":
    main()
