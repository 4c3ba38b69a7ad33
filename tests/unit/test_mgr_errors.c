/* The manager's checks before anything changes, and the classes of its errors (the CLI's exit
 * codes and the API's statuses come from them), on a state directory of the test's own: no
 * sandbox is started. A repeated label key is refused by the manager itself, whoever calls it
 * (the CLI checks too; the HTTP API's labels are a JSON object, whose keys cannot repeat). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strv.h"
#include "manager/manager.h"
#include "policy/policy.h"
#include "unit.h"

static char state[64];

static int count_sandboxes(struct aj_mgr *m)
{
	struct aj_sandbox_rec *v = NULL;
	size_t n = 0;
	struct aj_err err;

	if (aj_mgr_list(m, NULL, &v, &n, &err) < 0)
		return -1;
	aj_sandbox_recs_free(v, n);
	return (int)n;
}

static void labels(struct aj_mgr *m)
{
	struct aj_policy pol;
	struct aj_strv lab = {0};
	struct aj_create_opts o = {.name = "lab", .labels = &lab};
	struct aj_sandbox_rec r;
	struct aj_err err;
	char dir[128];

	aj_policy_init(&pol);
	o.policy = &pol;
	aj_strv_push(&lab, "k=1");
	aj_strv_push(&lab, "other=x");
	aj_strv_push(&lab, "k=2");
	CHECK(aj_mgr_create(m, &o, &r, &err) < 0 && err.errnum == EINVAL &&
		      err.cls == AJ_ERRC_NONE,
	      "a label key given twice is refused (EINVAL, not a taken name)");
	CHECK_CONTAINS(err.msg, "\"k\"", "the error names the key");
	CHECK(count_sandboxes(m) == 0, "nothing was created");
	snprintf(dir, sizeof dir, "%s/sandboxes", state);
	CHECK(access(dir, F_OK) < 0 || rmdir(dir) == 0, "no workspace directory was left");
	aj_strv_clear(&lab);
	aj_strv_push(&lab, "novalue");
	CHECK(aj_mgr_create(m, &o, &r, &err) < 0 && err.errnum == EINVAL,
	      "a label without = is refused");
	aj_strv_free(&lab);
	aj_policy_free(&pol);
}

static void classes(struct aj_mgr *m)
{
	struct aj_sandbox_rec r;
	struct aj_strv names = {0};
	struct aj_err err;

	CHECK(aj_mgr_get(m, "ghost", &r, &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND,
	      "an unknown sandbox is NOT_FOUND");
	CHECK(aj_mgr_snapshot_remove(m, "ghost", &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND,
	      "an unknown snapshot is NOT_FOUND");
	CHECK(aj_mgr_fork(m, "ghost", 0, NULL, false, &names, &err) < 0 &&
		      err.cls == AJ_ERRC_NONE && strstr(err.msg, "--count"),
	      "fork --count 0 is a usage error naming --count");
	aj_err_set(&err, AJ_LAYER_STATE, ENOENT, "rename \"x\"");
	CHECK(err.cls == AJ_ERRC_NONE, "a plain ENOENT (a failed file operation) has no class");
	aj_err_class(&err, AJ_ERRC_WRONG_STATE);
	aj_err_prefix(&err, "context");
	CHECK(err.cls == AJ_ERRC_WRONG_STATE, "context added on the way up keeps the class");
	aj_err_set(&err, AJ_LAYER_STATE, EBUSY, "reused");
	CHECK(err.cls == AJ_ERRC_NONE, "setting a new error clears the class");
	aj_strv_free(&names);
}

int main(void)
{
	struct aj_mgr m;
	struct aj_err err;

	snprintf(state, sizeof state, "/tmp/aj-unit-mgr.XXXXXX");
	if (!mkdtemp(state) || aj_mgr_open(&m, state, NULL, &err) < 0) {
		printf("not ok - open a manager on a fresh state directory\n");
		return 1;
	}
	labels(&m);
	classes(&m);
	aj_mgr_close(&m);
	{
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", state);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", state);
	}
	UNIT_EXIT();
}
