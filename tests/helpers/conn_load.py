#!/usr/bin/env python3
"""Connection load against agentjail serve's unix socket (tests/integration/serve_load.sh).

    conn_load.py hold SOCKET N      open N connections and keep them: half idle, half with a
                                    request's headers begun but not finished. Prints "held N",
                                    then waits for a line on stdin; then finishes the request on
                                    every 100th connection and prints "answered A of R".
    conn_load.py slow SOCKET DELAY  send one request a byte at a time, DELAY seconds apart;
                                    prints the status code and the seconds it took.
    conn_load.py stall SOCKET       send half a request, then nothing; prints the seconds until
                                    the daemon closed the connection ("open" after 20 s).

Standard library only; every wait is bounded.
"""
import resource
import socket
import sys
import time

REQUEST = b"GET /v1/health HTTP/1.1\r\nHost: aj\r\n\r\n"
HALF = b"GET /v1/health HTTP/1.1\r\nHost: aj\r\n"


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(path)
    return s


def status(s):
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return "closed"
        data += chunk
    return data.split(b" ")[1].decode()


def hold(path, n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    conns = []
    for i in range(n):
        s = connect(path)
        if i % 2:
            s.sendall(HALF)
        conns.append(s)
    print(f"held {len(conns)}", flush=True)
    sys.stdin.readline()
    picked = [s for i, s in enumerate(conns) if i % 100 == 1]
    answered = 0
    for s in picked:
        s.sendall(b"\r\n")
        answered += status(s) == "200"
    print(f"answered {answered} of {len(picked)}", flush=True)
    for s in conns:
        s.close()


def slow(path, delay):
    t0 = time.monotonic()
    s = connect(path)
    for b in REQUEST:
        s.sendall(bytes([b]))
        time.sleep(delay)
    print(status(s), f"{time.monotonic() - t0:.1f}")


def stall(path):
    t0 = time.monotonic()
    s = connect(path)
    s.sendall(HALF)
    try:
        while s.recv(4096):
            pass
        print(f"{time.monotonic() - t0:.1f}")
    except socket.timeout:
        print("open")


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "hold":
        hold(path, int(sys.argv[3]))
    elif mode == "slow":
        slow(path, float(sys.argv[3]))
    elif mode == "stall":
        stall(path)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
