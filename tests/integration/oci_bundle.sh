#!/usr/bin/env bash
# What a bundle asks of the OCI runtime, checked inside and outside the container with
# assertions of agentjail's own (the behaviours the runtime-tools validation suite checks,
# and the ones Kubernetes needs): capabilities as the bundle gives them and never over the
# host, noNewPrivileges, namespaces joined by path (a pod's network, IPC, UTS and pid, with
# the mqueue, sysfs, proc, sysctls and hostname that belong to them), the host's own
# namespaces left alone, linux.resources written or refused, linux.devices, mount order and
# propagation, rlimits; and bad input refused naming the field, with nothing left.
# tests/helpers/oci_reaper.py plays the shim.
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"

if ! is_root; then skip "oci bundle" "the OCI runtime runs as root (as containerd runs it)"; exit 0; fi
if ! command -v busybox >/dev/null; then skip "oci bundle" "busybox is not installed"; exit 0; fi

T=$(mktmp)
ROOT=$T/state
REAPER=$AJ_ROOT/tests/helpers/oci_reaper.py
CG=/ajtest-bundle-$$
cleanup() {
	local id
	for id in $(ls "$ROOT" 2>/dev/null); do "$AJ" --root "$ROOT" delete --force "$id" >/dev/null 2>&1; done
	for c in /sys/fs/cgroup/*$CG /sys/fs/cgroup$CG; do [ -d "$c" ] && rmdir "$c"/* "$c" 2>/dev/null; done
	_aj_cleanup
}
trap cleanup EXIT

mkdir -p "$T/rootfs/bin" "$T/rootfs/tmp" "$T/rootfs/dev/mqueue" "$T/rootfs/mnt" "$T/host/sub"
chmod 1777 "$T/rootfs/tmp"
cp "$(command -v busybox)" "$T/rootfs/bin/"
for a in $(busybox --list); do [ "$a" = busybox ] || ln -s busybox "$T/rootfs/bin/$a"; done
echo from-the-host >"$T/host/sub/file"

# bundle NAME ARGS_JSON [EXTRA_PY]: $T/NAME/config.json; EXTRA_PY edits the dict `d`. The
# defaults are what containerd asks: its 14 capabilities, no noNewPrivileges.
bundle() {
	mkdir -p "$T/$1"
	python3 - "$T/$1/config.json" "$2" "$T" "$CG/$1" "${3:-}" <<'EOF'
import json, sys
path, args, t, cg, extra = sys.argv[1:6]
caps = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
        "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
d = {"ociVersion": "1.0.2", "root": {"path": t + "/rootfs"}, "hostname": "box",
     "process": {"args": json.loads(args), "cwd": "/", "env": ["PATH=/bin"],
                 "user": {"uid": 0, "gid": 0},
                 "capabilities": {s: list(caps) for s in ("bounding", "effective", "permitted")}},
     "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
                 "options": ["nosuid", "mode=755"]},
                {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
                 "options": ["newinstance", "ptmxmode=0666"]},
                {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
                 "options": ["nosuid", "noexec", "nodev"]},
                {"destination": "/sys", "type": "sysfs", "source": "sysfs",
                 "options": ["nosuid", "noexec", "nodev", "ro"]}],
     "linux": {"namespaces": [{"type": n} for n in ("pid", "mount", "ipc", "uts", "network")],
               "cgroupsPath": cg}}
exec(extra)
json.dump(d, open(path, "w"))
EOF
}

# run NAME: create + start + reap; OUT is the output (or create's error), RES "exit N" or
# "create failed 1".
run() {
	RES=$(python3 "$REAPER" "$AJ" "$ROOT" "$T/$1" "$1" "$T/$1.out" 2>&1)
	OUT=$(cat "$T/$1.out")
}
# created NAME: create only (the container waits); PID its init's host pid.
created() {
	RES=$(python3 "$REAPER" "$AJ" "$ROOT" "$T/$1" "$1" "$T/$1.out" --no-start 2>&1)
	PID=${RES#created }
}
gone() { "$AJ" --root "$ROOT" delete --force "$1" >/dev/null 2>&1; }
# nothing_left NAME: no state, no cgroup, no process of it.
nothing_left() {
	[ ! -e "$ROOT/$1" ] && [ -z "$(ls -d /sys/fs/cgroup/*$CG/$1 /sys/fs/cgroup$CG/$1 2>/dev/null)" ]
}
caps_of() { grep -E "^Cap$1:" <<<"$OUT" | awk '{print $2}'; }

# ---- capabilities ------------------------------------------------------------------------------

f=$("$AJ" oci features)
expect_contains "features: the capabilities a bundle may name" "$f" '"CAP_CHECKPOINT_RESTORE"'
expect_contains "features: the annotation that caps them" "$f" '"io.agentjail.capabilities"'

# A read-only root: a writable one is a host directory (the set without SETFCAP and FSETID
# is checked with the host binds below).
bundle caps '["sh", "-c", "grep -E \"^(Cap|NoNewPrivs)\" /proc/self/status; (nc -l -p 80 -e echo bound80 &); sleep 0.3; echo | nc 127.0.0.1 80; chown 0 /dev/null; echo chown=$?; cat /proc/self/uid_map"]' \
	'd["root"]["readonly"] = True'
run caps
expect_eq "containerd's capability set: the bounding set" "$(caps_of Bnd)" 00000000a80425fb
expect_eq "... effective and permitted" "$(caps_of Eff):$(caps_of Prm)" 00000000a80425fb:00000000a80425fb
expect_eq "... inheritable and ambient empty" "$(caps_of Inh):$(caps_of Amb)" 0000000000000000:0000000000000000
expect_contains "root of the image binds port 80" "$OUT" bound80
expect_contains "CAP_CHOWN does not reach a host-owned node (/dev/null)" "$OUT" "chown=1"
check "the capabilities are over a user namespace of unprivileged host ids" \
	awk '$1 == 0 && $2 >= 1879048192 {f = 1} END {exit !f}' <<<"$OUT"
expect_contains "noNewPrivileges absent: not set, as the bundle says" "$OUT" "NoNewPrivs:	0"
report=$("$AJ" oci --root "$ROOT" report caps)
expect_contains "report: the granted sets by name" "$report" '"CAP_NET_BIND_SERVICE"'
expect_contains "report: the layer says whose namespace" "$report" "the container's own user namespace only"
gone caps

bundle svc '["sh", "-c", "grep -E \"^CapEff\" /proc/self/status; (nc -l -p 80 -e echo svc80 &); sleep 0.3; echo | nc 127.0.0.1 80; id -u"]' \
	'd["process"]["user"] = {"uid": 1000, "gid": 1000}; c = d["process"]["capabilities"]; c["ambient"] = c["inheritable"] = ["CAP_NET_BIND_SERVICE"]; d["process"]["noNewPrivileges"] = True'
run svc
expect_eq "a service user with an ambient capability: CapEff" "$(caps_of Eff)" 0000000000000400
expect_contains "... binds port 80" "$OUT" svc80
gone svc
bundle nosvc '["sh", "-c", "nc -l -p 80 2>&1; echo nc=$?"]' 'd["process"]["user"] = {"uid": 1000, "gid": 1000}'
run nosvc
expect_contains "without it, port 80 is refused to uid 1000" "$OUT" "nc=1"
gone nosvc

bundle admin '["sh", "-c", "grep -E \"^CapEff\" /proc/self/status; mount -t tmpfs x /mnt 2>&1; echo mount=$?; unshare -U true 2>&1; echo unshare=$?"]' \
	'c = d["process"]["capabilities"]; [c[s].append("CAP_SYS_ADMIN") for s in ("bounding", "effective", "permitted")]'
run admin
expect_contains "CAP_SYS_ADMIN granted: mount still denied by agentjail's seccomp" "$OUT" "mount=1"
expect_contains "... and no new user namespace" "$OUT" "unshare=1"
gone admin

bundle capped '["sh", "-c", "grep -E \"^Cap(Eff|Bnd)\" /proc/self/status"]' \
	'd["annotations"] = {"io.agentjail.capabilities": "CAP_CHOWN,CAP_KILL"}'
run capped
expect_eq "io.agentjail.capabilities caps every set" "$(caps_of Eff):$(caps_of Bnd)" 0000000000000021:0000000000000021
expect_contains "report: requested and granted" "$("$AJ" oci --root "$ROOT" report capped)" '"requested"'
gone capped

bundle nnp '["sh", "-c", "grep NoNewPrivs /proc/self/status"]' 'd["process"]["noNewPrivileges"] = True'
run nnp
expect_contains "noNewPrivileges true: set" "$OUT" "NoNewPrivs:	1"
gone nnp

bundle badcap '["true"]' 'd["process"]["capabilities"]["permitted"].append("CAP_FLY")'
run badcap
expect_contains "an unknown capability is refused, named with its set and index" "$OUT" \
	'process.capabilities: permitted[14]: "CAP_FLY" is not a capability'
check "... nothing left of it" nothing_left badcap
bundle badset '["true"]' 'd["process"]["capabilities"]["effective"].append("CAP_SYS_TIME")'
run badset
expect_contains "an effective capability not permitted is refused by field" "$OUT" \
	"process.capabilities.effective: CAP_SYS_TIME not in permitted"
check "... nothing left of it" nothing_left badset
bundle badann '["true"]' 'd["annotations"] = {"io.agentjail.capabilities": "CAP_CHOWN,CAP_NOPE"}'
run badann
expect_contains "an unknown name in the annotation is refused" "$OUT" 'io.agentjail.capabilities: "CAP_NOPE"'

# ---- namespaces joined by path: a pod -----------------------------------------------------------

# The CRI's sandbox id puts both in the pod's one host id range (docs/kubernetes.md).
POD_ANN='d["annotations"] = {"io.kubernetes.cri.sandbox-id": "ajtestpod'$$'"}'
bundle pod '["sleep", "300"]' "d['hostname'] = 'pod'; $POD_ANN; d['annotations']['io.kubernetes.cri.container-type'] = 'sandbox'"
created pod
POD=$PID
"$AJ" --root "$ROOT" start pod
check "a pause-like container runs" kill -0 "$POD"
join="[{'type': 'pid', 'path': '/proc/$POD/ns/pid'}, {'type': 'mount'}, {'type': 'ipc', 'path': '/proc/$POD/ns/ipc'}, {'type': 'uts', 'path': '/proc/$POD/ns/uts'}, {'type': 'network', 'path': '/proc/$POD/ns/net'}, {'type': 'cgroup', 'path': '/proc/$POD/ns/cgroup'}]"
bundle member '["sh", "-c", "hostname; touch /dev/mqueue/q1 && echo mq=$?; ls /sys/class/net; ps -o comm; cat /proc/sys/kernel/shmmni; for n in net ipc uts cgroup; do readlink /proc/self/ns/$n; done"]' \
	"d['linux']['namespaces'] = $join; d['hostname'] = 'podname'; d['linux']['sysctl'] = {'kernel.shmmni': '1234'}; $POD_ANN"
run member
expect_eq "joining a pod's namespaces: the container runs" "$RES" "exit 0"
expect_contains "the joined uts namespace gets the bundle's hostname" "$OUT" podname
expect_contains "mqueue of the joined ipc namespace is mounted" "$OUT" "mq=0"
check "sysfs shows the joined network namespace (lo only, not the host's)" \
	[ "$(sed -n '/^mq=/,/^COMMAND/p' <<<"$OUT" | sed '1d;$d')" = lo ]
expect_contains "proc shows the joined pid namespace (the pod's sleep)" "$OUT" sleep
expect_contains "the sysctl of the joined ipc namespace is written" "$OUT" 1234
for ns in net ipc uts cgroup; do
	expect_contains "the container is in the pod's $ns namespace" "$OUT" "$(readlink /proc/$POD/ns/$ns)"
done
check "the pod sees the member's message queue" ls "/proc/$POD/root/dev/mqueue/q1"
expect_eq "and the hostname it set" "$(nsenter -t "$POD" -u hostname)" podname
gone member
# A create that fails after it wrote the joined namespaces' hostname and sysctls (the child's
# rlimit is refused) puts them back.
bundle failjoin '["true"]' "d['linux']['namespaces'] = $join; d['hostname'] = 'failname'; d['linux']['sysctl'] = {'kernel.shmmni': '777'}; d['process']['rlimits'] = [{'type': 'RLIMIT_NOFILE', 'soft': 1, 'hard': 1 << 40}]; $POD_ANN"
run failjoin
expect_eq "a create failing late in a pod: refused" "$RES" "create failed 1"
expect_eq "... the pod's hostname and ipc sysctl as they were" \
	"$(nsenter -t "$POD" -u hostname):$(nsenter -t "$POD" -i cat /proc/sys/kernel/shmmni)" podname:1234
check "... nothing left of it" nothing_left failjoin
# Outside the pod's id range, IPC objects of the pod's owners are not the container's: why a
# pod's containers share one range.
bundle stranger '["sh", "-c", "touch /dev/mqueue/q2; echo mq=$?"]' "d['linux']['namespaces'] = $join"
run stranger
expect_contains "a container of another id range cannot make the pod's queues" "$OUT" "mq=1"
gone stranger

bundle wrongtype '["true"]' "d['linux']['namespaces'][4] = {'type': 'network', 'path': '/proc/$POD/ns/ipc'}"
run wrongtype
expect_contains "a namespace path of the wrong type is refused by field" "$OUT" \
	"linux.namespaces[4].path: \"/proc/$POD/ns/ipc\" is a ipc namespace, not network"
check "... nothing left of it" nothing_left wrongtype
bundle nopath '["true"]' "d['linux']['namespaces'][2] = {'type': 'ipc', 'path': '$T/no-such-ns'}"
run nopath
expect_contains "a missing namespace path is refused by field" "$OUT" "linux.namespaces[2].path: \"$T/no-such-ns\""
check "... nothing left of it" nothing_left nopath
mkfifo "$T/fifo-ns"
bundle nsfifo '["true"]' "d['linux']['namespaces'][4] = {'type': 'network', 'path': '$T/fifo-ns'}"
run nsfifo
expect_contains "a FIFO as a namespace path is refused by field, without blocking" "$OUT" \
	"linux.namespaces[4].path: \"$T/fifo-ns\" is not a namespace file"
check "... nothing left of it" nothing_left nsfifo
bundle notns '["true"]' "d['linux']['namespaces'][3] = {'type': 'uts', 'path': '$T/host/sub/file'}"
run notns
expect_contains "a file that is no namespace is refused" "$OUT" "is not a namespace file"
bundle mntns '["true"]' "d['linux']['namespaces'][1] = {'type': 'mount', 'path': '/proc/$POD/ns/mnt'}"
run mntns
expect_contains "joining a mount namespace is refused by design" "$OUT" \
	"joining an existing mount namespace is not supported"
# init keeps nothing of the bundle's capabilities once the process runs: CAP_KILL only.
init_caps() { grep -E '^Cap(Eff|Prm|Inh|Amb):' "/proc/$1/status" | awk '{print $2}' | tr '\n' ' '; }
want="0000000000000000 0000000000000020 0000000000000020 0000000000000000 "
for _ in $(seq 50); do [ "$(init_caps "$POD")" = "$want" ] && break; sleep 0.02; done
expect_eq "the container's init keeps CAP_KILL only (inheritable permitted effective ambient)" \
	"$(init_caps "$POD")" "$want"
# A container in the pod's pid namespace without the pod's key: what outlives its init (it
# is killed here) keeps the id range from being handed out again; delete ends it.
bundle linger '["sh", "-c", "cat /proc/self/uid_map; exec sleep 300"]' "d['linux']['namespaces'] = $join[:1] + d['linux']['namespaces'][1:]"
created linger
"$AJ" --root "$ROOT" start linger
for _ in $(seq 50); do grep -q ' 0 ' "$T/linger.out" && break; sleep 0.02; done
base=$(awk '{print $2}' "$T/linger.out")
kill -9 "$PID"
for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.02; done
lcg=$(ls -d /sys/fs/cgroup/*$CG/linger /sys/fs/cgroup$CG/linger 2>/dev/null | head -1)
check "init killed in a joined pid namespace: its process outlives it" [ -n "$(cat "$lcg/cgroup.procs" 2>/dev/null)" ]
check "... and the id range's slot names the container's cgroup while it runs" \
	grep -q "^cgroup .*$CG/linger\$" "/run/agentjail/ids/$(((${base:-0} - 0x70000000) / 65536))"
"$AJ" --root "$ROOT" kill --all linger KILL
gone linger
check "kill --all and delete end what outlived init" nothing_left linger
bundle orphan '["sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & echo started"]' "d['linux']['namespaces'] = $join[:1] + d['linux']['namespaces'][1:]"
run orphan
ocg=$(ls -d /sys/fs/cgroup/*$CG/orphan /sys/fs/cgroup$CG/orphan 2>/dev/null | head -1)
check "in a joined pid namespace what the process left running ends with init" \
	[ "$RES" = "exit 0" ] && [ -z "$(cat "$ocg/cgroup.procs" 2>/dev/null)" ]
gone orphan
gone pod
check "deleting the pod's sandbox container forgets the pod's id range" \
	[ ! -e "/run/agentjail/ids/pod-ajtestpod$$" ]

# An ipc namespace the host made (owned by the host's user namespace): its sysctls written.
unshare -i sleep 60 &
HOSTIPC=$!
for _ in $(seq 50); do [ "$(readlink /proc/$HOSTIPC/ns/ipc)" != "$(readlink /proc/self/ns/ipc)" ] && break; sleep 0.02; done
bundle hostmade '["cat", "/proc/sys/kernel/shmmni"]' "d['linux']['namespaces'][2] = {'type': 'ipc', 'path': '/proc/$HOSTIPC/ns/ipc'}; d['linux']['sysctl'] = {'kernel.shmmni': '4321'}"
run hostmade
expect_eq "an ipc namespace owned by the host's user namespace: its sysctl written" "$RES:$OUT" "exit 0:4321"
kill "$HOSTIPC"; wait "$HOSTIPC" 2>/dev/null
gone hostmade

# The host's own namespaces: nothing of the bundle is done to them.
host_name=$(hostname)
bundle hostuts '["hostname"]' "d['linux']['namespaces'][3] = {'type': 'uts', 'path': '/proc/$$/ns/uts'}; d['hostname'] = 'not-the-host'"
run hostuts
expect_eq "joining the host's uts namespace leaves its name alone" "$(hostname)" "$host_name"
report=$("$AJ" oci --root "$ROOT" report hostuts)
expect_contains "... and the report says the hostname was not set" "$report" "the uts namespace the container joins is the host's own"
expect_contains "... and that the uts namespace is the host's" "$report" "SHARED WITH THE HOST"
gone hostuts
bundle hostnet '["true"]' "d['linux']['namespaces'][4] = {'type': 'network', 'path': '/proc/$$/ns/net'}; d['linux']['sysctl'] = {'net.ipv4.ip_forward': '1'}"
run hostnet
expect_contains "a sysctl for the host's own network namespace is refused" "$OUT" \
	'linux.sysctl: "net.ipv4.ip_forward": the network namespace the container joins is the host'
check "... nothing left of it" nothing_left hostnet

# ---- linux.resources ----------------------------------------------------------------------------

bundle res '["sh", "-c", "sleep 30 </dev/null"]' 'd["linux"]["resources"] = {"memory": {"limit": 67108864, "reservation": 33554432, "swappiness": 10, "disableOOMKiller": True, "kernel": 1048576}, "cpu": {"cpus": "0", "mems": "0", "shares": 512}, "devices": [{"allow": False, "access": "rwm"}, {"allow": True, "type": "c", "major": 1, "minor": 3, "access": "rwm"}]}'
created res
v1() { cat "/sys/fs/cgroup/$1$CG/res/$2" 2>/dev/null; }
expect_eq "memory.reservation is the soft limit" "$(v1 memory memory.soft_limit_in_bytes)" 33554432
expect_eq "memory.swappiness" "$(v1 memory memory.swappiness)" 10
expect_contains "memory.disableOOMKiller" "$(v1 memory memory.oom_control)" "oom_kill_disable 1"
expect_eq "cpu.cpus in the cpuset hierarchy" "$(v1 cpuset cpuset.cpus):$(v1 cpuset cpuset.mems)" 0:0
devs=$(v1 devices devices.list)
expect_contains "devices: the bundle's allowlist" "$devs" "c 1:3 rwm"
expect_contains "devices: the default devices stay usable (a pseudo-terminal)" "$devs" "c 136:* rwm"
expect_not_contains "devices: nothing else" "$devs" "a *:*"
check "the container is in its cpuset cgroup" grep -q "^[0-9]*:cpuset:$CG/res\$" "/proc/$PID/cgroup"
expect_contains "what this kernel cannot do is in the report's notes with the reason" \
	"$("$AJ" oci --root "$ROOT" report res)" "linux.resources.memory.kernel: not applied"
gone res
bundle denyall '["sh", "-c", "echo x >/dev/null && echo null-ok; head -c 1 /dev/zero | wc -c"]' \
	'd["linux"]["resources"] = {"devices": [{"allow": False, "access": "rwm"}]}'
run denyall
expect_contains "a deny-all allowlist keeps the default devices usable" "$OUT" null-ok
gone denyall
bundle badcpus '["true"]' 'd["linux"]["resources"] = {"cpu": {"cpus": "4095"}}'
run badcpus
expect_contains "a cpuset the host lacks is refused by field" "$OUT" "linux.resources.cpu.cpus"
check "... nothing left of it" nothing_left badcpus
bundle unified '["true"]' 'd["linux"]["resources"] = {"unified": {"memory.high": "1000000"}}'
run unified
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	expect_eq "unified on a cgroup v2 host: applied" "$RES" "exit 0"
else
	expect_contains "unified on a cgroup v1 host: refused by field" "$OUT" "linux.resources.unified"
fi
check "... nothing left of it" nothing_left unified

# ---- linux.devices, mounts, rlimits --------------------------------------------------------------

bundle dev '["sh", "-c", "stat -c \"%F %t:%T\" /dev/fuse"]' \
	'd["linux"]["devices"] = [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229}]'
run dev
expect_contains "linux.devices: fuse is passed, the host's node" "$OUT" "character special file a:e5"
gone dev
bundle mem '["true"]' 'd["linux"]["devices"] = [{"path": "/dev/mem", "type": "c", "major": 1, "minor": 1}]'
run mem
expect_contains "linux.devices: /dev/mem is refused by name" "$OUT" 'linux.devices[0]: c 1:1 ("/dev/mem")'

bundle mnt '["sh", "-c", "cat /mnt/sub/file; grep -E \" /mnt(/sub)? \" /proc/self/mountinfo | cut -d\" \" -f5 | tr \"\\n\" \" \"; cut -d\" \" -f5- /proc/self/mountinfo | grep \"^/ \" | grep -o shared; ulimit -n"]' \
	"d['mounts'] += [{'destination': '/mnt', 'type': 'tmpfs', 'source': 'tmpfs'}, {'destination': '/mnt/sub', 'source': '$T/host/sub', 'options': ['rbind', 'ro', 'rshared']}]; d['linux']['rootfsPropagation'] = 'shared'; d['process']['rlimits'] = [{'type': 'RLIMIT_NOFILE', 'soft': 123, 'hard': 456}]"
run mnt
expect_contains "a bind inside an earlier mount of the bundle" "$OUT" from-the-host
expect_contains "mounts listed in the bundle's order" "$OUT" "/mnt /mnt/sub "
expect_contains "linux.rootfsPropagation shared" "$OUT" shared
expect_contains "process.rlimits" "$OUT" 123
gone mnt
# A writable bind of a host directory: the container's root writes there as host uid 0, so
# nothing it does may leave a set-ID or capability-bearing file there (a host user running
# it would be root); also under the bundle's own seccomp profile.
mkdir -p "$T/vol"
cp "$T/rootfs/bin/busybox" "$T/rootfs/bin/suid" && chmod 4755 "$T/rootfs/bin/suid"
printf '#!/bin/sh\n' >"$T/vol/planted" && chmod 6755 "$T/vol/planted"
for sc in agentjail bundle; do
	bundle "setid-$sc" '["sh", "-c", "grep ^CapEff /proc/self/status; cd /mnt/vol; touch f; chmod u+s f; chmod g+s f; mkdir -m 2755 d; cp -p /bin/suid c; echo >>planted; ls -ln"]' \
		"d['mounts'] += [{'destination': '/mnt/vol', 'type': 'bind', 'source': '$T/vol', 'options': ['rbind', 'rw']}]; d['annotations'] = {'io.agentjail.seccomp': '$sc'} if '$sc' == 'bundle' else {}; d['linux']['seccomp'] = {'defaultAction': 'SCMP_ACT_ALLOW'}"
	run "setid-$sc"
	expect_eq "a rw host bind ($sc seccomp): SETFCAP and FSETID withheld" "$(caps_of Eff)" 00000000280425eb
	expect_eq "... no set-ID file is left on the host (chmod, mkdir -m, cp -p, a write)" \
		"$(find "$T/vol" -perm /6000 -printf '%P %m\n')" ""
	check "... the files it made are there" [ -e "$T/vol/f" ] && [ -e "$T/vol/c" ]
	gone "setid-$sc"
	rm -rf "${T:?}/vol/"* && printf '#!/bin/sh\n' >"$T/vol/planted" && chmod 6755 "$T/vol/planted"
done
check "no state left" [ -z "$(ls "$ROOT" 2>/dev/null)" ]
