#define _GNU_SOURCE
/* try-syscall PROBE...: makes one system call per probe and prints "PROBE RESULT", RESULT being
 * "OK" or the errno name. Run inside a sandbox as the attacker's code.
 *
 * Where the kernel would copy from or validate an argument before any permission check, the
 * probe passes a bad pointer or descriptor: EFAULT/EBADF/EINVAL/ESRCH then proves the call
 * reached the kernel, while the seccomp filter's EPERM/ENOSYS/EAFNOSUPPORT proves it did not
 * (the technique of bubblewrap's tests/try-syscall.c). The comment of each probe says what a
 * call that got through would return.
 *
 * Probes "int80" and "x32" use another syscall ABI; the filter kills the process (SIGSYS) for
 * them, so they print "survived" only if the call returned.
 *
 *   try-syscall [--direct] PROBE...
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BAD ((void *)(uintptr_t)0x10)
#define HI32 (1UL << 32)

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

struct probe {
	const char *name;
	long (*fn)(void);
};

static long do_clone_flags(unsigned long flags)
{
	long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);

	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		return 0;
	}
	return r;
}

/* Namespaces. Without the filter a nested user namespace is allowed (OK); for the others the
 * probe adds an argument the kernel rejects before any capability check: junk in the upper
 * half for unshare, CLONE_SIGHAND without CLONE_VM for clone (both EINVAL). */
static long p_unshare_user(void) { return unshare(CLONE_NEWUSER); }
static long p_unshare_user_hi(void) { return syscall(SYS_unshare, CLONE_NEWUSER | HI32); }
static long p_unshare_mnt_hi(void) { return syscall(SYS_unshare, CLONE_NEWNS | HI32); }
static long p_unshare_pid_hi(void) { return syscall(SYS_unshare, CLONE_NEWPID | HI32); }
static long p_unshare_net_hi(void) { return syscall(SYS_unshare, CLONE_NEWNET | HI32); }
static long p_unshare_ipc_hi(void) { return syscall(SYS_unshare, CLONE_NEWIPC | HI32); }
static long p_unshare_uts_hi(void) { return syscall(SYS_unshare, CLONE_NEWUTS | HI32); }
static long p_unshare_cgroup_hi(void) { return syscall(SYS_unshare, CLONE_NEWCGROUP | HI32); }
static long p_unshare_time_hi(void) { return syscall(SYS_unshare, CLONE_NEWTIME | HI32); }
static long p_clone_user(void) { return do_clone_flags(CLONE_NEWUSER); }
static long p_clone_user_bad(void) { return do_clone_flags(CLONE_NEWUSER | CLONE_SIGHAND); }
static long p_clone_mnt_bad(void) { return do_clone_flags(CLONE_NEWNS | CLONE_SIGHAND); }
static long p_clone_pid_bad(void) { return do_clone_flags(CLONE_NEWPID | CLONE_SIGHAND); }
static long p_clone_net_bad(void) { return do_clone_flags(CLONE_NEWNET | CLONE_SIGHAND); }
static long p_clone_ipc_bad(void) { return do_clone_flags(CLONE_NEWIPC | CLONE_SIGHAND); }
static long p_clone_uts_bad(void) { return do_clone_flags(CLONE_NEWUTS | CLONE_SIGHAND); }
static long p_clone_cgroup_bad(void) { return do_clone_flags(CLONE_NEWCGROUP | CLONE_SIGHAND); }
/* clone3 reads its arguments from memory: EFAULT if reached. */
static long p_clone3(void) { return syscall(SYS_clone3, BAD, 88); }
/* EBADF if reached. */
static long p_setns(void) { return setns(-1, 0); }

/* Mounts: EFAULT (bad pointers) or EINVAL (bad flags, bad command) if reached; open_tree_attr
 * (Linux 6.15) is called by number, ENOSYS on older kernels. pivot_root,
 * move_mount, fsopen, fspick and fsmount check CAP_SYS_ADMIN before anything else, so no
 * argument tells their filter rule from the kernel's own EPERM; they are not probed. */
static long p_mount(void) { return syscall(SYS_mount, BAD, BAD, BAD, 0, BAD); }
static long p_umount2(void) { return syscall(SYS_umount2, BAD, 0); }
static long p_chroot(void) { return syscall(SYS_chroot, BAD); }
static long p_open_tree(void) { return syscall(SYS_open_tree, AT_FDCWD, BAD, 0); }
static long p_fsconfig(void) { return syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0); }
static long p_open_tree_attr(void) { return syscall(467, AT_FDCWD, BAD, 0, BAD, 0); }
static long p_mount_setattr(void)
{
	return syscall(SYS_mount_setattr, -1, BAD, 0xffffffff, BAD, 32);
}

