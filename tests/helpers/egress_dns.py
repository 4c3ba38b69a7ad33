#!/usr/bin/env python3
"""A DNS server for the egress tests (UDP, A records only), answering from a table:

  egress_dns.py ADDR PORT DIR NAME=IP[,IP...][/IP[,IP...]...] ...

Each NAME has one or more answer sets separated by '/': the first A query for NAME gets the
first set, the second the second, and so on (the last repeats). "rebind.test=198.18.0.2/
127.0.0.1" is the DNS-rebinding attack: a public address for the first lookup, loopback for
every later one. AAAA queries get an empty answer; other names NXDOMAIN. TTLs are 0. Every
query is appended to DIR/dns.log; DIR/dns.ready appears when it listens. Stops after 120 s.
"""
import os
import socket
import struct
import sys
import time


def parse_name(msg, off):
    labels = []
    while msg[off]:
        n = msg[off]
        labels.append(msg[off + 1:off + 1 + n].decode("ascii", "replace"))
        off += 1 + n
    return ".".join(labels).lower(), off + 1


def answer(msg, table, counts):
    qid, flags, qd = struct.unpack("!HHH", msg[:6])
    name, off = parse_name(msg, 12)
    qtype, qclass = struct.unpack("!HH", msg[off:off + 4])
    question = msg[12:off + 4]
    rcode, records = 0, []
    if name not in table:
        rcode = 3
    elif qtype == 1:
        sets = table[name]
        i = counts.get(name, 0)
        counts[name] = i + 1
        records = sets[min(i, len(sets) - 1)]
    head = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(records), 0, 0)
    body = b""
    for ip in records:
        body += struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(ip)
    return head + question + body, name, qtype


def main():
    addr, port, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    table = {}
    for spec in sys.argv[4:]:
        name, sets = spec.split("=", 1)
        table[name.lower()] = [s.split(",") for s in sets.split("/")]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    s.settimeout(0.5)
    open(os.path.join(d, "dns.ready"), "w").close()
    counts = {}
    end = time.time() + 120
    while time.time() < end:
        try:
            msg, peer = s.recvfrom(512)
        except socket.timeout:
            continue
        try:
            out, name, qtype = answer(msg, table, counts)
        except (IndexError, struct.error):
            continue
        with open(os.path.join(d, "dns.log"), "a") as f:
            f.write("%s %d\n" % (name, qtype))
        s.sendto(out, peer)


if __name__ == "__main__":
    main()
