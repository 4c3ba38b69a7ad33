#include "state/secrets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/owner_key.h"
#include "common/util.h"

#define META_MAX 65536

void aj_secret_free(struct aj_secret *s)
{
	json_decref(s->metadata);
	memset(s, 0, sizeof *s);
}

void aj_secrets_free(struct aj_secret *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		aj_secret_free(&v[i]);
	free(v);
}

int aj_secret_dir(const char *state, const char *owner, char *buf, size_t len)
{
	char key[AJ_OWNER_KEY_LEN + 1];
	int n;

	if (aj_owner_key(owner, key) < 0)
		return -1;
	n = snprintf(buf, len, "%s/secrets/%s", state, key);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

const char *aj_secret_value_refusal(const char *value, size_t len)
{
	if (len == 0)
		return "is empty";
	if (len > AJ_SECRET_VALUE_MAX)
		return "is larger than 16384 bytes";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] == 0x7f)
			return "holds control characters (a secret is sent in an HTTP header)";
	return NULL;
}

/* The owner's directory, opened (made 0700 when `make`), and its lock taken. */
static int open_dir(const char *state, const char *owner, bool make, int *dir, int *lock,
		    struct aj_err *err)
{
	char path[4200];

	*dir = *lock = -1;
	if (aj_secret_dir(state, owner, path, sizeof path) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the secret store's path");
	return aj_owner_dir_open(path, make, dir, lock, err); /* none: no secret yet */
}

static int from_json(json_t *j, struct aj_secret *s)
{
	const char *id = json_string_value(json_object_get(j, "id"));
	const char *name = json_string_value(json_object_get(j, "name"));
	json_t *meta = json_object_get(j, "metadata");

	memset(s, 0, sizeof *s);
	if (!id || !name || strlen(id) >= sizeof s->id || !aj_secret_name_ok(name))
		return -1;
	snprintf(s->id, sizeof s->id, "%s", id);
	snprintf(s->name, sizeof s->name, "%s", name);
	s->version = json_integer_value(json_object_get(j, "version"));
	s->created_ms = json_integer_value(json_object_get(j, "created_ms"));
	s->updated_ms = json_integer_value(json_object_get(j, "updated_ms"));
	s->metadata = json_is_object(meta) ? json_incref(meta) : json_object();
	return 0;
}

static int read_meta(int dir, const char *name, struct aj_secret *s)
{
	char file[AJ_SECRET_NAME_MAX + 8];
	_cleanup_free_ char *text = NULL;
	_cleanup_json_ json_t *j = NULL;

	snprintf(file, sizeof file, "%s.json", name);
	text = aj_read_file_at(dir, file, META_MAX, NULL);
	j = text ? json_loads(text, 0, NULL) : NULL;
	return j ? from_json(j, s) : -1;
}

/* A name or an id to the canonical name of an existing secret; -1 if there is none. name may
 * not be ref. */
static int resolve(int dir, const char *ref, char name[AJ_SECRET_NAME_MAX + 1])
{
	struct aj_secret s;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;

	if (dir < 0)
		return -1;
	if (aj_secret_name_canon(ref, name, AJ_SECRET_NAME_MAX + 1) == 0 &&
	    read_meta(dir, name, &s) == 0) {
		aj_secret_free(&s);
		return 0;
	}
	if (strncmp(ref, "sec_", 4) || !(d = aj_fdopendir(dup(dir))))
		return -1;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n <= 5 || strcmp(e->d_name + n - 5, ".json") || n - 5 > AJ_SECRET_NAME_MAX)
			continue;
		snprintf(name, AJ_SECRET_NAME_MAX + 1, "%.*s", (int)(n - 5), e->d_name);
		if (read_meta(dir, name, &s) == 0) {
			bool hit = !strcmp(s.id, ref);
			aj_secret_free(&s);
			if (hit)
				return 0;
		}
	}
	return -1;
}

