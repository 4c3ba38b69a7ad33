#!/usr/bin/env bash
# Kernel interfaces the seccomp profile (data/seccomp/default.rules) removes: nested
# namespaces, mounts, bpf, perf, keyrings, io_uring, ptrace, raw and exotic sockets, terminal
# injection, clock and host-wide controls, and the 32-bit and x32 syscall ABIs.
#
# Each probe of tests/helpers/try-syscall passes arguments the kernel rejects in its own way
# (bad pointer, bad descriptor, bad flag). The same probes run first on the host, unsandboxed
# and unprivileged: a probe counts only where the host's answer differs from the filter's, so
# that every check here fails if the filter rule goes missing.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

TRY=$HELPERS/try-syscall

# PROBE EXPECTED-ANSWER-IN-THE-SANDBOX
# A 32-bit system call: the filter kills the process with SIGSYS. In the gvisor tier
# (tier_gvisor_suites.sh) the call reaches gVisor's Sentry, never the host kernel, and the
# Sentry's answer depends on the host: where the host has no 32-bit entry, the Sentry's ptrace
# stub faults and the process dies of SIGSEGV; where it has one, the Sentry takes the call as
# one of its own 64-bit table and answers an error (runsc 20221219: EBADF), which the host's
# getpid (the probe's call) never does. GVISOR_INT80_RUNS: the host runs int 0x80.
INT80_SIG=SYS INT80_CODE=159 GVISOR_INT80_RUNS=
if [ "${AJ_ADV_TIER:-}" = gvisor ]; then
	INT80_SIG=SEGV INT80_CODE=139
	case $("$TRY" --direct int80 </dev/null 2>/dev/null) in
	*"int80 survived (returned "[1-9]*) GVISOR_INT80_RUNS=1 ;;
	esac
fi

BLOCKED="
unshare-user EPERM
unshare-user-hi EPERM
unshare-mnt-hi EPERM
unshare-pid-hi EPERM
unshare-net-hi EPERM
unshare-ipc-hi EPERM
unshare-uts-hi EPERM
unshare-cgroup-hi EPERM
unshare-time-hi EPERM
clone-user EPERM
clone-user-bad EPERM
clone-mnt-bad EPERM
clone-pid-bad EPERM
clone-net-bad EPERM
clone-ipc-bad EPERM
clone-uts-bad EPERM
clone-cgroup-bad EPERM
clone3 ENOSYS
setns EPERM
mount EPERM
umount2 EPERM
chroot EPERM
open_tree EPERM
open_tree_attr EPERM
fsconfig EPERM
mount_setattr EPERM
bpf EPERM
perf_event_open EPERM
userfaultfd EPERM
keyctl EPERM
add_key EPERM
request_key EPERM
io_uring_setup EPERM
io_uring_enter EPERM
io_uring_register EPERM
kexec_load EPERM
kexec_file_load EPERM
init_module EPERM
finit_module EPERM
delete_module EPERM
ptrace EPERM
process_vm_readv EPERM
process_vm_writev EPERM
pidfd_getfd EPERM
kcmp EPERM
sock-netlink EAFNOSUPPORT
sock-netlink-dgram EAFNOSUPPORT
sock-netlink-hi EAFNOSUPPORT
sock-packet EAFNOSUPPORT
sock-packet-dgram EAFNOSUPPORT
sock-vsock EAFNOSUPPORT
sock-alg EAFNOSUPPORT
sock-unspec EAFNOSUPPORT
sock-raw EPERM
sock-raw6 EPERM
sock-raw-flags EPERM
tiocsti EPERM
tiocsti-hi EPERM
tioclinux EPERM
tiocsetd EPERM
clock_settime EPERM
settimeofday EPERM
adjtimex EPERM
clock_adjtime EPERM
name_to_handle_at EPERM
open_by_handle_at EPERM
quotactl EPERM
quotactl_fd EPERM
iopl EPERM
ioperm EPERM
lookup_dcookie EPERM
uselib EPERM
personality-norand EPERM
personality-rie EPERM
int80 killed:SIG$INT80_SIG
x32 killed:SIGSYS
"

