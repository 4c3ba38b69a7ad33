/* Volumes: an owner's named directories under STATE/volumes; see volumes.h. */
#include "storage/volumes.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/owner_key.h"
#include "common/tree.h"
#include "common/util.h"
#include "storage/quota.h"

#define META_MAX 4096

const char *aj_volume_name_refusal(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return "is empty";
	if (n > AJ_VOLUME_NAME_MAX)
		return "is longer than 63 characters";
	if (!isalnum((unsigned char)name[0]))
		return "does not begin with a letter or digit";
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_-.", name[i]))
			return "has a character other than letters, digits, '_', '-' and '.'";
	return NULL;
}

static int owner_dir(const char *state, const char *owner, char *buf, size_t len)
{
	char key[AJ_OWNER_KEY_LEN + 1];
	int n;

	if (aj_owner_key(owner, key) < 0)
		return -1;
	n = snprintf(buf, len, "%s/volumes/%s", state, key);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The owner's directory, opened (made when `make`), and its lock taken; *dir -1 when there is
 * none and !make. */
static int open_owner(const char *state, const char *owner, bool make, int *dir, int *lock,
		      char *path, size_t len, struct aj_err *err)
{
	*dir = *lock = -1;
	if (owner_dir(state, owner, path, len) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the volumes' path");
	return aj_owner_dir_open(path, make, dir, lock, err);
}

static int read_meta(int odir, const char *odir_path, const char *name, struct aj_volume *v)
{
	char file[AJ_VOLUME_NAME_MAX + 16];
	_cleanup_free_ char *text = NULL;
	_cleanup_json_ json_t *j = NULL;
	const char *id;

	memset(v, 0, sizeof *v);
	snprintf(file, sizeof file, "%s/meta.json", name);
	text = aj_read_file_at(odir, file, META_MAX, NULL);
	j = text ? json_loads(text, 0, NULL) : NULL;
	id = json_string_value(json_object_get(j, "id"));
	if (!id || strlen(id) >= sizeof v->id)
		return -1;
	snprintf(v->id, sizeof v->id, "%s", id);
	snprintf(v->name, sizeof v->name, "%s", name);
	v->size = (uint64_t)json_integer_value(json_object_get(j, "size"));
	v->created_ms = json_integer_value(json_object_get(j, "created_ms"));
	snprintf(v->dir, sizeof v->dir, "%s/%s", odir_path, name);
	return 0;
}

/* ref (a name or an id) to the volume in odir; -1 if none. */
static int find(int odir, const char *odir_path, const char *ref, struct aj_volume *v)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;

	if (!aj_volume_name_refusal(ref) && read_meta(odir, odir_path, ref, v) == 0)
		return 0;
	if (strncmp(ref, "vol_", 4) != 0 || !(d = fdopendir(dup(odir))))
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && read_meta(odir, odir_path, e->d_name, v) == 0 &&
		    !strcmp(v->id, ref))
			return 0;
	return -1;
}

static int not_found(struct aj_err *err, const char *ref)
{
	aj_err_set(err, AJ_LAYER_STATE, 0, "no volume \"%s\"", ref);
	return aj_err_class(err, AJ_ERRC_NOT_FOUND);
}

/* Removes the volume directory `name` of odir: its data's quota released, every file gone. */
static int remove_volume_dir(int odir, const char *name, struct aj_err *err)
{
	_cleanup_close_ int d = openat(odir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (d >= 0 && aj_quota_remove_at(d, "data", err) < 0)
		return -1;
	return aj_tree_remove_at(odir, name, err);
}

/* What a crash or a failed removal left, under the owner's lock: .tmp-<name> (a create that
 * did not finish) and .rm-<id> (a removal that did not). */
static void sweep(int odir)
{
	_cleanup_closedir_ DIR *d = fdopendir(dup(odir));
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, ".tmp-", 5) || !strncmp(e->d_name, ".rm-", 4))
			remove_volume_dir(odir, e->d_name, NULL);
}

/* The new volume's files in tmp (a directory of odir): data/ (a quota directory of `size`),
 * lock, meta.json. */
static int fill_new(int odir, const char *odir_path, const char *tmp, struct aj_volume *v,
		    struct aj_err *err)
{
	char path[4400];
	_cleanup_free_ char *meta = NULL;
	_cleanup_close_ int d = -1, l = -1, mfd = -1;
	json_t *j;
	bool limited;

