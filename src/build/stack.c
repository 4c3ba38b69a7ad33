#include "build/stack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tree.h"

static bool opaque(int fd)
{
	char v[4];

	return fgetxattr(fd, AJ_OVL_OPAQUE_XATTR, v, sizeof v) == 1 && v[0] == 'y';
}

static bool whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == 0;
}

void aj_stack_entry_close(struct aj_stack_entry *e)
{
	if (e->parent >= 0)
		close(e->parent);
	e->parent = -1;
	for (size_t i = 0; i < e->n_dirs; i++)
		close(e->dirs[i]);
	e->n_dirs = 0;
}

/* What layer `dir` says of the path's components comp[0..n-1]. */
enum say { SAY_NOTHING, SAY_HIDES, SAY_FOUND, SAY_DENIED };

static enum say walk(int layer, char *const *comp, size_t n, bool *opaque_above, int *parent,
		     struct stat *st)
{
	_cleanup_close_ int fd = dup(layer);

	*opaque_above = false;
	if (fd < 0)
		return SAY_DENIED;
	for (size_t i = 0; i + 1 < n; i++) {
		struct stat s;
		int next;

		if (fstatat(fd, comp[i], &s, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? SAY_NOTHING : SAY_DENIED;
		if (whiteout(&s) || !S_ISDIR(s.st_mode))
			return SAY_HIDES;
		next = openat(fd, comp[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return SAY_DENIED;
		close(fd);
		fd = next;
		*opaque_above = *opaque_above || opaque(fd);
	}
	if (n == 0) {
		if (fstat(fd, st) < 0)
			return SAY_DENIED;
		*parent = -1;
		return SAY_FOUND;
	}
	if (fstatat(fd, comp[n - 1], st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? SAY_NOTHING : SAY_DENIED;
	if (whiteout(st))
		return SAY_HIDES;
	*parent = fd;
	fd = -1;
	return SAY_FOUND;
}

int aj_stack_lookup(const struct aj_strv *layers, const char *rel, struct aj_stack_entry *e,
		    struct aj_err *err)
{
	char buf[4096], *comp[256], *save = NULL;
	size_t n = 0;

	memset(e, 0, sizeof *e);
	e->parent = -1;
	if (strlen(rel) >= sizeof buf)
		return aj_err_set(err, AJ_LAYER_USAGE, ENAMETOOLONG, "a path longer than %zu bytes",
				  sizeof buf - 1);
	snprintf(buf, sizeof buf, "%s", rel);
	for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (!strcmp(t, "."))
			continue;
		if (!strcmp(t, "..") || n == sizeof comp / sizeof comp[0])
			return 0; /* not a path of the image: absent */
		comp[n++] = t;
	}
	for (size_t i = layers->n; i-- > 0;) {
		_cleanup_close_ int layer =
			open(layers->v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		bool opaque_above = false;
		int parent = -1;
		struct stat st;
		enum say say = layer < 0 ? SAY_DENIED
					 : walk(layer, comp, n, &opaque_above, &parent, &st);

		if (say == SAY_DENIED) {
			aj_stack_entry_close(e);
			return aj_err_sys(err, AJ_LAYER_IMAGE, "read \"/%s\" in the layer \"%s\"", rel,
					  layers->v[i]);
		}
		if (say == SAY_HIDES)
			break;
		if (say == SAY_NOTHING) {
			if (opaque_above)
				break;
			continue;
		}
		if (!e->found) {
			e->found = true;
			e->st = st;
			snprintf(e->name, sizeof e->name, "%s", n ? comp[n - 1] : ".");
		}
		if (!S_ISDIR(st.st_mode)) {
			if (e->n_dirs == 0)
				e->parent = parent;
			else
				close(parent);
			break; /* a file: it, or below a directory, nothing lower shows */
		}
		{
			int d = n ? openat(parent, comp[n - 1],
					   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				  : openat(layer, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			bool stop;

			if (parent >= 0)
				close(parent);
			if (d < 0 || e->n_dirs == AJ_STACK_MAX) {
				if (d >= 0)
					close(d);
				aj_stack_entry_close(e);
				return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"/%s\" in a layer", rel);
			}
			stop = opaque(d) || opaque_above;
			e->dirs[e->n_dirs++] = d;
			if (stop)
				break;
		}
	}
	return 0;
}
