#include "host/features.h"

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

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)

int aj_features_landlock_abi(char *why, size_t why_len)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);

	if (abi >= 1)
		return (int)abi;
	if (errno == ENOSYS)
		snprintf(why, why_len, "landlock_create_ruleset: ENOSYS (kernel older than 5.13 or "
					"built without CONFIG_SECURITY_LANDLOCK)");
	else if (errno == EOPNOTSUPP)
		snprintf(why, why_len, "landlock_create_ruleset: EOPNOTSUPP (Landlock is built in but "
					"not enabled: add landlock to the kernel's lsm= boot option)");
	else
		snprintf(why, why_len, "landlock_create_ruleset: %s", strerror(errno));
	return 0;
}

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
	f->landlock_abi = aj_features_landlock_abi(f->landlock_why, sizeof f->landlock_why);
	probe_seccomp(f);
	probe_mount_api(f);
	if (uname(&u) == 0)
		snprintf(f->kernel, sizeof f->kernel, "%s %s", u.sysname, u.release);
	f->cgroup = aj_cgroup_detect(NULL, cgroup_parent);
}

void aj_features_probe_userns(struct aj_features *f)
{
	int pfd[2], child_errno = 0;
	_cleanup_close_ int rd = -1, wr = -1;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		f->userns = 0;
		snprintf(f->userns_why, sizeof f->userns_why, "pipe: %s", strerror(errno));
		return;
	}
	rd = pfd[0];
	wr = pfd[1];
	pid = fork();
	if (pid == 0) {
		int e = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
		(void)!write(wr, &e, sizeof e);
		_exit(0);
	}
	aj_close_fd(&wr); /* the child's end only: a child that died gives end-of-file */
	if (pid < 0 || read(rd, &child_errno, sizeof child_errno) != sizeof child_errno)
		child_errno = pid < 0 ? errno : EIO;
	if (pid > 0)
		waitpid(pid, NULL, 0);
	f->userns = child_errno == 0;
	if (child_errno)
		aj_userns_diagnose(child_errno, f->userns_why, sizeof f->userns_why);
}

void aj_features_probe_all(struct aj_features *f, const char *cgroup_parent)
{
	aj_features_probe(f, cgroup_parent);
	aj_features_probe_userns(f);
	aj_subids_probe(&f->subids);
	aj_runsc_find(&f->runsc);
	aj_runsc_probe_version(&f->runsc);
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

static bool apparmor_restricts(void)
{
	return read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1;
}

/* What the kernel's refusal (errnum, from unshare or clone with CLONE_NEWUSER) most likely
 * means on this host, checked from the most specific probe to the least. */
static void userns_cause(int errnum, const char **cause, const char **remedy)
{
	bool filtered = under_seccomp_filter();

	if (errnum == EUSERS) {
		*cause = "the kernel's limit of 32 nested user namespaces is reached";
		*remedy = "run agentjail fewer container levels deep";
	} else if (read_long("/proc/sys/kernel/unprivileged_userns_clone") == 0) {
		*cause = "the sysctl kernel.unprivileged_userns_clone is 0";
		*remedy = "an administrator can run sysctl -w kernel.unprivileged_userns_clone=1";
	} else if (read_long("/proc/sys/user/max_user_namespaces") == 0) {
		*cause = "the sysctl user.max_user_namespaces is 0";
		*remedy = "an administrator can run sysctl -w user.max_user_namespaces=15000";
	} else if (apparmor_restricts() && (errnum == EACCES || (errnum == EPERM && !filtered))) {
		*cause = "AppArmor restricts unprivileged user namespaces "
			 "(kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10 and later)";
		*remedy = "an administrator can install an AppArmor profile allowing \"userns,\" "
			  "for agentjail (docs/cli.md, \"Hosts without user namespaces\")";
	} else if (errnum == ENOSPC) {
		*cause = "the per-user limit on user namespaces (user.max_user_namespaces) is used up";
		*remedy = "end other sandboxes or containers of this user, or raise the limit";
	} else if (errnum == EPERM && filtered) {
		*cause = "a seccomp filter on agentjail itself refuses CLONE_NEWUSER (as Docker's and "
			 "Kubernetes' default profiles do inside containers)";
		*remedy = "run the container with a seccomp profile that allows user namespaces";
	} else if (errnum == EINVAL) {
		*cause = "the kernel was built without user namespaces (CONFIG_USER_NS)";
		*remedy = "use a kernel with CONFIG_USER_NS";
	} else {
		*cause = "the kernel refused unshare(CLONE_NEWUSER)";
		*remedy = "check sysctls, LSM policy, seccomp filters and chroots applied to agentjail";
	}
}

/* Every cause has two more ways out: running as root, or the tier that needs no namespace. */
#define TIER_REMEDY                                                                             \
	"; or run with --tier landlock (no namespaces: weaker, docs/threat-model.md says what it " \
	"loses), or run agentjail as root"

void aj_userns_diagnose(int errnum, char *buf, size_t len)
{
	const char *cause, *remedy;

	userns_cause(errnum, &cause, &remedy);
	snprintf(buf, len, "user namespaces are unavailable: %s (%s); remedy: %s" TIER_REMEDY,
		 cause, strerror(errnum), remedy);
}

int aj_userns_fail(struct aj_err *err, int errnum, const char *what)
{
	const char *cause, *remedy;

	userns_cause(errnum, &cause, &remedy);
	aj_err_set(err, AJ_LAYER_USERNS, errnum,
		   "the user-namespace layer cannot be set up (%s): %s", what, cause);
	return aj_err_hint(err, "%s" TIER_REMEDY, remedy);
}

/* Under the restriction, a process that makes a user namespace is moved to the
 * "unprivileged_userns" profile. When the label cannot be read, the sysctl alone decides. */
static bool apparmor_label_restricted(pid_t pid)
{
	char path[64];
	_cleanup_free_ char *label = NULL;

	snprintf(path, sizeof path, "/proc/%d/attr/apparmor/current", (int)pid);
	label = aj_read_file(path, 4096, NULL);
	if (!label) {
		snprintf(path, sizeof path, "/proc/%d/attr/current", (int)pid);
		label = aj_read_file(path, 4096, NULL);
	}
	return !label || strstr(label, "unprivileged_userns") != NULL;
}

/* With AppArmor's restriction the namespace is created, but every capability in it is
 * refused: the failure surfaces later, as a mount or an unshare that says only EPERM. */
int aj_userns_explain(struct aj_err *err, bool privileged, pid_t pid)
{
	char what[sizeof err->msg];
	bool setup_layer = err->layer == AJ_LAYER_USERNS || err->layer == AJ_LAYER_NS ||
			   err->layer == AJ_LAYER_MOUNT || err->layer == AJ_LAYER_NET ||
			   err->layer == AJ_LAYER_CAPS;

	if (privileged || !setup_layer || (err->errnum != EPERM && err->errnum != EACCES) ||
	    !apparmor_restricts() || !apparmor_label_restricted(pid))
		return -1;
	snprintf(what, sizeof what, "%s", err->msg);
	return aj_userns_fail(err, EACCES, what);
}