	snprintf(path, sizeof path, "%s/%s/data", odir_path, tmp);
	if (aj_quota_mkdir(path, 0755, v->size, &limited, err) < 0)
		return -1;
	if (v->size && !limited) {
		struct aj_quota_probe q;
		aj_quota_probe(odir_path, &q);
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--size: a volume's size is a disk quota, not possible here: %s",
				  q.kind ? "making one failed" : q.why);
	}
	if (geteuid() == 0 ? chown(path, AJ_VOLUME_ROOT_UID, AJ_VOLUME_ROOT_UID) < 0
			   : chmod(path, 0777) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "give \"%s\" to the sandbox user", path);
	d = openat(odir, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	l = d < 0 ? -1 : openat(d, "lock", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (l < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s/%s/lock\"", odir_path, tmp);
	meta = json_dumps(j = aj_volume_json(v), JSON_COMPACT);
	json_decref(j);
	mfd = openat(d, "meta.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (mfd < 0 || !meta || aj_write_all(mfd, meta, strlen(meta)) < 0 || fsync(mfd) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "write \"%s/%s/meta.json\"", odir_path, tmp);
	return 0;
}

int aj_volume_create(const char *state, const char *owner, const char *name, uint64_t size,
		     struct aj_volume *out, struct aj_err *err)
{
	char odir_path[4096], tmp[AJ_VOLUME_NAME_MAX + 8], hex[17];
	_cleanup_close_ int odir = -1, lock = -1;
	const char *why = aj_volume_name_refusal(name);
	struct stat st;

	aj_err_clear(err);
	if (why)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "volume name \"%s\" %s", name, why);
	if (size && size < AJ_VOLUME_SIZE_MIN)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--size: at least 16MiB");
	if (open_owner(state, owner, true, &odir, &lock, odir_path, sizeof odir_path, err) < 0)
		return -1;
	if (fstatat(odir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		aj_err_set(err, AJ_LAYER_STATE, 0, "a volume \"%s\" exists already", name);
		return aj_err_class(err, AJ_ERRC_EXISTS);
	}
	if (aj_random_hex(hex, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "getrandom");
	memset(out, 0, sizeof *out);
	snprintf(out->id, sizeof out->id, "vol_%s", hex);
	snprintf(out->name, sizeof out->name, "%s", name);
	out->size = size;
	out->created_ms = (int64_t)aj_now_realtime_ms();
	snprintf(out->dir, sizeof out->dir, "%s/%s", odir_path, name);
	/* Made whole under a temporary name: a crash leaves a .tmp- directory, never half a
	 * volume under its name. */
	snprintf(tmp, sizeof tmp, ".tmp-%s", name);
	sweep(odir);
	if (mkdirat(odir, tmp, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s/%s\"", odir_path, tmp);
	if (fill_new(odir, odir_path, tmp, out, err) < 0 || renameat(odir, tmp, odir, name) < 0) {
		if (!err->msg[0])
			aj_err_sys(err, AJ_LAYER_STATE, "rename \"%s/%s\"", odir_path, tmp);
		remove_volume_dir(odir, tmp, NULL);
		return -1;
	}
	return 0;
}

int aj_volume_get(const char *state, const char *owner, const char *ref, struct aj_volume *out,
		  struct aj_err *err)
{
	char odir_path[4096];
	_cleanup_close_ int odir = -1, lock = -1;

	if (open_owner(state, owner, false, &odir, &lock, odir_path, sizeof odir_path, err) < 0)
		return -1;
	if (odir < 0 || find(odir, odir_path, ref, out) < 0)
		return not_found(err, ref);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct aj_volume *)a)->name, ((const struct aj_volume *)b)->name);
}

int aj_volume_list(const char *state, const char *owner, struct aj_volume **out, size_t *n,
		   struct aj_err *err)
{
	char odir_path[4096];
	_cleanup_close_ int odir = -1, lock = -1;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (open_owner(state, owner, false, &odir, &lock, odir_path, sizeof odir_path, err) < 0)
		return -1;
	if (odir < 0)
		return 0;
	d = fdopendir(dup(odir));
	if (!d)
		return aj_err_sys(err, AJ_LAYER_STATE, "read \"%s\"", odir_path);
	while ((e = readdir(d))) {
		struct aj_volume v;
		if (e->d_name[0] == '.' || read_meta(odir, odir_path, e->d_name, &v) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = aj_xrealloc(*out, cap * sizeof **out);
		}
		(*out)[(*n)++] = v;
	}
	if (*n)
		qsort(*out, *n, sizeof **out, by_name);
	return 0;
}

int aj_volume_remove(const char *state, const char *owner, const char *ref, bool force,
		     struct aj_err *err)
{
	char odir_path[4096], gone[32];
	_cleanup_close_ int odir = -1, lock = -1;
	struct aj_volume v;

	if (open_owner(state, owner, false, &odir, &lock, odir_path, sizeof odir_path, err) < 0)
		return -1;
	if (odir < 0 || find(odir, odir_path, ref, &v) < 0)
		return not_found(err, ref);
	if (!force && aj_volume_in_use(&v)) {
		aj_err_set(err, AJ_LAYER_STATE, 0, "volume \"%s\" is mounted by a running sandbox",
			   v.name);
		aj_err_hint(err, "stop the sandboxes that mount it, or remove it anyway with -f");
		return aj_err_class(err, AJ_ERRC_WRONG_STATE);
	}
	/* Out of its name first: a crash mid-removal leaves a .rm- directory, which the next
	 * create or remove of the owner's volumes does not see as a volume. */
	snprintf(gone, sizeof gone, ".rm-%s", v.id);
	if (renameat(odir, v.name, odir, gone) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "remove \"%s\"", v.dir);
	if (remove_volume_dir(odir, gone, err) < 0)
		return aj_err_prefix(err, "volume \"%s\" is gone, but not all its files (the next "
					  "create or remove of the owner's volumes tries again)",
				     v.name);
	sweep(odir);
	return 0;
}

