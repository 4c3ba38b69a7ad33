#!/usr/bin/env bash
# `agentjail features`, `agentjail features --json`, `agentjail version` and help: what they
# print agrees with what the kernel says, independently probed here.
# rootless: yes
# timeout: 60
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
F=$T/features.json

aj_run version
expect_eq "version: exit 0" "$RC" 0
check "version: 'agentjail X.Y.Z (libseccomp A.B.C)' ($OUT)" \
	sh -c "echo '$OUT' | grep -qE '^agentjail [0-9]+\.[0-9]+\.[0-9]+ \(libseccomp [0-9.]+\)$'"
V=$OUT
aj_run --version
expect_eq "--version is version" "$OUT" "$V"

aj_run features --json
expect_eq "features --json: exit 0" "$RC" 0
printf '%s' "$OUT" >"$F"
expect_eq "features --json: the version" "agentjail $(json "$F" 'd["agentjail"]')" "${V%% (*}"
expect_eq "features --json: uid" "$(json "$F" 'd["uid"]')" "$(id -u)"
if is_root; then want_mode=privileged; else want_mode=rootless; fi
expect_eq "features --json: mode" "$(json "$F" 'd["mode"]')" "$want_mode"
expect_eq "features --json: kernel" "$(json "$F" 'd["kernel"]')" "Linux $(uname -r)"

kernel_abi=$(python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
print(r if r > 0 else 0)')
expect_eq "features --json: landlock.abi is the kernel's ($kernel_abi)" \
	"$(json "$F" 'd["landlock"]["abi"]')" "$kernel_abi"
expect_eq "features --json: landlock capabilities follow the ABI" \
	"$(json "$F" '(d["landlock"]["filesystem"], d["landlock"]["tcp"], d["landlock"]["scopes"])')" \
	"$(python3 -c "a=$kernel_abi; print((a >= 1, a >= 4, a >= 6))")"

seccomp_mode=$(sed -n 's/^Seccomp:\t//p' /proc/self/status)
expect_eq "features --json: seccomp available" "$(json "$F" 'd["seccomp"]["available"]')" True
expect_eq "features --json: seccomp default_rules is a positive count" \
	"$(json "$F" 'd["seccomp"]["default_rules"] > 50')" True
check "this test runs without a seccomp filter of its own (Seccomp: $seccomp_mode)" test "$seccomp_mode" = 0

if unshare --user true 2>/dev/null; then userns=True; else userns=False; fi
expect_eq "features --json: user_namespaces.available agrees with unshare(CLONE_NEWUSER)" \
	"$(json "$F" 'd["user_namespaces"]["available"]')" "$userns"

if grep -q ' - cgroup2 ' /proc/self/mountinfo && grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	want=v2
elif grep -E ' - cgroup cgroup [^ ]*memory' /proc/self/mountinfo >/dev/null; then
	want=v1
elif grep -q ' - cgroup2 ' /proc/self/mountinfo; then
	want=v2
else
	want=none
fi
expect_eq "features --json: cgroup.mode ($want from mountinfo)" "$(json "$F" 'd["cgroup"]["mode"]')" "$want"
expect_eq "features --json: cgroup controllers" \
	"$(json "$F" '" ".join(sorted(d["cgroup"]["controllers"]))')" \
	"$([ "$want" = v2 ] && echo "cpu memory pids" || echo "cpu cpuacct freezer memory pids")"
expect_eq "features --json: an unusable controller says why" \
	"$(json "$F" 'all(c["usable"] or c["detail"] for c in d["cgroup"]["controllers"].values())')" True

aj_run features --json --cgroup-parent /aj-features-probe
printf '%s' "$OUT" >"$F"
expect_eq "features --cgroup-parent: every parent is under the given path" \
	"$(json "$F" 'all(c["parent"].endswith("/aj-features-probe") for c in d["cgroup"]["controllers"].values())')" True
check "features --cgroup-parent: probing creates nothing" \
	sh -c '! ls -d /sys/fs/cgroup/*/aj-features-probe /sys/fs/cgroup/aj-features-probe 2>/dev/null | grep -q .'

aj_run features
expect_eq "features: exit 0" "$RC" 0
for w in "user namespaces" landlock seccomp "mount API" cgroup; do
	expect_contains "features: mentions $w" "$OUT" "$w"
done
expect_contains "features: shows the ABI" "$OUT" "ABI $kernel_abi"

aj_run features extra
expect_eq "features with an argument: exit 125" "$RC" 125
expect_contains "features with an argument: names it" "$ERR" '"extra"'
aj_run features --bogus
expect_eq "features --bogus: exit 125" "$RC" 125

aj_run
expect_eq "no command: exit 125" "$RC" 125
expect_contains "no command: usage" "$ERR" "usage: agentjail COMMAND"
aj_run --help
expect_eq "--help: exit 0" "$RC" 0
for c in run features version; do
	expect_contains "--help lists $c" "$OUT" "  $c "
done
aj_run run --help
expect_eq "run --help: exit 0" "$RC" 0
for o in --policy --preset --workspace --memory --pids --timeout --ro --rw --mask --env \
	--setenv --report --events --dry-run --allow-degraded --network; do
	expect_contains "run --help documents $o" "$OUT" "$o"
done