/* Writes data as dir/file through a temporary file renamed over it. */
static int write_at(int dir, const char *file, const void *data, size_t len, struct aj_err *err)
{
	char tmp[AJ_SECRET_NAME_MAX + 16];
	_cleanup_close_ int fd = -1;

	snprintf(tmp, sizeof tmp, ".%s.tmp", file);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchmod(fd, 0600) < 0 || aj_write_all(fd, data, len) < 0 || fsync(fd) < 0 ||
	    renameat(dir, tmp, dir, file) < 0) {
		int e = errno;
		unlinkat(dir, tmp, 0);
		errno = e;
		return aj_err_sys(err, AJ_LAYER_STATE, "write the secret store's \"%s\"", file);
	}
	return 0;
}

static int check_metadata(json_t *meta, struct aj_err *err)
{
	const char *k;
	json_t *v;

	if (!meta)
		return 0;
	if (!json_is_object(meta) || json_object_size(meta) > 64)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "metadata: expected an object of at most 64 strings");
	json_object_foreach(meta, k, v) {
		if (!json_is_string(v) || strlen(k) > 256 || strlen(json_string_value(v)) > 1024)
			return aj_err_set(err, AJ_LAYER_USAGE, 0,
					  "metadata.%.64s: expected a string (keys at most 256 "
					  "characters, values 1024)",
					  k);
	}
	return 0;
}

int aj_secret_put(const char *state, const char *owner, const char *ref, const char *value,
		  size_t len, json_t *metadata, bool create, struct aj_secret *out,
		  struct aj_err *err)
{
	_cleanup_close_ int dir = -1, lock = -1;
	char name[AJ_SECRET_NAME_MAX + 1], file[AJ_SECRET_NAME_MAX + 8];
	const char *why = aj_secret_value_refusal(value, len);
	struct aj_secret s = {0};
	_cleanup_json_ json_t *j = NULL;
	_cleanup_free_ char *text = NULL;
	uint64_t now = aj_now_realtime_ms();

	if (create && aj_secret_name_canon(ref, name, sizeof name) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "name: \"%.140s\" is not a secret name (1 to 128 letters, digits, "
				  "'_' and '-', not beginning with sec_)",
				  ref);
	if (why)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "value: the secret %s", why);
	if (check_metadata(metadata, err) < 0 || open_dir(state, owner, true, &dir, &lock, err) < 0)
		return -1;
	if (create) {
		char taken[AJ_SECRET_NAME_MAX + 1];
		if (resolve(dir, name, taken) == 0) {
			aj_err_set(err, AJ_LAYER_STATE, EEXIST, "secret \"%s\" exists", name);
			return aj_err_class(err, AJ_ERRC_EXISTS);
		}
		strcpy(s.id, "sec_");
		if (aj_random_hex(s.id + 4, 12) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "getrandom");
		snprintf(s.name, sizeof s.name, "%s", name);
		s.created_ms = (int64_t)now;
		s.metadata = metadata ? json_incref(metadata) : json_object();
	} else {
		if (resolve(dir, ref, name) < 0 || read_meta(dir, name, &s) < 0) {
			aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no secret \"%.140s\"", ref);
			return aj_err_class(err, AJ_ERRC_NOT_FOUND);
		}
		if (metadata) {
			json_decref(s.metadata);
			s.metadata = json_incref(metadata);
		}
	}
	s.version++;
	s.updated_ms = (int64_t)now;
	j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:O}", "id", s.id, "name", s.name, "version",
		      (json_int_t)s.version, "created_ms", (json_int_t)s.created_ms, "updated_ms",
		      (json_int_t)s.updated_ms, "metadata", s.metadata);
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (text && strlen(text) > META_MAX) {
		aj_secret_free(&s);
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "metadata: more than %d bytes in all",
				  META_MAX - 512);
	}
	snprintf(file, sizeof file, "%s.value", s.name);
	/* The value first: metadata without a value would be a secret that cannot be read; a new
	 * value without its metadata is taken away again. */
	if (!text || write_at(dir, file, value, len, err) < 0) {
		aj_secret_free(&s);
		return -1;
	}
	snprintf(file, sizeof file, "%s.json", s.name);
	if (write_at(dir, file, text, strlen(text), err) < 0) {
		if (create) {
			snprintf(file, sizeof file, "%s.value", s.name);
			unlinkat(dir, file, 0);
		}
		aj_secret_free(&s);
		return -1;
	}
	if (out)
		*out = s;
	else
		aj_secret_free(&s);
	return 0;
}

