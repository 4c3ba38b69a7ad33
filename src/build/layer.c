#include "build/layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/strv.h"
#include "common/tree.h"
#include "image/unpack.h"

#define MAX_DEPTH 256
#define COPY_CHUNK (128u << 10)

struct aj_layer_link {
	dev_t dev;
	ino_t ino;
	char *path;
};

static int __attribute__((format(printf, 3, 4)))
lw_fail(struct aj_layer_writer *lw, int errnum, const char *fmt, ...)
{
	char msg[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	lw->failed = true;
	return aj_err_set(lw->err, AJ_LAYER_IMAGE, errnum, "%s", msg);
}

static int tar_fail(struct aj_layer_writer *lw, const char *path, const char *why)
{
	if (lw->failed)
		return -1; /* the blob writer said what went wrong */
	return lw_fail(lw, EIO, "write the layer entry \"%s\": %s", path, why);
}

/* ---- the tar stream (pax, gzip) --------------------------------------------------------------
 * libarchive's writer, linked statically, brings every format it knows (and their libraries)
 * with it; a pax stream is headers and padding, written here and compressed with zlib. */

#define BLOCK 512

static int gz_out(struct aj_layer_writer *lw, int flush)
{
	z_stream *z = lw->z;
	unsigned char buf[64 << 10];

	do {
		int r;

		z->next_out = buf;
		z->avail_out = sizeof buf;
		r = deflate(z, flush);
		if (r == Z_STREAM_ERROR)
			return lw_fail(lw, EIO, "%s", "compress the layer: zlib stream error");
		if (sizeof buf - z->avail_out &&
		    aj_blob_write(&lw->w, buf, sizeof buf - z->avail_out, lw->err) < 0) {
			lw->failed = true;
			return -1;
		}
	} while (z->avail_out == 0 || (flush == Z_FINISH && z->avail_in));
	return 0;
}

static int tar_write(struct aj_layer_writer *lw, const void *data, size_t len)
{
	z_stream *z = lw->z;

	if (lw->failed)
		return -1;
	z->next_in = (unsigned char *)data;
	z->avail_in = (uInt)len;
	while (z->avail_in)
		if (gz_out(lw, Z_NO_FLUSH) < 0)
			return -1;
	return 0;
}

static int tar_pad(struct aj_layer_writer *lw, uint64_t size)
{
	static const char zero[BLOCK];
	size_t pad = (size_t)((BLOCK - size % BLOCK) % BLOCK);

	return pad ? tar_write(lw, zero, pad) : 0;
}

static void octal(char *field, size_t len, uint64_t v)
{
	snprintf(field, len, "%0*llo", (int)len - 1, (unsigned long long)v);
}

/* One ustar header block; its checksum filled in. */
static int ustar(struct aj_layer_writer *lw, const char *name, char type, unsigned mode,
		 uint64_t uid, uint64_t gid, uint64_t size, int64_t mtime, const char *link)
{
	unsigned char h[BLOCK];
	unsigned sum = 0;

	memset(h, 0, sizeof h);
	snprintf((char *)h, 100, "%s", name);
	octal((char *)h + 100, 8, mode & 07777);
	octal((char *)h + 108, 8, uid <= 07777777 ? uid : 0);
	octal((char *)h + 116, 8, gid <= 07777777 ? gid : 0);
	octal((char *)h + 124, 12, size <= 077777777777ULL ? size : 0);
	octal((char *)h + 136, 12, mtime > 0 && (uint64_t)mtime <= 077777777777ULL ? (uint64_t)mtime : 0);
	memset(h + 148, ' ', 8);
	h[156] = (unsigned char)type;
	if (link)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar", 6); /* magic, NUL-terminated; then the version, not */
	h[263] = '0';
	h[264] = '0';
	for (size_t i = 0; i < sizeof h; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	return tar_write(lw, h, sizeof h);
}

/* A pax record "LEN key=value\n" (LEN counting itself) appended to *buf. */
static void pax_record(char **buf, size_t *len, const char *key, const void *val, size_t vlen)
{
	size_t body = 1 + strlen(key) + 1 + vlen + 1, n = body, digits;
	char num[24];

	for (;;) {
		digits = (size_t)snprintf(num, sizeof num, "%zu", n);
		if (body + digits == n)
			break;
		n = body + digits;
	}
	*buf = aj_xrealloc(*buf, *len + n + 1);
	*len += (size_t)sprintf(*buf + *len, "%s %s=", num, key);
	memcpy(*buf + *len, val, vlen);
	*len += vlen;
	(*buf)[(*len)++] = '\n';
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Adds path to the set; false if it was there. */
static bool path_new(struct aj_layer_writer *lw, const char *path)
{
	size_t i;

	if (2 * (lw->n_paths + 1) > lw->paths_cap) {
		size_t cap = lw->paths_cap ? lw->paths_cap * 2 : 256;
		char **old = lw->paths, **v = aj_xcalloc(cap, sizeof *v);

		for (size_t k = 0; k < lw->paths_cap; k++)
			if (old[k]) {
				for (i = path_hash(old[k]) & (cap - 1); v[i]; i = (i + 1) & (cap - 1)) {
				}
				v[i] = old[k];
			}
		free(old);
		lw->paths = v;
		lw->paths_cap = cap;
	}
	for (i = path_hash(path) & (lw->paths_cap - 1); lw->paths[i];
	     i = (i + 1) & (lw->paths_cap - 1))
		if (!strcmp(lw->paths[i], path))
			return false;
	lw->paths[i] = aj_xstrdup(path);
	lw->n_paths++;
	return true;
}

/* An entry's headers (a pax extended header first when the ustar fields cannot hold it),
 * then, for a regular file, its data follows with tar_data(). A directory already written
 * (the parents of several sources) is not written again; any other path twice is refused. */
static int put_header(struct aj_layer_writer *lw, struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e), *link = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	uint64_t size = type == AE_IFREG && !link ? (uint64_t)archive_entry_size(e) : 0;
	_cleanup_free_ char *name = NULL, *pax = NULL;
	size_t plen = 0, xsize;
	const char *xname, *xval;
	const void *xv;
	char t;
	int r = 0;

	{
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		/* ".wh." names are whiteouts in a layer: a file so named would delete one */
		if (!strncmp(base, ".wh.", 4) && !lw->writing_whiteout) {
			r = lw_fail(lw, EINVAL,
				    "\"/%s\": a name starting with \".wh.\" is a whiteout in an "
				    "image layer, not a file",
				    path);
			archive_entry_free(e);
			return r;
		}
	}
	if (archive_entry_uid(e) < 0 || archive_entry_uid(e) > 65535 || archive_entry_gid(e) < 0 ||
	    archive_entry_gid(e) > 65535) {
		r = lw_fail(lw, ERANGE, "\"/%s\": owner %lld:%lld beyond ids 0-65535", path,
			    (long long)archive_entry_uid(e), (long long)archive_entry_gid(e));
		archive_entry_free(e);
		return r;
	}
	if (!path_new(lw, path)) {
		if (type != AE_IFDIR)
			r = lw_fail(lw, EEXIST,
				    "\"/%s\" would be written twice (two sources give it)", path);
		archive_entry_free(e);
		return r;
	}
	if (!link)
		link = type == AE_IFLNK ? archive_entry_symlink(e) : NULL;
	t = link && type != AE_IFLNK ? '1' : type == AE_IFLNK ? '2' : type == AE_IFDIR ? '5' : '0';
	name = type == AE_IFDIR && !link ? aj_xasprintf("%s/", path) : aj_xstrdup(path);
	if (strlen(name) >= 100)
		pax_record(&pax, &plen, "path", name, strlen(name));
	if (link && strlen(link) >= 100)
		pax_record(&pax, &plen, "linkpath", link, strlen(link));
	if (size > 077777777777ULL) {
		char v[24];
		snprintf(v, sizeof v, "%llu", (unsigned long long)size);
		pax_record(&pax, &plen, "size", v, strlen(v));
	}
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &xname, &xv, &xsize) == ARCHIVE_OK) {
		_cleanup_free_ char *key = aj_xasprintf("SCHILY.xattr.%s", xname);
		xval = xv;
		pax_record(&pax, &plen, key, xval, xsize);
	}
	lw->entries++;
	{
		char meta[200];
		int n = snprintf(meta, sizeof meta, "%c %o %lld %lld %llu ", t,
				 (unsigned)archive_entry_perm(e), (long long)archive_entry_uid(e),
				 (long long)archive_entry_gid(e), (unsigned long long)size);
		aj_hasher_update(lw->content, name, strlen(name) + 1);
		aj_hasher_update(lw->content, meta, (size_t)n);
		if (link)
			aj_hasher_update(lw->content, link, strlen(link) + 1);
		if (pax)
			aj_hasher_update(lw->content, pax, plen);
	}
	if (pax && (ustar(lw, "PaxHeader", 'x', 0644, 0, 0, plen, 0, NULL) < 0 ||
		    tar_write(lw, pax, plen) < 0 || tar_pad(lw, plen) < 0))
		r = -1;
	if (r == 0)
		r = ustar(lw, name, t, archive_entry_perm(e), (uint64_t)archive_entry_uid(e),
			  (uint64_t)archive_entry_gid(e), size, archive_entry_mtime(e), link);
	lw->left = size;
	lw->size = size;
	if (r < 0)
		r = tar_fail(lw, path, "the stream failed");
	archive_entry_free(e);
	return r;
}

