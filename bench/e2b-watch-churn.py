#!/usr/bin/env python3
"""How long the daemon takes to answer GET /health while one client makes and removes
directory watchers (filesystem.Filesystem/CreateWatcher and RemoveWatcher of the E2B API), next
to the same requests with no watcher activity. Every removed watcher ends an inotify instance,
whose last close waits for the kernel (10-20 ms); where that close happens on the daemon's
event loop, every other request waits with it.

    e2b-watch-churn.py PORT API_KEY CYCLES

Standard library only. Makes one sandbox (template "base") and kills it at the end. Prints one
JSON object per row: {"row", "n", "p50_ms", "p90_ms", "max_ms"}.
"""
import http.client
import json
import sys
import threading
import time

PORT, KEY, CYCLES = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])


def request(method, path, headers=None, body=b""):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError("%s %s: HTTP %d %r" % (method, path, r.status, data[:200]))
        return json.loads(data) if data else None
    finally:
        c.close()


def health_times(stop):
    out = []
    while not stop():
        t = time.monotonic()
        request("GET", "/health")
        out.append((time.monotonic() - t) * 1000)
    return out


def row(name, times):
    times = sorted(times)
    return {"row": name, "n": len(times), "p50_ms": round(times[len(times) // 2], 3),
            "p90_ms": round(times[int(len(times) * 0.9)], 3), "max_ms": round(times[-1], 3)}


sb = request("POST", "/sandboxes", {"X-API-Key": KEY, "Content-Type": "application/json"},
             json.dumps({"templateID": "base", "timeout": 300}).encode())
envd = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": "49983",
        "X-Access-Token": sb["envdAccessToken"], "Content-Type": "application/json",
        "Connect-Protocol-Version": "1"}
try:
    request("POST", "/files?path=/home/user/watched/file",
            {**envd, "Content-Type": "application/octet-stream"}, b"x")

    def churn():
        for _ in range(CYCLES):
            w = request("POST", "/filesystem.Filesystem/CreateWatcher", envd,
                        json.dumps({"path": "/home/user/watched"}).encode())
            request("POST", "/filesystem.Filesystem/RemoveWatcher", envd,
                    json.dumps({"watcherId": w["watcherId"]}).encode())

    # The quiet row lasts as long as the churn did, so both have about as many requests.
    t0 = time.monotonic()
    done = []
    worker = threading.Thread(target=lambda: (churn(), done.append(True)))
    worker.start()
    busy = health_times(lambda: bool(done))
    worker.join()
    length = time.monotonic() - t0
    t1 = time.monotonic()
    quiet = health_times(lambda: time.monotonic() - t1 > length)
    print(json.dumps(row("GET /health, no watcher activity", quiet)))
    print(json.dumps(row("GET /health while watchers are made and removed", busy)))
finally:
    request("DELETE", "/sandboxes/" + sb["sandboxID"], {"X-API-Key": KEY})
