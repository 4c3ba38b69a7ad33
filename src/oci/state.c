/* See state.h. state.json is read by the field-table engine (common/jfields.h); a file that
 * does not parse, or holds a field of the wrong type, is refused naming it. */
#include "oci/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/jfields.h"
#include "common/util.h"

static bool id_ok(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n >= sizeof((struct aj_oci_state *)0)->id || !strcmp(id, ".") ||
	    !strcmp(id, ".."))
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_+-.", *p)))
			return false;
	return true;
}

int aj_oci_state_init(struct aj_oci_state *st, const char *root, const char *id,
		      struct aj_err *err)
{
	memset(st, 0, sizeof *st);
	if (!id_ok(id))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "invalid container id \"%s\" (letters, digits, \"_+-.\")", id);
	snprintf(st->id, sizeof st->id, "%s", id);
	if ((size_t)snprintf(st->dir, sizeof st->dir, "%s/%s", root, id) >= sizeof st->dir)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory too long");
	return 0;
}

/* state.json as rows of common/jfields.h, into the state itself. */
static int copy_string(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	snprintf(dst, (size_t)f->max + 1, "%s", json_string_value(v));
	return 0;
}

static int store_pid(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	*(pid_t *)dst = (pid_t)json_integer_value(v);
	return 0;
}

static int keep_annotations(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	json_decref(*(json_t **)dst);
	*(json_t **)dst = json_incref(v);
	return 0;
}

#define ST(m) offsetof(struct aj_oci_state, m)
#define TEXT(n, m)                                                                             \
	{.name = (n), .type = AJ_JF_STRING, .off = ST(m),                                      \
	 .max = sizeof ((struct aj_oci_state *)0)->m - 1, .parse = copy_string}

static const struct aj_jf_field state_rows[] = {
	{.name = "pid", .type = AJ_JF_INT, .off = ST(pid), .min = 0, .max = INT32_MAX,
	 .parse = store_pid},
	{.name = "pid_start", .type = AJ_JF_INT, .off = ST(pid_start), .min = 0,
	 .max = INT64_MAX},
	{.name = "started", .type = AJ_JF_BOOL, .off = ST(started)},
	TEXT("bundle", bundle),
	TEXT("rootfs", rootfs),
	TEXT("created", created),
	TEXT("cgroup_path", cgroup_path),
	{.name = "annotations", .type = AJ_JF_OBJECT, .off = ST(annotations),
	 .parse = keep_annotations},
	{.name = NULL},
};
#undef TEXT
#undef ST

int aj_oci_state_load(struct aj_oci_state *st, const char *root, const char *id,
		      struct aj_err *err)
{
	struct aj_jf_opts o = {AJ_LAYER_STATE, AJ_JF_IGNORE_UNKNOWN | AJ_JF_NULL_ABSENT, NULL, NULL};
	_cleanup_json_ json_t *j = NULL;
	struct aj_jf_error e;
	char path[4200];
	json_error_t je;

	if (aj_oci_state_init(st, root, id, err) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/state.json", st->dir);
	j = json_load_file(path, 0, &je);
	if (!j) {
		if (access(st->dir, F_OK) < 0)
			return aj_err_set(err, AJ_LAYER_STATE, ENOENT, "container \"%s\" does not exist",
					  id);
		return aj_err_set(err, AJ_LAYER_STATE, EINVAL, "\"%s\": %s", path, je.text);
	}
	if (aj_jf_read(state_rows, j, st, &o, &e) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, EINVAL, "\"%s\": %s", path, e.err.msg);
	if (!st->annotations)
		st->annotations = json_object();
	return 0;
}

int aj_oci_state_write(const struct aj_oci_state *st, const char *name, const char *text,
		       struct aj_err *err)
{
	char tmp[4200], path[4200];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "%s/%s", st->dir, name);
	snprintf(tmp, sizeof tmp, "%s/.%s.tmp", st->dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || aj_write_all(fd, text, strlen(text)) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\"", tmp);
	if (rename(tmp, path) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "rename \"%s\" to \"%s\"", tmp, path);
	return 0;
}

int aj_oci_state_save(const struct aj_oci_state *st, struct aj_err *err)
{
	json_t *j = json_pack("{s:s, s:i, s:I, s:s, s:s, s:s, s:b, s:s, s:O}", "id", st->id, "pid",
			      (int)st->pid, "pid_start", (json_int_t)st->pid_start, "bundle",
			      st->bundle, "rootfs", st->rootfs, "created", st->created, "started",
			      st->started, "cgroup_path", st->cgroup_path, "annotations",
			      st->annotations ? st->annotations : json_object());
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!text)
		return aj_err_set(err, AJ_LAYER_STATE, ENOMEM, "encode state");
	return aj_oci_state_write(st, "state.json", text, err);
}

int aj_oci_state_remove(const struct aj_oci_state *st, struct aj_err *err)
{
	DIR *d = opendir(st->dir);
	struct dirent *e;

	if (!d)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", st->dir);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	if (rmdir(st->dir) < 0 && errno != ENOENT)
		return aj_err_sys(err, AJ_LAYER_STATE, "remove \"%s\"", st->dir);
	return 0;
}

void aj_oci_state_free(struct aj_oci_state *st)
{
	json_decref(st->annotations);
	st->annotations = NULL;
}

bool aj_oci_state_alive(const struct aj_oci_state *st)
{
	return st->pid > 0 && aj_proc_alive(st->pid, st->pid_start);
}

const char *aj_oci_state_status(const struct aj_oci_state *st, bool frozen)
{
	if (!aj_oci_state_alive(st))
		return "stopped";
	if (!st->started)
		return "created";
	return frozen ? "paused" : "running";
}

json_t *aj_oci_state_json(const struct aj_oci_state *st, const char *status)
{
	bool stopped = strcmp(status, "stopped") == 0;

	return json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:O}", "ociVersion", "1.0.2",
			 "id", st->id, "pid", stopped ? 0 : (int)st->pid, "status", status,
			 "bundle", st->bundle, "rootfs", st->rootfs, "created", st->created,
			 "owner", "", "annotations",
			 st->annotations ? st->annotations : json_object());
}
