/* The plan: a validated policy turned into concrete, ordered operations for this host, plus
 * the state of every enforcement layer. It is data: the sandbox child executes it, the report
 * prints it, `agentjail run --dry-run` shows it without running anything.
 *
 * Building a plan fails closed: a layer the policy needs that this host cannot enforce is an
 * error naming the layer, the probe that failed and a remedy, unless the policy's
 * allow_degraded names it (the layer is then marked "degraded" and shown as such).
 *
 * The plan borrows the policy and the features (they must outlive it) and owns everything
 * else; aj_plan_free() releases it. Descriptors in ops (tree_fd) are owned by the launcher.
 */
#ifndef AJ_POLICY_PLAN_H
#define AJ_POLICY_PLAN_H

#include <jansson.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"
#include "common/strv.h"
#include "policy/policy.h"
#include "sandbox/features.h"

enum aj_op_kind {
	AJ_OP_DIR,     /* mkdir dst in the new root */
	AJ_OP_BIND,    /* bind host src at dst */
	AJ_OP_TMPFS,   /* tmpfs at dst with opts */
	AJ_OP_SYMLINK, /* symlink dst -> src */
	AJ_OP_FILE,    /* regular file dst with content src (len bytes) */
	AJ_OP_PROC,    /* fresh procfs at dst */
	AJ_OP_DEVPTS,  /* new devpts instance at dst */
	AJ_OP_MASK,    /* hide dst: /dev/null over a file, an empty read-only tmpfs over a dir */
	AJ_OP_OVERLAY, /* the layered workspace (plan->ovl) at dst */
	AJ_OP_SEAL,    /* set the flags (RO, NODEV, NOEXEC; always NOSUID) on dst and every mount
			* below it: one call for a whole subtree of AJ_OPF_SEALED mounts */
};

#define AJ_OPF_RO (1u << 0)
#define AJ_OPF_DEV (1u << 1)         /* keep device access (device node binds) */
#define AJ_OPF_FROM_PARENT (1u << 2) /* src arrives as a detached tree made by the parent */
#define AJ_OPF_OPTIONAL (1u << 3)    /* skip when src is missing at launch */
#define AJ_OPF_MKSRC (1u << 4)       /* create src (a directory) on the host if missing */
#define AJ_OPF_NOEXEC (1u << 5)
#define AJ_OPF_SELF (1u << 6)         /* src is dst as already mounted in the new root */
#define AJ_OPF_SEALED (1u << 7)       /* flags come from a later AJ_OP_SEAL of a parent */
#define AJ_OPF_NODEV (1u << 8)        /* AJ_OP_SEAL: also nodev */
#define AJ_OPF_NOIDMAP (1u << 9)      /* from the parent, but shown with host ownership */
#define AJ_OPF_NOFOLLOW (1u << 10)    /* resolve the source without following symlinks */
#define AJ_OPF_MKFILE (1u << 11)      /* with AJ_OPF_MKSRC: the source is a file */

struct aj_op {
	int kind; /* enum aj_op_kind */
	unsigned flags;
	char *src;
	char *dst;
	char *opts;
	size_t len; /* AJ_OP_FILE: bytes of content in src (may hold NULs) */
	mode_t mode;
	uint64_t landlock; /* Landlock rights granted at dst; 0: none */
	const char *why;   /* static or owned by the plan's rootfs rules */
	int tree_fd;       /* AJ_OPF_FROM_PARENT: set by the launcher */
};

enum aj_layer_id {
	AJ_PL_USERNS = 0,
	AJ_PL_MOUNTNS,
	AJ_PL_PIDNS,
	AJ_PL_IPCNS,
	AJ_PL_UTSNS,
	AJ_PL_NETNS,
	AJ_PL_CGROUPNS,
	AJ_PL_ROOTFS,
	AJ_PL_LANDLOCK_FS,
	AJ_PL_LANDLOCK_NET,
	AJ_PL_LANDLOCK_SCOPE,
	AJ_PL_SECCOMP,
	AJ_PL_CAPS,
	AJ_PL_NNP,
	AJ_PL_SESSION,
	AJ_PL_ENV,
	AJ_PL_RLIMITS,
	AJ_PL_MEMORY,
	AJ_PL_PIDS,
	AJ_PL_CPU,
	AJ_PL_TIMEOUT,
	AJ_PL_OUTPUT,
	AJ_PL__COUNT
};