/* A regular file's data; padded when the last of it is written. */
static int tar_data(struct aj_layer_writer *lw, const void *buf, size_t n, const char *path)
{
	if (n > lw->left)
		return tar_fail(lw, path, "more data than its size");
	if (tar_write(lw, buf, n) < 0)
		return -1;
	aj_hasher_update(lw->content, buf, n);
	lw->left -= n;
	return lw->left == 0 ? tar_pad(lw, lw->size) : 0;
}

int aj_layer_begin(struct aj_layer_writer *lw, const struct aj_blobs *b, struct aj_err *err)
{
	memset(lw, 0, sizeof *lw);
	lw->w.fd = -1;
	lw->err = err;
	if (aj_blob_begin(b, &lw->w, err) < 0)
		return -1;
	lw->content = aj_hasher_new();
	lw->z = aj_xcalloc(1, sizeof(z_stream));
	/* windowBits 15 + 16: a gzip wrapper, whose header zlib writes with no time or name. */
	if (deflateInit2(lw->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(lw->z);
		lw->z = NULL;
		aj_layer_abort(lw);
		return aj_err_set(err, AJ_LAYER_IMAGE, ENOMEM, "start a layer: zlib");
	}
	return 0;
}

void aj_layer_content(struct aj_layer_writer *lw, char out[AJ_DIGEST_SIZE])
{
	aj_hasher_final(lw->content, out);
	aj_hasher_free(lw->content);
	lw->content = aj_hasher_new();
}

void aj_layer_abort(struct aj_layer_writer *lw)
{
	if (lw->content)
		aj_hasher_free(lw->content);
	lw->content = NULL;
	if (lw->z) {
		deflateEnd(lw->z);
		free(lw->z);
		lw->z = NULL;
	}
	if (lw->w.fd >= 0)
		aj_blob_abort(&lw->w, false);
	for (size_t i = 0; i < lw->n_links; i++)
		free(lw->links[i].path);
	free(lw->links);
	for (size_t i = 0; i < lw->paths_cap; i++)
		free(lw->paths[i]);
	free(lw->paths);
	lw->paths = NULL;
	lw->paths_cap = lw->n_paths = 0;
	lw->links = NULL;
	lw->n_links = lw->links_used = 0;
}

int aj_layer_commit(struct aj_layer_writer *lw, char out[AJ_DIGEST_SIZE])
{
	static const char end[2 * BLOCK];
	int r = 0;

	if (lw->failed || tar_write(lw, end, sizeof end) < 0 || gz_out(lw, Z_FINISH) < 0)
		r = -1;
	if (r == 0)
		r = aj_blob_commit(&lw->w, -1, out, lw->err);
	aj_layer_abort(lw);
	return r;
}

/* ---- entries ---------------------------------------------------------------------------- */

static struct archive_entry *entry(const char *path, mode_t mode, uid_t uid, gid_t gid,
				   int64_t mtime, long nsec)
{
	struct archive_entry *e = archive_entry_new();

	if (!e)
		aj_oom(0);
	archive_entry_set_pathname(e, path);
	archive_entry_set_mode(e, mode);
	archive_entry_set_uid(e, uid);
	archive_entry_set_gid(e, gid);
	archive_entry_set_mtime(e, mtime, nsec);
	return e;
}

int aj_layer_dir(struct aj_layer_writer *lw, const char *path, mode_t mode, uid_t uid, gid_t gid,
		 int64_t mtime)
{
	return put_header(lw, entry(path, S_IFDIR | (mode & 07777), uid, gid, mtime, 0));
}

static int put_data(struct aj_layer_writer *lw, int fd, const char *path, uint64_t size)
{
	char *buf = aj_xmalloc(COPY_CHUNK);
	uint64_t left = size;

	while (left > 0) {
		ssize_t n = read(fd, buf, left < COPY_CHUNK ? (size_t)left : COPY_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			if (n < 0)
				return lw_fail(lw, errno, "read \"%s\"", path);
			return lw_fail(lw, EIO, "\"%s\" shrank while being read", path);
		}
		if (tar_data(lw, buf, (size_t)n, path) < 0) {
			free(buf);
			return -1;
		}
		left -= (uint64_t)n;
	}
	free(buf);
	return 0;
}

/* user.* attributes but overlayfs' own, whole (a value is at most 64 KiB on Linux). */
static int add_xattrs(struct aj_layer_writer *lw, struct archive_entry *e, int fd,
		      const char *rel)
{
	ssize_t n = flistxattr(fd, NULL, 0);
	_cleanup_free_ char *names = NULL, *val = NULL;

	if (n <= 0)
		return 0;
	names = aj_xmalloc((size_t)n + 1);
	n = flistxattr(fd, names, (size_t)n);
	if (n < 0)
		return lw_fail(lw, errno, "list the attributes of \"%s\"", rel);
	names[n] = '\0';
	val = aj_xmalloc(65536);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		const char *name = names + i;
		ssize_t len;

		if (strncmp(name, "user.", 5) || !strncmp(name, "user.overlay.", 13))
			continue;
		len = fgetxattr(fd, name, val, 65536);
		if (len < 0)
			return lw_fail(lw, errno, "read the attribute %s of \"%s\"", name, rel);
		archive_entry_xattr_add_entry(e, name, val, (size_t)len);
	}
	return 0;
}