# Calls ordinary programs make; they must keep working (same answer as on the host).
ALLOWED="
sock-unix OK
sock-inet OK
sock-inet6 OK
uname-bad EFAULT
getpid OK
personality-linux OK
personality-query OK
"

# The gvisor tier: the probes reach gVisor's Sentry, never the host kernel, and get the
# Sentry's own answers: calls it does not implement (ENOSYS, EOPNOTSUPP, ENODEV), calls it
# implements inside itself (user namespaces, netlink, ptrace of its own processes: OK or
# ESRCH), terminals it has no such ioctls for (ENOTTY). Each is pinned exactly.
GVISOR_ANSWERS="
unshare-user OK
unshare-user-hi OK
unshare-mnt-hi OK
unshare-cgroup-hi OK
unshare-time-hi OK
clone-user OK
clone-user-bad EINVAL
clone-mnt-bad EINVAL
clone-pid-bad EINVAL
clone-net-bad EINVAL
clone-ipc-bad EINVAL
clone-uts-bad EINVAL
clone-cgroup-bad EINVAL
setns EOPNOTSUPP
open_tree ENOSYS
open_tree_attr ENOSYS
fsconfig ENOSYS
mount_setattr ENOSYS
perf_event_open ENODEV
userfaultfd ENOSYS
keyctl EACCES
add_key EACCES
request_key EACCES
io_uring_setup EFAULT
io_uring_register ENOSYS
ptrace ESRCH
process_vm_readv ENOSYS
process_vm_writev ENOSYS
pidfd_getfd ENOSYS
sock-netlink OK
sock-netlink-dgram OK
sock-netlink-hi OK
sock-raw EAFNOSUPPORT
sock-raw6 EAFNOSUPPORT
sock-raw-flags EAFNOSUPPORT
tiocsti ENOTTY
tiocsti-hi ENOTTY
tioclinux ENOTTY
tiocsetd ENOTTY
name_to_handle_at EOPNOTSUPP
open_by_handle_at EOPNOTSUPP
quotactl_fd ENOSYS
uselib ENOSYS
personality-norand EINVAL
personality-rie EINVAL
x32 survived
personality-linux EINVAL
personality-query EINVAL
"
# tier_answers LIST: LIST with the gvisor tier's answers in place, on that tier.
tier_answers() {
	if ! tier_is gvisor; then
		printf '%s\n' "$1"
		return
	fi
	printf '%s\n' "$1" | awk -v ov="$GVISOR_ANSWERS" '
		BEGIN { n = split(ov, l, "\n"); for (i = 1; i <= n; i++) if (split(l[i], f, " ") == 2) a[f[1]] = f[2] }
		NF == 2 && ($1 in a) { print $1, a[$1]; next }
		{ print }'
}
BLOCKED=$(tier_answers "$BLOCKED")
ALLOWED=$(tier_answers "$ALLOWED")

# result_of OUTPUT PROBE: the answer printed for PROBE.
result_of() {
	printf '%s\n' "$1" | awk -v k="$2" '$1 == k { print $2; exit }'
}

probe_names() {
	printf '%s\n' "$BLOCKED" "$ALLOWED" | awk 'NF { print $1 }'
}

