#!/usr/bin/env bash
# The OCI runtime's command line without containerd: runc's verbs and global flags, the
# error log the shim reads, config.json field errors, and what a bundle asks for (seccomp,
# masked and read-only paths, sysctl, limits, hostname) enforced inside the container.
# tests/helpers/oci_reaper.py plays the shim: a child subreaper that reaps the container.
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

if ! is_root; then skip "oci cli" "the OCI runtime runs as root (as containerd runs it)"; exit 0; fi
if ! command -v busybox >/dev/null; then skip "oci cli" "busybox is not installed"; exit 0; fi

T=$(mktmp)
ROOT=$T/state
REAPER=$AJ_ROOT/tests/helpers/oci_reaper.py
CG=/ajtest-cli-$$
trap 'for c in /sys/fs/cgroup/*$CG /sys/fs/cgroup$CG; do [ -d "$c" ] && rmdir "$c"/* "$c" 2>/dev/null; done; _aj_cleanup' EXIT

mkdir -p "$T/b/rootfs/bin" "$T/b/rootfs/tmp"
chmod 1777 "$T/b/rootfs/tmp"
cp "$(command -v busybox)" "$T/b/rootfs/bin/"
for a in sh cat echo ls mkdir grep id hostname tr; do ln -s busybox "$T/b/rootfs/bin/$a"; done

# bundle ARGS_JSON [EXTRA_PY]: writes $T/b/config.json; EXTRA_PY edits the dict `d`.
bundle() {
	python3 - "$T/b/config.json" "$1" "$CG" "${2:-}" <<'EOF'
import json, sys
path, args, cg, extra = sys.argv[1:5]
d = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "hostname": "box",
     "process": {"args": json.loads(args), "cwd": "/", "env": ["PATH=/bin"],
                 "user": {"uid": 0, "gid": 0}},
     "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
                 "options": ["nosuid", "mode=755"]},
                {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
                 "options": ["newinstance", "ptmxmode=0666"]}],
     "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts", "network")],
               "cgroupsPath": cg + "/c",
               "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"]}}
exec(extra)
json.dump(d, open(path, "w"))
EOF
}

# reap ID: create + start + reap; sets OUT (the container's output) and RES ("exit N").
reap() {
	RES=$(python3 "$REAPER" "$AJ" "$ROOT" "$T/b" "$1" "$T/out.txt" 2>&1)
	OUT=$(cat "$T/out.txt")
	"$AJ" --root "$ROOT" delete "$1" >/dev/null 2>&1
}

# ---- global flags, features -------------------------------------------------------------------

v=$("$AJ" --root "$ROOT" --version)
expect_eq "--version: runc's three lines" "$(echo "$v" | sed -n 's/^spec: .*/spec/p;s/^commit: .*/commit/p' | tr '\n' ' ')" "commit spec "
f=$("$AJ" oci features)
expect_contains "features: OCI features document" "$f" '"ociVersionMax": "1.1.0"'
expect_contains "features: seccomp actions" "$f" "SCMP_ACT_ERRNO"

# ---- errors: stderr, the JSON log, exit status -------------------------------------------------

aj_run --root "$ROOT" --log "$T/log.json" --log-format json state nosuch
expect_eq "unknown container: exit 1" "$RC" 1
expect_contains "unknown container: says does not exist" "$ERR" 'container "nosuch" does not exist'
expect_eq "error logged as a JSON line" "$(report_field "$T/log.json" 'd["level"]')" error
expect_contains "log line has the message" "$(report_field "$T/log.json" 'd["msg"]')" "does not exist"
check "log line has a time" grep -q '"time": *"20' "$T/log.json"
aj_run --root "$ROOT" delete --force nosuch
expect_eq "delete --force of a missing container succeeds" "$RC" 0

bundle '["true"]' 'd["process"]["args"] = []'
aj_run --root "$ROOT" create --bundle "$T/b" bad1
expect_contains "config error names the field" "$ERR" "config.json: process.args"
bundle '["true"]' 'd["mounts"][1]["options"] = ["bogus"]'
aj_run --root "$ROOT" create --bundle "$T/b" bad2
expect_contains "unknown mount option named with its index" "$ERR" 'mounts[1]: options[0]: unknown mount option "bogus"'
bundle '["true"]' 'd["linux"]["sysctl"] = {"kernel.panic": "1"}'
aj_run --root "$ROOT" create --bundle "$T/b" bad3
expect_contains "unsafe sysctl refused" "$ERR" '"kernel.panic" is not a namespaced sysctl'
bundle '["true"]' 'd["hooks"] = {"prestart": [{"path": "/bin/true"}]}'
aj_run --root "$ROOT" create --bundle "$T/b" bad4
expect_contains "hooks refused" "$ERR" "hooks"
bundle '["true"]' 'd["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 0, "size": 1}]'
aj_run --root "$ROOT" create --bundle "$T/b" bad5
expect_contains "bundle uid mappings refused" "$ERR" "linux.uidMappings"
check "failed creates leave no state" [ -z "$(ls "$ROOT" 2>/dev/null)" ]

