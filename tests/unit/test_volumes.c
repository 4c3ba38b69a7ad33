/* Volumes (storage/volumes.h): the entries of filesystem.volumes, volume names, and the store's
 * create, get, list and remove in a temporary state directory (no quota: a plain directory). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "storage/volumes.h"
#include "unit.h"

static void entries(void)
{
	struct aj_volume_entry e;
	char why[200];

	CHECK(aj_volume_entry_parse("data:/mnt/data", &e, why, sizeof why) == 0 && !e.host &&
		      !e.ro && !strcmp(e.source, "data") && !strcmp(e.target, "/mnt/data"),
	      "NAME:TARGET: a volume, read-write");
	CHECK(aj_volume_entry_parse("data:/mnt/data:ro", &e, why, sizeof why) == 0 && e.ro,
	      ":ro: read-only");
	CHECK(aj_volume_entry_parse("data:/d:rw", &e, why, sizeof why) == 0 && !e.ro,
	      ":rw: read-write");
	CHECK(aj_volume_entry_parse("/srv/x:/x", &e, why, sizeof why) == 0 && e.host,
	      "an absolute source: a host directory");
	CHECK(aj_volume_entry_parse("data", &e, why, sizeof why) < 0, "no target: refused");
	CHECK_CONTAINS(why, "SOURCE:TARGET", "saying what is expected");
	CHECK(aj_volume_entry_parse(":/x", &e, why, sizeof why) < 0, "no source: refused");
	CHECK(aj_volume_entry_parse("data:", &e, why, sizeof why) < 0, "an empty target: refused");
	CHECK(aj_volume_entry_parse("data:relative", &e, why, sizeof why) < 0,
	      "a relative target: refused");
	CHECK(aj_volume_entry_parse("data:/a/../b", &e, why, sizeof why) < 0,
	      "a target with ..: refused");
	CHECK(aj_volume_entry_parse("data:/a:rx", &e, why, sizeof why) < 0, "a bad mode: refused");
	CHECK_CONTAINS(why, "expected :ro or :rw", "naming the modes");
	CHECK(aj_volume_entry_parse("da ta:/a", &e, why, sizeof why) < 0, "a bad name: refused");
	CHECK(aj_volume_name_refusal("a") == NULL && aj_volume_name_refusal("a.b-c_9") == NULL,
	      "names of letters, digits, '.', '-', '_'");
	CHECK(aj_volume_name_refusal("") && aj_volume_name_refusal("-a") &&
		      aj_volume_name_refusal("a/b") && aj_volume_name_refusal("a:b") &&
		      aj_volume_name_refusal(
			      "a123456789012345678901234567890123456789012345678901234567890123"),
	      "empty, a leading '-', '/', ':', 64 characters: refused");
}

static void store(const char *state)
{
	struct aj_volume v, w, *list = NULL;
	struct aj_err err;
	size_t n = 0;
	int fd;

	CHECK(aj_volume_create(state, "", "one", 0, &v, &err) == 0, "create");
	CHECK(!strncmp(v.id, "vol_", 4) && strlen(v.id) == 20, "an id vol_ and 16 hex digits");
	CHECK(aj_volume_create(state, "", "one", 0, &w, &err) < 0 && err.cls == AJ_ERRC_EXISTS,
	      "a name once (EXISTS)");
	CHECK(aj_volume_create(state, "tok", "one", 0, &w, &err) == 0,
	      "the same name for another owner");
	CHECK(aj_volume_get(state, "", v.id, &w, &err) == 0 && !strcmp(w.name, "one"), "get by id");
	CHECK(aj_volume_get(state, "other", "one", &w, &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND,
	      "another owner's volume is not found");
	CHECK(aj_volume_create(state, "", "two", 0, &w, &err) == 0, "a second");
	CHECK(aj_volume_list(state, "", &list, &n, &err) == 0 && n == 2 &&
		      !strcmp(list[0].name, "one") && !strcmp(list[1].name, "two"),
	      "list: the owner's, by name (%zu)", n);
	free(list);
	fd = aj_volume_hold(&v, &err);
	CHECK(fd >= 0 && aj_volume_in_use(&v), "a held volume is in use");
	CHECK(aj_volume_remove(state, "", "one", false, &err) < 0 &&
		      err.cls == AJ_ERRC_WRONG_STATE,
	      "rm of a volume in use: WRONG_STATE");
	close(fd);
	CHECK(!aj_volume_in_use(&v), "released: not in use");
	CHECK(aj_volume_remove(state, "", "one", false, &err) == 0, "rm");
	CHECK(aj_volume_get(state, "", "one", &w, &err) < 0, "gone");
	CHECK(aj_volume_remove(state, "", "one", false, &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND,
	      "rm again: NOT_FOUND");
	CHECK(aj_volume_create(state, "", "x", 1 << 20, &w, &err) < 0, "a size below 16MiB");
	CHECK_CONTAINS(err.msg, "at least 16MiB", "names the minimum");
}

int main(void)
{
	char root[64] = "/tmp/aj-unit-vol.XXXXXX", cmd[128];

	entries();
	if (!mkdtemp(root)) {
		printf("not ok - make a temporary directory\n");
		return 1;
	}
	store(root);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	UNIT_EXIT();
}
