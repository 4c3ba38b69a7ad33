#include "sandbox/confine.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int aj_confine_writer(const char *dir, uint64_t keep, struct aj_err *err)
{
	char why[160];
	int abi = 0;
	struct aj_landlock_rule rule = {.path = dir};
	struct aj_landlock_spec spec = {.rules = &rule, .n_rules = 1};

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
	return aj_seccomp_load(aj_seccomp_default_bpf, aj_seccomp_default_len, err);
}
