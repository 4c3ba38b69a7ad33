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
#include "host/features.h"
#include "host/subids.h"
#include "policy/policy.h"

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
	AJ_OP_ALLOW,   /* landlock tier: a Landlock rule granting `landlock` beneath the host path
			* dst; nothing is mounted */
	AJ_OP_DENY,    /* landlock tier: dst is masked, i.e. lies outside every granted tree (a
			* record for the plan; Landlock denies by having no rule) */
	AJ_OP_MOUNT,   /* OCI bundles: a filesystem of type mtype from src at dst, with the MS_*
			* flags in mflags and the data in opts */
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
#define AJ_OPF_CANONICAL (1u << 12)   /* from the parent, idmapped through the whole range: disk
				       * ids 0-65535 appear as the sandbox's own (OCI rootfs, volumes) */
#define AJ_OPF_OWNED (1u << 14)       /* AJ_OP_DIR: made owned by the sandbox user if missing */
#define AJ_OPF_SAFE_DST (1u << 15)    /* dst may lie in a tree the sandbox wrote: its mount
				       * point is made without following links */
#define AJ_OPF_HIDE_SRC (1u << 16)    /* AJ_OP_BIND, read-only: shown as an overlay of the source,
				       * so that the mount table does not name its host path */
#define AJ_OPF_OVER (1u << 13)        /* AJ_OP_FILE in an image root: written apart and bound
				       * over dst, so that the image's own file stays as it was */

struct aj_op {
	enum aj_op_kind kind;
	unsigned flags;
	char *src;
	char *dst;
	char *opts;
	size_t len; /* AJ_OP_FILE: bytes of content in src (may hold NULs) */
	mode_t mode;
	uint64_t landlock; /* Landlock rights granted at dst; 0: none */
	const char *why;   /* static or owned by the plan's rootfs rules */
	int tree_fd;       /* AJ_OPF_FROM_PARENT: set by the launcher */
	const char *mtype;    /* AJ_OP_MOUNT: filesystem type (static string) */
	unsigned long mflags; /* AJ_OP_MOUNT: MS_* flags */
	unsigned long mprop;  /* AJ_OP_MOUNT and an OCI bundle's binds: MS_SHARED, MS_SLAVE,
			       * MS_UNBINDABLE (with MS_REC), within the sandbox's own mount
			       * namespace; 0: private */
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
	AJ_PL_DISK,
	AJ_PL_EGRESS,
	AJ_PL__COUNT
};

enum aj_layer_state {
	AJ_LS_ENFORCED = 0,
	AJ_LS_OFF,          /* the policy does not ask for it */
	AJ_LS_DEGRADED,     /* needed, unavailable, accepted by allow_degraded */
	AJ_LS_SUPPLEMENTAL, /* unavailable, but another layer holds the same boundary */
	AJ_LS_ABSENT,       /* not part of the plan's tier (landlock tier: the namespaces); the
			     * detail says what holds its boundary instead, and what is lost */
};

struct aj_layer_status {
	enum aj_layer_state state;
	char detail[224];
};

/* A layered workspace: overlayfs over host layer directories, mounted from inside the
 * sandbox's user namespace. */
#define AJ_OVL_MAX_LOWERS 128
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

/* An image root (docs/images.md): the image's layers under the sandbox's own system layer,
 * and the image's process defaults. Borrowed by the plan, like the policy. */
struct aj_root_spec {
	const struct aj_strv *lowers; /* the image's layer directories, bottom first */
	const char *rw_dir;           /* the system layer: a host directory with upper/, work/ */
	const struct aj_strv *env;    /* the image config's Env */
	const struct aj_strv *entrypoint, *cmd;
	const char *user;    /* the config's User; "" or NULL: root */
	const char *workdir; /* the config's WorkingDir; "" or NULL: none */
	const char *name, *digest; /* shown in the plan and the report */
	/* Rootless: the layers were unpacked with the caller's subordinate ids (host/subids.h),
	 * which the sandbox must map as they were; else with every file the caller's, which
	 * flattens the image's owners when `flattened` (files of ids other than 0). */
	const struct aj_subids *subids;
	bool flattened;
	const char *ids_why; /* rootless, without subids: why not */
};

/* The content of `rel` ("etc/passwd") as the root would show it: the system layer's when
 * r->rw_dir is set, else the topmost layer's that has it (whiteouts and opaque directories
 * heeded); a regular file only, at most 1 MiB; NULL when absent. The caller frees. */
char *aj_root_file(const struct aj_root_spec *r, const char *rel);

