#!/usr/bin/env python3
"""Memory and CPU of persistent sandboxes, from /proc: the supervisor and every process below
it (init, and whatever helper processes the supervisor keeps), with the sandbox's memory
cgroup read through init's /proc/PID/cgroup.

usage: sandbox-mem.py detail NAME:SUPERVISOR_PID...   one table row per process, per sandbox
       sandbox-mem.py sum SUPERVISOR_PID...           totals over all the sandboxes
       sandbox-mem.py cpu SECONDS SUPERVISOR_PID...   CPU their processes use in SECONDS
"""
import ctypes
import os
import sys
import time

_libc = ctypes.CDLL(None, use_errno=True)
SYS_KCMP, KCMP_VM = 312, 1  # x86_64


def same_vm(a, b):
    """Whether two processes share one address space (a CLONE_VM child such as the cgroup
    guard): its memory is the supervisor's and must be counted once."""
    return _libc.syscall(SYS_KCMP, a, b, KCMP_VM, 0, 0) == 0

INIT_COMM = "agentjail-init"


def children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def is_other_supervisor(pid, parent):
    """A sandbox's supervisor below the process measured (serve's zygote reaps them, so they
    are its children): measured as its own sandbox, not as part of this tree. A CLONE_VM
    child (the cgroup guard) shows its supervisor's title too, but shares its memory."""
    return (read("/proc/%d/cmdline" % pid).startswith("agentjail __supervise") and
            not same_vm(pid, parent))


def tree(sup):
    """(pid, role) for the supervisor and its descendants."""
    out, todo = [(sup, "supervisor")], [(c, sup) for c in children(sup)]
    while todo:
        pid, parent = todo.pop(0)
        if is_other_supervisor(pid, parent):
            continue
        comm = read("/proc/%d/comm" % pid).strip()
        if comm == INIT_COMM:
            role = "init"
        elif parent == sup and same_vm(pid, sup):
            role = "shares-supervisor-memory:" + comm
        elif parent == sup:
            role = "sup-child:" + comm
        else:
            role = "command:" + comm
        out.append((pid, role))
        todo += [(c, pid) for c in children(pid)]
    return out


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def rollup(pid):
    v = {}
    for line in read("/proc/%d/smaps_rollup" % pid).splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].endswith(":") and f[1].isdigit():
            v[f[0][:-1]] = int(f[1])
    return v


def memcg(pid):
    """(path, usage KiB, memory.stat) of pid's memory cgroup (v1 or v2)."""
    for line in read("/proc/%d/cgroup" % pid).splitlines():
        _, ctrl, path = line.split(":", 2)
        if "memory" in ctrl.split(","):
            base = "/sys/fs/cgroup/memory" + path
            usage = read(base + "/memory.usage_in_bytes")
            break
        if ctrl == "" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            base = "/sys/fs/cgroup" + path
            usage = read(base + "/memory.current")
            break
    else:
        return None, 0, {}
    st = dict(l.split() for l in read(base + "/memory.stat").splitlines() if len(l.split()) == 2)
    return path, int(usage or 0) // 1024, st


def ticks(pid):
    s = read("/proc/%d/stat" % pid)
    if not s:
        return 0
    f = s.rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def detail(args):
    print("%-10s %-22s %8s %8s %8s %8s %10s" % ("sandbox", "process", "pid", "RSS KiB",
          "PSS KiB", "PSS anon", "priv dirty"))
    for arg in args:
        name, sup = arg.rsplit(":", 1)
        rss = pss = 0
        init = None
        for pid, role in tree(int(sup)):
            r = rollup(pid)
            if role.startswith("shares-supervisor-memory"):
                r = {}
            rss += r.get("Rss", 0)
            pss += r.get("Pss", 0)
            init = pid if role == "init" else init
            print("%-10s %-22s %8d %8d %8d %8d %10d" % (name, role, pid, r.get("Rss", 0),
                  r.get("Pss", 0), r.get("Pss_Anon", 0), r.get("Private_Dirty", 0)))
        print("%-10s %-22s %8s %8d %8d   = %.2f MiB PSS" % (name, "all of the above", "", rss,
              pss, pss / 1024))
        if init:
            path, usage, st = memcg(init)
            print("%-10s memory cgroup %s: usage %d KiB (memory.stat: rss %d, cache %d,"
                  " mapped_file %d, shmem %d KiB)" % (name, path, usage,
                  int(st.get("rss", st.get("anon", 0))) // 1024,
                  int(st.get("cache", st.get("file", 0))) // 1024,
                  int(st.get("mapped_file", st.get("file_mapped", 0))) // 1024,
                  int(st.get("shmem", 0)) // 1024))


def total(sups):
    n = len(sups)
    rss = pss = cg = procs = 0
    for sup in sups:
        for pid, role in tree(sup):
            r = {} if role.startswith("shares-supervisor-memory") else rollup(pid)
            rss += r.get("Rss", 0)
            pss += r.get("Pss", 0)
            procs += 1
            if role == "init":
                cg += memcg(pid)[1]
    print("over %d sandboxes (%d processes): per sandbox PSS %.0f KiB, RSS %.0f KiB,"
          " memory cgroup usage %.0f KiB" % (n, procs, pss / n, rss / n, cg / n))


def cpu(seconds, sups):
    pids = [p for s in sups for p, _ in tree(s)]
    t0 = sum(ticks(p) for p in pids)
    time.sleep(seconds)
    t1 = sum(ticks(p) for p in pids)
    hz = os.sysconf("SC_CLK_TCK")
    print("CPU of %d processes over %g s: %.2f %% of one CPU (%d ticks at %d Hz)"
          % (len(pids), seconds, (t1 - t0) / hz / seconds * 100, t1 - t0, hz))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "detail":
        detail(args)
    elif mode == "sum":
        total([int(a) for a in args])
    elif mode == "cpu":
        cpu(float(args[0]), [int(a) for a in args[1:]])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