/* Kernel interfaces. bpf, perf and the keyring calls copy their arguments first (EFAULT). */
static long p_bpf(void) { return syscall(SYS_bpf, 0, BAD, 72); }
static long p_perf(void) { return syscall(SYS_perf_event_open, BAD, 0, -1, -1, 0); }
/* Allowed for user-mode-only faults, then the unknown flag gives EINVAL if reached. */
static long p_userfaultfd(void)
{
	return syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY | 0x40000000);
}
static long p_keyctl(void) { return syscall(SYS_keyctl, 1 /* JOIN_SESSION_KEYRING */, BAD); }
static long p_add_key(void) { return syscall(SYS_add_key, BAD, BAD, NULL, 0, 0); }
static long p_request_key(void) { return syscall(SYS_request_key, BAD, BAD, NULL, 0); }
/* io_uring copies its parameters (EFAULT); enter and register check the descriptor. */
static long p_io_uring_setup(void) { return syscall(SYS_io_uring_setup, 1, BAD); }
static long p_io_uring_enter(void) { return syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0); }
static long p_io_uring_register(void) { return syscall(SYS_io_uring_register, -1, 0, NULL, 0); }
/* Kernel replacement and modules: EPERM from the kernel where configured (the test then does
 * not count them), ENOSYS where not. */
static long p_kexec_load(void) { return syscall(SYS_kexec_load, 0, 0, NULL, 0); }
static long p_kexec_file_load(void) { return syscall(SYS_kexec_file_load, -1, -1, 0, BAD, 0); }
static long p_init_module(void) { return syscall(SYS_init_module, BAD, 0, BAD); }
static long p_finit_module(void) { return syscall(SYS_finit_module, -1, BAD, 0); }
static long p_delete_module(void) { return syscall(SYS_delete_module, BAD, 0); }

/* ptrace family: ESRCH (no such process), EFAULT or EBADF if reached. */
static long p_ptrace(void) { return syscall(SYS_ptrace, 16 /* ATTACH */, 0x3fffffff, 0, 0); }
static long p_process_vm_readv(void)
{
	return syscall(SYS_process_vm_readv, getpid(), BAD, 1, BAD, 1, 0);
}
static long p_process_vm_writev(void)
{
	return syscall(SYS_process_vm_writev, getpid(), BAD, 1, BAD, 1, 0);
}
static long p_pidfd_getfd(void) { return syscall(SYS_pidfd_getfd, -1, 0, 0); }
static long p_kcmp(void) { return syscall(SYS_kcmp, 0x3fffffff, 0x3fffffff, 0, 0, 0); }

/* Sockets: the filter answers EAFNOSUPPORT for families and EPERM for raw types. Netlink and
 * vsock sockets would be created (OK), packet sockets refused with EPERM, and a raw socket
 * with an out-of-range protocol fails with EINVAL before any capability check. */
static long sock(long family, long type, long proto)
{
	long fd = syscall(SYS_socket, family, type, proto);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return fd;
}
static long p_sock_unix(void) { return sock(AF_UNIX, SOCK_STREAM, 0); }
static long p_sock_inet(void) { return sock(AF_INET, SOCK_STREAM, 0); }
static long p_sock_inet6(void) { return sock(AF_INET6, SOCK_DGRAM, 0); }
static long p_sock_netlink(void) { return sock(AF_NETLINK, SOCK_RAW, 0); }
static long p_sock_netlink_dgram(void) { return sock(AF_NETLINK, SOCK_DGRAM, 0); }
static long p_sock_netlink_hi(void) { return sock(AF_NETLINK | HI32, SOCK_RAW, 0); }
static long p_sock_packet(void) { return sock(AF_PACKET, SOCK_RAW, 0); }
static long p_sock_packet_dgram(void) { return sock(AF_PACKET, SOCK_DGRAM, 0); }
static long p_sock_vsock(void) { return sock(40 /* AF_VSOCK */, SOCK_STREAM, 0); }
static long p_sock_alg(void) { return sock(38 /* AF_ALG */, SOCK_SEQPACKET, 0); }
static long p_sock_unspec(void) { return sock(AF_UNSPEC, SOCK_STREAM, 0); }
static long p_sock_raw(void) { return sock(AF_INET, SOCK_RAW, 300); }
static long p_sock_raw6(void) { return sock(AF_INET6, SOCK_RAW, 300); }
static long p_sock_raw_flags(void)
{
	return sock(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 300);
}

