#!/usr/bin/env bash
# A pod the way Kubernetes runs one: a CRI client (tests/helpers/cri.py, gRPC as the kubelet
# speaks it) drives a containerd started here with its CRI plugin, whose runtime handler is
# agentjail, configured with docs/kubernetes.md's containerd block as it is and the
# handler of its RuntimeClass. The pause image and the application image are packed offline
# from busybox-static; the pods' network is a CNI bridge network (Debian's
# containernetworking-plugins) inside a network namespace of this test's own. Covers RunPodSandbox, two containers sharing the pod's network, IPC and
# hostname (a server on port 80 with the default capabilities, a client as another user),
# their shared host id range, ExecSync, container logs, a second pod that sees nothing of the
# first, a bad capability refused by name, and stop and remove leaving nothing behind.
# Runs in a private mount namespace and a network namespace of its own: docs/kubernetes.md
# names /usr/local/bin/agentjail and /run/agentjail-oci, which are this test's own there, and
# the bridge, the pods' interfaces and addresses are nowhere on the host.
# Main pass only: containerd and the CRI client dominate its time; the OCI verbs it drives run
# under the sanitizers in oci_bundle.sh and oci_containerd.sh.
# passes: main
# timeout: 300
if [ "$(id -u)" = 0 ] && [ -z "${AJ_CRI_PRIVATE_NS:-}" ]; then
	exec unshare -m -n --propagation private env AJ_CRI_PRIVATE_NS=1 bash "$0" "$@"
fi
. "$AJ_ROOT/tests/lib.sh"

if ! is_root; then skip "cri" "needs root (containerd and its shim run as root)"; exit 0; fi
for t in containerd ctr containerd-shim-runc-v2 busybox python3; do
	if ! command -v "$t" >/dev/null 2>&1; then
		skip "cri" "$t is not installed (scripts/install-deps installs containerd, busybox-static)"
		exit 0
	fi
done
if ! python3 -c 'import grpc, google.protobuf' 2>/dev/null; then
	skip "cri" "python3-grpcio and python3-protobuf are not installed (scripts/install-deps)"
	exit 0
fi
if [ ! -x /usr/lib/cni/bridge ] || [ ! -x /usr/lib/cni/host-local ]; then
	skip "cri" "the CNI plugins are not installed (containernetworking-plugins)"
	exit 0
fi
ip link set lo up

T=$(mktmp)
SOCK=$T/cri.sock
CG=/ajtest-cri-$$
CRI=(python3 "$AJ_ROOT/tests/helpers/cri.py" "$SOCK")
PAUSE=docker.io/library/ajtest-pause:1
APP=docker.io/library/ajtest-app:1
CPID=
made_dirs=()

# ---- the paths docs/kubernetes.md names, this test's own in its mount namespace ------------

# dir_of_ours DIR: DIR as a fresh tmpfs here (made on the host first if missing, and removed
# at the end then).
dir_of_ours() {
	if [ ! -d "$1" ]; then
		mkdir -p "$1" && made_dirs+=("$1")
	fi
	mount -t tmpfs -o mode=0755 tmpfs "$1"
}
dir_of_ours /usr/local/bin
ln -s "$AJ" /usr/local/bin/agentjail
dir_of_ours /run/agentjail-oci
# The shim's sockets and containerd's network namespaces.
dir_of_ours /run/containerd
dir_of_ours /run/netns

