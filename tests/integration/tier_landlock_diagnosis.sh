#!/usr/bin/env bash
# Why user namespaces are refused, as `agentjail run` tells it (exit 125, the cause, the
# remedies, the landlock tier among them). Each host is simulated without touching this one's
# settings: the sysctls agentjail reads are faked inside a private mount namespace (a tmpfs
# over /proc/sys/kernel, or a file bound over /proc/sys/user/max_user_namespaces), and the
# kernel's answer to CLONE_NEWUSER is set with seccomp-wrap; agentjail runs as the tier's
# unprivileged user. Needs root for the mount namespace (main pass).
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_landlock.bash"
tl_require

if ! is_root; then
	skip "user namespace diagnosis" "faking sysctls needs a mount namespace (main pass, root)"
	exit 0
fi

# in_host SETUP CMD...: CMD as the tier's user in a private mount namespace (made as root)
# after the shell snippet SETUP; sets OUT, ERR, RC.
in_host() {
	local setup=$1 o=$T/.out e=$T/.err
	shift
	(cd "$WS" && unshare -m --propagation private sh -c "$setup"'
		exec "$@"' sh "${AS_TIER_USER[@]}" "$@") >"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
}

# host SETUP ERRNO -- AGENTJAIL-ARGS...: agentjail in_host, with clone and
# unshare(CLONE_NEWUSER) answering ERRNO.
host() {
	local setup=$1 errno=$2
	shift 3
	in_host "$setup" "$WRAP" --deny "unshare:$errno:0x10000000" \
		--deny "clone:$errno:0x10000000" --deny clone3:ENOSYS -- "$AJ" "$@"
}
# A sysctl directory of our own: /proc/sys/kernel hidden by a tmpfs holding only NAME=VALUE.
kernel_sysctl() {
	echo "mount -t tmpfs -o mode=0755 none /proc/sys/kernel && echo $2 >/proc/sys/kernel/$1"
}
MAXNS='echo 0 >"$T/max" && mount --bind "$T/max" /proc/sys/user/max_user_namespaces'

tl_setup
RUN=(run --memory none --cpus none -w "$WS" -- echo ran)

host "$(kernel_sysctl apparmor_restrict_unprivileged_userns 1)" EACCES -- "${RUN[@]}"
expect_eq "AppArmor (Ubuntu 23.10+): exit 125" "$RC" 125
expect_contains "AppArmor: the cause" "$ERR" \
	"AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1"
expect_contains "AppArmor: the profile remedy" "$ERR" "allowing \"userns,\" for agentjail"
expect_contains "AppArmor: the tier remedy" "$ERR" "--tier landlock"

# The restriction lets the namespace be made and refuses its capabilities: the failure comes
# at the first mount, and is explained there.
in_host "$(kernel_sysctl apparmor_restrict_unprivileged_userns 1)" "$WRAP" --deny mount:EACCES -- \
	"$AJ" "${RUN[@]}"
expect_eq "AppArmor, failing at the first mount: exit 125" "$RC" 125
expect_contains "AppArmor at the mount: the userns layer and the cause" "$ERR" \
	"agentjail: [userns] the user-namespace layer cannot be set up"
expect_contains "AppArmor at the mount: the failed step is kept" "$ERR" "Permission denied"
expect_contains "AppArmor at the mount: the cause" "$ERR" "AppArmor restricts"

host "$(kernel_sysctl unprivileged_userns_clone 0)" EPERM -- "${RUN[@]}"
expect_eq "kernel.unprivileged_userns_clone=0 (Debian): exit 125" "$RC" 125
expect_contains "unprivileged_userns_clone: the cause" "$ERR" \
	"the sysctl kernel.unprivileged_userns_clone is 0"
expect_contains "unprivileged_userns_clone: the remedy" "$ERR" \
	"sysctl -w kernel.unprivileged_userns_clone=1"

host "$MAXNS" ENOSPC -- "${RUN[@]}"
expect_contains "user.max_user_namespaces=0: the cause" "$ERR" \
	"the sysctl user.max_user_namespaces is 0"
expect_contains "user.max_user_namespaces=0: the remedy" "$ERR" "sysctl -w user.max_user_namespaces="

host true ENOSPC -- "${RUN[@]}"
expect_contains "the per-user limit used up: the cause" "$ERR" \
	"the per-user limit on user namespaces (user.max_user_namespaces) is used up"

host true 87 -- "${RUN[@]}"
expect_contains "EUSERS: the nesting limit" "$ERR" "limit of 32 nested user namespaces"

host true EINVAL -- "${RUN[@]}"
expect_contains "EINVAL: a kernel without user namespaces" "$ERR" "CONFIG_USER_NS"
expect_contains "every cause offers root and the tier" "$ERR" \
	"or run with --tier landlock (no namespaces: weaker, docs/threat-model.md says what it loses), or run agentjail as root"

host "$(kernel_sysctl apparmor_restrict_unprivileged_userns 1)" EACCES -- \
	run --tier landlock --memory none --cpus none --pids none -w "$WS" -- echo ran
expect_eq "the same host, --tier landlock: runs" "$RC:$OUT" "0:ran"