static bool opaque(int fd)
{
	char v[4];
	ssize_t n = fgetxattr(fd, AJ_OVL_OPAQUE_XATTR, v, sizeof v);

	return n == 1 && v[0] == 'y';
}

static void owner_of(const struct aj_layer_tree *t, const struct stat *st, uid_t *uid, gid_t *gid)
{
	if (t->own) {
		*uid = t->uid;
		*gid = t->gid;
		return;
	}
	*uid = t->self != (uid_t)-1 && st->st_uid == t->self ? 0 : st->st_uid;
	*gid = t->self != (uid_t)-1 && st->st_uid == t->self ? 0 : st->st_gid;
}

static mode_t mode_of(const struct aj_layer_tree *t, const struct stat *st)
{
	return (st->st_mode & S_IFMT) | (t->chmod >= 0 ? (mode_t)t->chmod : st->st_mode & 07777);
}

static char *join(const char *a, const char *b)
{
	return *a ? aj_xasprintf("%s/%s", a, b) : aj_xstrdup(b);
}

/* The first path written for a file of several links, or NULL (then path is recorded). An
 * open-addressing table on (device, inode): lw->n_links slots of lw->links, a power of two. */
static const char *known_link(struct aj_layer_writer *lw, const struct stat *st, const char *path)
{
	size_t i, cap = lw->n_links;

	if (lw->links_used * 2 + 2 > cap) {
		size_t ncap = cap ? cap * 2 : 64;
		struct aj_layer_link *v = aj_xcalloc(ncap, sizeof *v);

		for (size_t k = 0; k < cap; k++)
			if (lw->links[k].path) {
				for (i = (size_t)(lw->links[k].ino ^ lw->links[k].dev) & (ncap - 1);
				     v[i].path; i = (i + 1) & (ncap - 1)) {
				}
				v[i] = lw->links[k];
			}
		free(lw->links);
		lw->links = v;
		lw->n_links = cap = ncap;
	}
	for (i = (size_t)(st->st_ino ^ st->st_dev) & (cap - 1); lw->links[i].path;
	     i = (i + 1) & (cap - 1))
		if (lw->links[i].dev == st->st_dev && lw->links[i].ino == st->st_ino)
			return lw->links[i].path;
	lw->links[i] = (struct aj_layer_link){st->st_dev, st->st_ino, aj_xstrdup(path)};
	lw->links_used++;
	return NULL;
}

