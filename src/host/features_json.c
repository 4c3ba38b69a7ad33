/* The probes as JSON: the host part of `agentjail features --json` and GET /v1/features
 * (policy/plan_json.c adds the tier comparison). */
#include <jansson.h>

#include "host/features.h"
#include "rules/seccomp.h"

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
	json_object_set_new(j, "runsc",
			    json_pack("{s:b, s:b, s:s, s:s, s:s, s:s, s:s}", "found", f->runsc.found,
				      "usable", f->runsc.usable, "path", f->runsc.path, "from",
				      f->runsc.from, "version", f->runsc.version, "platform",
				      AJ_RUNSC_PLATFORM, "detail", f->runsc.why));
	if (!f->privileged)
		json_object_set_new(
			j, "subordinate_ids",
			f->subids.on ? json_pack("{s:b, s:I, s:I, s:I}", "available", 1, "first_uid",
						 (json_int_t)f->subids.sub_uid, "first_gid",
						 (json_int_t)f->subids.sub_gid, "count",
						 (json_int_t)AJ_SUBIDS_NEEDED)
				     : json_pack("{s:b, s:s}", "available", 0, "detail",
						 f->subids.why));
	return j;
}
