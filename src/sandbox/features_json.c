/* `agentjail features --json` and GET /v1/features: one document, built in one place. */
#include <jansson.h>

#include "policy/plan.h"
#include "sandbox/features.h"

static json_t *cgroup_json(const struct aj_cgroup_env *cg)
{
	json_t *ctrls = json_object();

	for (int c = 0; c < AJ_CG__COUNT; c++) {
		if (cg->mode == AJ_CGROUP_V2 && (c == AJ_CG_CPUACCT || c == AJ_CG_FREEZER))
			continue; /* built into every v2 cgroup */
		json_object_set_new(ctrls, aj_cgroup_ctrl_name(c),
				    json_pack("{s:b, s:s, s:s}", "usable", cg->usable[c], "parent",
					      cg->parent[c], "detail",
					      cg->usable[c] ? "" : cg->why[c]));
	}
	return json_pack("{s:s, s:o}", "mode", aj_cgroup_mode_name(cg->mode), "controllers",
			 ctrls);
}

/* Both tiers' usability, and what the landlock tier keeps and loses, layer by layer. */
static json_t *tiers_json(const struct aj_features *f)
{
	json_t *tiers = json_object(), *rows = json_array();
	char detail[600];
	size_t n;
	const struct aj_tier_row *r = aj_plan_tier_rows(&n);

	for (int t = AJ_TIER_NAMESPACES; t <= AJ_TIER_LANDLOCK; t++) {
		bool usable = aj_plan_tier_usable(f, t, detail, sizeof detail);
		json_object_set_new(tiers, aj_plan_tier_name(t),
				    json_pack("{s:b, s:s}", "usable", usable, "detail", detail));
	}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(rows, json_pack("{s:s, s:s, s:s}", "layer",
						      aj_plan_layer_name(r[i].layer), "namespaces",
						      r[i].namespaces, "landlock", r[i].landlock));
	json_object_set_new(json_object_get(tiers, "landlock"), "compared", rows);
	return tiers;
}

json_t *aj_features_json(const struct aj_features *f, const char *version)
{
	int abi = f->landlock_abi;
	json_t *j;

	j = json_pack(
		"{s:s, s:s, s:s, s:i, s:{s:b, s:s}, s:{s:i, s:b, s:b, s:b, s:s}, "
		"s:{s:b, s:i, s:s}, s:b, s:o}",
		"agentjail", version, "kernel", f->kernel, "mode",
		f->privileged ? "privileged" : f->root_incapable ? "refused" : "rootless", "uid",
		(int)f->uid, "user_namespaces", "available", f->userns == 1, "detail",
		f->userns == 1 ? "" : f->userns_why, "landlock", "abi", abi, "filesystem",
		abi >= 1, "tcp", abi >= 4, "scopes", abi >= 6, "detail",
		abi >= 1 ? "" : f->landlock_why, "seccomp", "available", f->seccomp,
		"default_rules", (int)aj_seccomp_default_rules_count, "detail", f->seccomp_why,
		"mount_api", f->mount_api, "cgroup", cgroup_json(f->cgroup));
	if (j)
		json_object_set_new(j, "tiers", tiers_json(f));
	return j;
}
