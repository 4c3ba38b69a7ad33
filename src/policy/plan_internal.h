/* Helpers shared by the files of this module that build a plan (plan.c, plan_rootfs.c,
 * plan_net.c, plan_tier.c). Not for other modules: the pieces another plan builder (the OCI
 * bundle's, src/oci/plan_oci.c) uses are in plan.h. */
#ifndef AJ_POLICY_PLAN_INTERNAL_H
#define AJ_POLICY_PLAN_INTERNAL_H

#include "policy/plan.h"

/* A layer the policy needs is unavailable: degraded if allow_degraded names `name` (or
 * `group`), otherwise an error in err_layer with the probe and the remedy. */
int aj_plan_need(struct aj_plan *p, int layer, const char *name, const char *group,
		 enum aj_layer err_layer, const char *probe, const char *remedy,
		 struct aj_err *err);
int aj_plan_rootfs(struct aj_plan *p, struct aj_err *err);
/* Adds a resource limit, lowered to the host's hard limit (raising it needs privilege). */
void aj_plan_add_rlimit(struct aj_plan *p, int resource, uint64_t value);
/* data/rootfs.rules into p->rootfs_text: NUL-separated "KIND PATH -- WHY" lines. */
int aj_plan_load_rules(struct aj_plan *p, struct aj_err *err);
/* plan_tier.c: the landlock tier's parts of the plan, called by aj_plan_build_ex in place of
 * (or after) the namespaces tier's. */
int aj_plan_tier_identity(struct aj_plan *p, struct aj_err *err);
int aj_plan_tier_setup(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err);
int aj_plan_tier_process(struct aj_plan *p, struct aj_err *err);
int aj_plan_tier_landlock(struct aj_plan *p, struct aj_err *err);
int aj_plan_tier_seccomp(struct aj_plan *p, struct aj_err *err);
/* A memory limit without a memory cgroup, accepted as degraded: RLIMIT_AS stands in. */
void aj_plan_tier_memory(struct aj_plan *p);
/* A pids limit without a pids cgroup: RLIMIT_NPROC counts the caller's uid, not the sandbox. */
int aj_plan_tier_pids(struct aj_plan *p, struct aj_err *err);
/* plan_net.c: the CA files of network.mode "proxy" with credentials (called by
 * aj_plan_rootfs before /etc is sealed), and the proxy's environment, placeholders and
 * layer (after the environment is built). */
int aj_plan_egress_files(struct aj_plan *p, struct aj_err *err);
int aj_plan_network(struct aj_plan *p, struct aj_err *err);

#endif
