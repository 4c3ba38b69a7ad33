#!/usr/bin/env bash
# agentjail as containerd's runtime: a containerd started here (root, state, socket in a
# temporary directory; CRI plugin off), an image packed offline from busybox-static, and
# `ctr` running it through the io.containerd.runc.v2 shim with agentjail as the runc binary.
# Covers exit codes, output, -t, exec (also -t), ps, metrics, pause/resume, kill, delete,
# agentjail's layers inside the container, and two containers that cannot see each other.
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"

need() { command -v "$1" >/dev/null 2>&1; }
if ! is_root; then skip "containerd" "needs root (containerd and its shim run as root)"; exit 0; fi
for t in containerd ctr containerd-shim-runc-v2 busybox script python3; do
	if ! need "$t"; then
		skip "containerd" "$t is not installed (scripts/install-deps installs containerd, busybox-static)"
		exit 0
	fi
done

T=$(mktmp)
NS=ajt$$
SOCK=$T/c.sock
REF=docker.io/library/ajtest-busybox:1
RT=(--runc-binary "$AJ" --runc-root "$T/ajroot")
FIFO=(--fifo-dir "$T/fifo")
CTR=(ctr -a "$SOCK" -n "$NS")
CPID=
# The shim keeps its sockets under /run/containerd/s whatever the configuration says: remove
# what this test made there, and the directories if it made them.
had_run_containerd=0
[ -d /run/containerd ] && had_run_containerd=1

