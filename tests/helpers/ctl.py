"""A minimal client of a sandbox supervisor's control socket, for tests: JSON messages over
SOCK_SEQPACKET, one per packet (src/control/proto.h)."""
import base64
import json
import socket


class Ctl:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.connect(path)

    def send(self, msg):
        self.s.send(json.dumps(msg).encode())

    def recv(self, timeout=10):
        self.s.settimeout(timeout)
        data = self.s.recv(1 << 20)
        if not data:
            raise EOFError("supervisor closed the connection")
        return json.loads(data)

    def call(self, msg, timeout=10):
        """Sends a request and returns its reply, keeping events that come first."""
        self.send(msg)
        while True:
            m = self.recv(timeout)
            if "event" not in m:
                return m
            self.pending.append(m)

    pending = None

    def events(self, timeout=10):
        """Yields events (queued ones first) until an exit event, which is yielded last."""
        while True:
            m = self.pending.pop(0) if self.pending else self.recv(timeout)
            yield m
            if m.get("event") == "exit":
                return

    def collect(self, timeout=10):
        """Output per stream (bytes), the exit event, and whether offsets were contiguous."""
        out, contiguous, expect, exit_ev = {}, True, None, None
        for m in self.events(timeout):
            if m.get("event") == "output":
                if expect is not None and m["offset"] != expect:
                    contiguous = False
                expect = m["offset"] + m["size"]
                out[m["stream"]] = out.get(m["stream"], b"") + base64.b64decode(m["data"])
            elif m.get("event") == "exit":
                exit_ev = m
        return out, exit_ev, contiguous

    def close(self):
        self.s.close()


def connect(path):
    c = Ctl(path)
    c.pending = []
    return c


def b64(data):
    return base64.b64encode(data).decode()
