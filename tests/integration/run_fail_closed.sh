#!/usr/bin/env bash
# Fail closed: a layer the policy needs that the host refuses stops the run with exit 125, a
# message naming the layer, the failed probe and a remedy — unless the caller accepts running
# without it (--allow-degraded), which the report then shows as "degraded". The refusals are
# simulated without changing the host: tests/helpers/seccomp-wrap runs agentjail under a
# seccomp filter that makes the chosen syscalls fail, as a kernel without Landlock or a
# container runtime's default profile would.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

WRAP=$HELPERS/seccomp-wrap
T=$(mktmp)
WS=$T/ws
mkdir -p "$WS" "$T/outside"
echo hidden >"$T/outside/x"
cd "$WS" || exit 1
RL=$(rootless_flags)
R=$T/report.json
NO_LANDLOCK=(--deny landlock_create_ruleset:EOPNOTSUPP)
NO_USERNS=(--deny unshare:EPERM:0x10000000 --deny clone:EPERM:0x10000000 --deny clone3:ENOSYS)

# wrapped DENY... -- AGENTJAIL-ARGS...: agentjail under seccomp-wrap; sets OUT, ERR, RC.
wrapped() {
	local deny=()
	while [ "$1" != -- ]; do deny+=("$1"); shift; done
	shift
	rm -f "$R"
	aj_run_cmd "$WRAP" "${deny[@]}" -- "$AJ" "$@"
}
aj_run_cmd() {
	local o e
	o=$(mktemp) e=$(mktemp)
	"$@" >"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
}
layer_state() { json "$R" "[l['state'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"; }
layer_detail() { json "$R" "[l['detail'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"; }

if [ ! -x "$WRAP" ]; then
	not_ok "seccomp-wrap helper is built ($WRAP)"
	exit 0
fi
aj_run_cmd "$WRAP" "${NO_LANDLOCK[@]}" -- sh -c 'grep "^Seccomp:" /proc/self/status'
expect_eq "seccomp-wrap installs a filter" "$OUT" "$(printf 'Seccomp:\t2')"

# ---- Landlock refused (built in but not enabled) -----------------------------------------------

wrapped "${NO_LANDLOCK[@]}" -- features --json
printf '%s' "$OUT" >"$T/f.json"
expect_eq "no Landlock: features shows ABI 0" "$(json "$T/f.json" 'd["landlock"]["abi"]')" 0
expect_contains "no Landlock: features says why" "$(json "$T/f.json" 'd["landlock"]["detail"]')" \
	"landlock_create_ruleset: EOPNOTSUPP"

wrapped "${NO_LANDLOCK[@]}" -- run $RL --report "$R" -- echo ran
expect_eq "no Landlock: exit 125" "$RC" 125
expect_not_contains "no Landlock: the command did not run" "$OUT" ran
expect_contains "no Landlock: stderr names the layer" "$ERR" \
	"agentjail: [landlock] the landlock layer is needed but cannot be enforced"
expect_contains "no Landlock: stderr names the failed probe" "$ERR" \
	"landlock_create_ruleset: EOPNOTSUPP (Landlock is built in but not enabled"
expect_contains "no Landlock: stderr gives a remedy" "$ERR" "hint: boot a kernel with Landlock enabled"
expect_contains "no Landlock: stderr offers --allow-degraded" "$ERR" "--allow-degraded landlock"
expect_eq "no Landlock: report error.layer" "$(report_field "$R" 'd["error"]["layer"]')" landlock
expect_contains "no Landlock: report message names the probe" \
	"$(report_field "$R" 'd["error"]["message"]')" "landlock_create_ruleset: EOPNOTSUPP"
expect_contains "no Landlock: report hint" "$(report_field "$R" 'd["error"]["hint"]')" \
	"--allow-degraded landlock"

wrapped --deny landlock_create_ruleset:ENOSYS -- run $RL -- true
expect_eq "Landlock not built in (ENOSYS): exit 125" "$RC" 125
expect_contains "Landlock not built in: the probe says ENOSYS" "$ERR" \
	"landlock_create_ruleset: ENOSYS (kernel older than 5.13"

wrapped "${NO_LANDLOCK[@]}" -- run $RL --allow-degraded seccomp -- true
expect_eq "no Landlock: accepting another layer as degraded does not help" "$RC" 125

wrapped "${NO_LANDLOCK[@]}" -- run $RL --allow-degraded landlock --report "$R" -- \
	sh -c "echo ran; ls $T/outside 2>&1; exit 0"
expect_eq "--allow-degraded landlock: runs" "$RC" 0
expect_contains "--allow-degraded landlock: the command ran" "$OUT" ran
expect_contains "--allow-degraded landlock: the mount namespace still hides the host" "$OUT" \
	"No such file or directory"
expect_eq "--allow-degraded landlock: report layer state" "$(layer_state landlock)" degraded
expect_contains "--allow-degraded landlock: report says it is not enforced, and why" \
	"$(layer_detail landlock)" "NOT ENFORCED (accepted by allow_degraded \"landlock\"): landlock_create_ruleset: EOPNOTSUPP"
expect_eq "--allow-degraded landlock: landlock-net is off (the network namespace holds TCP)" \
	"$(layer_state landlock-net)" off
expect_eq "--allow-degraded landlock: the other layers stay enforced" \
	"$(layer_state seccomp) $(layer_state mount-namespace) $(layer_state capabilities)" \
	"enforced enforced enforced"

