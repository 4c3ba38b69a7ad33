#!/usr/bin/env bash
# `agentjail run`: what it tells about a run — the --report record (exit, status, times, peak
# memory, output accounting, the plan with every layer), --events JSON lines, limits decided
# by flags over a policy file (in the plan and in the cgroup the kernel enforces), --dry-run,
# --verbose, and --network host shown as such.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS"
cd "$WS" || exit 1
RL=$(rootless_flags)
R=$T/report.json
E=$T/events.jsonl
LAYERS="user-namespace mount-namespace pid-namespace ipc-namespace uts-namespace \
network-namespace cgroup-namespace root-filesystem landlock landlock-net landlock-scope seccomp \
capabilities no-new-privileges session environment rlimits memory pids cpu timeout output disk \
egress-proxy"
if is_root; then MODE=privileged; else MODE=rootless; fi
MEM_USABLE=$("$AJ" features --json | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["cgroup"]["controllers"]["memory"]["usable"])')
PIDS_USABLE=$("$AJ" features --json | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["cgroup"]["controllers"]["pids"]["usable"])')

# ---- the report of an ordinary run ---------------------------------------------------------------

aj_run run $RL --report "$R" --events "$E" -- sh -c 'echo out; echo err >&2; sleep 0.3; exit 3'
expect_eq "exit code" "$RC" 3
expect_eq "report: version" "$(json "$R" 'd["version"]')" 1
ID=$(json "$R" 'd["sandbox"]')
check "report: sandbox id is 16 hex digits ($ID)" sh -c "echo '$ID' | grep -qx '[0-9a-f]\{16\}'"
expect_eq "report: exit_code" "$(json "$R" 'd["exit_code"]')" 3
expect_eq "report: status" "$(json "$R" 'd["status"]')" "{'kind': 'exited', 'code': 3}"
expect_eq "report: error is null" "$(json "$R" 'd["error"]')" None
expect_eq "report: exec_error is null" "$(json "$R" 'd["exec_error"]')" None
expect_eq "report: limit_hit is null" "$(json "$R" 'd["limit_hit"]')" None
expect_eq "report: limits_hit is empty" "$(json "$R" 'd["limits_hit"]')" "[]"
expect_eq "report: wall_ms covers the 0.3 s sleep" \
	"$(json "$R" '300 <= d["wall_ms"] < 10000')" True
expect_eq "report: cpu_ms is a number" "$(json "$R" 'type(d["cpu_ms"]).__name__')" float
expect_eq "report: peak_memory_bytes is a positive integer" \
	"$(json "$R" 'isinstance(d["peak_memory_bytes"], int) and d["peak_memory_bytes"] > 0')" True
expect_eq "report: output" "$(json "$R" 'd["output"]')" \
	"{'stdout_bytes': 4, 'stderr_bytes': 4, 'passed_bytes': 8, 'undelivered_bytes': 0, 'truncated': False}"
expect_eq "report: plan.sandbox is the sandbox id" "$(json "$R" 'd["plan"]["sandbox"]')" "$ID"
expect_eq "report: plan.mode" "$(json "$R" 'd["plan"]["mode"]')" "$MODE"
expect_eq "report: plan.workspace" "$(json "$R" 'd["plan"]["workspace"]')" "$WS"
expect_eq "report: plan.cwd" "$(json "$R" 'd["plan"]["cwd"]')" "$WS"
expect_eq "report: plan.user.uid" "$(json "$R" 'd["plan"]["user"]["uid"]')" 1000
expect_eq "report: plan.layers names every layer, in order" \
	"$(json "$R" '" ".join(l["layer"] for l in d["plan"]["layers"])')" "$(echo $LAYERS)"
expect_eq "report: every layer has a known state and a detail" \
	"$(json "$R" 'all(l["state"] in ("enforced","off","degraded","unavailable") and l["detail"] for l in d["plan"]["layers"])')" True
for l in user-namespace mount-namespace pid-namespace network-namespace root-filesystem \
	landlock seccomp capabilities no-new-privileges environment rlimits output; do
	expect_eq "report: layer $l is enforced by default" \
		"$(json "$R" "[x['state'] for x in d['plan']['layers'] if x['layer'] == '$l'][0]")" enforced
done
expect_eq "report: plan.rootfs lists operations" "$(json "$R" 'len(d["plan"]["rootfs"]) > 10')" True
expect_eq "report: plan.seccomp" "$(json "$R" 'd["plan"]["seccomp"]["profile"]')" default

