#include "sandbox/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

#define OLDROOT "/.oldroot"

/* Where the new root's tmpfs is first mounted, before pivot_root moves it to "/". Any
 * existing directory works: after the pivot the host tree, including this directory's
 * original contents, is reachable again under OLDROOT. */
static const char *const base_candidates[] = {"/tmp", "/mnt", "/run", "/"};

static int mkdir_parents(const char *path, struct aj_err *err)
{
	char buf[4096];
	char *slash;

	snprintf(buf, sizeof buf, "%s", path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	if (aj_mkdir_p(buf, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create directory \"%s\"", buf);
	return 0;
}

static int create_node(const char *dst, int kind, const char *target)
{
	int fd;

	if (kind == 'd')
		return mkdir(dst, 0755);
	if (kind == 'l')
		return symlink(target, dst);
	fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Creates a directory ('d'), empty file ('f') or symlink ('l') in the new root, making
 * missing parents only when the first attempt says they are missing. */
static int make_node(const char *dst, int kind, const char *target, struct aj_err *err)
{
	if (create_node(dst, kind, target) == 0 || (errno == EEXIST && kind != 'l'))
		return 0;
	if (errno == ENOENT) {
		if (mkdir_parents(dst, err) < 0)
			return -1;
		if (create_node(dst, kind, target) == 0 || (errno == EEXIST && kind != 'l'))
			return 0;
	}
	return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", dst);
}

/* A mount point of the same kind as the source: a directory or an empty file. */
static int make_mountpoint(const char *dst, bool dir, struct aj_err *err)
{
	return make_node(dst, dir ? 'd' : 'f', NULL, err);
}

/* nosuid always; nodev, read-only and noexec as asked. */
static int set_flags(const char *dst, bool nodev, bool ro, bool noexec, bool recursive,
		     struct aj_err *err)
{
	struct mount_attr attr = {0};

	attr.attr_set = MOUNT_ATTR_NOSUID | (nodev ? MOUNT_ATTR_NODEV : 0) |
			(ro ? MOUNT_ATTR_RDONLY : 0) | (noexec ? MOUNT_ATTR_NOEXEC : 0);
	if (mount_setattr(AT_FDCWD, dst, recursive ? AT_RECURSIVE : 0, &attr, sizeof attr) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "set %snosuid%s%s on \"%s\"",
				  ro ? "read-only, " : "", nodev ? ", nodev" : "",
				  noexec ? ", noexec" : "", dst);
	return 0;
}

static int seal(const struct aj_op *op, struct aj_err *err)
{
	return set_flags(op->dst, op->flags & AJ_OPF_NODEV, op->flags & AJ_OPF_RO,
			 op->flags & AJ_OPF_NOEXEC, true, err);
}

static int do_bind(const struct aj_op *op, struct aj_err *err)
{
	char src[4200];
	struct stat st;

	if (op->flags & AJ_OPF_FROM_PARENT) {
		/* Already idmapped and flagged by the parent; attach it as it is. */
		bool dir = fstat(op->tree_fd, &st) < 0 || S_ISDIR(st.st_mode);
		if (make_mountpoint(op->dst, dir, err) < 0)
			return -1;
		if (move_mount(op->tree_fd, "", AT_FDCWD, op->dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "attach \"%s\"", op->dst);
		return 0;
	}
	snprintf(src, sizeof src, "%s%s", op->flags & AJ_OPF_SELF ? "" : OLDROOT, op->src);
	if (stat(src, &st) < 0) {
		if (errno == ENOENT && (op->flags & AJ_OPF_OPTIONAL))
			return 0;
		return aj_err_sys(err, AJ_LAYER_MOUNT, "bind source \"%s\"", op->src);
	}
	if (!(op->flags & AJ_OPF_SELF) && make_mountpoint(op->dst, S_ISDIR(st.st_mode), err) < 0)
		return -1;
	if (mount(src, op->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "bind \"%s\" at \"%s\"", op->src, op->dst);
	if (op->flags & AJ_OPF_SEALED)
		return 0;
	return set_flags(op->dst, !(op->flags & AJ_OPF_DEV), op->flags & AJ_OPF_RO,
			 op->flags & AJ_OPF_NOEXEC, true, err);
}

static int do_mask(const struct aj_op *op, struct aj_err *err)
{
	struct stat st;

	if (lstat(op->dst, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mask \"%s\"", op->dst);
	}
	if (S_ISDIR(st.st_mode)) {
		if (mount("tmpfs", op->dst, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=4k,nr_inodes=1,mode=000") < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "mask directory \"%s\"", op->dst);
		return 0;
	}
	/* A file: the sandbox's /dev/null over it, read-only. */
	if (mount("/dev/null", op->dst, NULL, MS_BIND, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mask \"%s\"", op->dst);
	if (op->flags & AJ_OPF_SEALED)
		return 0;
	return set_flags(op->dst, true, true, false, false, err);
}

static int do_file(const struct aj_op *op, struct aj_err *err)
{
	_cleanup_close_ int fd = -1;

	fd = open(op->dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, op->mode);
	if (fd < 0 && errno == ENOENT && mkdir_parents(op->dst, err) == 0)
		fd = open(op->dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, op->mode);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", op->dst);
	if (aj_write_all(fd, op->src, op->len) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "write \"%s\"", op->dst);
	return 0;
}

static int do_fs(const struct aj_op *op, const char *type, unsigned long flags,
		 struct aj_err *err)
{
	if (make_mountpoint(op->dst, true, err) < 0)
		return -1;
	if (mount(type, op->dst, type, flags, op->opts) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount %s on \"%s\" (%s)", type, op->dst,
				  op->opts ? op->opts : "");
	return 0;
}

static int do_op(const struct aj_op *op, struct aj_err *err)
{
	switch (op->kind) {
	case AJ_OP_DIR:
		if (strcmp(op->dst, "/") != 0 && aj_mkdir_p(op->dst, 0755) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "create directory \"%s\"", op->dst);
		return 0;
	case AJ_OP_BIND:
		return do_bind(op, err);
	case AJ_OP_TMPFS:
		return do_fs(op, "tmpfs",
			     MS_NOSUID | MS_NODEV | (strcmp(op->dst, "/dev") == 0 ? MS_NOEXEC : 0),
			     err);
	case AJ_OP_PROC:
		return do_fs(op, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, err);
	case AJ_OP_DEVPTS:
		return do_fs(op, "devpts", MS_NOSUID | MS_NOEXEC, err);
	case AJ_OP_SYMLINK:
		return make_node(op->dst, 'l', op->src, err);
	case AJ_OP_FILE:
		return do_file(op, err);
	case AJ_OP_MASK:
		return do_mask(op, err);
	case AJ_OP_SEAL:
		return seal(op, err);
	default:
		return aj_err_set(err, AJ_LAYER_INTERNAL, 0, "unknown operation %d", op->kind);
	}
}

static int pivot_into_tmpfs(struct aj_err *err)
{
	const char *base = NULL;
	struct stat st;

	/* Private: nothing we mount propagates back to the host, and host mount events do not
	 * reach the sandbox. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "make the mount tree private");
	for (size_t i = 0; i < AJ_ARRAY_SIZE(base_candidates) && !base; i++)
		if (stat(base_candidates[i], &st) == 0 && S_ISDIR(st.st_mode))
			base = base_candidates[i];
	if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount the root tmpfs on \"%s\"", base);
	if (chdir(base) < 0 || mkdir(OLDROOT + 1, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "prepare the new root");
	if (syscall(SYS_pivot_root, ".", OLDROOT + 1) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "pivot_root into the new root");
	if (chdir("/") < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "chdir /");
	return 0;
}

int aj_mount_build_root(const struct aj_plan *plan, struct aj_err *err)
{
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	int r = 0;

	if (pivot_into_tmpfs(err) < 0)
		return -1;
	for (size_t i = 0; i < plan->n_ops && r == 0; i++)
		r = do_op(&plan->ops[i], err);
	for (size_t i = 0; i < plan->n_ops; i++)
		if (plan->ops[i].tree_fd >= 0)
			close(plan->ops[i].tree_fd);
	if (r < 0)
		return -1;
	/* Only now: procfs may be mounted in a user namespace only while a fully visible
	 * procfs exists in the mount namespace, which the old root provides. */
	if (umount2(OLDROOT, MNT_DETACH) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "detach the host root");
	if (rmdir(OLDROOT) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "remove %s", OLDROOT);
	if (mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof ro) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "make the sandbox root read-only");
	return 0;
}
