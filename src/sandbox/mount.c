#include "sandbox/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/openat2.h>
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
	_cleanup_close_ int fd = -1;

	if (kind == 'd')
		return mkdir(dst, 0755);
	if (kind == 'l')
		return symlink(target, dst);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	return fd < 0 ? -1 : 0;
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

/* The same for a dst under a tree the sandbox wrote before this start (a volume's target in a
 * persistent workspace or an image's system layer): every component is opened without
 * following a link, so a link planted there cannot steer the directories made (the host is
 * still reachable under the old root). */
static int make_mountpoint_nofollow(const char *dst, bool dir, struct aj_err *err)
{
	char buf[4096];
	char *save = NULL, *c, *next;
	_cleanup_close_ int at = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (snprintf(buf, sizeof buf, "%s", dst) >= (int)sizeof buf || at < 0)
		return aj_err_set(err, AJ_LAYER_MOUNT, ENAMETOOLONG, "mount point \"%s\"", dst);
	for (c = strtok_r(buf, "/", &save); c; c = next) {
		int fd;
		next = strtok_r(NULL, "/", &save);
		if (!next && !dir) {
			fd = openat(at, c, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
		} else {
			if (mkdirat(at, c, 0755) < 0 && errno != EEXIST)
				return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\" of \"%s\"", c, dst);
			fd = openat(at, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT,
					  "mount point \"%s\": \"%s\" (links are not followed here)", dst,
					  c);
		close(at);
		at = fd;
	}
	return 0;
}

static int make_mountpoint_for(const struct aj_op *op, bool dir, struct aj_err *err)
{
	return op->flags & AJ_OPF_SAFE_DST ? make_mountpoint_nofollow(op->dst, dir, err)
					   : make_mountpoint(op->dst, dir, err);
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

/* The child's copies of the trees the supervisor made: attached, or not needed. The plan is
 * the child's copy and const here, so the numbers stay in it. An OCI bundle's plan has no
 * overlay (and no overlay descriptors set up). */
static void close_trees(const struct aj_plan *plan, bool overlay)
{
	for (size_t i = 0; i < plan->n_ops; i++)
		if (plan->ops[i].tree_fd >= 0)
			close(plan->ops[i].tree_fd);
	if (!overlay)
		return;
	for (size_t i = 0; i < plan->ovl.n_lowers; i++)
		if (plan->ovl.lower_fds[i] >= 0)
			close(plan->ovl.lower_fds[i]);
	if (plan->ovl.rw_fd >= 0)
		close(plan->ovl.rw_fd);
}

static int open_nofollow(const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
}

/* Attaches a detached tree at dst. With nofollow, dst is resolved without following any
 * symlink: under the workspace, what looks like a directory may be a link the sandbox
 * planted in an earlier run. */
static int attach(int tree, const char *dst, bool nofollow, struct aj_err *err)
{
	_cleanup_close_ int tfd = -1;
	int r;

	if (!nofollow) {
		r = move_mount(tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH);
	} else {
		tfd = open_nofollow(dst, O_PATH);
		if (tfd < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "mount point \"%s\"", dst);
		r = move_mount(tree, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	}
	if (r < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "attach \"%s\"", dst);
	return 0;
}

/* A bind whose source or target a sandbox may have influenced (grants, .git parts, the
 * workspace): every path resolved without following symlinks. */
static int bind_nofollow(const char *src, const struct aj_op *op, struct aj_err *err)
{
	_cleanup_close_ int sfd = open_nofollow(src, O_PATH), tree = -1;
	struct stat st;

	if (sfd < 0 || fstat(sfd, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "bind source \"%s\" (symlinks are not "
						       "followed here)",
				  op->src);
	if (!(op->flags & AJ_OPF_SELF) && make_mountpoint_for(op, S_ISDIR(st.st_mode), err) < 0)
		return -1;
	tree = (int)open_tree(sfd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					       AT_RECURSIVE);
	if (tree < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "clone mount of \"%s\"", op->src);
	if (attach(tree, op->dst, true, err) < 0)
		return -1;
	if (op->flags & AJ_OPF_SEALED)
		return 0;
	return set_flags(op->dst, !(op->flags & AJ_OPF_DEV), op->flags & AJ_OPF_RO,
			 op->flags & AJ_OPF_NOEXEC, true, err);
}

static int bind_hidden(const struct aj_op *op, struct aj_err *err);

static int do_bind(const struct aj_op *op, struct aj_err *err)
{
	char src[4200];
	struct stat st;

	if (op->flags & AJ_OPF_HIDE_SRC)
		return bind_hidden(op, err);
	if (op->flags & AJ_OPF_FROM_PARENT) {
		/* Already idmapped and flagged by the parent; attach it as it is. */
		bool dir = fstat(op->tree_fd, &st) < 0 || S_ISDIR(st.st_mode);
		if (make_mountpoint_for(op, dir, err) < 0)
			return -1;
		return attach(op->tree_fd, op->dst, op->flags & AJ_OPF_NOFOLLOW, err);
	}
	snprintf(src, sizeof src, "%s%s", op->flags & AJ_OPF_SELF ? "" : OLDROOT, op->src);
	if (op->flags & AJ_OPF_NOFOLLOW)
		return bind_nofollow(src, op, err);
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
		if (errno == ENOENT && (op->flags & AJ_OPF_OPTIONAL))
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

#define OVL_DIR "/.agentjail"

/* Puts one overlay layer where the mount can name it: an idmapped tree from the parent is
 * attached under OVL_DIR; otherwise the host path is used through the old root. */
static int layer_path(int tree_fd, const char *host, const char *slot, char *out, size_t len,
		      struct aj_err *err)
{
	if (tree_fd < 0) {
		snprintf(out, len, "%s%s", OLDROOT, host);
		return 0;
	}
	snprintf(out, len, "%s/%s", OVL_DIR, slot);
	if (make_node(out, 'd', NULL, err) < 0)
		return -1;
	if (move_mount(tree_fd, "", AT_FDCWD, out, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "attach layer \"%s\"", host);
	return 0;
}

/* A read-only bind whose source's host path stays out of the sandbox's mount table (a bind
 * shows its source's path on its filesystem in mountinfo): the source is attached under
 * OVL_DIR just long enough to be the lower layer of a read-only overlay at dst, which keeps a
 * private clone of it and is shown with the attach point's name. The files are the source's
 * own, their pages in the page cache once for every sandbox that reads them. */
static int bind_hidden(const struct aj_op *op, struct aj_err *err)
{
	static unsigned n;
	char slot[64], empty[64], opts[160], src[4200];
	_cleanup_close_ int clone = -1;
	int tree = op->tree_fd;

	if (!(op->flags & AJ_OPF_FROM_PARENT)) {
		snprintf(src, sizeof src, "%s%s", OLDROOT, op->src);
		struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
						    MOUNT_ATTR_NODEV};
		clone = (int)open_tree(AT_FDCWD, src,
				       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		/* Read-only as the parent's trees are: not even atime reaches the source. */
		if (clone < 0 ||
		    mount_setattr(clone, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof ro) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "clone mount of \"%s\"", op->src);
		tree = clone;
	}
	snprintf(slot, sizeof slot, "%s/h%u", OVL_DIR, n++);
	snprintf(empty, sizeof empty, "%s/empty", OVL_DIR);
	/* overlayfs wants two lower layers when it has no upper one: an empty second. */
	if (make_node(slot, 'd', NULL, err) < 0 || make_node(empty, 'd', NULL, err) < 0 ||
	    attach(tree, slot, false, err) < 0 || make_mountpoint(op->dst, true, err) < 0)
		return -1;
	snprintf(opts, sizeof opts, "lowerdir=%s:%s,userxattr", slot, empty);
	if (mount("overlay", op->dst, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount \"%s\" read-only at \"%s\"", op->src,
				  op->dst);
	if (umount2(slot, MNT_DETACH) < 0 || rmdir(slot) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "detach \"%s\"", slot);
	return 0;
}

static int mount_overlay(const struct aj_op *op, const char *opts, struct aj_err *err)
{
	if (mount("overlay", op->dst, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount the workspace overlay on \"%s\"",
				  op->dst);
	return op->flags & AJ_OPF_RO ? set_flags(op->dst, true, true, false, false, err) : 0;
}

/* The overlay is volatile: without it, unmounting it (every stop) runs syncfs on the whole
 * filesystem under the upper layer and waits for every dirty page on it, the host's and other
 * users' included (a second instead of milliseconds under write load). overlayfs marks a
 * volatile work directory and refuses to mount it again while the mark is there; the upper
 * layer itself is kept as it is, so the mark goes. What a volatile overlay gives up is that
 * a host crash can lose the last writes, as it can for any file written without fsync. */
static int clear_volatile_mark(const char *rw, struct aj_err *err)
{
	char path[4400];

	snprintf(path, sizeof path, "%s/work/work/incompat/volatile/dirty", rw);
	if (unlink(path) < 0 && errno != ENOENT)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "remove overlayfs's mark \"%s\"", path);
	*strrchr(path, '/') = '\0';
	if (rmdir(path) < 0 && errno != ENOENT)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "remove overlayfs's mark \"%s\"", path);
	return 0;
}

/* overlayfs over the plan's layers, mounted from inside the sandbox's user namespace (hence
 * userxattr: whiteouts and opaque markers use user.* xattrs, the same in every mode). */
static int do_overlay(const struct aj_plan *plan, const struct aj_op *op, struct aj_err *err)
{
	const struct aj_overlay *o = &plan->ovl;
	char opts[8192], path[4300], rw[4300], slot[32];
	size_t off;

	off = (size_t)snprintf(opts, sizeof opts, "lowerdir=");
	for (size_t i = o->n_lowers; i-- > 0;) { /* overlay lists the top layer first */
		snprintf(slot, sizeof slot, "l%zu", i);
		if (layer_path(o->lower_fds[i], o->lowers[i], slot, path, sizeof path, err) < 0)
			return -1;
		off += (size_t)snprintf(opts + off, sizeof opts - off, "%s%s",
					i + 1 < o->n_lowers ? ":" : "", path);
	}
	if (o->n_lowers == 0) {
		/* overlayfs needs a lower layer: an empty directory of our own. */
		snprintf(path, sizeof path, "%s/empty", OVL_DIR);
		if (make_node(path, 'd', NULL, err) < 0)
			return -1;
		off += (size_t)snprintf(opts + off, sizeof opts - off, "%s", path);
	}
	if (layer_path(o->rw_fd, o->rw_dir, "rw", rw, sizeof rw, err) < 0 ||
	    clear_volatile_mark(rw, err) < 0)
		return -1;
	if ((size_t)snprintf(opts + off, sizeof opts - off, ",upperdir=%s/upper,workdir=%s/work,"
			     "userxattr,volatile", rw, rw) >= sizeof opts - off)
		return aj_err_set(err, AJ_LAYER_MOUNT, E2BIG, "overlay options too long");
	if (make_mountpoint(op->dst, true, err) < 0)
		return -1;
	return mount_overlay(op, opts, err);
}

static int do_op(const struct aj_plan *plan, const struct aj_op *op, struct aj_err *err)
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
	case AJ_OP_OVERLAY:
		return do_overlay(plan, op, err);
	case AJ_OP_ALLOW: /* the landlock tier's, which mounts nothing */
	case AJ_OP_DENY:
	case AJ_OP_MOUNT: /* an OCI bundle's, which tree_op() mounts itself */
	default:
		return aj_err_set(err, AJ_LAYER_INTERNAL, 0, "unknown operation %d", (int)op->kind);
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
	if (chdir(base) < 0 || mkdir(&OLDROOT[1], 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "prepare the new root");
	if (syscall(SYS_pivot_root, ".", &OLDROOT[1]) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "pivot_root into the new root");
	if (chdir("/") < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "chdir /");
	return 0;
}

static int detach_layers(const struct aj_plan *plan, struct aj_err *err)
{
	char path[64];

	for (size_t i = 0; i <= plan->ovl.n_lowers; i++) {
		if (i == plan->ovl.n_lowers)
			snprintf(path, sizeof path, "%s/rw", OVL_DIR);
		else
			snprintf(path, sizeof path, "%s/l%zu", OVL_DIR, i);
		if (umount2(path, MNT_DETACH) < 0 || rmdir(path) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "detach \"%s\"", path);
	}
	return 0;
}

static int build_image_root(const struct aj_plan *plan, struct aj_err *err);

int aj_mount_build_root(const struct aj_plan *plan, struct aj_err *err)
{
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	int r = 0;

	if (plan->image)
		return build_image_root(plan, err);
	if (pivot_into_tmpfs(err) < 0)
		return -1;
	for (size_t i = 0; i < plan->n_ops && r == 0; i++)
		r = do_op(plan, &plan->ops[i], err);
	close_trees(plan, true);
	if (r < 0)
		return -1;
	/* Only now: procfs may be mounted in a user namespace only while a fully visible
	 * procfs exists in the mount namespace, which the old root provides. */
	if (umount2(OLDROOT, MNT_DETACH) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "detach the host root");
	if (rmdir(OLDROOT) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "remove %s", OLDROOT);
	/* overlayfs holds its own private clones of the layers: the attach points can go. */
	if (plan->ovl.on && plan->privileged && detach_layers(plan, err) < 0)
		return -1;
	if (mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof ro) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "make the sandbox root read-only");
	return 0;
}

/* ---- a root from an image ------------------------------------------------------------------
 *
 * The root is an overlay of the image's layers under the sandbox's system layer. It is
 * mounted in a scratch tmpfs, with every layer attached there first under a short name (the
 * overlay's options must fit a page), and the workspace overlay beside it while host paths
 * still resolve. The operations then run chrooted into the root, so that every absolute path
 * and every symlink the image holds resolves inside it; what they take from the host (binds,
 * device nodes) is opened through a descriptor of the host root, resolved as the host would
 * (RESOLVE_IN_ROOT). Files the sandbox's identity needs (/etc/hosts, ...) are written in the
 * scratch tmpfs and bound over the image's. Last, a real pivot_root, and the host root with
 * the scratch tmpfs in it is detached. The root stays writable: it is the sandbox's own. */

#define IMG_MAX_OPS 1024

struct img_ctx {
	int host;    /* the host root */
	int scratch; /* the scratch tmpfs */
	const char *base;
	unsigned n_files;
	/* Opened before the scratch tmpfs covers base (a host path may lie under it): the
	 * layers' trees (the parent's, or clones of the host directories), and each host bind's
	 * source, by operation. */
	int root_l[AJ_OVL_MAX_LOWERS], root_rw, ws_l[AJ_OVL_MAX_LOWERS], ws_rw;
	int src[IMG_MAX_OPS];
};

static void img_ctx_init(struct img_ctx *c)
{
	c->host = c->scratch = c->root_rw = c->ws_rw = -1;
	c->base = NULL;
	c->n_files = 0;
	for (size_t i = 0; i < AJ_OVL_MAX_LOWERS; i++)
		c->root_l[i] = c->ws_l[i] = -1;
	for (size_t i = 0; i < IMG_MAX_OPS; i++)
		c->src[i] = -1;
}

static void img_ctx_close(struct img_ctx *c)
{
	aj_close_fd(&c->host);
	aj_close_fd(&c->scratch);
	aj_close_fd(&c->root_rw);
	aj_close_fd(&c->ws_rw);
	for (size_t i = 0; i < AJ_OVL_MAX_LOWERS; i++) {
		aj_close_fd(&c->root_l[i]);
		aj_close_fd(&c->ws_l[i]);
	}
	for (size_t i = 0; i < IMG_MAX_OPS; i++)
		aj_close_fd(&c->src[i]);
}

/* A layer's tree: the parent's (idmapped), else a clone of the host directory, read-only
 * for a lower layer (shared with other sandboxes and images). */
static int layer_tree(int tree_fd, const char *host, bool ro, int *out, struct aj_err *err)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					      MOUNT_ATTR_NODEV};

	if (tree_fd >= 0) {
		*out = fcntl(tree_fd, F_DUPFD_CLOEXEC, 3);
		if (*out < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "duplicate layer \"%s\"", host);
		return 0;
	}
	*out = (int)open_tree(AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (*out < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "clone layer \"%s\"", host);
	if (!ro)
		attr.attr_set &= ~(uint64_t)MOUNT_ATTR_RDONLY;
	if (mount_setattr(*out, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "make layer \"%s\" %snosuid, nodev", host,
				  ro ? "read-only, " : "");
	return 0;
}

static int layer_trees(const struct aj_overlay *o, int *lowers, int *rw, struct aj_err *err)
{
	for (size_t i = 0; i < o->n_lowers; i++)
		if (layer_tree(o->lower_fds[i], o->lowers[i], true, &lowers[i], err) < 0)
			return -1;
	return layer_tree(o->rw_fd, o->rw_dir, false, rw, err);
}

static bool is_host_bind(const struct aj_op *op)
{
	return op->kind == AJ_OP_BIND && !(op->flags & (AJ_OPF_SELF | AJ_OPF_FROM_PARENT));
}

/* A host path bound into the image root: resolved from the host root as the host sees it
 * (absolute symlinks included), never through the image. A missing optional one stays -1. */
static int open_host_source(const struct img_ctx *c, const struct aj_op *op, int *out,
			    struct aj_err *err)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
					  (op->flags & AJ_OPF_NOFOLLOW ? RESOLVE_NO_SYMLINKS : 0)};

	*out = (int)syscall(SYS_openat2, c->host, op->src, &how, sizeof how);
	if (*out < 0 && !(errno == ENOENT && (op->flags & AJ_OPF_OPTIONAL)))
		return aj_err_sys(err, AJ_LAYER_MOUNT, "bind source \"%s\"", op->src);
	return 0;
}

static int open_sources(struct img_ctx *c, const struct aj_plan *plan, struct aj_err *err)
{
	if (plan->n_ops > IMG_MAX_OPS)
		return aj_err_set(err, AJ_LAYER_MOUNT, E2BIG, "more than %d operations",
				  IMG_MAX_OPS);
	if (layer_trees(&plan->root, c->root_l, &c->root_rw, err) < 0 ||
	    (plan->ovl.on && layer_trees(&plan->ovl, c->ws_l, &c->ws_rw, err) < 0))
		return -1;
	for (size_t i = 0; i < plan->n_ops; i++)
		if (is_host_bind(&plan->ops[i]) &&
		    open_host_source(c, &plan->ops[i], &c->src[i], err) < 0)
			return -1;
	return 0;
}

/* Attaches a layer's tree at scratch/slot. */
static int attach_layer(struct img_ctx *c, int *tree, const char *host, const char *slot,
			char *out, size_t len, struct aj_err *err)
{
	snprintf(out, len, "%s/%s", c->base, slot);
	if (mkdirat(c->scratch, slot, 0700) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", out);
	if (move_mount(*tree, "", c->scratch, slot, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "attach layer \"%s\"", host);
	aj_close_fd(tree);
	return 0;
}

/* overlayfs over o's layers at scratch/<prefix>mnt. */
static int image_overlay(struct img_ctx *c, const struct aj_overlay *o, int *lowers, int *rw_fd,
			 const char *prefix, struct aj_err *err)
{
	char opts[4096], path[256], rw[256], slot[32];
	size_t off = (size_t)snprintf(opts, sizeof opts, "lowerdir=");

	for (size_t i = o->n_lowers; i-- > 0;) {
		snprintf(slot, sizeof slot, "%s%zu", prefix, i);
		if (attach_layer(c, &lowers[i], o->lowers[i], slot, path, sizeof path, err) < 0)
			return -1;
		off += (size_t)snprintf(opts + off, sizeof opts - off, "%s%s",
					i + 1 < o->n_lowers ? ":" : "", path);
		if (off >= sizeof opts)
			return aj_err_set(err, AJ_LAYER_MOUNT, E2BIG, "overlay options too long");
	}
	if (o->n_lowers == 0) {
		snprintf(slot, sizeof slot, "%sempty", prefix);
		if (mkdirat(c->scratch, slot, 0755) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s/%s\"", c->base, slot);
		off += (size_t)snprintf(opts + off, sizeof opts - off, "%s/%s", c->base, slot);
	}
	snprintf(slot, sizeof slot, "%srw", prefix);
	if (attach_layer(c, rw_fd, o->rw_dir, slot, rw, sizeof rw, err) < 0 ||
	    clear_volatile_mark(rw, err) < 0)
		return -1;
	if ((size_t)snprintf(opts + off, sizeof opts - off,
			     ",upperdir=%s/upper,workdir=%s/work,userxattr,volatile", rw,
			     rw) >= sizeof opts - off)
		return aj_err_set(err, AJ_LAYER_MOUNT, E2BIG, "overlay options too long");
	snprintf(slot, sizeof slot, "%smnt", prefix);
	snprintf(path, sizeof path, "%s/%s", c->base, slot);
	if (mkdirat(c->scratch, slot, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", path);
	if (mount("overlay", path, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount the %s overlay",
				  prefix[0] == 'i' ? "image root" : "workspace");
	return 0;
}

static int host_bind(const struct img_ctx *c, const struct aj_op *op, int sfd,
		     struct aj_err *err)
{
	_cleanup_close_ int tree = -1;
	struct stat st;

	if (sfd < 0)
		return 0; /* optional, and missing */
	if (fstat(sfd, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "bind source \"%s\"", op->src);
	tree = (int)open_tree(sfd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					       AT_RECURSIVE);
	if (tree < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "clone mount of \"%s\"", op->src);
	if (make_mountpoint(op->dst, S_ISDIR(st.st_mode), err) < 0 ||
	    attach(tree, op->dst, true, err) < 0)
		return -1;
	if (op->flags & AJ_OPF_SEALED)
		return 0;
	return set_flags(op->dst, !(op->flags & AJ_OPF_DEV), op->flags & AJ_OPF_RO,
			 op->flags & AJ_OPF_NOEXEC, true, err);
}

/* A mount point for a file bound over dst: an image's symlink there (resolv.conf often is
 * one) is replaced by an empty file, so that the bind lands on dst itself. */
static int file_mountpoint(const char *dst, struct aj_err *err)
{
	struct stat st;

	if (lstat(dst, &st) == 0) {
		if (S_ISREG(st.st_mode))
			return 0;
		if (S_ISDIR(st.st_mode))
			return aj_err_set(err, AJ_LAYER_MOUNT, EISDIR,
					  "\"%s\" is a directory in the image", dst);
		if (unlink(dst) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "replace \"%s\"", dst);
	}
	return make_node(dst, 'f', NULL, err);
}

/* AJ_OPF_OVER: the content in the scratch tmpfs, bound over dst. */
static int over_file(struct img_ctx *c, const struct aj_op *op, struct aj_err *err)
{
	char name[32];
	_cleanup_close_ int fd = -1, tree = -1;

	snprintf(name, sizeof name, "f%u", c->n_files++);
	fd = openat(c->scratch, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, op->mode);
	if (fd < 0 || aj_write_all(fd, op->src, op->len) < 0 || fchmod(fd, op->mode) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "write \"%s\"", op->dst);
	tree = (int)open_tree(c->scratch, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "clone \"%s\"", op->dst);
	if (file_mountpoint(op->dst, err) < 0 || attach(tree, op->dst, true, err) < 0)
		return -1;
	return set_flags(op->dst, true, false, true, false, err);
}

static int image_op(struct img_ctx *c, const struct aj_plan *plan, size_t i,
		    struct aj_err *err)
{
	const struct aj_op *op = &plan->ops[i];
	struct stat st;

	switch (op->kind) {
	case AJ_OP_BIND:
		if (op->flags & AJ_OPF_SELF) {
			if ((op->flags & AJ_OPF_OPTIONAL) && lstat(op->dst, &st) < 0)
				return 0;
			return do_bind(op, err);
		}
		if (op->flags & AJ_OPF_FROM_PARENT) {
			/* The mount point resolved without following the image's symlinks. */
			struct aj_op o = *op;
			o.flags |= AJ_OPF_NOFOLLOW;
			return do_bind(&o, err);
		}
		return host_bind(c, op, c->src[i], err);
	case AJ_OP_OVERLAY: {
		_cleanup_close_ int tree = -1;
		if (make_mountpoint(op->dst, true, err) < 0)
			return -1;
		tree = (int)open_tree(c->scratch, "wmnt", OPEN_TREE_CLOEXEC);
		if (tree < 0 || attach(tree, op->dst, true, err) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "attach the workspace at \"%s\"",
					  op->dst);
		return op->flags & AJ_OPF_RO ? set_flags(op->dst, true, true, false, false, err)
					     : 0;
	}
	case AJ_OP_FILE:
		if (op->flags & AJ_OPF_OVER)
			return over_file(c, op, err);
		return do_op(plan, op, err);
	case AJ_OP_DIR:
		if (strcmp(op->dst, "/") == 0)
			return 0;
		if (!(op->flags & AJ_OPF_OWNED))
			return do_op(plan, op, err);
		if (lstat(op->dst, &st) == 0) {
			if (S_ISDIR(st.st_mode))
				return 0;
			return aj_err_set(err, AJ_LAYER_MOUNT, ENOTDIR,
					  "the workspace \"%s\" is not a directory in the image (a "
					  "symlink?)",
					  op->dst);
		}
		if (do_op(plan, op, err) < 0)
			return -1;
		if (lchown(op->dst, plan->uid, plan->gid) < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "give \"%s\" to uid %u", op->dst,
					  plan->uid);
		return 0;
	case AJ_OP_TMPFS:
	case AJ_OP_SYMLINK:
	case AJ_OP_PROC:
	case AJ_OP_DEVPTS:
	case AJ_OP_MASK:
	case AJ_OP_SEAL:
		return do_op(plan, op, err);
	case AJ_OP_ALLOW:
	case AJ_OP_DENY:
	case AJ_OP_MOUNT:
	default:
		return aj_err_set(err, AJ_LAYER_INTERNAL, 0, "operation %d in an image root",
				  (int)op->kind);
	}
}

static int image_scratch(struct img_ctx *c, const struct aj_plan *plan, struct aj_err *err)
{
	struct stat st;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "make the mount tree private");
	c->host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->host < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open the host root");
	if (open_sources(c, plan, err) < 0)
		return -1;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(base_candidates) && !c->base; i++)
		if (stat(base_candidates[i], &st) == 0 && S_ISDIR(st.st_mode))
			c->base = base_candidates[i];
	if (mount("tmpfs", c->base, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=16m") < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount the scratch tmpfs on \"%s\"",
				  c->base);
	c->scratch = open(c->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->scratch < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open the scratch tmpfs");
	return 0;
}

static int build_image_root(const struct aj_plan *plan, struct aj_err *err)
{
	struct img_ctx c;
	char root[64];
	int r;

	img_ctx_init(&c);
	r = image_scratch(&c, plan, err);
	if (r == 0)
		r = image_overlay(&c, &plan->root, c.root_l, &c.root_rw, "i", err);
	if (r == 0 && plan->ovl.on)
		r = image_overlay(&c, &plan->ovl, c.ws_l, &c.ws_rw, "w", err);
	snprintf(root, sizeof root, "%s/imnt", c.base ? c.base : "");
	if (r == 0 && (chdir(root) < 0 || chroot(".") < 0))
		r = aj_err_sys(err, AJ_LAYER_MOUNT, "enter the image root");
	for (size_t i = 0; i < plan->n_ops && r == 0; i++)
		r = image_op(&c, plan, i, err);
	close_trees(plan, true);
	for (size_t i = 0; i < plan->root.n_lowers; i++)
		if (plan->root.lower_fds[i] >= 0)
			close(plan->root.lower_fds[i]);
	if (plan->root.rw_fd >= 0)
		close(plan->root.rw_fd);
	/* Out of the chroot to pivot (pivot_root refuses the current root as the new one);
	 * pivot_root(".", ".") stacks the host root on the image root, and detaching "." then
	 * drops it, the scratch tmpfs and the layers' attach points with it. */
	if (r == 0 && (fchdir(c.host) < 0 || chroot(".") < 0 || chdir(root) < 0))
		r = aj_err_sys(err, AJ_LAYER_MOUNT, "leave the chroot");
	if (r == 0 && syscall(SYS_pivot_root, ".", ".") < 0)
		r = aj_err_sys(err, AJ_LAYER_MOUNT, "pivot_root into the image root");
	if (r == 0 && (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0))
		r = aj_err_sys(err, AJ_LAYER_MOUNT, "detach the host root");
	img_ctx_close(&c);
	return r;
}

/* ---- a root from a directory (OCI bundles) ------------------------------------------------
 *
 * The root is the bundle's rootfs, a detached tree made by the parent (ops[0]), not a tmpfs.
 * Its operations run chrooted into it, so that every absolute path, and every symlink the
 * image holds, resolves inside it, while the host root is still part of the mount namespace:
 * the kernel lets a user namespace mount procfs and sysfs only where a fully visible
 * instance exists in the namespace, and host device nodes are cloned from it through a
 * descriptor. Then a real pivot_root, and the host root is detached. */

static int mount_op(const struct aj_op *op, int host, struct aj_err *err)
{
	_cleanup_close_ int tree = -1;

	if (make_mountpoint(op->dst, true, err) < 0)
		return -1;
	/* Made by the creator in a namespace the container joined (container_join.c). */
	if (op->tree_fd >= 0)
		return attach(op->tree_fd, op->dst, false, err);
	if (mount(op->src, op->dst, op->mtype, op->mflags, op->opts) == 0)
		return 0;
	/* sysfs belongs to the network namespace: one joined from outside (a pod's) is owned by
	 * the host's user namespace, so a fresh instance is refused; the host's is bound
	 * read-only instead, as runc does in the same case. */
	if (errno != EPERM || strcmp(op->mtype, "sysfs") != 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount %s on \"%s\" (%s)", op->mtype, op->dst,
				  op->opts ? op->opts : "");
	tree = (int)open_tree(host, "sys", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (tree < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "clone the host's /sys for \"%s\"", op->dst);
	if (attach(tree, op->dst, false, err) < 0)
		return -1;
	return set_flags(op->dst, true, true, true, true, err);
}

/* A host device node (AJ_OPF_DEV), cloned from the host root. */
static int device_bind(const struct aj_op *op, int host, struct aj_err *err)
{
	_cleanup_close_ int tree = -1;

	tree = (int)open_tree(host, op->src + 1, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0) {
		if (errno == ENOENT && (op->flags & AJ_OPF_OPTIONAL))
			return 0;
		return aj_err_sys(err, AJ_LAYER_MOUNT, "clone the host's \"%s\"", op->src);
	}
	if (make_mountpoint(op->dst, false, err) < 0 || attach(tree, op->dst, false, err) < 0)
		return -1;
	return set_flags(op->dst, false, op->flags & AJ_OPF_RO, true, false, err);
}

/* A tree the parent made (before any mount of the container) attached at dst, then
 * replaced by a copy of itself: the kernel lists a namespace's mounts in the order they were
 * made, and the bundle's order is the one its mounts must show in /proc/self/mountinfo. */
static int attach_in_order(int tree, const char *dst, struct aj_err *err)
{
	_cleanup_close_ int copy = -1;

	if (attach(tree, dst, false, err) < 0)
		return -1;
	copy = (int)open_tree(AT_FDCWD, dst, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (copy < 0 || umount2(dst, MNT_DETACH) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "copy the mount at \"%s\"", dst);
	return attach(copy, dst, false, err);
}

static int bundle_op(const struct aj_plan *plan, const struct aj_op *op, int host,
		     struct aj_err *err)
{
	struct stat st;

	if (op->kind == AJ_OP_MOUNT)
		return mount_op(op, host, err);
	if (op->kind != AJ_OP_BIND || (op->flags & AJ_OPF_SELF))
		return do_op(plan, op, err);
	if (!(op->flags & AJ_OPF_FROM_PARENT))
		return device_bind(op, host, err);
	if (make_mountpoint(op->dst, fstat(op->tree_fd, &st) < 0 || S_ISDIR(st.st_mode), err) < 0 ||
	    attach_in_order(op->tree_fd, op->dst, err) < 0)
		return -1;
	/* The parent made it nosuid, nodev and read-only as asked; noexec is the bundle's. */
	return op->flags & AJ_OPF_NOEXEC ? set_flags(op->dst, true, op->flags & AJ_OPF_RO, true,
						     true, err)
					 : 0;
}

/* An operation of the bundle, then the propagation its mount asks for. */
static int tree_op(const struct aj_plan *plan, const struct aj_op *op, int host,
		   struct aj_err *err)
{
	if (bundle_op(plan, op, host, err) < 0)
		return -1;
	if (op->mprop && mount(NULL, op->dst, NULL, op->mprop, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "propagation of \"%s\"", op->dst);
	return 0;
}

static int enter_tree(const struct aj_plan *plan, const char **base, struct aj_err *err)
{
	struct stat st;

	if (plan->n_ops == 0 || plan->ops[0].tree_fd < 0)
		return aj_err_set(err, AJ_LAYER_INTERNAL, EINVAL, "no root filesystem tree");
	for (size_t i = 0; i < AJ_ARRAY_SIZE(base_candidates) && !*base; i++)
		if (stat(base_candidates[i], &st) == 0 && S_ISDIR(st.st_mode))
			*base = base_candidates[i];
	if (move_mount(plan->ops[0].tree_fd, "", AT_FDCWD, *base, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "attach the root filesystem \"%s\"",
				  plan->ops[0].src);
	if (chdir(*base) < 0 || chroot(".") < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "enter the root filesystem \"%s\"",
				  plan->ops[0].src);
	return 0;
}

int aj_mount_build_tree_root(const struct aj_plan *plan, bool readonly, struct aj_err *err)
{
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	_cleanup_close_ int host = -1;
	const char *base = NULL;
	int r;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "make the mount tree private");
	host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (host < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open the host root");
	r = enter_tree(plan, &base, err);
	for (size_t i = 1; i < plan->n_ops && r == 0; i++)
		r = tree_op(plan, &plan->ops[i], host, err);
	close_trees(plan, false);
	if (r < 0)
		return -1;
	/* Back to the host root to pivot: pivot_root refuses a new root that is the current
	 * (chroot) root. pivot_root(".", ".") stacks the old root on the new one; detaching
	 * "." then removes the old root, as runc does. */
	if (fchdir(host) < 0 || chroot(".") < 0 || chdir(base) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "leave the chroot");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "pivot_root into the root filesystem");
	if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "detach the host root");
	if (readonly && mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof ro) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "make the root filesystem read-only");
	/* linux.rootfsPropagation, within the container's own mount namespace. */
	if (plan->ops[0].mprop && mount(NULL, "/", NULL, plan->ops[0].mprop, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "propagation of the root filesystem");
	return 0;
}