/* Terminal: stdin is /dev/null in these runs, so a call that got through gives ENOTTY. */
static long p_tiocsti(void) { return ioctl(0, TIOCSTI, "x"); }
static long p_tiocsti_hi(void) { return syscall(SYS_ioctl, 0, TIOCSTI | HI32, "x"); }
static long p_tioclinux(void) { return ioctl(0, TIOCLINUX, BAD); }
static long p_tiocsetd(void) { return ioctl(0, TIOCSETD, BAD); }

/* Host-wide state: EFAULT or EBADF where the kernel reads the argument first; ENOSYS where
 * the kernel lacks the call. */
static long p_clock_settime(void) { return syscall(SYS_clock_settime, CLOCK_REALTIME, BAD); }
static long p_settimeofday(void) { return syscall(SYS_settimeofday, BAD, NULL); }
static long p_adjtimex(void) { return syscall(SYS_adjtimex, BAD); }
static long p_clock_adjtime(void) { return syscall(SYS_clock_adjtime, CLOCK_REALTIME, BAD); }
static long p_name_to_handle_at(void)
{
	return syscall(SYS_name_to_handle_at, AT_FDCWD, BAD, BAD, BAD, 0);
}
static long p_open_by_handle_at(void) { return syscall(SYS_open_by_handle_at, -1, BAD, 0); }
static long p_quotactl(void) { return syscall(SYS_quotactl, 0, BAD, 0, BAD); }
static long p_quotactl_fd(void) { return syscall(SYS_quotactl_fd, -1, 0, 0, BAD); }
static long p_iopl(void) { return syscall(SYS_iopl, 3); }
static long p_ioperm(void) { return syscall(SYS_ioperm, 0x80, 1, 1); }
static long p_lookup_dcookie(void) { return syscall(SYS_lookup_dcookie, 0, BAD, 0); }
static long p_uselib(void) { return syscall(SYS_uselib, BAD); }
static long p_personality_norand(void) { return personality(ADDR_NO_RANDOMIZE); }
static long p_personality_rie(void) { return personality(READ_IMPLIES_EXEC); }
/* Allowed: reading the persona (0xffffffff) and setting the plain Linux one. */
static long p_personality_query(void) { return personality(0xffffffff) < 0 ? -1 : 0; }
static long p_personality_linux(void) { return personality(PER_LINUX) < 0 ? -1 : 0; }

/* Controls: allowed calls; the bad pointer shows what "reached the kernel" looks like. */
static long p_uname_bad(void) { return syscall(SYS_uname, BAD); }
static long p_getpid(void) { return syscall(SYS_getpid) > 0 ? 0 : -1; }

/* Other ABIs: 32-bit getpid through int 0x80, x32 getpid through the x32 bit. */
static long p_int80(void)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	printf("int80 survived (returned %ld)\n", r);
	fflush(stdout);
	return r < 0 ? (errno = (int)-r, -1) : 0;
}
static long p_x32(void)
{
	long r = syscall(0x40000000L | SYS_getpid);
	printf("x32 survived (returned %ld)\n", r);
	fflush(stdout);
	return r;
}

