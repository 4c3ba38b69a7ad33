/* agentjail features [--json] [--cgroup-parent PATH]: what this host can enforce. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "host/features.h"
#include "policy/plan.h"
#include "rules/seccomp.h"
#include "storage/quota.h"

struct features_cli {
	const char *cgroup_parent;
};

static const struct aj_option options[] = {
	{AJ_OPT("cgroup-parent", 0, AJ_OPT_STRING), .off = offsetof(struct features_cli, cgroup_parent),
	 .metavar = "PATH", .help = "probe this cgroup parent instead of the default"},
	AJ_OPT_END,
};

static const char *yes(bool b)
{
	return b ? "yes" : "NO ";
}

static void features_text(const struct aj_features *f)
{
	const struct aj_cgroup_env *cg = f->cgroup;
	int abi = f->landlock_abi;

	printf("agentjail %s on %s, %s mode (uid %u)\n", AJ_VERSION, f->kernel,
	       f->privileged ? "privileged" : f->root_incapable ? "REFUSED (root without caps)"
							       : "rootless",
	       (unsigned)f->uid);
	printf("  user namespaces    %s %s\n", yes(f->userns == 1), f->userns == 1 ? "" : f->userns_why);
	if (!f->privileged) {
		if (f->subids.on)
			printf("  subordinate ids    yes uids from %u, gids from %u: image sandboxes map "
			       "ids 0-65535\n",
			       f->subids.sub_uid, f->subids.sub_gid);
		else
			printf("  subordinate ids    NO  %s: image sandboxes map one id (single-id "
			       "mode)\n",
			       f->subids.why);
	}
	printf("  landlock           %s ABI %d%s\n", yes(abi >= 1), abi, abi >= 1 ? "" : f->landlock_why);
	printf("    filesystem       %s\n", yes(abi >= 1));
	printf("    tcp bind/connect %s (ABI 4)\n", yes(abi >= 4));
	printf("    ipc scopes       %s (ABI 6: abstract unix sockets, signals)\n", yes(abi >= 6));
	printf("  seccomp            %s %u default rules%s\n", yes(f->seccomp),
	       aj_seccomp_default_rules_count, f->seccomp ? "" : f->seccomp_why);
	printf("  mount API          %s (open_tree, move_mount, mount_setattr)\n", yes(f->mount_api));
	if (f->runsc.usable)
		printf("  runsc              yes %s at %s (from %s), platform %s\n",
		       f->runsc.version[0] ? f->runsc.version : "(unknown version)", f->runsc.path,
		       f->runsc.from, AJ_RUNSC_PLATFORM);
	else
		printf("  runsc              NO  %s\n", f->runsc.why);
	printf("  cgroup             %s\n", aj_cgroup_mode_name(cg->mode));
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		if (cg->mode == AJ_CGROUP_V2 && (c == AJ_CG_CPUACCT || c == AJ_CG_FREEZER))
			continue;
		printf("    %-16s %s %s\n", aj_cgroup_ctrl_name(c), yes(cg->usable[c]),
		       cg->usable[c] ? cg->parent[c] : cg->why[c]);
	}
}

/* limits.disk: whether the state directory (or, not made yet, the directory it will be made
 * in) can hold quota directories. */
static void disk_probe(struct aj_quota_probe *q, char *dir, size_t len)
{
	struct stat st;

	if (aj_cli_state_path(dir, len) < 0)
		snprintf(dir, len, "/");
	while (stat(dir, &st) < 0 && strrchr(dir, '/')) {
		char *slash = strrchr(dir, '/');
		if (slash == dir) {
			dir[1] = '\0';
			break;
		}
		*slash = '\0';
	}
	aj_quota_probe(dir, q);
}

static json_t *disk_json(void)
{
	struct aj_quota_probe q;
	char dir[4096];

	disk_probe(&q, dir, sizeof dir);
	return json_pack("{s:b, s:s, s:s, s:s, s:s?}", "enforceable", q.kind != AJ_QUOTA_NONE,
			 "mechanism", aj_quota_kind_name(q.kind), "filesystem", q.fs, "path", dir,
			 "why", q.kind ? NULL : q.why);
}

static void disk_text(void)
{
	struct aj_quota_probe q;
	char dir[4096];

	disk_probe(&q, dir, sizeof dir);
	if (q.kind)
		printf("  disk limits        yes %s on %s (%s)\n", aj_quota_kind_name(q.kind), dir,
		       q.fs);
	else
		printf("  disk limits        NO  %s: %s\n", dir, q.why);
}

/* The tiers, and what the landlock tier (--tier landlock) enforces in place of each layer
 * of the full one. */
static void tiers_text(const struct aj_features *f)
{
	char detail[600];
	size_t n;
	const struct aj_tier_row *r = aj_plan_tier_rows(&n);

	printf("  tiers\n");
	for (int t = AJ_TIER_NAMESPACES; t <= AJ_TIER_GVISOR; t++) {
		bool usable = aj_plan_tier_usable(f, t, detail, sizeof detail);
		printf("    %-16s %s %s\n", aj_plan_tier_name(t), yes(usable), detail);
	}
	printf("  the landlock tier compared with the namespaces tier\n");
	for (size_t i = 0; i < n; i++)
		printf("    %s\n      namespaces: %s\n      landlock:   %s\n",
		       aj_plan_layer_name(r[i].layer), r[i].namespaces, r[i].landlock);
}

static int cmd_features(const struct aj_verb *v, int argc, char **argv)
{
	struct features_cli c = {NULL};
	struct aj_features f;
	struct aj_err err;
	char **args;
	int nargs, r;

	if ((r = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0) {
		if (r > 0)
			return 0;
		aj_err_print(&err, stderr);
		return 125;
	}
	if (nargs > 0) {
		fprintf(stderr, "agentjail: [usage] features: unexpected argument \"%s\"\n", args[0]);
		return 125;
	}
	aj_features_probe_all(&f, c.cgroup_parent);
	if (aj_cli.json) {
		json_t *j = aj_plan_features_json(&f, AJ_VERSION);
		json_object_set_new(j, "disk", disk_json());
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(j);
	} else {
		features_text(&f);
		disk_text();
		tiers_text(&f);
	}
	return 0;
}

const struct aj_verb aj_verb_features = {
	.name = "features",
	.fn = cmd_features,
	.summary = "show what this host can enforce",
	.synopsis = "features [OPTIONS]",
	.help = "Show what this host's kernel lets agentjail enforce.",
	.options = options,
};
