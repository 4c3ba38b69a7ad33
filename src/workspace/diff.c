/* The diff engines (diff.h): what a sandbox's writable layer changed over its lower layers,
 * and what a persistent sandbox changed since its base stack. Both look paths up one layer at
 * a time with openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH), as overlayfs merges them, so a
 * symlink a sandbox planted in a layer is an entry, never a way out of it. */
#include "workspace/diff.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "common/tree.h"
#include "workspace/internal.h"

/* ---- one upper over its lower layers --------------------------------------------------- */

enum lookup { L_ABSENT, L_FOUND_DIR, L_FOUND, L_WHITEOUT };

/* Looks `rel` up in one layer without following any symlink. */
static enum lookup layer_lookup(int layer, const char *rel, bool *opaque)
{
	_cleanup_close_ int fd = aj_open_beneath(layer, rel, O_PATH | O_NOFOLLOW, 0);
	struct stat st;
	char v[8];

	*opaque = false;
	if (fd < 0 || fstat(fd, &st) < 0)
		return L_ABSENT;
	if (aj_tree_is_whiteout((int)st.st_mode, st.st_rdev))
		return L_WHITEOUT;
	if (!S_ISDIR(st.st_mode))
		return L_FOUND;
	{
		_cleanup_close_ int dfd =
			aj_open_beneath(layer, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		*opaque = dfd >= 0 && fgetxattr(dfd, AJ_OVL_OPAQUE_XATTR, v, sizeof v) > 0 &&
			  v[0] == 'y';
	}
	return L_FOUND_DIR;
}

/* Directory `rel` of a layer, for reading its entries; NULL if it cannot be opened. */
static DIR *layer_dir(int layer, const char *rel)
{
	return aj_fdopendir(aj_open_beneath(layer, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0));
}

struct diff_ctx {
	int *lowers; /* top first, open */
	size_t n;
	int (*fn)(void *arg, char kind, const char *path);
	void *arg;
	struct aj_strv out; /* "K path", sorted at the end */
};

/* Does `rel` exist in the merged lower layers? Stops at whiteouts and opaque directories. */
static bool in_lowers(struct diff_ctx *c, const char *rel)
{
	for (size_t i = 0; i < c->n; i++) {
		bool opaque;
		enum lookup l = layer_lookup(c->lowers[i], rel, &opaque);
		if (l == L_WHITEOUT)
			return false;
		if (l == L_FOUND || l == L_FOUND_DIR)
			return true;
	}
	return false;
}

static void emit(struct diff_ctx *c, char kind, const char *rel)
{
	aj_strv_pushf(&c->out, "%c %s", kind, rel);
}

static int diff_dir(struct diff_ctx *c, int upper_root, const char *rel, int depth,
		    struct aj_err *err);

/* Children of a lower directory hidden by an opaque upper directory count as deleted unless
 * the upper has them again. */
static void opaque_deletions(struct diff_ctx *c, int upper_root, const char *rel)
{
	for (size_t i = 0; i < c->n; i++) {
		bool opaque;
		_cleanup_closedir_ DIR *d = NULL;
		struct dirent *e;

		if (layer_lookup(c->lowers[i], rel, &opaque) != L_FOUND_DIR ||
		    !(d = layer_dir(c->lowers[i], rel)))
			continue;
		while ((e = readdir(d))) {
			char child[4200];
			bool o;
			if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
				continue;
			snprintf(child, sizeof child, "%s/%s", rel, e->d_name);
			if (layer_lookup(upper_root, child, &o) == L_ABSENT &&
			    !aj_strv_contains(&c->out, child))
				emit(c, 'D', child);
		}
		if (opaque)
			break;
	}
}

static int diff_entry(struct diff_ctx *c, int upper_root, const char *rel, int depth,
		      bool parent_opaque, struct aj_err *err)
{
	bool opaque, existed = !parent_opaque && in_lowers(c, rel);
	enum lookup l = layer_lookup(upper_root, rel, &opaque);

	if (parent_opaque)
		existed = in_lowers(c, rel);
	if (l == L_WHITEOUT) {
		if (existed)
			emit(c, 'D', rel);
		return 0;
	}
	if (l != L_FOUND_DIR) {
		emit(c, existed ? 'M' : 'A', rel);
		return 0;
	}
	if (!existed)
		emit(c, 'A', rel);
	if (existed && opaque)
		opaque_deletions(c, upper_root, rel);
	return diff_dir(c, upper_root, rel, depth + 1, err);
}

static int diff_dir(struct diff_ctx *c, int upper_root, const char *rel, int depth,
		    struct aj_err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	bool opaque = false;
	int r = 0;

	if (depth > 256)
		return aj_err_set(err, AJ_LAYER_STATE, ELOOP, "workspace deeper than 256 levels");
	if (rel[0])
		layer_lookup(upper_root, rel, &opaque);
	if (!(d = layer_dir(upper_root, rel)))
		return aj_err_sys(err, AJ_LAYER_STATE, "read \"%s\" in the upper layer", rel);
	while (r == 0 && (e = readdir(d))) {
		char child[4200];
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
		r = diff_entry(c, upper_root, child, depth, opaque, err);
	}
	return r;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 2, *(char *const *)b + 2);
}

