#!/usr/bin/env bash
# Two running persistent sandboxes must not reach each other: different host uid ranges (seen
# from the host in /proc/PID/status), different namespaces, no view of the other's processes,
# files, /tmp or mounts, no way to signal the other's processes, and control sockets that
# neither the other sandbox nor an unprivileged host user can reach. Root only: rootless
# sandboxes all run as the caller's one uid by construction.
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/adversarial/common.bash"
pj_setup

if ! is_root; then
	skip "isolation between persistent sandboxes" "needs root (distinct host uid ranges)"
	exit 0
fi

MARK=$(marker)
pj_create alpha
pj_create beta
AID=$(pj_id alpha)
BID=$(pj_id beta)

# A long-running process in each, named with the marker (given in two pieces so that no
# command line but the process's own contains it).
for s in alpha beta; do
	"$AJ" exec "$s" -- bash -c '(exec -a "$1$2-'"$s"'" sleep 300) </dev/null >/dev/null 2>&1 &' \
		x "${MARK:0:6}" "${MARK:6}" >/dev/null 2>&1
done
marked_running() { [ -n "$(host_pids_matching "$MARK-$1")" ]; }
pj_wait 5 marked_running alpha
pj_wait 5 marked_running beta
A_PID=$(host_pids_matching "$MARK-alpha" | head -1)
B_PID=$(host_pids_matching "$MARK-beta" | head -1)
check "a marked process runs in each sandbox (seen from the host)" [ -n "$A_PID" -a -n "$B_PID" ]

# ---- host uid ranges -----------------------------------------------------------------------

host_uid() { awk '/^Uid:/ {print $2}' "/proc/$1/status"; }
A_UID=$(host_uid "$A_PID")
B_UID=$(host_uid "$B_PID")
check "the sandboxes' processes run as different host uids" [ "$A_UID" != "$B_UID" ]
check "neither runs as host root" [ "$A_UID" != 0 -a "$B_UID" != 0 ]
read -r _ A_BASE A_LEN <"/proc/$A_PID/uid_map"
read -r _ B_BASE B_LEN <"/proc/$B_PID/uid_map"
check "their host uid ranges do not overlap" \
	[ $((A_BASE + A_LEN)) -le "$B_BASE" -o $((B_BASE + B_LEN)) -le "$A_BASE" ]
check "alpha's uid lies in alpha's range" [ "$A_UID" -ge "$A_BASE" -a "$A_UID" -lt $((A_BASE + A_LEN)) ]
check "the ranges are above every host account" [ "$A_BASE" -ge 65536 -a "$B_BASE" -ge 65536 ]
A_GID=$(awk '/^Gid:/ {print $2}' "/proc/$A_PID/status")
B_GID=$(awk '/^Gid:/ {print $2}' "/proc/$B_PID/status")
check "different host gids" [ "$A_GID" != "$B_GID" ]
for ns in user mnt pid net ipc uts cgroup; do
	check "different $ns namespaces" \
		[ "$(readlink "/proc/$A_PID/ns/$ns")" != "$(readlink "/proc/$B_PID/ns/$ns")" ]
done

# ---- processes -----------------------------------------------------------------------------

pj_x beta sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "'
expect_not_contains "beta does not see alpha's process" "$OUT" "$MARK-alpha"
expect_contains "beta sees its own" "$OUT" "$MARK-beta"
pj_x beta sh -c 'ls -d /proc/[0-9]* | wc -l'
check "beta sees only a handful of processes (its own)" [ "${OUT:-999}" -lt 10 ]
pj_x beta sh -c "kill -0 $A_PID 2>&1; echo rc=\$?"
expect_contains "beta cannot signal alpha's process by its host pid" "$OUT" "rc=1"
check "alpha's process is still alive" kill -0 "$A_PID"
pj_x beta sh -c 'for p in $(seq 2 400); do kill -9 $p 2>/dev/null; done; true'
check "beta killing every pid it can name leaves alpha's process alive" kill -0 "$A_PID"

# ---- files ---------------------------------------------------------------------------------

pj_x alpha sh -c "echo $MARK >/home/user/alpha-secret; echo $MARK >/tmp/alpha-tmp; echo $MARK >/dev/shm/alpha-shm 2>/dev/null; true"
pj_x beta sh -c 'ls /home/user /tmp /dev/shm 2>/dev/null'
expect_not_contains "beta does not see alpha's workspace, /tmp or /dev/shm files" "$OUT" alpha-
pj_x beta sh -c "grep -rsl $MARK /home /tmp /dev/shm /var /run 2>/dev/null | head -5"
expect_eq "beta finds alpha's marker nowhere it can read" "$OUT" ""
pj_x beta sh -c 'cat /proc/self/mountinfo'
expect_not_contains "beta's mounts do not name alpha's workspace" "$OUT" "$AID"
expect_not_contains "beta's mounts do not name the state directory" "$OUT" "$STATE"
pj_x beta sh -c "cat /proc/$A_PID/root/home/user/alpha-secret 2>&1; ls /run/agentjail 2>&1"
expect_not_contains "beta cannot reach alpha's root through /proc" "$OUT" "$MARK"
pj_x beta sh -c "echo $MARK-from-beta >/home/user/beta-file"
pj_x alpha sh -c 'ls /home/user'
expect_eq "alpha sees only its own files" "$OUT" alpha-secret
check "alpha's file is on the host in alpha's upper only" \
	[ -f "$STATE/sandboxes/$AID/upper/alpha-secret" -a ! -e "$STATE/sandboxes/$BID/upper/alpha-secret" ]
pj_x alpha stat -c %u /home/user/alpha-secret
expect_eq "alpha's file belongs to the sandbox user inside" "$OUT" 1000

# ---- control sockets ------------------------------------------------------------------------

A_SOCK=$(pj_field alpha 'd.get("socket") or ""')
check "alpha's control socket exists (inspect names it)" [ -S "$A_SOCK" ]
probe=$(as_unprivileged python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1]); print("connected")
except OSError as e:
    print(e.__class__.__name__)' "$A_SOCK" 2>&1)
expect_eq "an unprivileged host user cannot connect to a sandbox's control socket" "$probe" PermissionError
pj_x beta sh -c "test -e '$A_SOCK' && echo visible || echo absent"
expect_eq "beta does not see alpha's control socket" "$OUT" absent

for s in alpha beta; do
	aj_run rm -f "$s"
	expect_eq "rm -f $s" "$RC" 0
done
check "alpha's marked process is gone" pj_wait 5 pid_gone "$A_PID"
check "beta's marked process is gone" pj_wait 5 pid_gone "$B_PID"