/* What the sandbox is made of, for aj_plan_build_ex(). */
struct aj_workspace_spec {
	bool persistent;             /* no command: init serves exec and file requests */
	const struct aj_strv *lowers; /* overlay layers (host dirs), bottom first; NULL: bind */
	const char *rw_dir;          /* overlay: host directory with upper/ and work/ */
	bool canonical;
	const struct aj_root_spec *root; /* NULL: the root is made of the host's system dirs */
	/* An image build step (agentjail build): the image root alone, no workspace mounted,
	 * so that nothing but what the step writes lands in its system layer. */
	bool no_workspace;
	/* filesystem.volumes' sources on the host, in order: a volume's data directory
	 * (storage/volumes.h), a host directory as given. NULL: the policy has none. */
	const struct aj_strv *volume_dirs;
};

struct aj_rlimit {
	int resource;
	uint64_t value;
};

/* network.mode "proxy": the port the supervisor's proxy listens on, on the sandbox's own
 * loopback (a private network namespace: any fixed port is free there). */
#define AJ_EGRESS_PORT 3128
#define AJ_EGRESS_BUNDLE "/etc/agentjail/ca-bundle.crt"
#define AJ_EGRESS_CA_FILE "/etc/agentjail/egress-ca.crt"
#define AJ_DISTRO_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct aj_plan_egress {
	bool on;
	uint16_t port;
	/* Credentials: the supervisor makes a per-sandbox CA at launch and fills these two
	 * AJ_OP_FILE operations (src/egress/ca.c); SIZE_MAX when there is none. */
	size_t bundle_op; /* the host's trusted CAs + the sandbox CA */
	size_t ca_op;     /* the sandbox CA alone (NODE_EXTRA_CA_CERTS) */
	struct aj_strv placeholders; /* "NAME=value" per credential, in policy order */
	/* The owner's directory of the secret store (src/state/secrets.h), where the proxy reads
	 * the credentials "from_secret"; set by whoever runs the plan (NULL: none here). */
	char *secret_dir;
};

struct aj_plan {
	struct aj_policy *policy;
	const struct aj_features *features;
	char id[33];
	enum aj_tier tier; /* from the policy */
	/* identity: the sandbox user is uid:gid inside; it is host_uid:host_gid outside */
	bool privileged;
	/* Rootless on an image with subordinate ids (host/subids.h): inside 0 is the caller,
	 * 1-65535 the image's subordinate ids, mapped by newuidmap and newgidmap. */
	bool subids;
	uint32_t uid, gid;
	gid_t groups[32]; /* supplementary groups (an image user's, from its /etc/group) */
	size_t n_groups;
	char *user_name, *home, *shell; /* the policy's user, or the image's */
	char *image_passwd, *image_group; /* an image's passwd and group with the user added */
	uint32_t id_base;  /* host id of inside id 0 (privileged), or the caller's id */
	uint32_t id_count; /* 65536 privileged, 1 rootless */
	uint32_t host_gid_base;
	int clone_flags;
	/* Set by the namespaces tier's launcher (sandbox/launch.c): the child is cloned without
	 * CLONE_NEWNET and joins the network namespace the supervisor makes meanwhile. */
	bool netns_later;
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
	/* the sandbox's child hands the supervisor a socket of its network namespace: the way in
	 * of published ports and port-forward (a network namespace of its own, and published
	 * ports or a persistent sandbox) */
	bool inbound;
	char *git_dir;      /* the workspace's .git directory, checked again after the run */
	char *disk_dir;     /* limits.disk enforced: the quota directory of the writable layers */
	struct aj_strv volume_dirs; /* aj_workspace_spec's, copied */
	bool had_commondir; /* .git/commondir existed before the run */
	struct aj_overlay ovl;
	/* an image root: the overlay of the image's layers and the system layer, mounted as / */
	const struct aj_root_spec *image;
	struct aj_overlay root;
	/* The child holding the user namespace of the idmapped trees' last owner map, killed
	 * once its namespace was opened and reaped with the trees (aj_userns_close_trees()):
	 * it dies while the sandbox is cloned. 0: none. */
	pid_t idmap_holder;
	uint64_t caps_keep; /* capabilities uid 0 inside keeps (1 << CAP_x); 0: none held */
	/* An image root with ids to switch between (privileged, or rootless as root): init is
	 * uid 0 with caps_keep and starts each command as its user (uid, gid, groups). */
	bool init_root;
	bool no_workspace; /* struct aj_workspace_spec's */
	/* resources */
	struct aj_cgroup_limits cg_limits;
	bool use_cgroup;
	struct aj_layer_status layers[AJ_PL__COUNT];
	struct aj_plan_egress egress;
	/* landlock tier: host directory made at launch for HOME and TMPDIR, removed after */
	char *scratch;
	/* gvisor tier: runsc's path, and the OCI runtime spec (config.json) it runs the command
	 * from; stdio handed to the sandbox is always a pipe of agentjail's, never the caller's
	 * descriptor (runsc changes the owner of its stdio). */
	char *gv_runsc, *gv_spec;
	/* a persistent sandbox's init inside the Sentry: the dynamic loader that starts it
	 * (under AJ_GV_LIB_DIR) */
	char *gv_loader;
	bool pipes_only;
};
/* The gvisor tier's init inside the Sentry, in the sandbox's root (persistent sandboxes):
 * agentjail's binary, the host's dynamic loader and the libraries it needs, read-only on a
 * tmpfs of their own (beside the overlay's attach points of a host root, /.agentjail/l0...). */
