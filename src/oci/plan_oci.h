/* An OCI bundle turned into an agentjail plan: the bundle's rootfs, mounts, namespaces,
 * process and resources, with agentjail's layers on top (Landlock on the root filesystem,
 * its seccomp deny list stacked with the bundle's profile, every capability dropped, the
 * container's ids mapped to an unprivileged host range of its own).
 *
 * Annotations that relax agentjail's layers (docs/kubernetes.md):
 *   io.agentjail.landlock=off   no Landlock ruleset;
 *   io.agentjail.seccomp=bundle only the bundle's seccomp profile, not agentjail's deny list.
 *
 * struct aj_oci_cplan owns everything in it; aj_oci_cplan_free() releases it.
 */
#ifndef AJ_OCI_PLAN_OCI_H
#define AJ_OCI_PLAN_OCI_H

#include <jansson.h>
#include <linux/filter.h>

#include "common/err.h"
#include "host/features.h"
#include "oci/spec.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "sandbox/container.h"

struct aj_oci_cplan {
	struct aj_oci_spec spec;
	struct aj_policy pol;
	struct aj_features feat;
	struct aj_plan plan;
	bool have_plan;
	struct sock_filter *filter; /* the bundle's seccomp, NULL if none */
	size_t filter_len, filter_unknown;
	char bundle[4096];
	char rootfs[4096];
	char cgroup_path[512];
	struct aj_strv notes; /* what the report says about the bundle beyond the plan */
};

/* config is the bundle's config.json; id the container's. */
int aj_oci_cplan_build(struct aj_oci_cplan *c, const char *bundle, json_t *config,
		       const char *id, bool systemd_cgroup, struct aj_err *err);
void aj_oci_cplan_free(struct aj_oci_cplan *c);
/* Fills the launch description (everything but descriptors and cgroup). */
void aj_oci_cplan_launch(struct aj_oci_cplan *c, struct aj_container_launch *l);
/* The enforcement report: the plan, plus what the bundle asked that agentjail did or did
 * not do (capabilities, notes). New reference. */
json_t *aj_oci_cplan_report(const struct aj_oci_cplan *c);

#endif