test_blocked() {
	local host sb probe want h got nondisc=()
	adv_setup
	# shellcheck disable=SC2046
	host=$(as_unprivileged "$TRY" $(probe_names) </dev/null 2>/dev/null)
	# shellcheck disable=SC2046
	sandbox -- "$TRY" $(probe_names)
	sb=$OUT
	expect_eq "probe run exit code" "$RC" 0
	while read -r probe want; do
		[ -n "$probe" ] || continue
		h=$(result_of "$host" "$probe")
		got=$(result_of "$sb" "$probe")
		if [ "$h" = "$want" ]; then
			nondisc+=("$probe")
			continue
		fi
		if [ "$probe" = int80 ] && [ -n "$GVISOR_INT80_RUNS" ]; then
			# The probe's last word: the errno, or OK for the host's getpid.
			h=$(printf '%s\n' "$host" | awk '$1 == "int80" { r = $2 } END { print r }')
			got=$(printf '%s\n' "$sb" | awk '$1 == "int80" { r = $2 } END { print r }')
			check "int80: the Sentry's own error in the sandbox, not the host's answer (host: ${h:-?}; sandbox: ${got:-?})" \
				sh -c '[ -n "$1" ] && [ "$1" != OK ] && [ "$1" != survived ] && [ "$1" != "$2" ]' sh "$got" "$h"
			continue
		fi
		if [ "$h" = killed:SIGSEGV ]; then
			skip "$probe: $want in the sandbox" "this host faults on the entry itself (SIGSEGV without a filter): no system call to filter"
			continue
		fi
		expect_eq "$probe: $want in the sandbox (host without filter: ${h:-?})" \
			"$got" "$want"
	done <<<"$BLOCKED"
	# A probe the kernel answers like the filter proves nothing about the filter here.
	if [ ${#nondisc[@]} -gt 0 ]; then
		echo "# answered alike without the filter on this host: ${nondisc[*]}"
	fi
	while read -r probe want; do
		[ -n "$probe" ] || continue
		expect_eq "$probe: still allowed ($want)" "$(result_of "$sb" "$probe")" "$want"
	done <<<"$ALLOWED"
}

# A 32-bit syscall made by the command itself ends the sandbox with SIGSYS (the gvisor tier:
# SIGSEGV), as reported.
test_int80_kills_command() {
	adv_setup
	# A kernel or hypervisor without 32-bit entry faults on int 0x80 before any filter sees it
	# (gVisor's answer is its own, whatever the host's).
	if [ "${AJ_ADV_TIER:-}" != gvisor ] &&
		[ "$(as_unprivileged "$TRY" --direct int80 </dev/null 2>/dev/null; echo "rc=$?")" = rc=139 ]; then
		skip "int 0x80 ends the command with SIGSYS" "this host faults on int 0x80 itself (SIGSEGV without a filter): no 32-bit system call to filter"
		return
	fi
	sandbox -- "$TRY" --direct int80
	if [ -n "$GVISOR_INT80_RUNS" ]; then
		expect_contains "int 0x80: an error from the Sentry, not the host's getpid" "$OUT" \
			"int80 survived (returned -"
		expect_eq "int 0x80: the command goes on to its end (exit 0)" "$RC" 0
		return
	fi
	expect_not_contains "int 0x80 did not return" "$OUT" "survived"
	expect_eq "exit code 128+SIG$INT80_SIG" "$RC" "$INT80_CODE"
	expect_eq "report: status signaled" "$(rep 'd["status"]["kind"]')" signaled
	expect_eq "report: signal $INT80_SIG" "$(rep 'd["status"]["signal_name"]')" "$INT80_SIG"
	expect_eq "report: exit_code" "$(rep 'd["exit_code"]')" "$INT80_CODE"
}

# Relaxing a relaxable group lets exactly that group through, nothing else.
test_relaxed_group() {
	adv_setup
	sandbox --allow-syscalls ptrace -- "$TRY" ptrace process_vm_readv bpf io_uring_setup
	expect_line "relaxed ptrace group: ptrace reaches the kernel (ESRCH)" ptrace ESRCH
	expect_line "relaxed ptrace group: process_vm_readv reaches the kernel (EFAULT)" \
		process_vm_readv EFAULT
	expect_line "relaxed ptrace group: bpf still EPERM" bpf EPERM
	expect_line "relaxed ptrace group: io_uring still EPERM" io_uring_setup EPERM
}

# Boundary groups cannot be relaxed: the run is refused before anything starts.
test_boundary_groups_fixed() {
	local g
	for g in namespaces mount bpf keyring socket; do
		adv_setup
		sandbox --allow-syscalls "$g" -- "$TRY" unshare-user
		expect_eq "--allow-syscalls $g is refused (exit 125)" "$RC" 125
		expect_not_contains "--allow-syscalls $g: nothing ran" "$OUT" "unshare-user"
		expect_contains "--allow-syscalls $g: the error says why" "$ERR" \
			"$(want "cannot be relaxed" "reach gVisor's Sentry")"
	done
}

test_blocked
test_int80_kills_command
if tier_is gvisor; then
	skip "relaxed ptrace group" "the gvisor tier has no host filter to relax: syscalls.allow is refused (below)"
else
	test_relaxed_group
fi
test_boundary_groups_fixed
