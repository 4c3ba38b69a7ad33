#include "sandbox/caps.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int aj_caps_lock_and_bound(uint64_t keep, struct aj_err *err)
{
	unsigned long locks = SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
			      SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
			      SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	/* Keeping capabilities for uid 0 (an image's root): exec as uid 0 gets the bounding
	 * set again, and a switch to another uid drops them, as on any Linux system; both
	 * bits locked in that state. Otherwise uid 0 gains nothing through exec. */
	unsigned long bits = keep ? locks : locks | SECBIT_NOROOT | SECBIT_NO_SETUID_FIXUP;

	if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "prctl(PR_SET_SECUREBITS)");
	return aj_caps_bound(keep, err);
}

int aj_caps_bound(uint64_t keep, struct aj_err *err)
{
	/* Walk up until the kernel says the capability does not exist, so that capabilities
	 * newer than our headers are dropped too. */
	for (unsigned long cap = 0; cap < 64; cap++) {
		if ((keep >> cap) & 1)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL)
			break;
		return aj_err_sys(err, AJ_LAYER_CAPS, "drop capability %lu from the bounding set",
				  cap);
	}
	return 0;
}

int aj_caps_switch_user(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
			struct aj_err *err)
{
	/* Keep the permitted set through the switch away from uid 0; execve clears the flag. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "prctl(PR_SET_KEEPCAPS)");
	if (setgroups(n_groups, groups) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "setgroups(%zu groups)", n_groups);
	if (setresgid(gid, gid, gid) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "setresgid(%u)", (unsigned)gid);
	if (setresuid(uid, uid, uid) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "setresuid(%u)", (unsigned)uid);
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "prctl(PR_SET_KEEPCAPS, 0)");
	return 0;
}

int aj_caps_set(uint64_t effective, uint64_t permitted, uint64_t inheritable,
		struct aj_err *err)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];

	for (int i = 0; i < 2; i++) {
		data[i].effective = (uint32_t)(effective >> (32 * i));
		data[i].permitted = (uint32_t)(permitted >> (32 * i));
		data[i].inheritable = (uint32_t)(inheritable >> (32 * i));
	}
	if (syscall(SYS_capset, &hdr, data) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS,
				  "capset(effective 0x%llx, permitted 0x%llx, inheritable 0x%llx)",
				  (unsigned long long)effective, (unsigned long long)permitted,
				  (unsigned long long)inheritable);
	return 0;
}

int aj_caps_ambient(uint64_t ambient, struct aj_err *err)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return aj_err_sys(err, AJ_LAYER_CAPS, "clear ambient capabilities");
	for (unsigned long cap = 0; cap < 64; cap++)
		if (((ambient >> cap) & 1) &&
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
			return aj_err_sys(err, AJ_LAYER_CAPS, "raise ambient capability %lu", cap);
	return 0;
}

int aj_caps_become_user(uid_t uid, gid_t gid, bool set_groups, uint64_t keep,
			struct aj_err *err)
{
	if (set_groups && setgroups(0, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "setgroups([])");
	if (setresgid(gid, gid, gid) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "setresgid(%u)", (unsigned)gid);
	if (setresuid(uid, uid, uid) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "setresuid(%u)", (unsigned)uid);
	return keep && uid == 0 ? aj_caps_keep(keep, err) : aj_caps_drop_all(err);
}

int aj_caps_keep(uint64_t keep, struct aj_err *err)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};

	for (int i = 0; i < 2; i++)
		data[i].permitted = data[i].effective = (uint32_t)(keep >> (32 * i));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return aj_err_sys(err, AJ_LAYER_CAPS, "clear ambient capabilities");
	if (syscall(SYS_capset, &hdr, data) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "capset(keep 0x%llx)",
				  (unsigned long long)keep);
	return 0;
}

int aj_caps_drop_all(struct aj_err *err)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return aj_err_sys(err, AJ_LAYER_CAPS, "clear ambient capabilities");
	if (syscall(SYS_capset, &hdr, data) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "capset(all empty)");
	return 0;
}
