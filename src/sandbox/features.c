#include "sandbox/features.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "sandbox/landlock.h"

static bool has_caps(uint64_t wanted)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	uint64_t eff;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	eff = (uint64_t)data[0].effective | ((uint64_t)data[1].effective << 32);
	return (eff & wanted) == wanted;
}

static void probe_identity(struct aj_features *f)
{
	uint64_t need = (1ULL << CAP_SYS_ADMIN) | (1ULL << CAP_SETUID) | (1ULL << CAP_SETGID);

	f->uid = geteuid();
	f->gid = getegid();
	f->privileged = f->uid == 0 && has_caps(need);
	/* uid 0 without these cannot map the sandbox to an unprivileged host uid, and the
	 * rootless path would map it to uid 0 of this namespace: refuse rather than run a
	 * sandbox user that may be host root. */
	f->root_incapable = f->uid == 0 && !f->privileged;
}

static void probe_seccomp(struct aj_features *f)
{
	unsigned action = SECCOMP_RET_ERRNO;

	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0) {
		f->seccomp = true;
		return;
	}
	snprintf(f->seccomp_why, sizeof f->seccomp_why,
		 "seccomp(SECCOMP_GET_ACTION_AVAIL) failed: %s (kernel without "
		 "CONFIG_SECCOMP_FILTER?)",
		 strerror(errno));
}

static void probe_mount_api(struct aj_features *f)
{
	/* An invalid descriptor tells the call exists (EBADF) without doing anything. */
	f->mount_api = syscall(SYS_open_tree, -1, "", AT_EMPTY_PATH) < 0 && errno == EBADF;
}

void aj_features_probe(struct aj_features *f, const char *cgroup_parent)
{
	struct utsname u;

	memset(f, 0, sizeof *f);
	f->userns = -1;
	probe_identity(f);
	f->landlock_abi = aj_landlock_abi(f->landlock_why, sizeof f->landlock_why);
	probe_seccomp(f);
	probe_mount_api(f);
	if (uname(&u) == 0)
		snprintf(f->kernel, sizeof f->kernel, "%s %s", u.sysname, u.release);
	f->cgroup = aj_cgroup_detect(NULL, cgroup_parent);
}

void aj_features_probe_userns(struct aj_features *f)
{
	int pfd[2], child_errno = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		f->userns = 0;
		snprintf(f->userns_why, sizeof f->userns_why, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int e = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
		(void)!write(pfd[1], &e, sizeof e);
		_exit(0);
	}
	close(pfd[1]);
	if (pid < 0 || read(pfd[0], &child_errno, sizeof child_errno) != sizeof child_errno)
		child_errno = pid < 0 ? errno : EIO;
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	f->userns = child_errno == 0;
	if (child_errno)
		aj_userns_diagnose(child_errno, f->userns_why, sizeof f->userns_why);
}

static long read_long(const char *path)
{
	_cleanup_free_ char *s = aj_read_file(path, 64, NULL);
	return s ? strtol(s, NULL, 10) : -1;
}

static bool under_seccomp_filter(void)
{
	_cleanup_free_ char *s = aj_read_file("/proc/self/status", 1 << 16, NULL);
	const char *p = s ? strstr(s, "\nSeccomp:") : NULL;
	return p && strtol(p + 9, NULL, 10) == 2;
}

static void userns_cause(int errnum, const char **cause, const char **remedy)
{
	if (read_long("/proc/sys/kernel/unprivileged_userns_clone") == 0) {
		*cause = "the sysctl kernel.unprivileged_userns_clone is 0";
		*remedy = "an administrator can set kernel.unprivileged_userns_clone=1";
	} else if (read_long("/proc/sys/user/max_user_namespaces") == 0) {
		*cause = "the sysctl user.max_user_namespaces is 0";
		*remedy = "an administrator can raise user.max_user_namespaces";
	} else if (read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1 &&
		   errnum == EACCES) {
		*cause = "AppArmor restricts unprivileged user namespaces "
			 "(kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10 and later)";
		*remedy = "install an AppArmor profile granting \"userns,\" to agentjail, or run "
			  "agentjail as root";
	} else if (errnum == ENOSPC) {
		*cause = "the per-user limit on user namespaces (user.max_user_namespaces) is used up";
		*remedy = "end other sandboxes or containers of this user, or raise the limit";
	} else if (errnum == EPERM && under_seccomp_filter()) {
		*cause = "a seccomp filter on agentjail itself refuses CLONE_NEWUSER (as Docker's and "
			 "Kubernetes' default profiles do inside containers)";
		*remedy = "run the container with a seccomp profile that allows user namespaces, or "
			  "run agentjail as root on the host";
	} else if (errnum == EINVAL) {
		*cause = "the kernel was built without user namespaces (CONFIG_USER_NS)";
		*remedy = "use a kernel with CONFIG_USER_NS, or run agentjail as root";
	} else {
		*cause = "the kernel refused unshare(CLONE_NEWUSER)";
		*remedy = "check sysctls, LSM policy and seccomp filters applied to agentjail";
	}
}

void aj_userns_diagnose(int errnum, char *buf, size_t len)
{
	const char *cause, *remedy;

	userns_cause(errnum, &cause, &remedy);
	snprintf(buf, len, "user namespaces are unavailable: %s (%s); remedy: %s", cause,
		 strerror(errnum), remedy);
}

int aj_userns_fail(struct aj_err *err, int errnum, const char *what)
{
	const char *cause, *remedy;

	userns_cause(errnum, &cause, &remedy);
	aj_err_set(err, AJ_LAYER_USERNS, errnum,
		   "the user-namespace layer cannot be set up (%s): %s", what, cause);
	return aj_err_hint(err, "%s", remedy);
}
