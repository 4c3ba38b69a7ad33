/* seccomp-wrap: run a program under a seccomp filter that makes chosen syscalls fail, to
 * reproduce hosts where a kernel feature is refused without changing this host.
 *
 *   seccomp-wrap [--deny SYSCALL:ERRNO[:FLAGS]]... [--nnp] [--] PROGRAM [ARGS...]
 *
 * SYSCALL is a name from the table below or a number; ERRNO a name from the table or a
 * number. With FLAGS (a number, e.g. 0x10000000 for CLONE_NEWUSER) the call fails only when
 * its first argument has one of those bits set, which is how container runtimes' default
 * profiles refuse unshare(CLONE_NEWUSER) and clone(CLONE_NEWUSER) (Docker answers EPERM) while
 * allowing plain fork. Everything else is allowed. --nnp sets no_new_privs first (needed
 * without CAP_SYS_ADMIN; added automatically when not root).
 *
 * Examples:
 *   seccomp-wrap --deny landlock_create_ruleset:EOPNOTSUPP -- agentjail run -- true
 *       Landlock built in but not enabled (not in the lsm= boot option)
 *   seccomp-wrap --deny unshare:EPERM:0x10000000 --deny clone:EPERM:0x10000000 \
 *       --deny clone3:ENOSYS -- agentjail run -- true
 *       Docker's default seccomp profile
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp-wrap: unsupported architecture"
#endif

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif

static const struct {
	const char *name;
	long nr;
} syscalls[] = {
	{"landlock_create_ruleset", __NR_landlock_create_ruleset},
	{"unshare", __NR_unshare},
	{"clone", __NR_clone},
	{"clone3", __NR_clone3},
	{"seccomp", __NR_seccomp},
	{"setns", __NR_setns},
	{"mount", __NR_mount},
};

static const struct {
	const char *name;
	int value;
} errnos[] = {
	{"EPERM", EPERM},   {"EACCES", EACCES}, {"ENOSYS", ENOSYS},
	{"EINVAL", EINVAL}, {"ENOSPC", ENOSPC}, {"EOPNOTSUPP", EOPNOTSUPP},
};

struct deny {
	long nr;
	int errnum;
	uint32_t flags; /* 0: always */
};

static void usage(void)
{
	fprintf(stderr, "usage: seccomp-wrap [--deny SYSCALL:ERRNO[:FLAGS]]... [--nnp] [--] "
			"PROGRAM [ARGS...]\n");
	exit(2);
}

static long lookup_syscall(const char *s)
{
	char *end;
	long v;

	for (size_t i = 0; i < sizeof syscalls / sizeof syscalls[0]; i++)
		if (strcmp(syscalls[i].name, s) == 0)
			return syscalls[i].nr;
	v = strtol(s, &end, 0);
	if (end == s || *end || v < 0) {
		fprintf(stderr, "seccomp-wrap: unknown syscall \"%s\"\n", s);
		exit(2);
	}
	return v;
}

static int lookup_errno(const char *s)
{
	char *end;
	long v;

	for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
		if (strcmp(errnos[i].name, s) == 0)
			return errnos[i].value;
	v = strtol(s, &end, 0);
	if (end == s || *end || v <= 0 || v > 4095) {
		fprintf(stderr, "seccomp-wrap: unknown errno \"%s\"\n", s);
		exit(2);
	}
	return (int)v;
}

static void parse_deny(char *spec, struct deny *d)
{
	char *name = strtok(spec, ":"), *err = strtok(NULL, ":"), *flags = strtok(NULL, ":");

	if (!name || !err)
		usage();
	d->nr = lookup_syscall(name);
	d->errnum = lookup_errno(err);
	d->flags = flags ? (uint32_t)strtoul(flags, NULL, 0) : 0;
}

#define STMT(code, k) ((struct sock_filter)BPF_STMT((code), (k)))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP((code), (k), (jt), (jf)))

/* Per rule: if nr matches [and the low word of arg 0 has a flag bit] return the errno. The
 * syscall number is reloaded after each rule because a flag test overwrites the
 * accumulator. */
static size_t build(const struct deny *d, size_t n, struct sock_filter *f)
{
	size_t k = 0;

	f[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[k++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	f[k++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	for (size_t i = 0; i < n; i++) {
		uint32_t ret = SECCOMP_RET_ERRNO | ((uint32_t)d[i].errnum & SECCOMP_RET_DATA);

		f[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
		if (!d[i].flags) {
			f[k++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)d[i].nr, 0, 1);
			f[k++] = STMT(BPF_RET | BPF_K, ret);
			continue;
		}
		f[k++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)d[i].nr, 0, 3);
		/* little-endian: the low 32 bits of args[0] come first */
		f[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
		f[k++] = JUMP(BPF_JMP | BPF_JSET | BPF_K, d[i].flags, 0, 1);
		f[k++] = STMT(BPF_RET | BPF_K, ret);
	}
	f[k++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	return k;
}

int main(int argc, char **argv)
{
	struct deny deny[16];
	struct sock_filter insns[3 + 16 * 5 + 1];
	struct sock_fprog prog;
	size_t n = 0;
	int i = 1, nnp = geteuid() != 0;

	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "--deny") == 0 && i + 1 < argc) {
			if (n == sizeof deny / sizeof deny[0])
				usage();
			parse_deny(argv[++i], &deny[n++]);
		} else if (strcmp(argv[i], "--nnp") == 0) {
			nnp = 1;
		} else if (argv[i][0] == '-') {
			usage();
		} else {
			break;
		}
	}
	if (i >= argc)
		usage();
	prog.len = (unsigned short)build(deny, n, insns);
	prog.filter = insns;
	if (nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		perror("seccomp-wrap: prctl(PR_SET_NO_NEW_PRIVS)");
		return 99; /* not 125: that is agentjail's own error code */
	}
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		perror("seccomp-wrap: seccomp(SECCOMP_SET_MODE_FILTER)");
		return 99; /* not 125: that is agentjail's own error code */
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "seccomp-wrap: exec \"%s\": %s\n", argv[i], strerror(errno));
	return 127;
}
