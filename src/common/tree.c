#include "common/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

#define MAX_DEPTH 256

bool aj_tree_is_whiteout(int mode, unsigned long long rdev)
{
	return S_ISCHR(mode) && rdev == makedev(0, 0);
}

static bool skip_name(const char *n)
{
	return (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')));
}

static int open_dir_at(int parent, const char *name)
{
	return openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The entries of dir, read through a duplicate so that the caller keeps its descriptor. */
static DIR *entries_of(int dir)
{
	DIR *d = aj_fdopendir(dup(dir));

	if (d)
		rewinddir(d); /* the duplicate shares the caller's offset */
	return d;
}

/* Owner, mode and times, applied last so that read-only directories can still be filled. */
static int copy_meta(int dst_dir, const char *name, const struct stat *st, bool is_link,
		     struct aj_err *err)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	if (fchownat(dst_dir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno != EPERM)
		return aj_err_sys(err, AJ_LAYER_STATE, "chown \"%s\"", name);
	if (!is_link && fchmodat(dst_dir, name, st->st_mode & 07777, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "chmod \"%s\"", name);
	if (utimensat(dst_dir, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "set times of \"%s\"", name);
	return 0;
}

static int copy_xattrs(int src_fd, int dst_fd, struct aj_err *err)
{
	char names[4096], value[4096];
	ssize_t n = flistxattr(src_fd, names, sizeof names);

	if (n < 0)
		return errno == ENOTSUP || errno == ERANGE ? 0
							  : aj_err_sys(err, AJ_LAYER_STATE, "list xattrs");
	for (char *k = names; k < names + n; k += strlen(k) + 1) {
		ssize_t vl;
		if (strncmp(k, "user.", 5) != 0)
			continue;
		vl = fgetxattr(src_fd, k, value, sizeof value);
		if (vl >= 0 && fsetxattr(dst_fd, k, value, (size_t)vl, 0) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "set xattr %s", k);
	}
	return 0;
}

static int copy_file(int src_dir, int dst_dir, const char *name, const struct stat *st,
		     uint64_t *bytes, struct aj_err *err)
{
	_cleanup_close_ int in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	off_t left = st->st_size;

	if (in < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", name);
	out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", name);
	/* Where the filesystem shares extents (btrfs, XFS with reflink), the whole file is
	 * cloned in one call: no data is read or written, whatever its size. Elsewhere (ext4,
	 * tmpfs, across filesystems) the kernel refuses and the data is copied below. */
	if (left > 0 && ioctl(out, FICLONE, in) == 0) {
		left = 0;
		if (bytes)
			*bytes += (uint64_t)st->st_size;
	}
	while (left > 0) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL)) {
			char buf[65536];
			n = read(in, buf, sizeof buf);
			if (n > 0 && write(out, buf, (size_t)n) != n)
				n = -1;
		}
		if (n < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "copy \"%s\"", name);
		if (n == 0)
			break; /* the file shrank under us */
		left -= n;
		if (bytes)
			*bytes += (uint64_t)n;
	}
	if (copy_xattrs(in, out, err) < 0)
		return -1;
	return copy_meta(dst_dir, name, st, false, err);
}

static int copy_entry(int src_dir, int dst_dir, const char *name, int depth, uint64_t *bytes,
		      struct aj_err *err);
static int remove_at(int parent, const char *name, int depth, struct aj_err *err);

static int copy_dir_contents(int src, int dst, int depth, uint64_t *bytes, struct aj_err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r = 0;

	if (depth > MAX_DEPTH)
		return aj_err_set(err, AJ_LAYER_STATE, ELOOP, "directory tree deeper than %d",
				  MAX_DEPTH);
	if (!(d = entries_of(src)))
		return aj_err_sys(err, AJ_LAYER_STATE, "read directory");
	while (r == 0 && (errno = 0, e = readdir(d)))
		if (!skip_name(e->d_name))
			r = copy_entry(src, dst, e->d_name, depth, bytes, err);
	return r;
}

static int copy_subdir(int src_dir, int dst_dir, const char *name, const struct stat *st,
		       int depth, uint64_t *bytes, struct aj_err *err)
{
	_cleanup_close_ int s = open_dir_at(src_dir, name), d = -1;

	if (s < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open directory \"%s\"", name);
	if (mkdirat(dst_dir, name, 0700) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_STATE, "create directory \"%s\"", name);
	d = open_dir_at(dst_dir, name);
	if (d < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open directory \"%s\"", name);
	if (copy_dir_contents(s, d, depth + 1, bytes, err) < 0 || copy_xattrs(s, d, err) < 0)
		return -1;
	return copy_meta(dst_dir, name, st, false, err);
}

static int copy_entry(int src_dir, int dst_dir, const char *name, int depth, uint64_t *bytes,
		      struct aj_err *err)
{
	struct stat st;
	char target[4096];
	ssize_t n;

	if (fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_STATE, "stat \"%s\"", name);
	switch (st.st_mode & S_IFMT) {
	case S_IFDIR:
		return copy_subdir(src_dir, dst_dir, name, &st, depth, bytes, err);
	case S_IFREG:
		return copy_file(src_dir, dst_dir, name, &st, bytes, err);
	case S_IFLNK:
		n = readlinkat(src_dir, name, target, sizeof target - 1);
		if (n < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "readlink \"%s\"", name);
		target[n] = '\0';
		if (symlinkat(target, dst_dir, name) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "symlink \"%s\"", name);
		return copy_meta(dst_dir, name, &st, true, err);
	case S_IFCHR:
		if (!aj_tree_is_whiteout((int)st.st_mode, st.st_rdev))
			return 0; /* a device the sandbox could not have made: not copied */
		__attribute__((fallthrough)); /* whiteouts are copied */
	case S_IFIFO:
		if (mknodat(dst_dir, name, st.st_mode, st.st_rdev) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "mknod \"%s\"", name);
		return copy_meta(dst_dir, name, &st, false, err);
	default:
		return 0; /* sockets and block devices do not survive a snapshot */
	}
}

static aj_tree_elevate_fn elevate_fn;

void aj_tree_set_elevate(aj_tree_elevate_fn elevate)
{
	elevate_fn = elevate;
}

/* One operation's arguments, for its second try. */
struct tree_op {
	enum { OP_COPY, OP_REMOVE, OP_CLEAR, OP_MERGE } kind;
	int a, b;
	const char *name;
	uint64_t bytes;
};

static int remove_contents(int dir, int depth, struct aj_err *err);
static int merge_dir(int layer, int dst, int depth, uint64_t *bytes, struct aj_err *err);

static int tree_op_run(void *arg, struct aj_err *err)
{
	struct tree_op *op = arg;

	switch (op->kind) {
	case OP_COPY:
		/* What the first try copied goes first: the copy needs an empty directory. */
		return remove_contents(op->b, 0, err) < 0 ? -1
							  : copy_dir_contents(op->a, op->b, 0,
									      &op->bytes, err);
	case OP_REMOVE:
		return remove_at(op->a, op->name, 0, err);
	case OP_CLEAR:
		return remove_contents(op->a, 0, err);
	case OP_MERGE:
		return merge_dir(op->a, op->b, 0, &op->bytes, err);
	}
	return 0;
}

/* The first try, in this process; denied, the second through elevate_fn, on a copy of the
 * operation in shared memory, where the other process counts its bytes. */
static int tree_op(struct tree_op *op, uint64_t *bytes, struct aj_err *err)
{
	struct aj_err mine = {0}, *e = err ? err : &mine;
	int r = tree_op_run(op, e);

	if (r < 0 && elevate_fn && (e->errnum == EACCES || e->errnum == EPERM)) {
		struct tree_op *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
					      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (shared == MAP_FAILED)
			return aj_err_sys(e, AJ_LAYER_STATE, "map memory for a second try");
		*shared = *op;
		shared->bytes = 0;
		r = elevate_fn(tree_op_run, shared, e);
		op->bytes = shared->bytes;
		munmap(shared, sizeof *shared);
	}
	if (bytes)
		*bytes += op->bytes;
	return r;
}

int aj_tree_copy(int src_dir, int dst_dir, uint64_t *bytes, struct aj_err *err)
{
	struct tree_op op = {.kind = OP_COPY, .a = src_dir, .b = dst_dir};

	return tree_op(&op, bytes, err);
}

int aj_tree_remove_at(int parent, const char *name, struct aj_err *err)
{
	struct tree_op op = {.kind = OP_REMOVE, .a = parent, .name = name};

	return tree_op(&op, NULL, err);
}

static int remove_at(int parent, const char *name, int depth, struct aj_err *err)
{
	_cleanup_close_ int d = -1;

	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return aj_err_sys(err, AJ_LAYER_STATE, "remove \"%s\"", name);
	/* Our own tree: make it readable and writable so that its contents can go (overlayfs
	 * leaves work/work at mode 000). fchmodat does not follow a symlink at `name` here: it
	 * is a directory, unlinkat said so. */
	d = open_dir_at(parent, name);
	if (d < 0 && errno == EACCES && fchmodat(parent, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
		d = open_dir_at(parent, name);
	if (d < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open directory \"%s\"", name);
	fchmod(d, 0700);
	if (remove_contents(d, depth + 1, err) < 0)
		return -1;
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return aj_err_sys(err, AJ_LAYER_STATE, "remove directory \"%s\"", name);
	return 0;
}

static int remove_contents(int dir, int depth, struct aj_err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r = 0;

	if (depth > MAX_DEPTH)
		return aj_err_set(err, AJ_LAYER_STATE, ELOOP, "directory tree deeper than %d",
				  MAX_DEPTH);
	if (!(d = entries_of(dir)))
		return aj_err_sys(err, AJ_LAYER_STATE, "read directory");
	while (r == 0 && (e = readdir(d)))
		if (!skip_name(e->d_name))
			r = remove_at(dir, e->d_name, depth, err);
	return r;
}

int aj_tree_clear(int dir_fd, struct aj_err *err)
{
	struct tree_op op = {.kind = OP_CLEAR, .a = dir_fd};

	return tree_op(&op, NULL, err);
}

static int merge_entry(int layer, int dst, const char *name, int depth, uint64_t *bytes,
		       struct aj_err *err)
{
	struct stat st, cur;
	char opaque[8];
	_cleanup_close_ int sub = -1, dsub = -1;

	if (fstatat(layer, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "stat \"%s\"", name);
	if (aj_tree_is_whiteout((int)st.st_mode, st.st_rdev))
		return remove_at(dst, name, depth, err);
	if (!S_ISDIR(st.st_mode)) {
		if (remove_at(dst, name, depth, err) < 0)
			return -1;
		return copy_entry(layer, dst, name, depth, bytes, err);
	}
	sub = open_dir_at(layer, name);
	if (sub < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open directory \"%s\"", name);
	/* An opaque directory, or a directory replacing a non-directory, starts afresh. */
	if ((fgetxattr(sub, AJ_OVL_OPAQUE_XATTR, opaque, sizeof opaque) > 0 && opaque[0] == 'y') ||
	    (fstatat(dst, name, &cur, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(cur.st_mode)))
		if (remove_at(dst, name, depth, err) < 0)
			return -1;
	if (fstatat(dst, name, &cur, AT_SYMLINK_NOFOLLOW) < 0)
		return copy_subdir(layer, dst, name, &st, depth, bytes, err);
	dsub = open_dir_at(dst, name);
	if (dsub < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open directory \"%s\"", name);
	if (merge_dir(sub, dsub, depth + 1, bytes, err) < 0)
		return -1;
	return copy_meta(dst, name, &st, false, err);
}

static int merge_dir(int layer, int dst, int depth, uint64_t *bytes, struct aj_err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r = 0;

	if (depth > MAX_DEPTH)
		return aj_err_set(err, AJ_LAYER_STATE, ELOOP, "directory tree deeper than %d",
				  MAX_DEPTH);
	if (!(d = entries_of(layer)))
		return aj_err_sys(err, AJ_LAYER_STATE, "read directory");
	while (r == 0 && (e = readdir(d)))
		if (!skip_name(e->d_name))
			r = merge_entry(layer, dst, e->d_name, depth, bytes, err);
	return r;
}

int aj_tree_merge(int layer_dir, int dst_dir, uint64_t *bytes, struct aj_err *err)
{
	struct tree_op op = {.kind = OP_MERGE, .a = layer_dir, .b = dst_dir};

	return tree_op(&op, bytes, err);
}

static int size_dir(int dir, int depth, uint64_t *bytes, struct aj_err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r = 0;

	if (depth > MAX_DEPTH)
		return 0;
	if (!(d = entries_of(dir)))
		return aj_err_sys(err, AJ_LAYER_STATE, "read directory");
	while (r == 0 && (e = readdir(d))) {
		struct stat st;
		if (skip_name(e->d_name) || fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			*bytes += (uint64_t)st.st_blocks * 512u;
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = open_dir_at(dir, e->d_name);
			if (sub >= 0)
				r = size_dir(sub, depth + 1, bytes, err);
		}
	}
	return r;
}

int aj_tree_size(int dir_fd, uint64_t *bytes, struct aj_err *err)
{
	return size_dir(dir_fd, 0, bytes, err);
}