#define AJ_GV_INIT_DIR "/.agentjail/gvisor"
#define AJ_GV_INIT "/.agentjail/gvisor/init"
#define AJ_GV_LIB_DIR "/.agentjail/gvisor/lib"

/* argv is the command to run (copied). */
/* Whether the sandbox maps ids 0-65535 (privileged, or rootless with subordinate ids), so
 * that its users and groups can change; else one id each way. */
static inline bool aj_plan_maps_range(const struct aj_plan *p)
{
	return p->privileged || p->subids;
}

int aj_plan_build(struct aj_plan *plan, struct aj_policy *pol, const struct aj_features *feat,
		  char *const *argv, struct aj_err *err);
/* The same with a layered and/or persistent workspace. */
int aj_plan_build_ex(struct aj_plan *plan, struct aj_policy *pol,
		     const struct aj_features *feat, char *const *argv,
		     const struct aj_workspace_spec *ws, struct aj_err *err);
void aj_plan_free(struct aj_plan *plan);
/* For plans built outside the host-rootfs builder (src/oci/): with p zeroed and p->policy and
 * p->features set, decides the identity, Landlock and seccomp layers as every plan does. The
 * caller adds the namespaces, operations, process and resources. */
int aj_plan_base_layers(struct aj_plan *p, struct aj_err *err);
/* network.mode "proxy" with credentials: the contents of the CA files the plan reserved
 * (egress/egress.h's aj_egress_ca_files()), taken over. */
void aj_plan_egress_ca(struct aj_plan *p, char *bundle, size_t bundle_len, char *ca, size_t ca_len);
/* Whether the sandbox writes into a host directory: the workspace bound (or overlaid, for
 * changes applied later) read-write, or a read-write grant. */
bool aj_plan_writes_host(const struct aj_plan *p);
/* Sets a layer's state and detail (the detail is formatted and truncated to fit). */
void aj_plan_set_layer(struct aj_plan *p, int layer, int state, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Appends an operation (dst and src are copied). NULL on allocation failure. */
__attribute__((returns_nonnull)) struct aj_op *
aj_plan_add_op(struct aj_plan *p, enum aj_op_kind kind, const char *dst, const char *src,
			     unsigned flags, uint64_t landlock, const char *why);

/* One row of the comparison between the tiers, for `agentjail features` (plan_tier.c). */
struct aj_tier_row {
	enum aj_layer_id layer;
	const char *namespaces; /* what the namespaces tier does */
	const char *landlock;   /* what the landlock tier does instead, or what it loses */
};
/* The comparison, one row per layer the tiers differ in; *n rows. */
const struct aj_tier_row *aj_plan_tier_rows(size_t *n);
const char *aj_plan_tier_name(int tier);
/* Whether `tier` can run here with the default policy; why not, or what it then enforces. */
bool aj_plan_tier_usable(const struct aj_features *f, int tier, char *detail, size_t len);
/* The one document of `agentjail features --json` and GET /v1/features: the probes
 * (aj_features_json()) and both tiers' usability with the comparison, layer by layer
 * (plan_json.c; new reference). */
json_t *aj_plan_features_json(const struct aj_features *f, const char *version);

const char *aj_plan_layer_name(int layer);
const char *aj_plan_layer_state_name(int state);

/* The plan as JSON (new reference): identity, namespaces, rootfs operations, Landlock,
 * seccomp, limits, environment variable names (never values), and the layers. */
json_t *aj_plan_to_json(const struct aj_plan *plan);
/* The gvisor tier's part of the plan's JSON: runsc, its platform, and layer by layer what
 * gVisor enforces, what agentjail does around it and what the host kernel still sees
 * (plan_gvisor_spec.c; new reference). */
json_t *aj_plan_gvisor_json(const struct aj_plan *plan);
/* The human summary printed by `run -v` and `run --dry-run`. */
void aj_plan_print(const struct aj_plan *plan, FILE *f);

/* What the root filesystem is made of (data/rootfs.rules, embedded at build time). */
extern const char aj_rootfs_rules[];

#endif