# CPU time and peak memory measure the command.
aj_run run $RL --report "$R" -- python3 -c '
import time
x = bytearray(64 << 20)
for i in range(0, len(x), 4096): x[i] = 1
t = time.process_time()
while time.process_time() - t < 0.3: pass'
expect_eq "report: cpu_ms counts a 0.3 s busy loop" "$(json "$R" '250 <= d["cpu_ms"] < 20000')" True
expect_eq "report: peak_memory_bytes counts 64 MiB touched" \
	"$(json "$R" 'd["peak_memory_bytes"] >= 64 << 20')" True

# ---- events ------------------------------------------------------------------------------------

lines=$(wc -l <"$E")
expect_eq "events: one start and one end line" "$lines" 2
expect_eq "events: every line is JSON of this sandbox" "$(python3 -c '
import json, sys
ok = True
for line in open(sys.argv[1]):
    e = json.loads(line)
    ok = ok and e["sandbox"] == sys.argv[2] and e["time"].endswith("Z") and "event" in e
print(ok)' "$E" "$ID")" True
expect_eq "events: start" "$(sed -n 1p "$E" | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["event"], e["argv"][0], e["mode"])')" \
	"start sh $MODE"
expect_eq "events: end" "$(sed -n 2p "$E" | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["event"], e["exit_code"], e["output_bytes"], e["wall_ms"] >= 300)')" \
	"end 3 8 True"

aj_run run $RL --report "$R" --events "$E" --timeout 1s -- sleep 30
expect_eq "timeout: exit code 124" "$RC" 124
expect_contains "timeout: said on stderr" "$ERR" "timeout of 1s reached"
expect_eq "timeout: report limit_hit" "$(json "$R" 'd["limit_hit"]')" timeout
expect_eq "timeout: wall_ms is about the limit" "$(json "$R" '900 <= d["wall_ms"] < 5000')" True
ID2=$(json "$R" 'd["sandbox"]')
expect_eq "events: appended to, earlier lines kept" "$(wc -l <"$E")" 5
expect_eq "events: start, limit, end for the timeout" "$(tail -n 3 "$E" | python3 -c '
import json, sys
es = [json.loads(l) for l in sys.stdin]
print(" ".join(e["event"] for e in es), es[1]["limit"], es[1]["timeout_ms"], es[2]["exit_code"],
      es[2]["decided_by"], all(e["sandbox"] == sys.argv[1] for e in es))' "$ID2")" \
	"start limit end timeout 1000 124 timeout True"

# ---- output limit ----------------------------------------------------------------------------

out=$("$AJ" run $RL --report "$R" --output-limit 10 -- sh -c 'echo 0123456789abcdef' 2>"$T/err")
rc=$?
expect_eq "output limit: the command's exit status stands" "$rc" 0
expect_eq "output limit: only the first 10 bytes pass" "$out" 0123456789
expect_contains "output limit: said on stderr" "$(cat "$T/err")" "output limit of 10 B reached"
expect_eq "output limit: report output" "$(json "$R" 'd["output"]')" \
	"{'stdout_bytes': 17, 'stderr_bytes': 0, 'passed_bytes': 10, 'undelivered_bytes': 0, 'truncated': True}"
expect_eq "output limit: limits_hit" "$(json "$R" 'd["limits_hit"]')" "['output']"
aj_run run $RL --report "$R" --output-limit 1KiB --output-action kill -- yes
expect_eq "output limit with kill: exit code 123" "$RC" 123
expect_eq "output limit with kill: limit_hit" "$(json "$R" 'd["limit_hit"]')" output
expect_eq "output limit with kill: 1 KiB passed" "${#OUT}" 1023 # the last newline is stripped

# A reader that goes away early: the rest is drained and counted, and the run goes on.
first=$("$AJ" run $RL --report "$R" -- sh -c 'seq 100000; echo done >&2' 2>"$T/err" | head -1)
expect_eq "reader gone: it got the first line" "$first" 1
expect_eq "reader gone: the command ran to its end" "$(cat "$T/err")" done
expect_eq "reader gone: exit code 0" "$(json "$R" 'd["exit_code"]')" 0
expect_eq "reader gone: what it never got is reported undelivered" \
	"$(json "$R" '0 < d["output"]["undelivered_bytes"] < d["output"]["stdout_bytes"] == 588895')" True

# ---- memory and pids limits (where a cgroup enforces them) -----------------------------------------

