/* What this host's kernel and this process can enforce. Cheap probes (one syscall each) run at
 * every launch; the user namespace probe forks and runs only for `agentjail features` or to
 * explain a failure. Nothing here changes the host.
 */
#ifndef AJ_HOST_FEATURES_H
#define AJ_HOST_FEATURES_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "host/runsc.h"
#include "host/subids.h"

struct aj_features {
	uid_t uid;
	gid_t gid;
	bool privileged;      /* euid 0 with CAP_SYS_ADMIN, CAP_SETUID and CAP_SETGID */
	bool root_incapable;  /* euid 0 lacking one of those: refused, see features.c */
	int landlock_abi;     /* 0: unavailable */
	char landlock_why[160];
	bool seccomp;
	char seccomp_why[160];
	bool mount_api;       /* open_tree/move_mount/mount_setattr */
	int userns;           /* -1 not probed, 0 unavailable, 1 available */
	char userns_why[512];
	struct aj_subids subids; /* rootless: probed by aj_features_probe_all() only */
	char kernel[96];
	const struct aj_cgroup_env *cgroup;
	struct aj_runsc runsc; /* the gvisor tier's runtime: by probe_all only (the gvisor tier's
				* plan looks for it when the probes did not) */
};

/* The Landlock ABI version this kernel offers, 0 if Landlock is unavailable (why in buf). */
int aj_features_landlock_abi(char *why, size_t why_len);
/* Cheap probes. `cgroup_parent` is --cgroup-parent or NULL. */
void aj_features_probe(struct aj_features *f, const char *cgroup_parent);
/* The user namespace probe (forks a child that tries unshare(CLONE_NEWUSER)). */
void aj_features_probe_userns(struct aj_features *f);
/* Every probe, the user namespace's included: what `agentjail features` and the daemon show. */
void aj_features_probe_all(struct aj_features *f, const char *cgroup_parent);
/* Explains why creating a user namespace failed with `errnum`: the cause detected (sysctl,
 * AppArmor, seccomp filter, limit) and the remedies. */
void aj_userns_diagnose(int errnum, char *buf, size_t len);
/* Sets err for a failed user namespace creation: layer, detected cause, remedy. */
int aj_userns_fail(struct aj_err *err, int errnum, const char *what);
/* A setup step of a rootless sandbox (child `pid`) failed with EPERM or EACCES after its user
 * namespace was made: if AppArmor's restriction explains it (the sysctl is on and the child
 * carries the "unprivileged_userns" label, or its label cannot be read), err is rewritten as
 * aj_userns_fail() would. Returns -1 either way (for `return aj_userns_explain(...)`). */
int aj_userns_explain(struct aj_err *err, bool privileged, pid_t pid);
/* The probes as JSON (features_json.c; new reference); policy/plan.h's
 * aj_plan_features_json() adds the tiers for the whole document. */
json_t *aj_features_json(const struct aj_features *f, const char *version);

#endif