cleanup() {
	local c
	if [ -n "$CPID" ]; then
		for c in $(ctr -a "$SOCK" -n k8s.io task ls -q 2>/dev/null); do
			ctr -a "$SOCK" -n k8s.io task kill -a -s KILL "$c" >/dev/null 2>&1
		done
		kill "$CPID" 2>/dev/null
		wait "$CPID" 2>/dev/null
	fi
	# What a failed run may leave: the containers' processes, then their cgroups.
	for c in /sys/fs/cgroup/*$CG /sys/fs/cgroup$CG; do
		[ -d "$c" ] || continue
		find "$c" -depth -type d -exec sh -c 'kill -9 $(cat "$1/cgroup.procs") 2>/dev/null; rmdir "$1"' _ {} \; 2>/dev/null
	done
	grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null
	done
	for c in /run/netns /run/containerd /run/agentjail-oci /usr/local/bin; do umount -l "$c" 2>/dev/null; done
	for c in "${made_dirs[@]}"; do rmdir "$c" 2>/dev/null; done
	_aj_cleanup
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# ---- images, offline ---------------------------------------------------------------------------

mkdir -p "$T/rootfs/bin" "$T/rootfs/tmp" "$T/rootfs/etc" "$T/rootfs/dev/mqueue"
chmod 1777 "$T/rootfs/tmp"
cp "$(command -v busybox)" "$T/rootfs/bin/busybox"
for a in $(busybox --list); do [ "$a" = busybox ] || ln -s busybox "$T/rootfs/bin/$a"; done
echo 'root:x:0:0:root:/:/bin/sh' >"$T/rootfs/etc/passwd"
echo 'www:x:33:33:www:/:/bin/sh' >>"$T/rootfs/etc/passwd"
python3 "$AJ_ROOT/tests/helpers/oci_image.py" "$T/rootfs" "$T/pause.tar" "$PAUSE" \
	'["/bin/sleep", "2147483647"]'
python3 "$AJ_ROOT/tests/helpers/oci_image.py" "$T/rootfs" "$T/app.tar" "$APP"

# ---- containerd with its CRI plugin, the documented runtime block as it is ----------------------

doc=$AJ_ROOT/docs/kubernetes.md
block() { awk -v m="$1" 'index($0, "<!-- " m ":") == 1 {f = 1; next} f && /^```/ {if (n++) exit; next} f && n' "$doc"; }
block containerd-config >"$T/doc-runtime.toml"
HANDLER=$(block runtimeclass | awk '$1 == "handler:" {print $2; exit}')
check "docs/kubernetes.md has the containerd block and the RuntimeClass handler" \
	[ -s "$T/doc-runtime.toml" ] && [ -n "$HANDLER" ]
mkdir -p "$T/cni" "$T/logs"
# The kubelet's pause container asks oom_score_adj -998; below our own score needs
# CAP_SYS_RESOURCE, which some machines' root lacks: then containerd keeps scores at or above
# its own, as its configuration for such hosts says.
RESTRICT_OOM=false
if [ $(((0x$(awk '/^CapEff:/{print $2}' /proc/self/status) >> 24) & 1)) = 0 ]; then
	RESTRICT_OOM=true
fi
cat >"$T/cni/10-ajtest.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "ajtest", "plugins": [
  {"type": "bridge", "bridge": "ajcni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$T/ipam", "ranges": [[{"subnet": "10.88.0.0/16"}]]}}]}
EOF
{
	echo "root = \"$T/root\""
	echo "state = \"$T/state\""
	cat "$T/doc-runtime.toml"
	cat <<EOF
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  enable_selinux = false
  restrict_oom_score_adj = $RESTRICT_OOM
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$T/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
  # The stock default (containerd config default), so that the pod's handler must choose.
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
EOF
} >"$T/config.toml"
containerd --config "$T/config.toml" >"$T/containerd.log" 2>&1 &
CPID=$!
wait_until 20 "${CRI[@]}" Version '{}' >/dev/null 2>&1
OUT=$("${CRI[@]}" Version '{}' 2>&1)
if ! echo "$OUT" | grep -q '"runtime_name": "containerd"'; then
	not_ok "containerd's CRI plugin answers ($OUT; $(tail -3 "$T/containerd.log"))"
	exit 0
fi
ok "containerd's CRI plugin answers on a socket of this test"
for img in pause app; do
	ctr -a "$SOCK" -n k8s.io images import "$T/$img.tar" >/dev/null 2>&1
done
OUT=$("${CRI[@]}" ImageStatus "{\"image\": {\"image\": \"$APP\"}}" 2>&1)
expect_contains "images imported offline are the CRI's" "$OUT" "$APP"

# cri METHOD JSON: sets OUT (the response, or the error) and RC.
cri() { OUT=$("${CRI[@]}" "$@" 2>&1); RC=$?; }
# field EXPR: a field of the last response.
field() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$OUT"; }

# sandbox_config NAME HOSTNAME: the pod's config as the kubelet sends it (POD network and IPC,
# its own pid namespace per container, a cgroup parent of this test).
sandbox_config() {
	cat <<EOF
{"metadata": {"name": "$1", "uid": "uid-$1", "namespace": "ajtest"}, "hostname": "$2",
 "log_directory": "$T/logs/$1",
 "linux": {"cgroup_parent": "$CG/$1",
           "security_context": {"namespace_options": {"network": 0, "pid": 1, "ipc": 0}}}}
EOF
}

# container_config POD NAME ARGS_JSON [EXTRA_SECURITY_JSON]: a container of the app image.
container_config() {
	cat <<EOF
{"pod_sandbox_id": "$POD_ID", "sandbox_config": $(sandbox_config "$1" "${HOST:-ajpod}"),
 "config": {"metadata": {"name": "$2"}, "image": {"image": "$APP"},
            "command": $3, "log_path": "$2.log",
            "linux": {"security_context": {"namespace_options": {"network": 0, "pid": 1, "ipc": 0}
                                           ${4:+, $4}}}}}
EOF
}

run_pod() {
	cri RunPodSandbox "{\"config\": $(sandbox_config "$1" "$2"), \"runtime_handler\": \"$HANDLER\"}"
	POD_ID=$(field 'd["pod_sandbox_id"]' 2>/dev/null)
}

# start_container POD NAME ARGS_JSON [EXTRA]: sets CID.
start_container() {
	cri CreateContainer "$(container_config "$@")"
	CID=$(field 'd["container_id"]' 2>/dev/null)
	[ -n "$CID" ] && cri StartContainer "{\"container_id\": \"$CID\"}"
}

state_of() { "${CRI[@]}" ContainerStatus "{\"container_id\": \"$1\"}" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["state"])'; }
host_uid_of() { awk '/^Uid:/{print $2}' "/proc/$(ctr -a "$SOCK" -n k8s.io task ls | awk -v c="$1" '$1==c{print $2}')/status"; }

# ---- a pod of two containers ---------------------------------------------------------------------

run_pod web ajpod
check "RunPodSandbox through agentjail ($OUT)" [ "$RC" = 0 ] && [ -n "$POD_ID" ]
POD1=$POD_ID
cri PodSandboxStatus "{\"pod_sandbox_id\": \"$POD1\"}"
expect_eq "the pod is ready" "$(field 'd["status"]["state"]')" 0
check "the pause container is agentjail's" [ -e "/run/agentjail-oci/k8s.io/$POD1/state.json" ]

# The server: root of the image with the CRI's default capabilities, binding port 80 of the
# pod's network, and a POSIX message queue in the pod's IPC namespace.
start_container web server '["/bin/sh", "-c", "echo server up; touch /dev/mqueue/podq; exec nc -ll -p 80 -e echo from-the-server"]'
check "a container that binds port 80 starts ($OUT)" [ "$RC" = 0 ]
SERVER=$CID
wait_until 20 sh -c "[ \"\$(${CRI[*]} ContainerStatus '{\"container_id\": \"$SERVER\"}' 2>/dev/null | grep -c '\"state\": 1')\" = 1 ]"
expect_eq "the server is running" "$(state_of "$SERVER")" 1

# The client: another container of the pod, as uid 33 of the image.
start_container web client '["/bin/sleep", "300"]' '"run_as_user": {"value": 33}'
check "a second container starts in the pod ($OUT)" [ "$RC" = 0 ]
CLIENT=$CID
wait_until 20 sh -c "[ \"\$(${CRI[*]} ContainerStatus '{\"container_id\": \"$CLIENT\"}' 2>/dev/null | grep -c '\"state\": 1')\" = 1 ]"

cri ExecSync "{\"container_id\": \"$CLIENT\", \"cmd\": [\"/bin/sh\", \"-c\", \"echo | nc 127.0.0.1 80; ls /dev/mqueue; hostname; id -u\"], \"timeout\": 30}"
OUT=$(field '__import__("base64").b64decode(d["stdout"]).decode()' 2>&1)
expect_contains "ExecSync: the client reaches the server on the pod's loopback" "$OUT" "from-the-server"
expect_contains "ExecSync: it sees the server's message queue (the pod's IPC namespace)" "$OUT" "podq"
expect_contains "ExecSync: the pod's hostname" "$OUT" "ajpod"
expect_contains "ExecSync: as uid 33" "$OUT" "33"
cri ExecSync "{\"container_id\": \"$SERVER\", \"cmd\": [\"/bin/sh\", \"-c\", \"grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\\\\t' ' '; unshare -U true 2>/dev/null; echo unshare=\$?; exit 7\"], \"timeout\": 30}"
expect_eq "ExecSync: the exit code" "$(field 'd["exit_code"]')" 7
OUT=$(field '__import__("base64").b64decode(d["stdout"]).decode()' 2>&1)
expect_contains "ExecSync: the CRI's capabilities but SETFCAP and FSETID (a writable snapshot is a host directory), over the container's user namespace" "$OUT" "CapEff: 00000000280425eb"
expect_contains "ExecSync: agentjail's seccomp filter is there" "$OUT" "Seccomp: 2"
expect_contains "ExecSync: and denies new user namespaces" "$OUT" "unshare=1"
u1=$(host_uid_of "$SERVER")
u2=$(host_uid_of "$CLIENT")
check "the pod's containers run as its one host id range (root $u1, uid 33 = $u2)" \
	[ -n "$u1" ] && [ "$u1" -ge 1879048192 ] && [ "$u2" = $((u1 + 33)) ]
report=$("$AJ" --root "/run/agentjail-oci/k8s.io" report "$SERVER" 2>&1)
expect_contains "report: the joined pod network namespace" "$report" '"joins /proc/'
expect_contains "report: CAP_NET_BIND_SERVICE is granted" "$report" '"CAP_NET_BIND_SERVICE"'
expect_contains "report: how port 80 is made possible in the pod's namespace" "$report" "ip_unprivileged_port_start set to 0"

wait_until 10 grep -q "server up" "$T/logs/web/server.log"
expect_contains "container logs: the server's output, in the CRI's format" \
	"$(cat "$T/logs/web/server.log" 2>&1)" " stdout F server up"

# ---- another pod sees nothing of the first --------------------------------------------------------

run_pod other otherpod
check "a second pod runs ($OUT)" [ "$RC" = 0 ] && [ -n "$POD_ID" ]
POD2=$POD_ID
HOST=otherpod start_container other probe '["/bin/sleep", "300"]'
PROBE=$CID
wait_until 20 sh -c "[ \"\$(${CRI[*]} ContainerStatus '{\"container_id\": \"$PROBE\"}' 2>/dev/null | grep -c '\"state\": 1')\" = 1 ]"
cri ExecSync "{\"container_id\": \"$PROBE\", \"cmd\": [\"/bin/sh\", \"-c\", \"echo | nc -w 2 127.0.0.1 80; echo nc=\$?; ls /dev/mqueue; hostname\"], \"timeout\": 30}"
OUT=$(field '__import__("base64").b64decode(d["stdout"]).decode()' 2>&1)
expect_not_contains "the other pod cannot reach the first pod's server" "$OUT" "from-the-server"
expect_not_contains "nor see its message queue" "$OUT" "podq"
expect_contains "and has its own hostname" "$OUT" "otherpod"
u3=$(host_uid_of "$PROBE")
check "and its own host id range ($u3, not $u1's)" [ -n "$u3" ] && [ $((u3 / 65536)) != $((u1 / 65536)) ]

# ---- bad input through the CRI -----------------------------------------------------------------

POD_ID=$POD2 HOST=otherpod cri CreateContainer "$(POD_ID=$POD2 HOST=otherpod container_config other bad '["/bin/true"]' '"capabilities": {"add_capabilities": ["CAP_FLY"]}')"
BAD=$(field 'd["container_id"]' 2>/dev/null)
[ -n "$BAD" ] && cri StartContainer "{\"container_id\": \"$BAD\"}"
check "an unknown capability is refused" [ "$RC" != 0 ]
expect_contains "naming it" "$OUT" "CAP_FLY"
check "nothing of it is left in agentjail's state" [ ! -e "/run/agentjail-oci/k8s.io/$BAD" ]
[ -n "$BAD" ] && cri RemoveContainer "{\"container_id\": \"$BAD\"}"

# ---- stop and remove ----------------------------------------------------------------------------

for c in "$SERVER" "$CLIENT" "$PROBE"; do
	cri StopContainer "{\"container_id\": \"$c\", \"timeout\": 10}"
done
check "StopContainer" [ "$RC" = 0 ]
expect_eq "the server has exited" "$(state_of "$SERVER")" 2
for c in "$SERVER" "$CLIENT" "$PROBE"; do cri RemoveContainer "{\"container_id\": \"$c\"}"; done
check "RemoveContainer" [ "$RC" = 0 ]
for p in "$POD1" "$POD2"; do
	cri StopPodSandbox "{\"pod_sandbox_id\": \"$p\"}"
	check "StopPodSandbox ($OUT)" [ "$RC" = 0 ]
	cri RemovePodSandbox "{\"pod_sandbox_id\": \"$p\"}"
	check "RemovePodSandbox ($OUT)" [ "$RC" = 0 ]
done
left=$(ls /run/agentjail-oci/k8s.io 2>/dev/null)
expect_eq "no container state left" "$left" ""
# The pods' own levels ($CG/POD) are the kubelet's to make and remove; the containers' are
# the runtime's.
left=$(find /sys/fs/cgroup/*$CG -mindepth 2 -type d 2>/dev/null)
expect_eq "no container cgroup left" "$left" ""
check "no pod id range left recorded" [ -z "$(ls /run/agentjail/ids | grep -E "pod-($POD1|$POD2)")" ]