/* What a diff_ctx holds: its open lowers and the entries found. */
static void diff_ctx_free(struct diff_ctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		close(c->lowers[i]);
	free(c->lowers);
	aj_strv_free(&c->out);
}

int aj_ws_diff(const char *upper_dir, const struct aj_strv *lower_dirs,
	       int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err)
{
	__attribute__((cleanup(diff_ctx_free))) struct diff_ctx c = {.fn = fn, .arg = arg};
	_cleanup_close_ int upper = ws_open_dir(upper_dir, err);
	int r = 0;

	if (upper < 0)
		return -1;
	c.lowers = aj_xcalloc(lower_dirs->n + 1, sizeof *c.lowers);
	for (; c.n < lower_dirs->n; c.n++) {
		int fd = ws_open_dir(lower_dirs->v[c.n], err);
		if (fd < 0)
			return -1;
		c.lowers[c.n] = fd; /* counted only once open: diff_ctx_free() closes c.n of them */
	}
	if (diff_dir(&c, upper, "", 0, err) < 0)
		return -1;
	if (c.out.n)
		qsort(c.out.v, c.out.n, sizeof *c.out.v, cmp_entry);
	for (size_t i = 0; i < c.out.n && r == 0; i++)
		r = fn(arg, c.out.v[i][0], c.out.v[i] + 2);
	return r;
}

/* ---- diff against a base stack --------------------------------------------------------- */

/* A stack of open layers, top first, as overlayfs merges them. */
struct view {
	int *fd;
	size_t n;
	bool *live; /* scratch for merged_exists */
};

/* Does `rel` exist in the merged view, and is it a directory? Resolved one component at a
 * time as overlayfs does: a whiteout or a non-directory hides the layers below it, an opaque
 * directory hides what the layers below have beneath it. */
static bool merged_exists(const struct view *v, const char *rel, bool *is_dir)
{
	char prefix[4200];
	bool found = false, dir = true;

	for (size_t i = 0; i < v->n; i++)
		v->live[i] = true;
	for (const char *p = rel; *p;) {
		const char *slash = strchr(p, '/');
		size_t end = slash ? (size_t)(slash - rel) : strlen(rel);
		bool hidden = false;

		if (!dir) /* a file in the middle of the path */
			return false;
		snprintf(prefix, sizeof prefix, "%.*s", (int)end, rel);
		found = false;
		for (size_t i = 0; i < v->n; i++) {
			bool opaque;
			if (!v->live[i] || hidden) {
				v->live[i] = false;
				continue;
			}
			switch (layer_lookup(v->fd[i], prefix, &opaque)) {
			case L_ABSENT:
				v->live[i] = false;
				break;
			case L_WHITEOUT:
				v->live[i] = false;
				hidden = true;
				break;
			case L_FOUND:
				v->live[i] = false;
				hidden = true;
				dir = found ? dir : false;
				found = true;
				break;
			case L_FOUND_DIR:
				found = true;
				hidden = opaque;
				break;
			}
		}
		if (!found)
			return false;
		p = slash ? slash + 1 : rel + end;
	}
	*is_dir = dir;
	return found;
}

struct sdiff {
	struct view base, final; /* final: upper, own layers, base layers */
	/* "0path": a path an own layer or the upper has; "1path": a path of a layer below one
	 * of their directories, which they may hide (deleted if it is gone from the final view). */
	struct aj_strv paths;
};

/* The entries of directory `rel` in the final view's layers from index `from` down. */
static void push_lower_children(struct sdiff *c, size_t from, const char *rel)
{
	for (size_t i = from; i < c->final.n; i++) {
		_cleanup_closedir_ DIR *d = layer_dir(c->final.fd[i], rel);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				aj_strv_pushf(&c->paths, "1%s%s%s", rel, rel[0] ? "/" : "",
					      e->d_name);
	}
}

/* Records every path below `rel` in layer `idx` of the final view, and what the layers below
 * have in each of its directories: a whiteout, opaque directory or file there may have hidden
 * it, even when a layer above made the directory again. dir: rel, open; taken over. */
static int collect(struct sdiff *c, size_t idx, int dir, const char *rel, int depth,
		   struct aj_err *err)
{
	_cleanup_closedir_ DIR *d = aj_fdopendir(dir);
	struct dirent *e;
	int r = 0;

