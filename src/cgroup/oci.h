/* A container's cgroup at the path its OCI bundle names (linux.cgroupsPath), the way runc's
 * cgroupfs driver places it, because containerd's shim reads the container's cgroups itself
 * (metrics, OOM events) from the paths in /proc/PID/cgroup:
 *   v2: one directory, <cgroup2 mount><path>;
 *   v1 (legacy and hybrid hosts): <hierarchy mount><path> in every mounted v1 hierarchy but
 *       cpuset (a new cpuset cgroup starts with no CPUs; the container stays in its
 *       creator's, which is what it inherited anyway).
 * The controllers agentjail drives (memory, pids, cpu, cpuacct, freezer) go through the
 * backend's table of operations (cg); the other v1 hierarchies only hold the container.
 *
 * aj_cgroup_oci_open() only computes paths; nothing is created before _create(). The struct
 * owns the path strings of cg; aj_cgroup_oci_free() releases them.
 */
#ifndef AJ_CGROUP_OCI_H
#define AJ_CGROUP_OCI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"

#define AJ_CG_OCI_EXTRA 12

struct aj_cgroup_oci_limits {
	uint64_t memory;    /* bytes, 0: none */
	uint64_t pids;      /* 0: none */
	int64_t cpu_quota;  /* microseconds per period, <= 0: none */
	uint64_t cpu_period;
	uint64_t cpu_shares; /* 0: default */
};

struct aj_cgroup_oci {
	struct aj_cgroup_env env;
	struct aj_cgroup cg;
	char extra[AJ_CG_OCI_EXTRA][512];
	size_t n_extra;
};

/* `path` is absolute (below each hierarchy's root). */
int aj_cgroup_oci_open(struct aj_cgroup_oci *o, const char *path, struct aj_err *err);
int aj_cgroup_oci_create(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *lim,
			 struct aj_err *err);
int aj_cgroup_oci_attach(struct aj_cgroup_oci *o, pid_t pid, struct aj_err *err);
/* The host pids of every process in the container (malloc'd array). */
int aj_cgroup_oci_pids(struct aj_cgroup_oci *o, pid_t **pids, size_t *n, struct aj_err *err);
int aj_cgroup_oci_freeze(struct aj_cgroup_oci *o, bool frozen, struct aj_err *err);
bool aj_cgroup_oci_frozen(struct aj_cgroup_oci *o);
/* Kills what is left, then removes every directory (missing ones are fine). */
int aj_cgroup_oci_destroy(struct aj_cgroup_oci *o, struct aj_err *err);
void aj_cgroup_oci_free(struct aj_cgroup_oci *o);

#endif
