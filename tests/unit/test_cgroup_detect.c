/* Backend detection: how the text of /proc/self/cgroup places sandbox cgroups.
 *
 * aj_cgroup_detect_into() takes the /proc/self/cgroup text but finds the hierarchies in this
 * host's /proc/self/mountinfo; the mount point of each hierarchy is learnt first through a
 * --cgroup-parent override (which does not depend on the text), then the text's paths are
 * checked against it. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "unit.h"

static char mnt[AJ_CG__COUNT][512];

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Where the hierarchy of each controller is mounted, from an override's parents. */
static bool learn_mounts(int *mode)
{
	struct aj_cgroup_env env;
	bool any = false;

	aj_cgroup_detect_into(&env, NULL, "/aj-probe", "");
	*mode = env.mode;
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		mnt[c][0] = '\0';
		if (!env.parent[c][0] || !ends_with(env.parent[c], "/aj-probe"))
			continue;
		snprintf(mnt[c], sizeof mnt[c], "%.*s", (int)(strlen(env.parent[c]) - 9),
			 env.parent[c]);
		any = true;
	}
	return any;
}

static void expect_parent(const struct aj_cgroup_env *env, int c, const char *rel,
			  const char *what)
{
	char want[700];

	if (!mnt[c][0])
		return;
	snprintf(want, sizeof want, "%s%s", mnt[c], rel);
	CHECK_STR(env->parent[c], want, "%s: %s parent", what, aj_cgroup_ctrl_name(c));
}

static void v1_texts(void)
{
	struct aj_cgroup_env env;
	bool root = geteuid() == 0;
	const char *suffix = root ? "/agentjail" : "";
	char rel[256];

	/* The shape of a hybrid host: named hierarchies, controller lists, a v2 line. */
	aj_cgroup_detect_into(&env, NULL, NULL,
			      "12:name=systemd:/user.slice/s1\n"
			      "9:cpuset:/cpuset-only\n"
			      "8:pids:/user.slice/p1\n"
			      "6:freezer:/\n"
			      "4:memory:/process_api/abc\n"
			      "2:cpuacct:/acct\n"
			      "1:cpu:/quota\n"
			      "0::/v2-only");
	CHECK(env.mode == AJ_CGROUP_V1 && env.ops == &aj_cgroup_v1_ops, "v1 backend chosen");
	snprintf(rel, sizeof rel, "/process_api/abc%s", suffix);
	expect_parent(&env, AJ_CG_MEMORY, rel, "own memory cgroup");
	snprintf(rel, sizeof rel, "/user.slice/p1%s", suffix);
	expect_parent(&env, AJ_CG_PIDS, rel, "own pids cgroup");
	snprintf(rel, sizeof rel, "/quota%s", suffix);
	expect_parent(&env, AJ_CG_CPU, rel, "\"cpu\" is not confused with \"cpuset\"");
	snprintf(rel, sizeof rel, "/acct%s", suffix);
	expect_parent(&env, AJ_CG_CPUACCT, rel, "own cpuacct cgroup");
	expect_parent(&env, AJ_CG_FREEZER, root ? "/agentjail" : "",
		      "the root cgroup \"/\" gives no doubled slash");

	/* cpu and cpuacct listed together, and no trailing newline. */
	aj_cgroup_detect_into(&env, NULL, NULL, "3:cpu,cpuacct:/both\n4:memory:/m");
	snprintf(rel, sizeof rel, "/both%s", suffix);
	expect_parent(&env, AJ_CG_CPU, rel, "a controller list line serves cpu");
	expect_parent(&env, AJ_CG_CPUACCT, rel, "a controller list line serves cpuacct");
	snprintf(rel, sizeof rel, "/m%s", suffix);
	expect_parent(&env, AJ_CG_MEMORY, rel, "the last line without a newline");
	expect_parent(&env, AJ_CG_PIDS, root ? "/agentjail" : "",
		      "a controller missing from the text is taken at the root");

	/* Garbage lines are skipped, not misread. */
	aj_cgroup_detect_into(&env, NULL, NULL, "garbage\n::\n8:pids\n8:pids:/ok\n");
	snprintf(rel, sizeof rel, "/ok%s", suffix);
	expect_parent(&env, AJ_CG_PIDS, rel, "malformed lines are skipped");

	/* --cgroup-parent wins over the text for every hierarchy. */
	aj_cgroup_detect_into(&env, NULL, "/custom/place", "4:memory:/m\n8:pids:/p\n");
	for (int c = 0; c < AJ_CG__COUNT; c++)
		expect_parent(&env, c, "/custom/place", "--cgroup-parent");
}

static void v2_texts(void)
{
	struct aj_cgroup_env env;
	bool root = geteuid() == 0;

	aj_cgroup_detect_into(&env, NULL, NULL, "0::/user.slice/user-1000.slice/session-2.scope\n");
	CHECK(env.mode == AJ_CGROUP_V2 && env.ops == &aj_cgroup_v2_ops, "v2 backend chosen");
	/* root: a dedicated /agentjail; otherwise the caller's own (delegated) cgroup */
	expect_parent(&env, AJ_CG_MEMORY,
		      root ? "/agentjail" : "/user.slice/user-1000.slice/session-2.scope",
		      "unified hierarchy");
	CHECK(strcmp(env.parent[AJ_CG_PIDS], env.parent[AJ_CG_MEMORY]) == 0,
	      "one parent for every controller");
	aj_cgroup_detect_into(&env, NULL, "/custom", "0::/x\n");
	expect_parent(&env, AJ_CG_PIDS, "/custom", "--cgroup-parent");
}

int main(void)
{
	int mode = AJ_CGROUP_NONE;

	CHECK_STR(aj_cgroup_mode_name(AJ_CGROUP_V1), "v1", "mode names");
	CHECK_STR(aj_cgroup_ctrl_name(AJ_CG_CPUACCT), "cpuacct", "controller names");
	CHECK(aj_cgroup_needed(&(struct aj_cgroup_limits){.memory = 1, .cpu_milli = 1}) ==
		      ((1u << AJ_CG_MEMORY) | (1u << AJ_CG_CPU)),
	      "the limits decide the controllers needed");
	if (!learn_mounts(&mode)) {
		printf("ok - cgroup text parsing # SKIP no cgroup hierarchy is mounted here\n");
		UNIT_EXIT();
	}
	if (mode == AJ_CGROUP_V1)
		v1_texts();
	else if (mode == AJ_CGROUP_V2)
		v2_texts();
	UNIT_EXIT();
}
