/* The shared /etc of persistent sandboxes (src/supervisor/etc_share.c) on plans built from
 * policies: the tmpfs becomes a read-only bind of a directory holding exactly the files the
 * plan would have written, the same content gives the same directory, other content another;
 * plans it cannot hold (files written at launch, another tier) stay as they are. Writes under
 * a temporary state directory; mounts nothing. */
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tree.h"
#include "common/util.h"
#include "host/features.h"
#include "policy/plan.h"
#include "supervisor/etc_share.h"
#include "unit.h"

static char ws[64], state[64];

static int build(const char *text, struct aj_policy *pol, struct aj_plan *plan,
		 struct aj_err *err)
{
	static struct aj_features feat;
	char *argv[] = {"true", NULL};
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	int r;

	aj_features_probe(&feat, NULL);
	feat.landlock_abi = 7;
	aj_policy_init(pol);
	free(pol->workspace);
	pol->workspace = strdup(ws);
	pol->limits.memory = 0; /* no cgroup needed to plan */
	r = j ? aj_policy_apply_json(pol, j, err) : -1;
	json_decref(j);
	if (r == 0)
		r = aj_policy_validate(pol, err);
	if (r == 0)
		r = aj_plan_build(plan, pol, &feat, argv, err);
	return r;
}

static const struct aj_op *op_at(const struct aj_plan *p, const char *dst, size_t *n_below)
{
	const struct aj_op *found = NULL;

	*n_below = 0;
	for (size_t i = 0; i < p->n_ops; i++) {
		if (strcmp(p->ops[i].dst, dst) == 0 && p->ops[i].kind != AJ_OP_SEAL)
			found = &p->ops[i];
		if (strncmp(p->ops[i].dst, "/etc/", 5) == 0 &&
		    (p->ops[i].kind == AJ_OP_FILE || p->ops[i].kind == AJ_OP_SYMLINK))
			(*n_below)++;
	}
	return found;
}

static char *read_at(const char *dir, const char *name)
{
	char path[4400];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return aj_read_file(path, 1 << 20, NULL);
}