int aj_secret_get(const char *state, const char *owner, const char *ref, struct aj_secret *out,
		  struct aj_err *err)
{
	_cleanup_close_ int dir = -1, lock = -1;
	char name[AJ_SECRET_NAME_MAX + 1];

	if (open_dir(state, owner, false, &dir, &lock, err) < 0)
		return -1;
	if (resolve(dir, ref, name) < 0 || read_meta(dir, name, out) < 0) {
		aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no secret \"%.140s\"", ref);
		return aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	return 0;
}

bool aj_secret_exists(const char *state, const char *owner, const char *name)
{
	struct aj_secret s;
	struct aj_err err;

	if (aj_secret_get(state, owner, name, &s, &err) < 0)
		return false;
	aj_secret_free(&s);
	return true;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct aj_secret *)a)->name, ((const struct aj_secret *)b)->name);
}

int aj_secret_list(const char *state, const char *owner, struct aj_secret **out, size_t *n,
		   struct aj_err *err)
{
	_cleanup_close_ int dir = -1, lock = -1;
	_cleanup_closedir_ DIR *d = NULL;
	struct aj_secret *v = NULL;
	size_t cap = 0;
	struct dirent *e;

	*out = NULL;
	*n = 0;
	if (open_dir(state, owner, false, &dir, &lock, err) < 0)
		return -1;
	if (dir < 0)
		return 0;
	if (!(d = aj_fdopendir(dup(dir))))
		return aj_err_sys(err, AJ_LAYER_STATE, "read the secret store");
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char name[AJ_SECRET_NAME_MAX + 1];
		if (len <= 5 || e->d_name[0] == '.' || strcmp(e->d_name + len - 5, ".json") ||
		    len - 5 > AJ_SECRET_NAME_MAX)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			v = aj_xrealloc(v, cap * sizeof *v);
		}
		if (read_meta(dir, name, &v[*n]) == 0)
			(*n)++;
	}
	if (*n)
		qsort(v, *n, sizeof *v, by_name);
	*out = v;
	return 0;
}

int aj_secret_remove(const char *state, const char *owner, const char *ref, struct aj_err *err)
{
	_cleanup_close_ int dir = -1, lock = -1, fd = -1;
	char name[AJ_SECRET_NAME_MAX + 1], file[AJ_SECRET_NAME_MAX + 8];
	struct stat st;

	if (open_dir(state, owner, false, &dir, &lock, err) < 0)
		return -1;
	if (resolve(dir, ref, name) < 0) {
		aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no secret \"%.140s\"", ref);
		return aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	/* The value first: a secret half removed is one that no sandbox can use any more. */
	snprintf(file, sizeof file, "%s.value", name);
	fd = openat(dir, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size <= AJ_SECRET_VALUE_MAX) {
		char zero[AJ_SECRET_VALUE_MAX] = {0};
		(void)!aj_write_all(fd, zero, (size_t)st.st_size);
		(void)!fsync(fd);
	}
	if (unlinkat(dir, file, 0) < 0 && errno != ENOENT)
		return aj_err_sys(err, AJ_LAYER_STATE, "remove the secret store's \"%s\"", file);
	snprintf(file, sizeof file, "%s.json", name);
	if (unlinkat(dir, file, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "remove the secret store's \"%s\"", file);
	return 0;
}

json_t *aj_secret_json(const struct aj_secret *s)
{
	char created[40], updated[40];

	aj_format_time_ms((uint64_t)s->created_ms, created, sizeof created);
	aj_format_time_ms((uint64_t)s->updated_ms, updated, sizeof updated);
	return json_pack("{s:s, s:s, s:I, s:s, s:s, s:O}", "id", s->id, "name", s->name, "version",
			 (json_int_t)s->version, "created", created, "updated", updated,
			 "metadata", s->metadata);
}