#define P(name, fn) {name, fn}
static const struct probe probes[] = {
	P("unshare-user", p_unshare_user), P("unshare-user-hi", p_unshare_user_hi),
	P("unshare-mnt-hi", p_unshare_mnt_hi), P("unshare-pid-hi", p_unshare_pid_hi),
	P("unshare-net-hi", p_unshare_net_hi), P("unshare-ipc-hi", p_unshare_ipc_hi),
	P("unshare-uts-hi", p_unshare_uts_hi), P("unshare-cgroup-hi", p_unshare_cgroup_hi),
	P("unshare-time-hi", p_unshare_time_hi), P("clone-user", p_clone_user),
	P("clone-user-bad", p_clone_user_bad), P("clone-mnt-bad", p_clone_mnt_bad),
	P("clone-pid-bad", p_clone_pid_bad), P("clone-net-bad", p_clone_net_bad),
	P("clone-ipc-bad", p_clone_ipc_bad), P("clone-uts-bad", p_clone_uts_bad),
	P("clone-cgroup-bad", p_clone_cgroup_bad), P("clone3", p_clone3), P("setns", p_setns),
	P("mount", p_mount), P("umount2", p_umount2), P("chroot", p_chroot),
	P("open_tree", p_open_tree), P("open_tree_attr", p_open_tree_attr),
	P("fsconfig", p_fsconfig),
	P("mount_setattr", p_mount_setattr), P("bpf", p_bpf), P("perf_event_open", p_perf),
	P("userfaultfd", p_userfaultfd), P("keyctl", p_keyctl), P("add_key", p_add_key),
	P("request_key", p_request_key), P("io_uring_setup", p_io_uring_setup),
	P("io_uring_enter", p_io_uring_enter), P("io_uring_register", p_io_uring_register),
	P("kexec_load", p_kexec_load), P("kexec_file_load", p_kexec_file_load),
	P("init_module", p_init_module), P("finit_module", p_finit_module),
	P("delete_module", p_delete_module), P("ptrace", p_ptrace),
	P("process_vm_readv", p_process_vm_readv), P("process_vm_writev", p_process_vm_writev),
	P("pidfd_getfd", p_pidfd_getfd), P("kcmp", p_kcmp), P("sock-unix", p_sock_unix),
	P("sock-inet", p_sock_inet), P("sock-inet6", p_sock_inet6),
	P("sock-netlink", p_sock_netlink), P("sock-netlink-dgram", p_sock_netlink_dgram),
	P("sock-netlink-hi", p_sock_netlink_hi), P("sock-packet", p_sock_packet),
	P("sock-packet-dgram", p_sock_packet_dgram), P("sock-vsock", p_sock_vsock),
	P("sock-alg", p_sock_alg), P("sock-unspec", p_sock_unspec), P("sock-raw", p_sock_raw),
	P("sock-raw6", p_sock_raw6), P("sock-raw-flags", p_sock_raw_flags),
	P("tiocsti", p_tiocsti), P("tiocsti-hi", p_tiocsti_hi), P("tioclinux", p_tioclinux),
	P("tiocsetd", p_tiocsetd),
	P("clock_settime", p_clock_settime), P("settimeofday", p_settimeofday),
	P("adjtimex", p_adjtimex), P("clock_adjtime", p_clock_adjtime),
	P("name_to_handle_at", p_name_to_handle_at), P("open_by_handle_at", p_open_by_handle_at),
	P("quotactl", p_quotactl), P("quotactl_fd", p_quotactl_fd), P("iopl", p_iopl),
	P("ioperm", p_ioperm), P("lookup_dcookie", p_lookup_dcookie), P("uselib", p_uselib),
	P("personality-norand", p_personality_norand), P("personality-rie", p_personality_rie),
	P("personality-query", p_personality_query), P("personality-linux", p_personality_linux),
	P("uname-bad", p_uname_bad), P("getpid", p_getpid), P("int80", p_int80), P("x32", p_x32),
};

static const struct probe *find(const char *name)
{
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
		if (strcmp(probes[i].name, name) == 0)
			return &probes[i];
	return NULL;
}

static void run_probe(const struct probe *p)
{
	long r;

	errno = 0;
	r = p->fn();
	if (r < 0) {
		const char *n = strerrorname_np(errno);
		printf("%s %s\n", p->name, n ? n : "E?");
	} else {
		printf("%s OK\n", p->name);
	}
	fflush(stdout);
}

/* Each probe runs in a child of its own, so that a call that got through (a new namespace,
 * a persona) cannot change what the next probe sees, and a probe killed by the filter is
 * reported as "NAME killed:SIG". With --direct the probes run in this process. */
int main(int argc, char **argv)
{
	int status = 0, first = 1, direct = argc > 1 && strcmp(argv[1], "--direct") == 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (direct)
		first = 2;
	for (int i = first; i < argc; i++) {
		const struct probe *p = find(argv[i]);
		pid_t pid;
		int st;

		if (!p) {
			printf("%s UNKNOWN-PROBE\n", argv[i]);
			status = 2;
			continue;
		}
		if (direct) {
			run_probe(p);
			continue;
		}
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0) {
			run_probe(p);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) < 0) {
			perror("waitpid");
			return 2;
		}
		if (WIFSIGNALED(st))
			printf("%s killed:SIG%s\n", p->name, sigabbrev_np(WTERMSIG(st)));
	}
	return status;
}
