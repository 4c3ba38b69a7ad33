/* Helpers shared by the files of this module that build a plan (plan.c, plan_rootfs.c,
 * plan_net.c, plan_tier.c). Not for other modules: the pieces another plan builder (the OCI
 * bundle's, src/oci/plan_oci.c) uses are in plan.h. */
#ifndef AJ_POLICY_PLAN_INTERNAL_H
#define AJ_POLICY_PLAN_INTERNAL_H

#include <stdio.h>

#include "policy/plan.h"

/* A layer the policy needs is unavailable: degraded if allow_degraded names `name` (or
 * `group`), otherwise an error in err_layer with the probe and the remedy. */
int aj_plan_need(struct aj_plan *p, int layer, const char *name, const char *group,
		 enum aj_layer err_layer, const char *probe, const char *remedy,
		 struct aj_err *err);
/* Pieces of the root filesystem both kinds of root have (plan_rootfs.c): a file with the
 * given content (taken over), the minimal /dev, a fresh /proc with its masks, and the
 * workspace, the grants and the masks of the policy. */
struct aj_op *aj_plan_add_file(struct aj_plan *p, const char *dst, char *content, size_t len,
			       const char *why);
void aj_plan_dev_tree(struct aj_plan *p);
void aj_plan_procfs(struct aj_plan *p);
int aj_plan_user_binds(struct aj_plan *p, struct aj_err *err);
/* plan_image.c: an image root's user (before the setup), operations, and process defaults
 * (the command, the working directory, the environment it starts from). */
int aj_plan_image_user(struct aj_plan *p, struct aj_err *err);
int aj_plan_image_rootfs(struct aj_plan *p, struct aj_err *err);
int aj_plan_image_command(struct aj_plan *p, char *const *argv, struct aj_err *err);
void aj_plan_image_env(struct aj_plan *p);
int aj_plan_rootfs(struct aj_plan *p, struct aj_err *err);
/* Adds a resource limit, lowered to the host's hard limit (raising it needs privilege). */
void aj_plan_add_rlimit(struct aj_plan *p, int resource, uint64_t value);
/* data/rootfs.rules into p->rootfs_text: NUL-separated "KIND PATH -- WHY" lines. */
void aj_plan_load_rules(struct aj_plan *p);
/* What the two tiers build differently: one table each, chosen once per plan from the
 * policy's tier (aj_plan_tier_of()), called by the shared sections of aj_plan_build_ex()
 * and aj_plan_base_layers() in place of branches on the tier. The namespaces tier's is in
 * plan_namespaces.c, the landlock tier's in plan_tier.c. */
struct aj_plan_tier {
	const char *name; /* the policy's and the plan's name of the tier */
	/* Whether the tier can run here with the default policy; why not, or what it then
	 * enforces (`agentjail features`). */
	bool (*usable)(const struct aj_features *f, char *detail, size_t len);
	/* Who the sandbox runs as: the identity fields and the user-namespace layer. */
	int (*identity)(struct aj_plan *p, struct aj_err *err);
	/* The namespaces and the filesystem (mounts, or Landlock rules on host paths). */
	int (*setup)(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err);
	/* After the process and environment every tier has: what the tier adds to them. */
	int (*process)(struct aj_plan *p, struct aj_err *err);
	/* The Landlock layers, and the seccomp program. */
	int (*landlock)(struct aj_plan *p, struct aj_err *err);
	int (*seccomp)(struct aj_plan *p, struct aj_err *err);
	/* A memory limit without a usable memory cgroup: the remedy offered, and (once
	 * allow_degraded accepted it) what stands in. */
	const char *memory_remedy;
	void (*memory_degraded)(struct aj_plan *p);
	/* A pids limit without a usable pids cgroup: what stands in, or the error. */
	int (*pids_without_cgroup)(struct aj_plan *p, struct aj_err *err);
	/* The plan's seccomp profile name (plan JSON), and the first line of the summary. */
	const char *(*seccomp_profile)(const struct aj_plan *p);
	void (*print_header)(const struct aj_plan *p, FILE *f);
	/* Last, once every section is built: what the tier makes of the whole plan (the gvisor
	 * tier's OCI bundle). NULL: nothing. */
	int (*finish)(struct aj_plan *p, struct aj_err *err);
};
/* The table of `tier` (enum aj_tier). */
const struct aj_plan_tier *aj_plan_tier_of(enum aj_tier tier);
extern const struct aj_plan_tier aj_plan_namespaces_tier, aj_plan_landlock_tier,
	aj_plan_gvisor_tier;
/* plan_gvisor_spec.c: the gvisor tier's config.json for runsc (p->gv_spec). */
int aj_plan_gvisor_spec(struct aj_plan *p, struct aj_err *err);
/* plan_json.c: capability names of a set (1 << CAP_x), as a JSON array (new reference). */
json_t *aj_plan_caps_json(uint64_t keep);
/* plan_net.c: the CA files of network.mode "proxy" with credentials (called by
 * aj_plan_rootfs before /etc is sealed), and the proxy's environment, placeholders and
 * layer (after the environment is built). */
void aj_plan_egress_files(struct aj_plan *p);
int aj_plan_network(struct aj_plan *p, struct aj_err *err);

#endif