	if (!d)
		return aj_err_sys(err, AJ_LAYER_STATE, "read \"%s\" in a layer", rel);
	if (depth > 256)
		return aj_err_set(err, AJ_LAYER_STATE, ELOOP, "workspace deeper than 256 levels");
	push_lower_children(c, idx + 1, rel);
	while (r == 0 && (e = readdir(d))) {
		char child[4200];
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
		aj_strv_pushf(&c->paths, "0%s", child);
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			r = aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\" in a layer", child);
			break;
		}
		r = collect(c, idx, sub, child, depth + 1, err);
	}
	return r;
}

/* By path, then a layer's own path ("0") before one it may hide ("1"). */
static int cmp_path(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int r = strcmp(x + 1, y + 1);

	return r ? r : x[0] - y[0];
}

/* A, M, D or 0 (not a change) for one touched path. */
static char classify(const struct sdiff *c, const char *rel)
{
	bool bdir = false, fdir = false, pdir;
	bool in_base = merged_exists(&c->base, rel, &bdir);
	bool in_final = merged_exists(&c->final, rel, &fdir);
	const char *slash = strrchr(rel, '/');
	char parent[4200];

	if (in_final)
		return !in_base ? 'A' : bdir && fdir ? 0 : 'M';
	if (!in_base)
		return 0;
	/* Below a directory that is gone as a whole, only the directory is listed. */
	if (!slash)
		return 'D';
	snprintf(parent, sizeof parent, "%.*s", (int)(slash - rel), rel);
	return merged_exists(&c->final, parent, &pdir) && pdir ? 'D' : 0;
}

/* Opens `dirs` (bottom first) into v from position `at` on, top first. */
static int open_view(struct view *v, size_t at, const struct aj_strv *dirs, struct aj_err *err)
{
	for (size_t i = 0; i < dirs->n; i++) {
		v->fd[at + dirs->n - 1 - i] = ws_open_dir(dirs->v[i], err);
		if (v->fd[at + dirs->n - 1 - i] < 0)
			return -1;
	}
	return 0;
}

static void view_alloc(struct view *v, size_t n)
{
	v->n = n;
	v->fd = aj_xmalloc((n + 1) * sizeof *v->fd);
	v->live = aj_xcalloc(n + 1, sizeof *v->live);
	for (size_t i = 0; i < n; i++)
		v->fd[i] = -1;
}

static void view_free(struct view *v, bool close_fds)
{
	for (size_t i = 0; close_fds && v->fd && i < v->n; i++)
		aj_closep(&v->fd[i]);
	free(v->fd);
	free(v->live);
}

/* What a sdiff holds: the final view owns every descriptor, the base view borrows. */
static void sdiff_free(struct sdiff *c)
{
	view_free(&c->final, true);
	view_free(&c->base, false);
	aj_strv_free(&c->paths);
}

int aj_ws_diff_stack(const struct aj_strv *base_dirs, const struct aj_strv *own_dirs,
		     const char *upper_dir, int (*fn)(void *arg, char kind, const char *path),
		     void *arg, struct aj_err *err)
{
	__attribute__((cleanup(sdiff_free))) struct sdiff c = {0};
	size_t own = own_dirs->n + 1, n = own + base_dirs->n;
	int r = 0;

	view_alloc(&c.final, n);
	view_alloc(&c.base, base_dirs->n);
	if ((c.final.fd[0] = ws_open_dir(upper_dir, err)) < 0 ||
	    open_view(&c.final, 1, own_dirs, err) < 0 || open_view(&c.final, own, base_dirs, err) < 0)
		return -1;
	/* The base view shares the final view's descriptors of the base layers. */
	memcpy(c.base.fd, c.final.fd + own, base_dirs->n * sizeof *c.base.fd);
	for (size_t i = 0; i < own; i++) {
		int dup_fd = fcntl(c.final.fd[i], F_DUPFD_CLOEXEC, 0);
		if (dup_fd < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "diff");
		if (collect(&c, i, dup_fd, "", 0, err) < 0)
			return -1;
	}
	if (c.paths.n)
		qsort(c.paths.v, c.paths.n, sizeof *c.paths.v, cmp_path);
	for (size_t i = 0; i < c.paths.n && r == 0; i++) {
		const char *path = c.paths.v[i] + 1;
		char kind;
		if (i && !strcmp(path, c.paths.v[i - 1] + 1))
			continue;
		/* A path only a lower layer has can only have been deleted. */
		kind = classify(&c, path);
		if (kind && (c.paths.v[i][0] == '0' || kind == 'D'))
			r = fn(arg, kind, path);
	}
	return r;
}
