#!/usr/bin/env bash
# Resource limits as an unprivileged user without a delegated cgroup: a memory or CPU limit
# fails closed (exit 125 naming the cgroup layer, the probe and the remedies) unless accepted
# as degraded, which the report shows; a pids limit falls back to RLIMIT_NPROC in the
# sandbox's user namespace and still bounds a fork loop. In the main pass (root) the checks
# run as the rootless test uid through setpriv.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

RUID=${AJ_ROOTLESS_UID:-23456}
T=$(mktmp)
WS=$T/ws
mkdir -p "$WS"
R=$T/report.json
if is_root; then
	chown -R "$RUID:$RUID" "$T"
fi
cd "$WS" || exit 1

# as_user CMD...: runs CMD as the unprivileged test uid; sets OUT, ERR and RC.
as_user() {
	local o e
	o=$(mktemp -p "$T") e=$(mktemp -p "$T")
	if is_root; then
		setpriv --reuid "$RUID" --regid "$RUID" --clear-groups --inh-caps=-all \
			env HOME="$T" "$@" >"$o" 2>"$e" </dev/null
	else
		"$@" >"$o" 2>"$e" </dev/null
	fi
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
	[ "$RC" = 125 ] && printf '%s\n' "$ERR" | sed 's/^/# agentjail said: /'
	return 0
}
layer_state() { json "$R" "[l['state'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"; }
no_process() { ! pgrep -f -- "$1" >/dev/null; }
layer_detail() { json "$R" "[l['detail'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"; }

as_user "$AJ" features --json
printf '%s' "$OUT" >"$T/f.json"
expect_eq "features: rootless mode" "$(json "$T/f.json" 'd["mode"]')" rootless
mem_usable=$(json "$T/f.json" 'd["cgroup"]["controllers"]["memory"]["usable"]')
pids_usable=$(json "$T/f.json" 'd["cgroup"]["controllers"]["pids"]["usable"]')
mem_why=$(json "$T/f.json" 'd["cgroup"]["controllers"]["memory"]["detail"]')

if [ "$mem_usable" = True ]; then
	skip "memory limit without a delegated cgroup" "uid $RUID has a usable memory cgroup here"
else
	as_user "$AJ" run --report "$R" --memory 256MiB --cpus none -- echo ran
	expect_eq "memory limit, no delegated cgroup: exit 125" "$RC" 125
	expect_not_contains "memory limit, no delegated cgroup: the command did not run" "$OUT" ran
	expect_contains "memory limit: stderr names the cgroup layer and the memory limit" "$ERR" \
		"agentjail: [cgroup] the memory layer is needed but cannot be enforced"
	expect_contains "memory limit: stderr names the failed probe" "$ERR" "$mem_why"
	expect_contains "memory limit: the probe says why (no delegated cgroup)" "$ERR" \
		"is not writable by uid $RUID (no delegated cgroup)"
	expect_contains "memory limit: remedy (delegation)" "$ERR" "Delegate=yes"
	expect_contains "memory limit: remedy (accept degraded)" "$ERR" "--allow-degraded memory"
	expect_eq "memory limit: report error.layer" "$(report_field "$R" 'd["error"]["layer"]')" cgroup
	expect_contains "memory limit: report hint" "$(report_field "$R" 'd["error"]["hint"]')" \
		"--allow-degraded memory"

	as_user "$AJ" run --cpus none -- true
	expect_eq "the default policy's memory limit also fails closed" "$RC" 125

	as_user "$AJ" run --report "$R" --memory 256MiB --cpus none --allow-degraded memory -- echo ran
	expect_eq "--allow-degraded memory: runs" "$RC:$OUT" "0:ran"
	expect_eq "--allow-degraded memory: report shows memory degraded" "$(layer_state memory)" degraded
	expect_contains "--allow-degraded memory: and says it is not enforced" \
		"$(layer_detail memory)" "NOT ENFORCED (accepted by allow_degraded \"memory\")"
	expect_eq "--allow-degraded memory: plan keeps the asked limit" \
		"$(json "$R" 'd["plan"]["limits"]["memory_bytes"]')" 268435456

	as_user "$AJ" run --report "$R" --memory 256MiB --cpus 1 --allow-degraded cgroup -- true
	expect_eq "--allow-degraded cgroup covers memory and cpu" \
		"$RC $(layer_state memory) $(layer_state cpu)" "0 degraded degraded"

	as_user "$AJ" run --report "$R" --memory none --cpus 0.5 -- true
	expect_eq "cpu quota, no delegated cgroup: exit 125" "$RC" 125
	expect_contains "cpu quota: stderr names the cpu layer" "$ERR" \
		"agentjail: [cgroup] the cpu layer is needed but cannot be enforced"
	as_user "$AJ" run --report "$R" --memory none --cpus 0.5 --allow-degraded cpu -- true
	expect_eq "--allow-degraded cpu: runs, reported degraded" "$RC $(layer_state cpu)" "0 degraded"
fi

if [ "$pids_usable" = True ]; then
	skip "pids fallback to RLIMIT_NPROC" "uid $RUID has a usable pids cgroup here"
else
	as_user "$AJ" run --report "$R" --memory none --cpus none --pids 16 -- \
		sh -c 'grep "^Max processes" /proc/self/limits | tr -s " " | cut -d" " -f3,4'
	expect_eq "pids without a cgroup: RLIMIT_NPROC inside (soft and hard)" "$RC:$OUT" "0:16 16"
	expect_eq "pids without a cgroup: the layer stays enforced" "$(layer_state pids)" enforced
	expect_contains "pids without a cgroup: the report says how" "$(layer_detail pids)" \
		"16 tasks via RLIMIT_NPROC"
	as_user "$AJ" run --report "$R" --memory none --cpus none --pids 16 --timeout 60s -- python3 -c '
import errno, os, time
n = 0
err = None
for _ in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode[e.errno]
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print(n, err)' "ajmark-$$"
	expect_eq "fork loop: the run ends on its own (not by the timeout)" "$RC" 0
	forks=${OUT%% *}
	check "fork loop: bounded below the limit of 16 tasks (forked $forks)" \
		test "${forks:-999}" -ge 1 -a "${forks:-999}" -lt 16
	expect_eq "fork loop: fork fails with EAGAIN" "${OUT#* }" EAGAIN
	check "fork loop: the sleepers died with the sandbox" no_process "ajmark-$$"
fi
