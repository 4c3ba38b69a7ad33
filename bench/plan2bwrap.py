#!/usr/bin/env python3
"""Turns an agentjail plan (agentjail run --dry-run --json) into bubblewrap arguments that
build the same root filesystem, so the two can be timed doing equivalent work.

usage: plan2bwrap.py PLAN.json DATADIR [--share-net]
Generated files (passwd, group, ...) are written to DATADIR and bound read-only, the closest
bubblewrap equivalent of agentjail's copies."""
import json
import os
import sys


def main():
    plan = json.load(open(sys.argv[1]))
    datadir = sys.argv[2]
    share_net = "--share-net" in sys.argv[3:]
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    if share_net:
        args.append("--share-net")
    args += ["--uid", str(plan["user"]["uid"]), "--gid", str(plan["user"]["gid"]),
             "--hostname", "agentjail"]
    dev_done = False
    for n, op in enumerate(plan["rootfs"]):
        kind, path = op["op"], op["path"]
        if path.startswith("/dev"):
            if not dev_done:
                args += ["--dev", "/dev"]
                dev_done = True
            continue
        if kind == "bind":
            src = op.get("source", path)
            args += ["--ro-bind" if op.get("read_only") else "--bind", src, path]
        elif kind == "symlink":
            args += ["--symlink", op["target"], path]
        elif kind == "dir" and path != "/":
            args += ["--dir", path]
        elif kind == "tmpfs":
            size = [o for o in op.get("options", "").split(",") if o.startswith("size=")]
            if size and size[0][5:].isdigit():
                args += ["--size", size[0][5:]]
            args += ["--tmpfs", path]
        elif kind == "proc":
            args += ["--proc", path]
        elif kind == "mask":
            if os.path.isdir(path):
                args += ["--tmpfs", path]
            elif os.path.exists(path):
                args += ["--ro-bind", "/dev/null", path]
        elif kind == "file":
            # Content is not in the plan: bind the host file (for /etc copies) or a stand-in.
            if os.path.exists(path) and not path.endswith(("passwd", "group", "hosts",
                                                              "hostname", "resolv.conf",
                                                              "nsswitch.conf")):
                args += ["--ro-bind", path, path]
            else:
                f = os.path.join(datadir, "f%d" % n)
                open(f, "w").write("generated\n")
                args += ["--ro-bind", f, path]
    args += ["--remount-ro", "/", "--chdir", plan["cwd"]]
    for name in plan["environment"]:
        args += ["--setenv", name, os.environ.get(name, "x")]
    print("\0".join(args), end="")


main()