int aj_volume_data(const struct aj_volume *v, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/data", v->dir);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int aj_volume_hold(const struct aj_volume *v, struct aj_err *err)
{
	char path[4300];
	int fd;

	snprintf(path, sizeof path, "%s/lock", v->dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_SH) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "lock volume \"%s\"", v->name);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

bool aj_volume_in_use(const struct aj_volume *v)
{
	char path[4300];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "%s/lock", v->dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

uint64_t aj_volume_used(const struct aj_volume *v)
{
	char path[4300];
	struct aj_quota_use u;
	uint64_t bytes = 0;
	_cleanup_close_ int fd = -1;

	if (aj_volume_data(v, path, sizeof path) < 0)
		return 0;
	if (aj_quota_usage(path, false, &u) == 0)
		return u.bytes;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		aj_tree_size(fd, &bytes, NULL);
	return bytes;
}

json_t *aj_volume_json(const struct aj_volume *v)
{
	char t[40];

	aj_format_time_ms((uint64_t)v->created_ms, t, sizeof t);
	return json_pack("{s:s, s:s, s:I, s:I, s:s}", "id", v->id, "name", v->name, "size",
			 (json_int_t)v->size, "created_ms", (json_int_t)v->created_ms, "created",
			 t);
}

int aj_volume_entry_parse(const char *entry, struct aj_volume_entry *out, char *why, size_t len)
{
	const char *c1 = strchr(entry, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	size_t tlen = c1 ? (c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1)) : 0;

	memset(out, 0, sizeof *out);
	if (!c1 || c1 == entry || !tlen) {
		snprintf(why, len, "is not SOURCE:TARGET[:ro] (a volume's name or a host directory, "
				   "and where it appears)");
		return -1;
	}
	if (c2 && strcmp(c2 + 1, "ro") && strcmp(c2 + 1, "rw")) {
		snprintf(why, len, "ends in \"%s\" (expected :ro or :rw)", c2 + 1);
		return -1;
	}
	if ((size_t)(c1 - entry) >= sizeof out->source || tlen >= sizeof out->target) {
		snprintf(why, len, "is too long");
		return -1;
	}
	memcpy(out->source, entry, (size_t)(c1 - entry));
	memcpy(out->target, c1 + 1, tlen);
	out->ro = c2 && !strcmp(c2 + 1, "ro");
	out->host = out->source[0] == '/';
	if (!aj_path_is_clean_abs(out->target)) {
		snprintf(why, len, "has the target \"%s\" (expected a clean absolute path)",
			 out->target);
		return -1;
	}
	if (!out->host && aj_volume_name_refusal(out->source)) {
		snprintf(why, len, "names the volume \"%s\", whose name %s", out->source,
			 aj_volume_name_refusal(out->source));
		return -1;
	}
	return 0;
}

/* get and hold under the owner's lock, which rm holds too: never the lock of a volume that a
 * removal has passed. */
static int hold_ref(const char *state, const char *owner, const char *ref, struct aj_volume *v,
		    struct aj_err *err)
{
	char odir_path[4096];
	_cleanup_close_ int odir = -1, lock = -1;

	if (open_owner(state, owner, false, &odir, &lock, odir_path, sizeof odir_path, err) < 0)
		return -1;
	if (odir < 0 || find(odir, odir_path, ref, v) < 0)
		return not_found(err, ref);
	return aj_volume_hold(v, err);
}

int aj_volumes_attach(const char *state, const char *owner, const struct aj_strv *entries,
		      struct aj_strv *dirs, int **fds, size_t *n_fds, struct aj_err *err)
{
	struct aj_volume_entry e;
	struct aj_volume v;
	char why[200], data[4300];

	for (size_t i = 0; i < entries->n; i++) {
		int fd;
		if (aj_volume_entry_parse(entries->v[i], &e, why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "filesystem.volumes[%zu]: %s", i,
					  why);
		if (e.host) {
			aj_strv_push(dirs, e.source);
			continue;
		}
		if ((fd = hold_ref(state, owner, e.source, &v, err)) < 0)
			return aj_err_prefix(err, "filesystem.volumes[%zu]", i);
		if (aj_volume_data(&v, data, sizeof data) < 0) {
			close(fd);
			return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the volume's path");
		}
		*fds = aj_xrealloc(*fds, (*n_fds + 1) * sizeof **fds);
		(*fds)[(*n_fds)++] = fd;
		aj_strv_push(dirs, data);
	}
	return 0;
}