# ---- a container's life: created, running, stopped ----------------------------------------------

bundle '["sh", "-c", "hostname; echo out; exit 9"]'
reap life
expect_eq "exit code reaped by the subreaper" "$RES" "exit 9"
expect_eq "output and hostname" "$OUT" "$(printf 'box\nout')"

bundle '["sh", "-c", "exec sleep 100"]'
r=$(python3 "$REAPER" "$AJ" "$ROOT" "$T/b" c2 "$T/out.txt" --no-start)
expect_contains "create alone" "$r" created
expect_contains "state: created" "$("$AJ" --root "$ROOT" state c2)" '"status": "created"'
aj_run --root "$ROOT" create --bundle "$T/b" c2
expect_contains "a second create of the same id fails" "$ERR" "already exists"
"$AJ" --root "$ROOT" start c2
expect_contains "state: running after start" "$("$AJ" --root "$ROOT" state c2)" '"status": "running"'
aj_run --root "$ROOT" start c2
expect_contains "start twice fails" "$ERR" "already running"
aj_run --root "$ROOT" ps --format json c2
expect_contains "ps --format json: a JSON array" "$OUT" "["
aj_run --root "$ROOT" events --stats --interval 1m c2
expect_contains "events --stats --interval 1m (a Go duration, as runc takes it): one stats event" "$RC $OUT" '0 {"type":"stats"'
aj_run --root "$ROOT" events --stats --interval soon c2
expect_contains "events --interval soon: refused, named" "$RC $ERR" "1 "
expect_contains "... the message names --interval" "$ERR" "--interval"
aj_run --root "$ROOT" delete c2
expect_contains "delete of a running container needs --force" "$ERR" "not stopped"
aj_run --root "$ROOT" kill --all c2 KILL
expect_eq "kill --all" "$RC" 0
wait_until 10 sh -c "\"$AJ\" --root \"$ROOT\" state c2 | grep -q '\"status\": \"stopped\"'"
expect_contains "state: stopped" "$("$AJ" --root "$ROOT" state c2)" '"status": "stopped"'
aj_run --root "$ROOT" kill c2 TERM
expect_contains "kill of a stopped container: container not running" "$ERR" "container not running"
aj_run --root "$ROOT" delete c2
expect_eq "delete of a stopped container" "$RC" 0

# ---- what the bundle asks for --------------------------------------------------------------------

bundle '["sh", "-c", "mkdir /tmp/x; echo mkdir=$?; cat /proc/kcore | wc -c; echo k > /proc/sys/kernel/hostname; echo ro=$?"]' \
	'd["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}'
reap sc
expect_contains "bundle seccomp: mkdir denied" "$OUT" "mkdir=1"
expect_contains "maskedPaths: /proc/kcore reads empty" "$OUT" "0"
expect_contains "readonlyPaths: /proc/sys cannot be written" "$OUT" "ro=1"

bundle '["sh", "-c", "cat /proc/sys/kernel/shmmni; grep -c . /proc/self/status >/dev/null; exit 0"]' \
	'd["linux"]["sysctl"] = {"kernel.shmmni": "1234"}; d["linux"]["resources"] = {"memory": {"limit": 67108864}, "pids": {"limit": 50}}; d["linux"]["readonlyPaths"] = []'
python3 "$REAPER" "$AJ" "$ROOT" "$T/b" lim "$T/out.txt" --no-start >/dev/null
mem=$(cat /sys/fs/cgroup/memory$CG/c/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup$CG/c/memory.max)
expect_eq "memory limit in the container's cgroup" "$mem" 67108864
pids=$(cat /sys/fs/cgroup/pids$CG/c/pids.max 2>/dev/null || cat /sys/fs/cgroup$CG/c/pids.max)
expect_eq "pids limit in the container's cgroup" "$pids" 50
"$AJ" --root "$ROOT" start lim
wait_until 10 test -s "$T/out.txt"
expect_eq "sysctl applied in the container's namespace" "$(cat "$T/out.txt")" 1234
expect_contains "report names the cgroup" "$("$AJ" oci --root "$ROOT" report lim)" "\"cgroup\": \"$CG/c\""
"$AJ" --root "$ROOT" delete lim
check "delete removes the cgroup" [ ! -d "/sys/fs/cgroup/memory$CG/c" ]

bundle '["true"]' 'd["annotations"] = {"io.agentjail.landlock": "off"}'
python3 "$REAPER" "$AJ" "$ROOT" "$T/b" ann "$T/out.txt" --no-start >/dev/null
expect_contains "annotation turns Landlock off, and the report says so" \
	"$("$AJ" oci --root "$ROOT" report ann)" "io.agentjail.landlock=off"
"$AJ" --root "$ROOT" delete ann
check "no state left" [ -z "$(ls "$ROOT" 2>/dev/null)" ]