enum aj_layer_state {
	AJ_LS_ENFORCED = 0,
	AJ_LS_OFF,          /* the policy does not ask for it */
	AJ_LS_DEGRADED,     /* needed, unavailable, accepted by allow_degraded */
	AJ_LS_SUPPLEMENTAL, /* unavailable, but another layer holds the same boundary */
};

struct aj_layer_status {
	int state;
	char detail[224];
};

/* A layered workspace: overlayfs over host layer directories, mounted from inside the
 * sandbox's user namespace. */
#define AJ_OVL_MAX_LOWERS 32
struct aj_overlay {
	bool on;
	/* canonical: layers store the ids the sandbox sees (persistent sandboxes; mapped to the
	 * sandbox's host range at mount). Otherwise they store host ids (an overlay over a host
	 * directory, mapped like a bound workspace). */
	bool canonical;
	size_t n_lowers;
	char *lowers[AJ_OVL_MAX_LOWERS]; /* host paths, bottom first */
	char *rw_dir;                     /* host path holding upper/ and work/ */
	int lower_fds[AJ_OVL_MAX_LOWERS]; /* privileged: idmapped trees made by the launcher */
	int rw_fd;
};

/* What the workspace is made of, for aj_plan_build_ex(). */
struct aj_workspace_spec {
	bool persistent;             /* no command: init serves exec and file requests */
	const struct aj_strv *lowers; /* overlay layers (host dirs), bottom first; NULL: bind */
	const char *rw_dir;          /* overlay: host directory with upper/ and work/ */
	bool canonical;
};

struct aj_rlimit {
	int resource;
	uint64_t value;
};

struct aj_plan {
	struct aj_policy *policy;
	const struct aj_features *features;
	char id[33];
	/* identity: the sandbox user is uid:gid inside; it is host_uid:host_gid outside */
	bool privileged;
	uint32_t uid, gid;
	uint32_t id_base;  /* host id of inside id 0 (privileged), or the caller's id */
	uint32_t id_count; /* 65536 privileged, 1 rootless */
	uint32_t host_gid_base;
	int clone_flags;
	/* root filesystem, in execution order */
	struct aj_op *ops;
	size_t n_ops, cap_ops;
	char *rootfs_text; /* backing store for `why` strings from data/rootfs.rules */
	/* process */
	struct aj_strv argv;
	struct aj_strv env;
	char *cwd;
	struct aj_rlimit rlimits[6];
	size_t n_rlimits;
	/* landlock */
	int landlock_abi;
	uint64_t ll_fs, ll_net, ll_scope;
	/* seccomp */
	const struct sock_filter *sc_insns;
	size_t sc_len;
	struct sock_filter *sc_owned; /* when a policy relaxed groups */
	size_t sc_rules;
	/* workspace */
	bool persistent;
	char *git_dir;      /* the workspace's .git directory, checked again after the run */
	bool had_commondir; /* .git/commondir existed before the run */
	struct aj_overlay ovl;
	/* resources */
	struct aj_cgroup_limits cg_limits;
	bool use_cgroup;
	struct aj_layer_status layers[AJ_PL__COUNT];
};

/* argv is the command to run (copied). */
int aj_plan_build(struct aj_plan *plan, struct aj_policy *pol, const struct aj_features *feat,
		  char *const *argv, struct aj_err *err);
/* The same with a layered and/or persistent workspace. */
int aj_plan_build_ex(struct aj_plan *plan, struct aj_policy *pol,
		     const struct aj_features *feat, char *const *argv,
		     const struct aj_workspace_spec *ws, struct aj_err *err);
void aj_plan_free(struct aj_plan *plan);

const char *aj_plan_layer_name(int layer);
const char *aj_plan_layer_state_name(int state);

/* The plan as JSON (new reference): identity, namespaces, rootfs operations, Landlock,
 * seccomp, limits, environment variable names (never values), and the layers. */
json_t *aj_plan_to_json(const struct aj_plan *plan);
/* The human summary printed by `run -v` and `run --dry-run`. */
void aj_plan_print(const struct aj_plan *plan, FILE *f);

/* Default seccomp profile compiled at build time (build/gen/seccomp_default.c). */
extern const struct sock_filter aj_seccomp_default_bpf[];
extern const unsigned aj_seccomp_default_len;
extern const unsigned aj_seccomp_default_rules_count;
extern const char aj_seccomp_default_rules[];
extern const char aj_rootfs_rules[];

#endif