static void shared(void)
{
	struct aj_policy pol;
	struct aj_plan plan;
	struct aj_err err;
	const struct aj_op *etc;
	size_t files_before, files_after, ops_before;
	char first[4400] = "", *text;
	struct stat st;
	int fd, fd2;

	CHECK(build("{\"hostname\": \"unit\"}", &pol, &plan, &err) == 0, "a default plan (%s)",
	      err.msg);
	etc = op_at(&plan, "/etc", &files_before);
	CHECK(etc && etc->kind == AJ_OP_TMPFS && files_before >= 6,
	      "before: /etc is a tmpfs the plan writes %zu files and links into", files_before);
	ops_before = plan.n_ops;
	fd = aj_sv_etc_share(&plan, state, "", &err);
	CHECK(fd >= 0, "shared%s%s", fd == -1 ? ": " : "", fd == -1 ? err.msg : "");
	etc = op_at(&plan, "/etc", &files_after);
	CHECK(etc && etc->kind == AJ_OP_BIND && (etc->flags & AJ_OPF_RO) && etc->src &&
		      strncmp(etc->src, state, strlen(state)) == 0,
	      "after: /etc is a read-only bind of a directory of the state directory");
	CHECK(files_after == 0 && plan.n_ops == ops_before - files_before,
	      "... and the files and links it holds left the plan (%zu ops, were %zu)",
	      plan.n_ops, ops_before);
	if (etc && etc->src) {
		snprintf(first, sizeof first, "%s", etc->src);
		text = read_at(first, "hostname");
		CHECK_STR(text, "unit\n", "the directory holds the plan's hostname file");
		free(text);
		text = read_at(first, "passwd");
		CHECK_CONTAINS(text, ":/home/user:", "... and its passwd");
		free(text);
		CHECK(stat(first, &st) == 0 && (st.st_mode & 07777) == 0755,
		      "... mode 0755 whatever the umask");
	}
	fd2 = open(first, O_RDONLY | O_DIRECTORY);
	CHECK(fd2 >= 0 && flock(fd2, LOCK_EX | LOCK_NB) < 0,
	      "the returned descriptor holds a shared lock: no exclusive one while it is open");
	if (fd2 >= 0)
		close(fd2);
	CHECK(aj_sv_etc_share(&plan, state, "", &err) == -2, "a plan shared once has no tmpfs left");
	aj_plan_free(&plan);
	aj_policy_free(&pol);

	CHECK(build("{\"hostname\": \"unit\"}", &pol, &plan, &err) == 0, "the same policy again");
	fd2 = aj_sv_etc_share(&plan, state, "", &err);
	etc = op_at(&plan, "/etc", &files_after);
	CHECK(fd2 >= 0 && etc && etc->src && strcmp(etc->src, first) == 0,
	      "the same /etc: the same directory");
	if (fd2 >= 0)
		close(fd2);
	aj_plan_free(&plan);
	aj_policy_free(&pol);

	CHECK(build("{\"hostname\": \"unit\"}", &pol, &plan, &err) == 0, "the same policy, ...");
	fd2 = aj_sv_etc_share(&plan, state, "tenant-b", &err);
	etc = op_at(&plan, "/etc", &files_after);
	CHECK(fd2 >= 0 && etc && etc->src && strcmp(etc->src, first) != 0,
	      "... another owner's sandbox: another directory");
	if (fd2 >= 0)
		close(fd2);
	aj_plan_free(&plan);
	aj_policy_free(&pol);

	CHECK(build("{\"hostname\": \"other\"}", &pol, &plan, &err) == 0, "another hostname");
	fd2 = aj_sv_etc_share(&plan, state, "", &err);
	etc = op_at(&plan, "/etc", &files_after);
	CHECK(fd2 >= 0 && etc && etc->src && strcmp(etc->src, first) != 0,
	      "another /etc: another directory");
	CHECK(access(first, F_OK) == 0, "... and the held one stays");
	if (fd2 >= 0)
		close(fd2);
	aj_plan_free(&plan);
	aj_policy_free(&pol);
	if (fd >= 0)
		close(fd);
}

static void unshared(void)
{
	struct aj_policy pol;
	struct aj_plan plan;
	struct aj_err err;
	size_t n_ops;

	setenv("ETC_SHARE_UNIT_SECRET", "s", 1);
	CHECK(build("{\"network\": {\"mode\": \"proxy\", \"allow\": [\"api.example\"]}, "
		    "\"credentials\": {\"TOKEN\": {\"from_env\": \"ETC_SHARE_UNIT_SECRET\", "
		    "\"hosts\": [\"api.example\"]}}}",
		    &pol, &plan, &err) == 0,
	      "a plan with the egress CA files (%s)", err.msg);
	n_ops = plan.n_ops;
	CHECK(aj_sv_etc_share(&plan, state, "", &err) == -2 && plan.n_ops == n_ops,
	      "files written at launch (the egress CA): the plan keeps its own /etc");
	aj_plan_free(&plan);
	aj_policy_free(&pol);

	/* The gvisor tier's /etc is runsc's to make from the plan (tier_gvisor.c). */
	CHECK(build("{}", &pol, &plan, &err) == 0, "a plan (%s)", err.msg);
	plan.tier = AJ_TIER_GVISOR;
	n_ops = plan.n_ops;
	CHECK(aj_sv_etc_share(&plan, state, "", &err) == -2 && plan.n_ops == n_ops,
	      "another tier: nothing shared");
	aj_plan_free(&plan);
	aj_policy_free(&pol);
}

int main(void)
{
	struct aj_err err;

	snprintf(ws, sizeof ws, "/tmp/aj-etc-share-ws.XXXXXX");
	snprintf(state, sizeof state, "/tmp/aj-etc-share-st.XXXXXX");
	if (!mkdtemp(ws) || !mkdtemp(state)) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	umask(077);
	shared();
	unshared();
	rmdir(ws);
	aj_tree_remove_at(AT_FDCWD, state, &err);
	UNIT_EXIT();
}
