/* An OCI bundle turned into an agentjail plan: the bundle's rootfs, mounts, namespaces,
 * process and resources, with agentjail's layers on top (Landlock on the root filesystem,
 * its seccomp deny list stacked with the bundle's profile, the bundle's capabilities over
 * the container's own user namespace only, the container's ids mapped to an unprivileged
 * host range of its own).
 *
 * Annotations that relax agentjail's layers (docs/kubernetes.md):
 *   io.agentjail.landlock=off   no Landlock ruleset;
 *   io.agentjail.seccomp=bundle only the bundle's seccomp profile, not agentjail's deny list;
 *   io.agentjail.capabilities=LIST|none  the most capabilities any of its processes gets.
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
	uint64_t caps_asked[AJ_CAPSET__COUNT]; /* process.capabilities as the bundle gave them */
	uint64_t cap_ceiling; /* the most any process gets (io.agentjail.capabilities, and
			       * no SETFCAP or FSETID where host_write is set) */
	/* The first field through which the container writes into a host directory (a
	 * writable root, "root.path", or a writable bind, "mounts[3] (/data)"), where its
	 * root writes as host uid 0; empty if none. */
	char host_write[128];
	/* Joined namespaces (create only, aj_oci_cplan_open_ns): descriptors by spec.ns index
	 * (-1: new or not opened), whether each is the host's own, and what is done in them. */
	int ns_fd[AJ_CONTAINER_MAX_NS];
	bool ns_host[AJ_CONTAINER_MAX_NS];
	struct aj_strv outside_sysctl; /* "/proc/sys/PATH=value" */
	const char *outside_hostname;  /* the spec's */
};

/* config is the bundle's config.json; id the container's. */
int aj_oci_cplan_build(struct aj_oci_cplan *c, const char *bundle, json_t *config,
		       const char *id, bool systemd_cgroup, struct aj_err *err);
void aj_oci_cplan_free(struct aj_oci_cplan *c);
/* create: opens the namespaces the bundle joins, each checked to be a namespace of the type
 * its entry says (errors name linux.namespaces[i].path), and decides what is done in them
 * from outside (their sysctls, the hostname; never in the host's own). */
int aj_oci_cplan_open_ns(struct aj_oci_cplan *c, struct aj_err *err);
/* Fills the launch description (everything but descriptors and cgroup). */
void aj_oci_cplan_launch(struct aj_oci_cplan *c, struct aj_container_launch *l);
/* The pod a container belongs to (the CRI's sandbox id annotation), whose containers share
 * one host id range; NULL outside a pod. Borrowed from annotations. */
const char *aj_oci_pod_key(const json_t *annotations);
/* Whether the container is its pod's sandbox (the pause container). */
bool aj_oci_sandbox_container(const json_t *annotations);
/* The capability sets of a process (the bundle's or an exec's) checked as capset(2) would
 * take them, errors naming the field (what: "config.json", "process.json"); and capped by the
 * container's ceiling. */
int aj_oci_caps_check(const struct aj_container_process *p, const char *what,
		      struct aj_err *err);
void aj_oci_caps_cap(const struct aj_oci_cplan *c, struct aj_container_process *p);
/* The enforcement report: the plan, plus what the bundle asked that agentjail did or did
 * not do (capabilities, notes). New reference. */
json_t *aj_oci_cplan_report(const struct aj_oci_cplan *c);

#endif
