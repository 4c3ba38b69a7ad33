#!/usr/bin/env python3
"""Plays the part of containerd's shim for tests of the OCI verbs without containerd: a child
subreaper that runs `AGENTJAIL --root ROOT create ...` with the given stdio, then `start`, and
reaps the container's init (re-parented to it, as to the shim) to print its exit status.

usage: oci_reaper.py AGENTJAIL ROOT BUNDLE ID OUT_FILE [--no-start]
prints "exit N" (N as the shim computes it: code, or 128+signal)."""
import ctypes, os, subprocess, sys

PR_SET_CHILD_SUBREAPER = 36
aj, root, bundle, cid, out = sys.argv[1:6]
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("prctl failed")
pidfile = os.path.join(os.path.dirname(out), cid + ".pid")
with open(out, "wb") as f:
    r = subprocess.run([aj, "--root", root, "--log", out + ".log", "--log-format", "json",
                        "create", "--bundle", bundle, "--pid-file", pidfile, cid],
                       stdin=subprocess.DEVNULL, stdout=f, stderr=f)
if r.returncode != 0:
    print("create failed", r.returncode)
    sys.exit(1)
pid = int(open(pidfile).read())
if "--no-start" in sys.argv:
    print("created", pid)
    sys.exit(0)
subprocess.run([aj, "--root", root, "start", cid], check=True)
while True:
    p, status = os.waitpid(-1, 0)
    if p == pid:
        break
code = os.waitstatus_to_exitcode(status)
print("exit", code if code >= 0 else 128 - code)
