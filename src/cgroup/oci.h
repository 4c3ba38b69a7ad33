/* A container's cgroup at the path its OCI bundle names (linux.cgroupsPath), the way runc's
 * cgroupfs driver places it, because containerd's shim reads the container's cgroups itself
 * (metrics, OOM events) from the paths in /proc/PID/cgroup:
 *   v2: one directory, <cgroup2 mount><path>;
 *   v1 (legacy and hybrid hosts): <hierarchy mount><path> in every mounted v1 hierarchy. A
 *       new cpuset cgroup starts with no CPUs and no memory nodes: each level made is given
 *       its parent's before anything joins it.
 * The controllers agentjail drives for every sandbox (memory, pids, cpu, cpuacct, freezer)
 * go through the backend's table of operations (cg); the other v1 hierarchies (cpuset,
 * devices, blkio, hugetlb, net_cls, net_prio, rdma, named ones) are kept by their
 * controllers' names.
 *
 * Every field of linux.resources is applied where this host can, or listed in `notes` with
 * the reason, or refused (an error naming the field) when the host cannot bound what the
 * bundle asks to bound (aj_cgroup_oci_create; docs/kubernetes.md has the table).
 *
 * aj_cgroup_oci_open() only computes paths; nothing is created before _create(). The struct
 * owns the path strings of cg; aj_cgroup_oci_free() releases them. struct
 * aj_cgroup_oci_limits owns its strings and arrays (aj_cgroup_oci_limits_free).
 */
#ifndef AJ_CGROUP_OCI_H
#define AJ_CGROUP_OCI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"
#include "common/strv.h"

#define AJ_CG_OCI_EXTRA 16
/* A value the bundle does not give. */
#define AJ_CG_UNSET INT64_MIN

/* An entry of linux.resources.devices (the allowlist, applied in order). */
struct aj_cgroup_oci_device {
	bool allow;
	char *type;           /* "a", "b", "c"; NULL: "a" */
	int64_t major, minor; /* AJ_CG_UNSET: any */
	char *access;         /* a subset of "rwm"; NULL: "rwm" */
};

/* A block device's weight or throttle (blockIO). */
struct aj_cgroup_oci_blkdev {
	int64_t major, minor;
	int64_t weight, leaf_weight; /* weightDevice */
	int64_t rate;                /* throttle*Device */
};

enum aj_cg_throttle {
	AJ_CG_THROTTLE_READ_BPS,
	AJ_CG_THROTTLE_WRITE_BPS,
	AJ_CG_THROTTLE_READ_IOPS,
	AJ_CG_THROTTLE_WRITE_IOPS,
	AJ_CG_THROTTLE__COUNT
};

struct aj_cgroup_oci_huge {
	char *size; /* "2MB", "1GB" */
	int64_t limit;
};

struct aj_cgroup_oci_prio {
	char *name; /* an interface */
	int64_t prio;
};

/* linux.resources; every number AJ_CG_UNSET until the bundle gives it. */
struct aj_cgroup_oci_limits {
	int64_t memory, reservation, swap, swappiness, kernel, kernel_tcp;
	bool disable_oom;
	int64_t pids;
	int64_t cpu_shares, cpu_quota, cpu_period, cpu_burst, rt_runtime, rt_period, cpu_idle;
	char *cpus, *mems;
	struct aj_cgroup_oci_device *devices;
	size_t n_devices;
	int64_t blkio_weight, blkio_leaf_weight;
	struct aj_cgroup_oci_blkdev *weight_dev;
	size_t n_weight_dev;
	struct aj_cgroup_oci_blkdev *throttle[AJ_CG_THROTTLE__COUNT];
	size_t n_throttle[AJ_CG_THROTTLE__COUNT];
	struct aj_cgroup_oci_huge *huge;
	size_t n_huge;
	int64_t net_classid;
	struct aj_cgroup_oci_prio *prio;
	size_t n_prio;
	struct aj_strv unified; /* "file=value" (linux.resources.unified) */
	bool rdma;              /* linux.resources.rdma asks limits */
};

void aj_cgroup_oci_limits_init(struct aj_cgroup_oci_limits *l);
void aj_cgroup_oci_limits_free(struct aj_cgroup_oci_limits *l);
/* Whether a value was given (not AJ_CG_UNSET). */
static inline bool aj_cg_set(int64_t v)
{
	return v != AJ_CG_UNSET;
}

/* One v1 hierarchy agentjail does not drive itself: the container's directory in it, the
 * hierarchy's mount and its controllers ("cpuset", "net_cls,net_prio", "name=systemd"). */
struct aj_cgroup_oci_hier {
	char dir[512];
	size_t mnt_len; /* dir[0..mnt_len) is the mount */
	char ctl[160];
};

struct aj_cgroup_oci {
	struct aj_cgroup_env env;
	struct aj_cgroup cg;
	struct aj_cgroup_oci_hier extra[AJ_CG_OCI_EXTRA];
	size_t n_extra;
	size_t rel_len;      /* length of the path below each hierarchy's root */
	struct aj_strv made; /* the directories _create made, in the order made */
};

/* `path` is absolute (below each hierarchy's root). */
int aj_cgroup_oci_open(struct aj_cgroup_oci *o, const char *path, struct aj_err *err);
/* Makes the directories and applies lim; what is not applied goes to notes
 * ("linux.resources.memory.kernel: not applied: ..."). A directory that already holds
 * processes is refused (EBUSY): it is someone else's, and a container's cgroup is its own. */
int aj_cgroup_oci_create(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *lim,
			 struct aj_strv *notes, struct aj_err *err);
int aj_cgroup_oci_attach(struct aj_cgroup_oci *o, pid_t pid, struct aj_err *err);
/* The directory whose cgroup.procs lists every process of the container (NULL if none). */
const char *aj_cgroup_oci_procs_dir(const struct aj_cgroup_oci *o);
/* The host pids of every process in the container (malloc'd array). */
int aj_cgroup_oci_pids(struct aj_cgroup_oci *o, pid_t **pids, size_t *n, struct aj_err *err);
int aj_cgroup_oci_freeze(struct aj_cgroup_oci *o, bool frozen, struct aj_err *err);
bool aj_cgroup_oci_frozen(struct aj_cgroup_oci *o);
/* Kills what is left, then removes every directory (missing ones are fine). */
int aj_cgroup_oci_destroy(struct aj_cgroup_oci *o, struct aj_err *err);
/* After a create that failed (its processes already ended by their creator): removes the
 * directories _create made, deepest first, and nothing else; kills nothing. */
void aj_cgroup_oci_undo(struct aj_cgroup_oci *o);
void aj_cgroup_oci_free(struct aj_cgroup_oci *o);

/* oci_limits.c, for aj_cgroup_oci_create: the directory of the hierarchy with controller
 * `ctl` (v1), NULL if none is mounted; the limits of each mode. */
const char *aj_cgroup_oci_dir(const struct aj_cgroup_oci *o, const char *ctl);
int aj_cgroup_oci_v1_limits(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
			    struct aj_strv *notes, struct aj_err *err);
int aj_cgroup_oci_v2_limits(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
			    struct aj_strv *notes, struct aj_err *err);

#endif
