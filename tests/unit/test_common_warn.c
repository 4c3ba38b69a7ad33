/* Warnings as data (common/warn.h): the sinks, an error's wording, and library code that
 * hands its warning to the caller instead of printing it (applying a change set whose upper
 * has a .git/commondir). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/strv.h"
#include "common/warn.h"
#include "workspace/changes.h"
#include "unit.h"

static void sinks(void)
{
	struct aj_strv got = AJ_STRV_INIT;
	struct aj_warn w = AJ_WARN_LIST(&got);
	struct aj_warn none = {0};
	struct aj_err err;

	aj_warn(NULL, "dropped %d", 1);
	aj_warn(&none, "dropped %d", 2);
	aj_warn(&w, "kept %s", "this");
	aj_warn_flags(&w, AJ_WARN_FRESH_LINE, "and %s", "that");
	CHECK(got.n == 2, "a NULL sink drops, a list sink keeps (%zu)", got.n);
	CHECK_STR(got.n > 0 ? got.v[0] : NULL, "kept this", "the message, without prefix");
	CHECK_STR(got.n > 1 ? got.v[1] : NULL, "and that", "flags do not change the text");
	aj_strv_clear(&got);
	aj_err_set(&err, AJ_LAYER_IO, 2, "remove \"%s\"", "/x");
	aj_warn_err(&w, &err);
	aj_err_hint(&err, "look at it");
	aj_warn_err(&w, &err);
	CHECK_STR(got.n > 0 ? got.v[0] : NULL, "[io] remove \"/x\": No such file or directory",
		  "an error is worded as aj_err_print() does");
	CHECK_STR(got.n > 1 ? got.v[1] : NULL,
		  "[io] remove \"/x\": No such file or directory\n  hint: look at it",
		  "with its hint on a line of its own");
	aj_strv_free(&got);
}

static void changes_commondir(const char *root)
{
	struct aj_strv got = AJ_STRV_INIT;
	struct aj_warn w = AJ_WARN_LIST(&got);
	char ws[256], st[256], path[4400];
	struct aj_changeset cs;
	struct aj_err err;
	struct stat sb;
	FILE *f;

	snprintf(ws, sizeof ws, "%s/ws", root);
	snprintf(st, sizeof st, "%s/st", root);
	if (mkdir(ws, 0755) < 0 || aj_changes_create(st, ws, 0, &cs, &err) < 0) {
		CHECK(0, "make a change set: %s", err.msg);
		return;
	}
	snprintf(path, sizeof path, "%s/upper/.git", cs.dir);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/upper/.git/commondir", cs.dir);
	f = fopen(path, "w");
	if (f) {
		fputs("../evil\n", f);
		fclose(f);
	}
	CHECK(aj_changes_apply(&cs, &w, &err) == 0, "apply the change set");
	snprintf(path, sizeof path, "%s/.git/commondir", ws);
	CHECK(stat(path, &sb) < 0, "its .git/commondir is not applied");
	CHECK(got.n == 1, "one warning, to the caller's sink (%zu)", got.n);
	CHECK_STR(got.n ? got.v[0] : NULL,
		  "not applying .git/commondir made inside the sandbox (it would redirect git on "
		  "the host)",
		  "the warning's words");
	aj_strv_free(&got);
}

int main(void)
{
	char root[64] = "/tmp/aj-unit-warn.XXXXXX", cmd[128];

	sinks();
	if (!mkdtemp(root)) {
		printf("not ok - make a temporary directory\n");
		return 1;
	}
	changes_commondir(root);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	UNIT_EXIT();
}