if [ "$MEM_USABLE" = True ]; then
	aj_run run --report "$R" --memory 32MiB -- python3 -c 'x = bytearray(256 << 20)'
	expect_eq "memory limit: exit code 122" "$RC" 122
	expect_eq "memory limit: limit_hit" "$(json "$R" 'd["limit_hit"]')" memory
else
	skip "memory limit hit" "no usable memory cgroup for uid $(id -u)"
fi
if [ "$PIDS_USABLE" = True ]; then
	aj_run run --report "$R" --pids 8 -- sh -c 'for i in $(seq 20); do sleep 5 & done; wait'
	expect_eq "pids limit: exit code 121" "$RC" 121
	expect_eq "pids limit: limit_hit" "$(json "$R" 'd["limit_hit"]')" pids
else
	skip "pids limit hit" "no usable pids cgroup for uid $(id -u)"
fi
# The sandbox's cgroup is the root of its cgroup namespace, for its init as for the command:
# the namespace is made after the cgroup was joined (on cgroup v1 the cgroup is made, and
# joined, while the root filesystem is built). A namespace made before the join shows a path
# above it ("/.."); a process outside the cgroup, one beside it.
CG_MODE=$("$AJ" features --json | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["cgroup"]["mode"])')
if [ "$PIDS_USABLE" = True ]; then
	if [ "$CG_MODE" = v1 ]; then
		lines='^[0-9]+:([^:]*,)?(pids|memory)(,[^:]*)?:'
		want=$([ "$MEM_USABLE" = True ] && echo " 4 /" || echo " 2 /")
	else
		lines='^0::' want=" 2 /"
	fi
	view=$("$AJ" run -- sh -c 'grep -h -E "$1" /proc/1/cgroup /proc/self/cgroup |
		cut -d: -f3 | sort | uniq -c | tr -s " "' sh "$lines")
	expect_eq "init and the command: in the sandbox's cgroup, its namespace's root" "$view" "$want"
else
	skip "init and the command in the sandbox's cgroup" "no usable pids cgroup for uid $(id -u)"
fi

# ---- flags override the policy file ----------------------------------------------------------------

P=$T/limits.json
cat >"$P" <<'EOF'
{"version": 1, "limits": {"memory": "1GiB", "pids": 100, "timeout": "1m", "open_files": 200}}
EOF
if [ "$MEM_USABLE" = True ]; then MEMFLAG="--memory 256MiB"; else MEMFLAG="--memory none"; fi
rm -f "$E" "$WS/go"
if [ "$MEM_USABLE" = True ]; then
	mode=$("$AJ" features --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cgroup"]["mode"])')
	parent=$("$AJ" features --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cgroup"]["controllers"]["memory"]["parent"])')
	file=memory.limit_in_bytes
	[ "$mode" = v2 ] && file=memory.max
fi
# The command runs until the test has looked at its cgroup (30 s at most).
"$AJ" run --policy "$P" $MEMFLAG --cpus none --open-files 300 --report "$R" --events "$E" \
	-- sh -c 'for i in $(seq 600); do [ -e go ] && exit 0; sleep 0.05; done; exit 1' >/dev/null 2>&1 &
pid=$!
wait_until 20 test -s "$E"
ID3=$(head -1 "$E" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandbox"])' 2>/dev/null)
if [ "$MEM_USABLE" = True ]; then
	expect_eq "the cgroup enforces the flag's memory limit, not the file's" \
		"$(cat "$parent/run-$ID3/$file" 2>/dev/null)" 268435456
fi
touch "$WS/go"
wait "$pid"
expect_eq "override run: exit code" "$?" 0
if [ "$MEM_USABLE" = True ]; then
	expect_eq "report: plan.limits.memory_bytes is the flag's" \
		"$(json "$R" 'd["plan"]["limits"]["memory_bytes"]')" 268435456
else
	expect_eq "report: plan.limits.memory_bytes is the flag's (none)" \
		"$(json "$R" 'd["plan"]["limits"]["memory_bytes"]')" None
fi
expect_eq "report: plan.limits keep the file's other limits" \
	"$(json "$R" '(d["plan"]["limits"]["pids"], d["plan"]["limits"]["timeout_ms"])')" "(100, 60000)"
expect_eq "report: plan.limits.open_files is the flag's" \
	"$(json "$R" 'd["plan"]["limits"]["open_files"]')" 300
aj_run run --policy "$P" --memory none --cpus none --report "$R" -- true
expect_eq "--memory none turns the file's limit off" \
	"$(json "$R" 'd["plan"]["limits"]["memory_bytes"]')" None
expect_eq "... and the memory layer is off" \
	"$(json "$R" '[l["state"] for l in d["plan"]["layers"] if l["layer"] == "memory"][0]')" off

# ---- dry run ---------------------------------------------------------------------------------

before=$(mktemp)
cgroup_snapshot "$before"
rm -f "$E"
aj_run run $RL --events "$E" --dry-run -- touch "$WS/dry-run-ran"
expect_eq "--dry-run: exit 0" "$RC" 0
check "--dry-run: the command did not run" test ! -e "$WS/dry-run-ran"
check "--dry-run: no events file" test ! -e "$E"
expect_contains "--dry-run: prints the plan" "$OUT" "agentjail: sandbox "
for l in landlock seccomp network-namespace memory; do
	expect_contains "--dry-run: plan shows layer $l" "$OUT" "  $l "
done
DRY_ID=$(printf '%s\n' "$OUT" | sed -n 's/^agentjail: sandbox \([0-9a-f]*\),.*/\1/p')
aj_run run $RL --dry-run --json -- touch "$WS/dry-run-ran"
expect_eq "--dry-run --json: exit 0" "$RC" 0
check "--dry-run --json: the command did not run" test ! -e "$WS/dry-run-ran"
printf '%s' "$OUT" >"$T/plan.json"
expect_eq "--dry-run --json: a plan document" \
	"$(json "$T/plan.json" '(len(d["layers"]), len(d["rootfs"]) > 10, d["mode"], d["workspace"])')" \
	"(24, True, '$MODE', '$WS')"
abi=$("$AJ" features --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["landlock"]["abi"])')
expect_eq "--dry-run --json: landlock_abi is the kernel's" "$(json "$T/plan.json" 'd["landlock_abi"]')" "$abi"
DRY_ID2=$(json "$T/plan.json" 'd["sandbox"]')
expect_eq "--dry-run: no cgroup was created" "$(cgroup_run_dirs "$DRY_ID" "$DRY_ID2")" ""
expect_eq "--dry-run: nothing new under the cgroup parents" "$(cgroup_new_dirs "$before")" ""
rm -f "$before"

aj_run run $RL -v -- true
expect_contains "--verbose: prints the plan on stderr" "$ERR" "agentjail: sandbox "
expect_contains "--verbose: prints a summary" "$ERR" "agentjail: exit 0 after "

# ---- network ---------------------------------------------------------------------------------

aj_run run $RL --network host --dry-run --json -- true
printf '%s' "$OUT" >"$T/plan.json"
expect_eq "--network host: network-namespace is off" \
	"$(json "$T/plan.json" '[l["state"] for l in d["layers"] if l["layer"] == "network-namespace"][0]')" off
expect_contains "--network host: and says the host network is shared" \
	"$(json "$T/plan.json" '[l["detail"] for l in d["layers"] if l["layer"] == "network-namespace"][0]')" \
	"HOST NETWORK SHARED"
expect_eq "--network host: landlock-net is off" \
	"$(json "$T/plan.json" '[l["state"] for l in d["layers"] if l["layer"] == "landlock-net"][0]')" off

# A listener on the host's loopback: unreachable by default, reachable with --network host.
python3 - "$T/port" <<'EOF' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
s.settimeout(30)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
try:
    while True:
        c, _ = s.accept()
        c.sendall(b"hello-from-host\n")
        c.close()
except socket.timeout:
    pass
EOF
lpid=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
port=$(cat "$T/port")
connect="import socket; s = socket.create_connection(('127.0.0.1', $port), timeout=5); print(s.recv(64).decode().strip())"
aj_run run $RL -- python3 -c "$connect"
expect_not_contains "default network: the host's loopback is unreachable" "$OUT" hello-from-host
check "default network: connecting fails" test "$RC" -ne 0
aj_run run $RL --network host -- python3 -c "$connect"
expect_eq "--network host: the host's loopback is reachable" "$OUT" hello-from-host
aj_run run $RL -- sh -c 'cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d " " | sort | tr "\n" " "'
expect_eq "default network: only loopback" "$OUT" "lo "
aj_run run $RL --network host -- sh -c 'cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d " " | sort | tr "\n" " "'
expect_eq "--network host: the host's interfaces" "$OUT" \
	"$(cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' ' | sort | tr '\n' ' ')"
kill "$lpid" 2>/dev/null
wait "$lpid" 2>/dev/null || true
