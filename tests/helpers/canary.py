#!/usr/bin/env python3
"""The stack canary of each process given, as a 64-bit number in hex (its low byte last): the 8
bytes at %fs:0x28 (x86-64), read by seizing it with ptrace (PTRACE_GETREGS for the fs base)
and through /proc/PID/mem. Needs the right to trace them (root). A process that shares its
memory with another (a CLONE_VM child) shows the same value.

    canary.py PID...
"""
import ctypes
import os
import sys

PTRACE_GETREGS, PTRACE_DETACH = 12, 17
PTRACE_SEIZE, PTRACE_INTERRUPT = 0x4206, 0x4207
WALL = 0x40000000
FS_BASE = 21  # index in struct user_regs_struct (x86-64)

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


def canary(pid):
    # Seized and interrupted, not attached: no SIGSTOP is queued that could stop the process
    # after the detach.
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0:
        raise OSError(ctypes.get_errno(), f"ptrace seize {pid}")
    try:
        if libc.ptrace(PTRACE_INTERRUPT, pid, None, None) != 0:
            raise OSError(ctypes.get_errno(), f"ptrace interrupt {pid}")
        os.waitpid(pid, WALL)
        regs = (ctypes.c_ulonglong * 27)()
        if libc.ptrace(PTRACE_GETREGS, pid, None, ctypes.byref(regs)) != 0:
            raise OSError(ctypes.get_errno(), f"ptrace getregs {pid}")
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as f:
            f.seek(regs[FS_BASE] + 0x28)
            return f.read(8)[::-1].hex()  # as the 64-bit number: the low byte last
    finally:
        libc.ptrace(PTRACE_DETACH, pid, None, None)


print(" ".join(canary(int(p)) for p in sys.argv[1:]))
