#include "image/blobs.h"

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
#include "common/util.h"

#define PARTIAL ".partial-"
#define TMP ".tmp-"

int aj_blobs_open(const char *state_dir, struct aj_blobs *b, struct aj_err *err)
{
	_cleanup_free_ char *path = aj_xasprintf("%s/images/blobs/sha256", state_dir);

	b->dir = -1;
	if (aj_mkdir_p(path, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s\"", path);
	path[strlen(path) - strlen("/sha256")] = '\0';
	b->dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->dir < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", path);
	return 0;
}

void aj_blobs_close(struct aj_blobs *b)
{
	if (b->dir >= 0)
		close(b->dir);
	b->dir = -1;
}

/* "sha256/<hex>" of a digest into buf; err may be NULL for a digest already checked. */
static int blob_name(const char *digest, char *buf, size_t len, struct aj_err *err)
{
	if (!aj_digest_valid(digest))
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
				  "\"%s\" is not a sha256 digest (sha256: and 64 hex digits)",
				  digest);
	snprintf(buf, len, "sha256/%s", aj_digest_hex(digest));
	return 0;
}

bool aj_blobs_has(const struct aj_blobs *b, const char *digest)
{
	char name[96];
	struct stat st;

	return aj_digest_valid(digest) && blob_name(digest, name, sizeof name, NULL) == 0 &&
	       fstatat(b->dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int aj_blobs_open_blob(const struct aj_blobs *b, const char *digest, struct aj_err *err)
{
	char name[96];
	int fd;

	if (blob_name(digest, name, sizeof name, err) < 0)
		return -1;
	fd = openat(b->dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		aj_err_sys(err, AJ_LAYER_IMAGE, "blob %s", digest);
		if (errno == ENOENT)
			aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	return fd;
}

int64_t aj_blobs_size(const struct aj_blobs *b, const char *digest)
{
	char name[96];
	struct stat st;

	if (!aj_digest_valid(digest) || blob_name(digest, name, sizeof name, NULL) < 0 ||
	    fstatat(b->dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	return (int64_t)st.st_size;
}

char *aj_blobs_read(const struct aj_blobs *b, const char *digest, size_t max, size_t *len,
		    struct aj_err *err)
{
	char name[96], got[AJ_DIGEST_SIZE];
	char *data;

	if (blob_name(digest, name, sizeof name, err) < 0)
		return NULL;
	data = aj_read_file_at(b->dir, name, max, len);
	if (!data) {
		aj_err_sys(err, AJ_LAYER_IMAGE, "read blob %s", digest);
		if (errno == ENOENT)
			aj_err_class(err, AJ_ERRC_NOT_FOUND);
		return NULL;
	}
	/* Blobs are checked on the way in; once more here, since this one is about to be
	 * trusted as a description of the rest. */
	aj_digest_of(data, *len, got);
	if (strcmp(got, digest) != 0) {
		free(data);
		aj_err_set(err, AJ_LAYER_IMAGE, EIO, "blob %s on disk has the digest %s", digest,
			   got);
		return NULL;
	}
	return data;
}

int aj_blobs_remove(const struct aj_blobs *b, const char *digest, struct aj_err *err)
{
	char name[96];

	if (blob_name(digest, name, sizeof name, err) < 0)
		return -1;
	if (unlinkat(b->dir, name, 0) < 0 && errno != ENOENT)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "remove blob %s", digest);
	return 0;
}

static void writer_init(const struct aj_blobs *b, struct aj_blob_writer *w)
{
	memset(w, 0, sizeof *w);
	w->b = b;
	w->fd = -1;
	w->hash = aj_hasher_new();
}

int aj_blob_begin(const struct aj_blobs *b, struct aj_blob_writer *w, struct aj_err *err)
{
	char id[33];

	writer_init(b, w);
	aj_random_hex(id, 16);
	snprintf(w->name, sizeof w->name, TMP "%s", id);
	w->fd = openat(b->dir, w->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		aj_hasher_free(w->hash);
		w->hash = NULL;
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create a blob file");
	}
	return 0;
}

/* Hashes what a partial file already holds. */
static int rehash(struct aj_blob_writer *w, struct aj_err *err)
{
	char buf[64 * 1024];
	ssize_t n;

	if (lseek(w->fd, 0, SEEK_SET) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "seek in %s", w->name);
	while ((n = read(w->fd, buf, sizeof buf)) > 0) {
		aj_hasher_update(w->hash, buf, (size_t)n);
		w->size += (uint64_t)n;
	}
	if (n < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "read %s", w->name);
	return 0;
}

int aj_blob_resume(const struct aj_blobs *b, const char *expect, struct aj_blob_writer *w,
		   struct aj_err *err)
{
	if (!aj_digest_valid(expect))
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "\"%s\" is not a sha256 digest",
				  expect);
	writer_init(b, w);
	snprintf(w->expect, sizeof w->expect, "%s", expect);
	snprintf(w->name, sizeof w->name, PARTIAL "%s", aj_digest_hex(expect));
	w->fd = openat(b->dir, w->name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0 || rehash(w, err) < 0) {
		int e = errno;
		aj_blob_abort(w, false);
		return e ? aj_err_set(err, AJ_LAYER_IMAGE, e, "open %s", expect) : -1;
	}
	return 0;
}

int aj_blob_restart(struct aj_blob_writer *w, struct aj_err *err)
{
	if (ftruncate(w->fd, 0) < 0 || lseek(w->fd, 0, SEEK_SET) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "truncate %s", w->name);
	aj_hasher_free(w->hash);
	w->hash = aj_hasher_new();
	w->size = 0;
	return 0;
}

int aj_blob_write(struct aj_blob_writer *w, const void *data, size_t len, struct aj_err *err)
{
	if (aj_write_all(w->fd, data, len) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "write %s", w->name);
	aj_hasher_update(w->hash, data, len);
	w->size += len;
	return 0;
}

void aj_blob_abort(struct aj_blob_writer *w, bool keep)
{
	if (w->fd >= 0) {
		close(w->fd);
		if (!keep || !w->expect[0])
			unlinkat(w->b->dir, w->name, 0);
	}
	w->fd = -1;
	aj_hasher_free(w->hash);
	w->hash = NULL;
}

int aj_blob_commit(struct aj_blob_writer *w, int64_t size, char out[AJ_DIGEST_SIZE],
		   struct aj_err *err)
{
	char got[AJ_DIGEST_SIZE], name[96];
	int r = -1;

	aj_hasher_final(w->hash, got);
	if (size >= 0 && w->size != (uint64_t)size)
		aj_err_set(err, AJ_LAYER_IMAGE, EIO, "blob %s: %llu bytes, not the %lld expected",
			   w->expect[0] ? w->expect : got, (unsigned long long)w->size,
			   (long long)size);
	else if (w->expect[0] && strcmp(got, w->expect) != 0)
		aj_err_set(err, AJ_LAYER_IMAGE, EIO,
			   "blob %s: the content has the digest %s: refused", w->expect, got);
	else if (fsync(w->fd) < 0)
		aj_err_sys(err, AJ_LAYER_IMAGE, "fsync %s", w->name);
	else if (snprintf(name, sizeof name, "sha256/%s", aj_digest_hex(got)),
		 renameat(w->b->dir, w->name, w->b->dir, name) < 0)
		aj_err_sys(err, AJ_LAYER_IMAGE, "publish blob %s", got);
	else
		r = 0;
	if (r == 0) {
		memcpy(out, got, AJ_DIGEST_SIZE);
		close(w->fd);
		w->fd = -1;
	}
	aj_blob_abort(w, false);
	return r;
}

int aj_blobs_put(const struct aj_blobs *b, const void *data, size_t len,
		 char digest[AJ_DIGEST_SIZE], struct aj_err *err)
{
	struct aj_blob_writer w;

	aj_digest_of(data, len, digest);
	if (aj_blobs_has(b, digest))
		return 0;
	if (aj_blob_begin(b, &w, err) < 0)
		return -1;
	if (aj_blob_write(&w, data, len, err) < 0) {
		aj_blob_abort(&w, false);
		return -1;
	}
	return aj_blob_commit(&w, (int64_t)len, digest, err);
}

int aj_blobs_sweep(const struct aj_blobs *b, bool partials, unsigned *removed, struct aj_err *err)
{
	/* A description of its own: a duplicate would share the directory offset. */
	int fd = openat(b->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return aj_err_sys(err, AJ_LAYER_IMAGE, "list the blobs");
	}
	while ((e = readdir(d))) {
		bool tmp = !strncmp(e->d_name, TMP, strlen(TMP));
		bool partial = !strncmp(e->d_name, PARTIAL, strlen(PARTIAL));
		if ((tmp || (partial && partials)) && unlinkat(b->dir, e->d_name, 0) == 0 &&
		    removed)
			(*removed)++;
	}
	closedir(d);
	return 0;
}
