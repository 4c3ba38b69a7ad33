#!/usr/bin/env python3
"""Servers inside a sandbox and clients on the host for the published-port tests
(tests/integration/ports_publish.sh, tests/adversarial/ports_isolation.sh).

Servers (run inside; each touches READY_FILE once it listens, and stops by itself after
LIFETIME seconds):
    portsrv.py blob PORT BYTES READY LIFETIME     every connection: an HTTP/1.1 200 with BYTES
                                                  zero bytes as its body (Content-Length)
    portsrv.py echo PORT READY LIFETIME           line echo for any number of connections
    portsrv.py ws PORT READY LIFETIME             WebSocket: "welcome" first, then every
                                                  message echoed back (python3-websockets)
    portsrv.py headers PORT READY LIFETIME        HTTP: the request's head as it arrived,
                                                  as the body of a 200
    portsrv.py keepalive PORT READY LOG LIFETIME  a hostile HTTP server: answers every request
                                                  of a connection, never closes it (whatever
                                                  Connection says), appends each head to LOG

Clients (run on the host):
    portsrv.py many HOST PORT N                   N connections open at once, then one line
                                                  through each; prints "echoed K of N"
    portsrv.py wsclient URL [HOST:PORT [TOKEN]]   prints the welcome, then the echo of a text
                                                  and of a 1 MiB binary message ("text ok",
                                                  "binary ok"); connecting to HOST:PORT
                                                  instead of the URL's host, with a bearer
                                                  token

Standard library only, but for websockets; every wait is bounded.
"""
import asyncio
import os
import resource
import socket
import sys
import time


def touch(path):
    with open(path, "w"):
        pass


def serve_blob(port, size, ready, lifetime):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    s.settimeout(1)
    touch(ready)
    end = time.time() + lifetime
    chunk = bytes(1 << 20)
    while time.time() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.settimeout(30)
        try:
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
            left = size
            while left > 0:
                n = min(left, len(chunk))
                c.sendall(chunk[:n])
                left -= n
        except OSError:
            pass
        c.close()


async def echo_main(port, ready, lifetime):
    async def handle(r, w):
        try:
            while True:
                line = await r.readline()
                if not line:
                    break
                w.write(line)
                await w.drain()
        except OSError:
            pass
        w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", port, backlog=2048)
    touch(ready)
    await asyncio.sleep(lifetime)
    srv.close()


def serve_headers(port, ready, lifetime):
    import http.server
    import threading

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = ("%s %s\n%s" % (self.command, self.path, self.headers)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    touch(ready)
    time.sleep(lifetime)
    srv.shutdown()


def serve_keepalive(port, ready, log, lifetime):
    import threading

    def conn(c):
        buf = b""
        c.settimeout(lifetime)
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                head, buf = buf.split(b"\r\n\r\n", 1)
                with open(log, "ab") as f:
                    f.write(head + b"\n--\n")
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
        except OSError:
            pass
        finally:
            c.close()

    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    s.settimeout(1)
    touch(ready)
    end = time.time() + lifetime
    while time.time() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=conn, args=(c,), daemon=True).start()


async def ws_main(port, ready, lifetime):
    import websockets

    async def handle(ws, path=None):
        await ws.send("welcome")
        async for m in ws:
            await ws.send(m)

    async with websockets.serve(handle, "127.0.0.1", port, max_size=4 << 20):
        touch(ready)
        await asyncio.sleep(lifetime)


async def many_main(host, port, n):
    conns = []
    for _ in range(n):
        conns.append(await asyncio.wait_for(asyncio.open_connection(host, port), 20))

    async def one(i, rw):
        r, w = rw
        w.write(b"ping %d\n" % i)
        await w.drain()
        line = await asyncio.wait_for(r.readline(), 30)
        w.close()
        return line == b"ping %d\n" % i

    ok = await asyncio.gather(*(one(i, c) for i, c in enumerate(conns)))
    print("echoed %d of %d" % (sum(ok), n))


async def wsclient_main(url, connect_to=None, token=None):
    import websockets

    kw = {}
    if connect_to:
        host, port = connect_to.rsplit(":", 1)
        kw = {"host": host, "port": int(port)}
    headers = {"Authorization": "Bearer " + token} if token else None
    async with websockets.connect(url, max_size=4 << 20, open_timeout=10,
                                  extra_headers=headers, **kw) as ws:
        print(await asyncio.wait_for(ws.recv(), 10))
        await ws.send("hello")
        print("text ok" if await asyncio.wait_for(ws.recv(), 10) == "hello" else "text wrong")
        blob = os.urandom(1 << 20)
        await ws.send(blob)
        print("binary ok" if await asyncio.wait_for(ws.recv(), 20) == blob else "binary wrong")


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "blob":
        serve_blob(int(a[0]), int(a[1]), a[2], float(a[3]))
    elif cmd == "echo":
        asyncio.run(echo_main(int(a[0]), a[1], float(a[2])))
    elif cmd == "ws":
        asyncio.run(ws_main(int(a[0]), a[1], float(a[2])))
    elif cmd == "many":
        asyncio.run(many_main(a[0], int(a[1]), int(a[2])))
    elif cmd == "keepalive":
        serve_keepalive(int(a[0]), a[1], a[2], float(a[3]))
    elif cmd == "headers":
        serve_headers(int(a[0]), a[1], float(a[2]))
    elif cmd == "wsclient":
        asyncio.run(wsclient_main(a[0], a[1] if len(a) > 1 and a[1] else None,
                                  a[2] if len(a) > 2 else None))
    else:
        sys.exit("portsrv.py: unknown command " + cmd)


if __name__ == "__main__":
    main()