static int walk(struct aj_layer_writer *lw, int dir, const char *rel, const char *path,
		const struct aj_layer_tree *t, int depth);

/* One entry `name` of directory dir: rel is its path in the tree, path in the layer. */
static int put_entry(struct aj_layer_writer *lw, int dir, const char *name, const char *rel,
		     const char *path, const struct aj_layer_tree *t, int depth)
{
	struct stat st;
	struct archive_entry *e;
	uid_t uid;
	gid_t gid;
	_cleanup_close_ int fd = -1;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return lw_fail(lw, errno, "stat \"%s\"", rel);
	if (t->skip && t->skip(t->skip_arg, rel, S_ISDIR(st.st_mode)))
		return 0;
	owner_of(t, &st, &uid, &gid);
	if (t->overlay && S_ISCHR(st.st_mode) && st.st_rdev == 0) {
		/* A whiteout: the OCI spec's ".wh." file beside where the path was. */
		const char *slash = strrchr(path, '/');
		_cleanup_free_ char *wh =
			slash ? aj_xasprintf("%.*s/.wh.%s", (int)(slash - path), path, slash + 1)
			      : aj_xasprintf(".wh.%s", path);

		int rc;

		lw->writing_whiteout = true;
		rc = put_header(lw, entry(wh, S_IFREG, 0, 0, st.st_mtim.tv_sec, 0));
		lw->writing_whiteout = false;
		return rc;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[4097];
		ssize_t n = readlinkat(dir, name, target, sizeof target - 1);

		if (n < 0)
			return lw_fail(lw, errno, "read the link \"%s\"", rel);
		target[n] = '\0';
		e = entry(path, S_IFLNK | 0777, uid, gid, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		archive_entry_set_symlink(e, target);
		return put_header(lw, e);
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return 0; /* devices, sockets, fifos: a sandbox root is nodev anyway */
	fd = openat(dir, name,
		    (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0) | O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			    O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return lw_fail(lw, errno, "open \"%s\"", rel);
	if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
		const char *first = known_link(lw, &st, path);

		if (first) {
			e = entry(path, mode_of(t, &st), uid, gid, st.st_mtim.tv_sec,
				  st.st_mtim.tv_nsec);
			archive_entry_set_hardlink(e, first);
			archive_entry_set_size(e, 0);
			return put_header(lw, e);
		}
	}
	e = entry(path, mode_of(t, &st), uid, gid, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if ((!t->own || t->overlay) && add_xattrs(lw, e, fd, rel) < 0) {
		archive_entry_free(e);
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		archive_entry_set_size(e, st.st_size);
		if (put_header(lw, e) < 0)
			return -1;
		return put_data(lw, fd, rel, (uint64_t)st.st_size);
	}
	if (put_header(lw, e) < 0)
		return -1;
	if (t->overlay && opaque(fd)) {
		_cleanup_free_ char *opq = aj_xasprintf("%s/.wh..wh..opq", path);

		int rc;

		lw->writing_whiteout = true;
		rc = put_header(lw, entry(opq, S_IFREG, 0, 0, st.st_mtim.tv_sec, 0));
		lw->writing_whiteout = false;
		if (rc < 0)
			return -1;
	}
	return walk(lw, fd, rel, path, t, depth + 1);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir (rel in the tree, path in the layer), in name order. */
static int list_names(int dir, struct aj_strv *names);

static int walk(struct aj_layer_writer *lw, int dir, const char *rel, const char *path,
		const struct aj_layer_tree *t, int depth)
{
	_cleanup_strv_ struct aj_strv names = AJ_STRV_INIT;

	if (depth > MAX_DEPTH)
		return lw_fail(lw, ELOOP, "\"%s\": directories nested too deep", rel);
	if (list_names(dir, &names) < 0)
		return lw_fail(lw, errno, "list \"%s\"", *rel ? rel : ".");
	if (names.n > 1)
		qsort(names.v, names.n, sizeof *names.v, cmp_names);
	for (size_t i = 0; i < names.n; i++) {
		_cleanup_free_ char *r = join(rel, names.v[i]), *p = join(path, names.v[i]);

		if (put_entry(lw, dir, names.v[i], r, p, t, depth) < 0)
			return -1;
	}
	return 0;
}

static bool is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == 0;
}

/* The names of dir's entries ("." and ".." aside) appended to names; -1 with errno. */
static int list_names(int dir, struct aj_strv *names)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			aj_strv_push(names, de->d_name);
	closedir(d);
	return 0;
}

static int merged(struct aj_layer_writer *lw, const int *dirs, size_t n, const char *rel,
		  const char *path, const struct aj_layer_tree *t, int depth)
{
	_cleanup_strv_ struct aj_strv names = AJ_STRV_INIT;

	if (depth > MAX_DEPTH)
		return lw_fail(lw, ELOOP, "\"%s\": directories nested too deep", rel);
	for (size_t k = 0; k < n; k++)
		if (list_names(dirs[k], &names) < 0)
			return lw_fail(lw, errno, "list \"%s\"", *rel ? rel : ".");
	if (names.n > 1)
		qsort(names.v, names.n, sizeof *names.v, cmp_names);
	for (size_t i = 0; i < names.n; i++) {
		_cleanup_free_ char *r = NULL, *p = NULL;
		int sub[128];
		size_t n_sub = 0, top = n;
		struct stat st;
		int rc = 0;

		if (i && !strcmp(names.v[i], names.v[i - 1]))
			continue; /* in several layers: once */
		r = join(rel, names.v[i]);
		p = join(path, names.v[i]);
		for (size_t k = 0; k < n; k++)
			if (fstatat(dirs[k], names.v[i], &st, AT_SYMLINK_NOFOLLOW) == 0) {
				top = k;
				break;
			}
		if (top == n || is_whiteout(&st))
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (put_entry(lw, dirs[top], names.v[i], r, p, t, depth) < 0)
				return -1;
			continue;
		}
		/* A directory: it in this layer and in the lower ones, while they have a
		 * directory there and until an opaque one. */
		for (size_t k = top; k < n && n_sub < sizeof sub / sizeof sub[0]; k++) {
			struct stat s;
			int fd;

			if (fstatat(dirs[k], names.v[i], &s, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (!S_ISDIR(s.st_mode))
				break;
			fd = openat(dirs[k], names.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				for (size_t q = 0; q < n_sub; q++)
					close(sub[q]);
				return lw_fail(lw, errno, "open \"%s\" in a layer", r);
			}
			sub[n_sub++] = fd;
			if (opaque(fd))
				break;
		}
		{
			uid_t uid;
			gid_t gid;

			owner_of(t, &st, &uid, &gid);
			rc = put_header(lw, entry(p, mode_of(t, &st), uid, gid, st.st_mtim.tv_sec,
						  st.st_mtim.tv_nsec));
			if (rc == 0)
				rc = merged(lw, sub, n_sub, r, p, t, depth + 1);
		}
		for (size_t k = 0; k < n_sub; k++)
			close(sub[k]);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int aj_layer_merged(struct aj_layer_writer *lw, const int *dirs, size_t n,
		    const struct aj_layer_tree *t)
{
	return merged(lw, dirs, n, "", t->dest, t, 0);
}

int aj_layer_tree(struct aj_layer_writer *lw, int dir_fd, const char *name,
		  const struct aj_layer_tree *t)
{
	struct stat st;
	uid_t uid;
	gid_t gid;

	if (name) {
		/* One file (or link) at dest: its own name goes. */
		struct aj_layer_tree one = *t;

		one.skip = NULL;
		return put_entry(lw, dir_fd, name, name, t->dest, &one, 0);
	}
	if (fstat(dir_fd, &st) < 0)
		return lw_fail(lw, errno, "stat \"%s\"", t->dest);
	if (*t->dest) {
		owner_of(t, &st, &uid, &gid);
		if (aj_layer_dir(lw, t->dest, mode_of(t, &st) & 07777, uid, gid, st.st_mtim.tv_sec) <
		    0)
			return -1;
	}
	return walk(lw, dir_fd, "", t->dest, t, 0);
}

/* ---- archives --------------------------------------------------------------------------- */

static struct archive *reader(int fd)
{
	struct archive *a = archive_read_new();

	if (!a)
		aj_oom(0);
	archive_read_support_format_tar(a);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	if (archive_read_open_fd(a, fd, 64 << 10) != ARCHIVE_OK) {
		archive_read_free(a);
		return NULL;
	}
	return a;
}

bool aj_layer_is_archive(int fd)
{
	struct archive *a;
	struct archive_entry *e;
	bool yes;

	if (lseek(fd, 0, SEEK_SET) < 0 || !(a = reader(fd)))
		return false;
	yes = archive_read_next_header(a, &e) == ARCHIVE_OK;
	archive_read_free(a);
	lseek(fd, 0, SEEK_SET);
	return yes;
}

/* An archive's path as the layer has it under dest: empty and "." elements dropped, ".."
 * refused. *out NULL for the archive's top. */
static int clean_path(const char *in, const char *dest, char **out)
{
	size_t len = strlen(dest), cap = len + strlen(in) + 2;
	char *o = aj_xmalloc(cap);

	memcpy(o, dest, len + 1);
	for (const char *c = in; *c;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if (n == 2 && c[0] == '.' && c[1] == '.') {
			free(o);
			return -1;
		}
		if (n && !(n == 1 && c[0] == '.')) {
			if (len)
				o[len++] = '/';
			memcpy(o + len, c, n);
			len += n;
			o[len] = '\0';
		}
		c += n + (e ? 1 : 0);
	}
	if (len == strlen(dest)) {
		free(o);
		o = NULL;
	}
	*out = o;
	return 0;
}

int aj_layer_archive(struct aj_layer_writer *lw, int fd, const char *what,
		     const struct aj_layer_tree *t)
{
	struct archive *a;
	struct archive_entry *in;
	int r;

	uint64_t entries = 0, bytes = 0;

	if (lseek(fd, 0, SEEK_SET) < 0 || !(a = reader(fd)))
		return lw_fail(lw, EIO, "%s: not an archive", what);
	while ((r = archive_read_next_header(a, &in)) == ARCHIVE_OK) {
		if (++entries > AJ_UNPACK_MAX_ENTRIES ||
		    (bytes += (uint64_t)(archive_entry_size(in) > 0 ? archive_entry_size(in) : 0)) >
			    AJ_UNPACK_MAX_BYTES) {
			archive_read_free(a);
			return lw_fail(lw, E2BIG, "%s: more than %u entries or %llu bytes", what,
				       AJ_UNPACK_MAX_ENTRIES, (unsigned long long)AJ_UNPACK_MAX_BYTES);
		}
		_cleanup_free_ char *path = NULL, *link = NULL;
		mode_t type = archive_entry_filetype(in);
		struct archive_entry *e;
		const char *hl = archive_entry_hardlink(in);

		if (clean_path(archive_entry_pathname(in), t->dest, &path) < 0 ||
		    (hl && clean_path(hl, t->dest, &link) < 0)) {
			archive_read_free(a);
			return lw_fail(lw, EINVAL, "%s: an entry's path leaves the archive (\"..\")",
				       what);
		}
		if (!path || (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK))
			continue;
		e = entry(path, type | (t->chmod >= 0 ? (mode_t)t->chmod
						       : archive_entry_perm(in) & 07777),
			  t->own ? t->uid : (uid_t)archive_entry_uid(in),
			  t->own ? t->gid : (gid_t)archive_entry_gid(in), archive_entry_mtime(in),
			  0);
		if (type == AE_IFLNK)
			archive_entry_set_symlink(e, archive_entry_symlink(in));
		if (link) {
			archive_entry_set_hardlink(e, link);
		} else if (type == AE_IFREG) {
			archive_entry_set_size(e, archive_entry_size(in));
		}
		if (put_header(lw, e) < 0) {
			archive_read_free(a);
			return -1;
		}
		if (type == AE_IFREG && !link) {
			char buf[64 << 10];
			la_ssize_t n;

			while ((n = archive_read_data(a, buf, sizeof buf)) > 0)
				if (tar_data(lw, buf, (size_t)n, path) < 0) {
					archive_read_free(a);
					return -1;
				}
			if (n < 0 || lw->left != 0) {
				archive_read_free(a);
				return lw_fail(lw, EIO, "%s: truncated or corrupt", what);
			}
		}
	}
	archive_read_free(a);
	if (r != ARCHIVE_EOF)
		return lw_fail(lw, EIO, "%s: truncated or corrupt", what);
	return 0;
}
