#include "sandbox/confine.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/lazylib.h"
#include "common/strv.h"

#include "host/features.h"
#include "rules/seccomp.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp.h"

/* Everything but `keep` goes from every set; the bounding set first, so that
 * nothing this process execs could get the rest back. Capabilities it does not
 * hold stay unheld. */
static int keep_caps(uint64_t keep, struct aj_err *err)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];

	for (unsigned long cap = 0; cap < 64; cap++) {
		if ((keep >> cap) & 1)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break;
		/* EPERM: no CAP_SETPCAP (rootless), and then nothing to drop either. */
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return aj_err_sys(err, AJ_LAYER_CAPS, "clear ambient capabilities");
	if (syscall(SYS_capget, &hdr, data) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "capget");
	for (int i = 0; i < 2; i++) {
		uint32_t k = (uint32_t)(keep >> (32 * i));
		data[i].permitted &= k;
		data[i].effective &= k;
		data[i].inheritable = 0;
	}
	if (syscall(SYS_capset, &hdr, data) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "capset(keep 0x%llx)",
				  (unsigned long long)keep);
	return 0;
}

/* The default profile but for its "setid" group: an image's setuid and setgid files (sudo,
 * passwd, chage) keep their bits in the layer, which is mounted nosuid wherever it is used,
 * and is owned by the image's ids, which each sandbox maps to its own unprivileged range. */
static int load_filter(struct aj_err *err)
{
	struct aj_sc_profile prof;
	struct aj_strv relax = AJ_STRV_INIT;
	struct sock_filter *insns = NULL;
	size_t len = 0, skipped = 0;
	int r;

	if (aj_seccomp_parse(aj_seccomp_default_rules, &prof, err) < 0)
		return -1;
	aj_strv_push(&relax, "setid");
	r = aj_seccomp_compile(&prof, &relax, &insns, &len, &skipped, err);
	aj_strv_free(&relax);
	aj_seccomp_profile_free(&prof);
	if (r == 0)
		r = aj_seccomp_load(insns, len, err);
	free(insns);
	return r;
}

int aj_confine_writer(const char *dir, uint64_t keep, struct aj_err *err)
{
	char why[160];
	int abi = 0;
	struct aj_landlock_rule rule = {.path = dir};
	struct aj_landlock_spec spec = {.rules = &rule, .n_rules = 1};

	aj_lazylib_forbid(); /* loaded before, if this process needs it (openssl.h) */
	if (keep_caps(keep, err) < 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_NO_NEW_PRIVS)");
	abi = aj_features_landlock_abi(why, sizeof why);
	if (abi < 1)
		return aj_err_set(err, AJ_LAYER_LANDLOCK, 0, "confining a writer to \"%s\": %s",
				  dir, why),
		       aj_err_hint(err,
				   "boot a kernel with Landlock enabled (5.13+, lsm=...,landlock)");
	spec.abi = abi;
	spec.handled_fs = aj_landlock_fs_rights(abi);
	rule.access = spec.handled_fs & ~AJ_LL_FS_MAKE_BLOCK;
	if (aj_landlock_apply(&spec, err) < 0)
		return -1;
	return load_filter(err);
}