printf '{"version": 1, "allow_degraded": ["landlock"]}' >"$T/degraded.json"
wrapped "${NO_LANDLOCK[@]}" -- run $RL --policy "$T/degraded.json" --report "$R" -- true
expect_eq "allow_degraded in a policy file: runs" "$RC" 0
expect_eq "allow_degraded in a policy file: reported degraded" "$(layer_state landlock)" degraded

# ---- user namespaces refused (a container runtime's default seccomp profile) ------------------

aj_run_cmd "$WRAP" "${NO_USERNS[@]}" -- sh -c 'unshare --user true 2>/dev/null; echo "userns=$?"; sh -c "echo fork=ok"'
expect_eq "the simulated profile refuses user namespaces and allows fork" "$OUT" "userns=1
fork=ok"
wrapped "${NO_USERNS[@]}" -- features --json
printf '%s' "$OUT" >"$T/f.json"
expect_eq "no user namespaces: features says unavailable" \
	"$(json "$T/f.json" 'd["user_namespaces"]["available"]')" False
expect_contains "no user namespaces: features names the seccomp filter" \
	"$(json "$T/f.json" 'd["user_namespaces"]["detail"]')" "a seccomp filter on agentjail itself refuses CLONE_NEWUSER"

before=$T/cg.before
cgroup_snapshot "$before"
wrapped "${NO_USERNS[@]}" -- run $RL --report "$R" -- echo ran
expect_eq "no user namespaces: exit 125" "$RC" 125
expect_not_contains "no user namespaces: the command did not run" "$OUT" ran
expect_contains "no user namespaces: stderr names the user namespace layer" "$ERR" "agentjail: [userns]"
expect_contains "no user namespaces: stderr names the seccomp filter as the cause" "$ERR" \
	"a seccomp filter on agentjail itself refuses CLONE_NEWUSER"
expect_contains "no user namespaces: stderr gives a remedy" "$ERR" \
	"run the container with a seccomp profile that allows user namespaces"
expect_eq "no user namespaces: report error.layer" "$(report_field "$R" 'd["error"]["layer"]')" userns
expect_contains "no user namespaces: report names the seccomp filter" \
	"$(report_field "$R" 'd["error"]')" "seccomp filter"
expect_eq "no user namespaces: no cgroup left" \
	"$(cgroup_run_dirs "$(report_field "$R" 'd["sandbox"]')")" ""
expect_eq "no user namespaces: nothing new under the cgroup parents" "$(cgroup_new_dirs "$before")" ""

# ---- seccomp refused -----------------------------------------------------------------------------

wrapped --deny seccomp:EINVAL -- run $RL --report "$R" -- true
expect_eq "no seccomp: exit 125" "$RC" 125
expect_contains "no seccomp: stderr names the layer and the probe" "$ERR" \
	"agentjail: [seccomp] the seccomp layer is needed but cannot be enforced: seccomp(SECCOMP_GET_ACTION_AVAIL) failed"
expect_contains "no seccomp: remedy" "$ERR" "--allow-degraded seccomp"
wrapped --deny seccomp:EINVAL -- run $RL --allow-degraded seccomp --report "$R" -- echo ran
expect_eq "--allow-degraded seccomp: runs" "$RC:$OUT" "0:ran"
expect_eq "--allow-degraded seccomp: reported degraded" "$(layer_state seccomp)" degraded

# ---- the network namespace refused ---------------------------------------------------------------
# The supervisor makes it beside the child, which starts in the caller's (src/sandbox/launch.c):
# a refusal there stops the run before the command, never leaves it in the caller's network.

wrapped --deny unshare:ENOSPC:0x40000000 -- run $RL --report "$R" -- echo ran
expect_eq "no network namespace to be had: exit 125, the command not run" "$RC:$OUT" "125:"
expect_contains "no network namespace: stderr names the layer and the step" "$ERR" \
	"agentjail: [namespaces] the network-namespace layer cannot be set up (unshare(CLONE_NEWNET)): No space left on device"
expect_contains "no network namespace: the limit as the remedy" "$ERR" "user.max_net_namespaces"
expect_eq "no network namespace: report error.layer" "$(report_field "$R" 'd["error"]["layer"]')" \
	namespaces
expect_eq "no network namespace: no cgroup left" \
	"$(cgroup_run_dirs "$(report_field "$R" 'd["sandbox"]')")" ""
wrapped --deny setns:EPERM -- run $RL --report "$R" -- echo ran
expect_eq "setns refused: exit 125, the command not run" "$RC:$OUT" "125:"
expect_contains "setns refused: stderr names the step" "$ERR" \
	"(join the sandbox's user namespace): Operation not permitted"
expect_contains "setns refused: the remedy" "$ERR" "allow setns(2) and unshare(CLONE_NEWNET)"

# ---- a failure inside the sandbox's setup comes back as data -------------------------------------

wrapped --deny mount:EACCES -- run $RL --report "$R" -- echo ran
expect_eq "mount refused: exit 125" "$RC" 125
expect_contains "mount refused: stderr names the mount layer" "$ERR" "agentjail: [mount]"
expect_contains "mount refused: stderr has the errno text" "$ERR" "Permission denied"
expect_eq "mount refused: report error.layer" "$(report_field "$R" 'd["error"]["layer"]')" mount
expect_eq "mount refused: no cgroup left" \
	"$(cgroup_run_dirs "$(report_field "$R" 'd["sandbox"]')")" ""