cleanup() {
	local c id
	if [ -n "$CPID" ]; then
		for id in $("${CTR[@]}" task ls -q 2>/dev/null); do
			"${CTR[@]}" task kill -a -s KILL "$id" >/dev/null 2>&1
		done
		sleep 0.5
		for id in $("${CTR[@]}" task ls -q 2>/dev/null); do
			"${CTR[@]}" task rm -f "$id" >/dev/null 2>&1
		done
		for id in $("${CTR[@]}" c ls -q 2>/dev/null); do
			"${CTR[@]}" c rm "$id" >/dev/null 2>&1
		done
		"${CTR[@]}" images rm "$REF" >/dev/null 2>&1
		kill "$CPID" 2>/dev/null
		wait "$CPID" 2>/dev/null
	fi
	# Mounts containerd's snapshotter or the shim may have left under our directory.
	grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null
	done
	# The namespace's parent cgroup (/NS) in every hierarchy, now empty.
	for c in /sys/fs/cgroup/*/"$NS" /sys/fs/cgroup/"$NS"; do
		[ -d "$c" ] && rmdir "$c" 2>/dev/null
	done
	if [ "$had_run_containerd" = 0 ]; then
		rmdir /run/containerd/s /run/containerd 2>/dev/null
	fi
	_aj_cleanup
}
trap cleanup EXIT
# The runner's timeout sends TERM first: clean up then too.
trap 'exit 143' TERM INT

# ---- containerd, offline image --------------------------------------------------------------

mkdir -p "$T/rootfs/bin" "$T/rootfs/tmp" "$T/rootfs/etc" "$T/fifo"
chmod 1777 "$T/rootfs/tmp"
cp "$(command -v busybox)" "$T/rootfs/bin/busybox"
for a in $(busybox --list); do [ "$a" = busybox ] || ln -s busybox "$T/rootfs/bin/$a"; done
python3 "$AJ_ROOT/tests/helpers/oci_image.py" "$T/rootfs" "$T/image.tar" "$REF"

cat >"$T/config.toml" <<EOF
version = 2
root = "$T/root"
state = "$T/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$SOCK"
EOF
containerd --config "$T/config.toml" >"$T/containerd.log" 2>&1 &
CPID=$!
for _ in $(seq 100); do
	ctr -a "$SOCK" version >/dev/null 2>&1 && break
	sleep 0.1
done
if ! ctr -a "$SOCK" version >/dev/null 2>&1; then
	not_ok "containerd starts ($(tail -3 "$T/containerd.log"))"
	exit 0
fi
ok "containerd starts with root, state and socket in a temporary directory"
out=$("${CTR[@]}" images import "$T/image.tar" 2>&1)
expect_contains "image packed offline is imported" "$out" "$REF"

# run NAME ARGS... : ctr run --rm through agentjail; sets OUT and RC.
run() {
	local name=$1; shift
	OUT=$(timeout 60 "${CTR[@]}" run --rm "${FIFO[@]}" "${RT[@]}" "$REF" "$name" "$@" 2>&1)
	RC=$?
}

# ---- one-shot containers -------------------------------------------------------------------

run x1 /bin/sh -c 'echo hello from the container'
expect_eq "exit 0 and output" "$RC:$OUT" "0:hello from the container"
run x2 /bin/sh -c 'exit 3'
expect_eq "exit code 3 passes through containerd" "$RC" 3
run x3 /bin/sh -c 'kill -TERM $$'
expect_eq "killed by SIGTERM is 143" "$RC" 143
run x4 /bin/no-such-program
expect_eq "a missing program exits 127" "$RC" 127
expect_contains "a missing program is named" "$OUT" "no-such-program"
run x5 /bin/sh -c 'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "'
# The snapshot's upper directory is a host directory: SETFCAP and FSETID are withheld there.
expect_eq "containerd's capabilities but SETFCAP and FSETID (over the container's user namespace), no_new_privs as ctr asks, seccomp filter" "$OUT" \
	"$(printf 'CapEff: 00000000280425eb\nNoNewPrivs: 1\nSeccomp: 2')"
run x6 /bin/sh -c 'echo data > /etc/written && cat /etc/written && id -u && stat -c %u /bin/busybox'
expect_eq "rootfs writable; image root files belong to the container's root" "$OUT" \
	"$(printf 'data\n0\n0')"
run x7 /bin/sh -c 'unshare -U true 2>&1; echo rc=$?'
expect_contains "agentjail's seccomp deny list applies (no user namespaces)" "$OUT" "rc=1"

OUT=$(timeout 60 script -qec "${CTR[*]} run -t --rm ${FIFO[*]} ${RT[*]} $REF t1 /bin/sh -c 'tty; exit 6'" /dev/null 2>&1)
RC=$?
expect_eq "-t: exit code" "$RC" 6
expect_contains "-t: the process has the container's terminal" "$OUT" "/dev/pts/0"

# ---- a long-running container --------------------------------------------------------------

timeout 60 "${CTR[@]}" run -d "${FIFO[@]}" "${RT[@]}" "$REF" c1 /bin/sh -c 'echo marker > /tmp/marker; exec sleep 300' >/dev/null 2>&1
# The marker is written once the shell has become "sleep 300".
wait_until 20 pgrep -fx 'sleep 300' >/dev/null
st=$("${CTR[@]}" task ls | awk '$1=="c1"{print $3}')
expect_eq "detached container is RUNNING" "$st" RUNNING
state=$("$AJ" --root "$T/ajroot/$NS" state c1 2>&1)
expect_contains "state: runc's JSON, status running" "$state" '"status": "running"'
expect_contains "state: bundle" "$state" "\"bundle\": \"$T/state/"

out=$(timeout 30 "${CTR[@]}" task exec "${FIFO[@]}" --exec-id e1 c1 /bin/cat /tmp/marker 2>&1)
expect_eq "exec sees the container's files" "$out" marker
timeout 30 "${CTR[@]}" task exec "${FIFO[@]}" --exec-id e2 c1 /bin/sh -c 'exit 4' >/dev/null 2>&1
expect_eq "exec exit code" "$?" 4
out=$(timeout 30 "${CTR[@]}" task exec "${FIFO[@]}" --exec-id e3 c1 /bin/sh -c 'grep -E "^(CapEff|Seccomp):" /proc/self/status | tr -s "\t" " "; ps -o comm | sort | tr "\n" " "' 2>&1)
expect_contains "exec: same confinement" "$out" "CapEff: 00000000280425eb"
expect_contains "exec: in the container's pid namespace" "$out" "agentjail"
OUT=$(timeout 30 script -qec "${CTR[*]} task exec -t ${FIFO[*]} --exec-id e4 c1 /bin/sh -c 'tty; exit 5'" /dev/null 2>&1)
RC=$?
expect_eq "exec -t: exit code" "$RC" 5
expect_contains "exec -t: a terminal of the container" "$OUT" "/dev/pts/"

n=$("${CTR[@]}" task ps c1 | tail -n +2 | wc -l)
check "ps lists init and the process" [ "$n" -ge 2 ]
m=$("${CTR[@]}" task metrics c1 2>&1)
expect_contains "metrics: memory (the shim reads the v1 cgroup)" "$m" "memory.usage_in_bytes"
expect_contains "metrics: pids" "$m" "pids.current"

"${CTR[@]}" task pause c1
expect_eq "pause" "$("${CTR[@]}" task ls | awk '$1=="c1"{print $3}')" PAUSED
expect_contains "state says paused" "$("$AJ" --root "$T/ajroot/$NS" state c1)" '"status": "paused"'
"${CTR[@]}" task resume c1
expect_eq "resume" "$("${CTR[@]}" task ls | awk '$1=="c1"{print $3}')" RUNNING

report=$("$AJ" oci --root "$T/ajroot/$NS" report c1 2>&1)
expect_contains "report: seccomp layer" "$report" '"seccomp"'
expect_contains "report: the bundle's rootfs is ops[0]" "$report" "\"source\": \"$T/state/"
expect_contains "report: capabilities asked by containerd, and granted" "$report" '"CAP_CHOWN"'

"${CTR[@]}" task kill c1
for _ in $(seq 50); do
	[ "$("${CTR[@]}" task ls | awk '$1=="c1"{print $3}')" = STOPPED ] && break
	sleep 0.1
done
expect_eq "kill (SIGTERM, forwarded by init) stops it" "$("${CTR[@]}" task ls | awk '$1=="c1"{print $3}')" STOPPED
"${CTR[@]}" task rm c1 >/dev/null 2>&1
"${CTR[@]}" c rm c1
check "delete removes agentjail's state" [ ! -e "$T/ajroot/$NS/c1" ]
left=$(ls -d /sys/fs/cgroup/*/"$NS"/c1 2>/dev/null)
expect_eq "delete removes the cgroups" "$left" ""

# ---- two containers cannot see each other --------------------------------------------------

for i in 1 2; do
	timeout 60 "${CTR[@]}" run -d "${FIFO[@]}" "${RT[@]}" "$REF" i$i /bin/sh -c "echo s$i > /secret-i$i; exec sleep 30$i" >/dev/null 2>&1
done
wait_until 20 sh -c "pgrep -fx 'sleep 301' && pgrep -fx 'sleep 302'" >/dev/null
p1=$("${CTR[@]}" task exec "${FIFO[@]}" --exec-id p i1 /bin/ps -o args 2>&1)
expect_contains "i1 sees its own process" "$p1" "sleep 301"
expect_not_contains "i1 cannot see i2's process" "$p1" "sleep 302"
f=$("${CTR[@]}" task exec "${FIFO[@]}" --exec-id f i2 /bin/sh -c 'cat /secret-i2; ls /secret-i1 2>&1' 2>&1)
expect_contains "i2 sees its own file" "$f" s2
expect_contains "i2 cannot see i1's file" "$f" "No such file"
u1=$(awk '/^Uid:/{print $2}' "/proc/$("${CTR[@]}" task ls | awk '$1=="i1"{print $2}')/status")
u2=$(awk '/^Uid:/{print $2}' "/proc/$("${CTR[@]}" task ls | awk '$1=="i2"{print $2}')/status")
if [ -n "$u1" ] && [ -n "$u2" ] && [ "$u1" != "$u2" ] && [ "$u1" -ge 1879048192 ] &&
	[ "$u2" -ge 1879048192 ]; then
	ok "each container runs as its own unprivileged host uid range ($u1, $u2)"
else
	not_ok "each container runs as its own unprivileged host uid range (got '$u1' '$u2')"
fi
for i in 1 2; do "${CTR[@]}" task kill -s KILL i$i; done
wait_until 20 sh -c "[ \$(${CTR[*]} task ls | awk '\$1 ~ /^i[12]\$/ && \$3 == \"STOPPED\"' | wc -l) = 2 ]"
for i in 1 2; do "${CTR[@]}" task rm i$i >/dev/null 2>&1; "${CTR[@]}" c rm i$i; done
left=$(ls "$T/ajroot/$NS" 2>/dev/null)
expect_eq "no container state left" "$left" ""
