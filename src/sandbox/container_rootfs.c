/* The bundle's root filesystem as a tree the container owns: files owned by ids 0-65535 on
 * disk appear as the container's ids 0-65535, which are an unprivileged host range.
 *
 * A plain directory is simply bound through an idmapped mount (aj_userns_prepare_trees). An
 * overlayfs root (containerd's overlayfs snapshotter mounts one at <bundle>/rootfs) cannot be
 * idmapped itself, but its layers can (Linux 5.19+): the same overlay is mounted again over
 * idmapped copies of its lower, upper and work directories, in this process's own mount
 * namespace, and a detached copy of that mount becomes the container's root. Writes land in
 * the snapshot's upper directory, owned on disk by the ids the image uses. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "sandbox/container.h"
#include "sandbox/userns.h"

#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#endif
#define MAX_LAYERS 128

struct ovl {
	char opts[8192]; /* the mount's super options, as mountinfo shows them */
	char *lower[MAX_LAYERS];
	size_t n_lower;
	char *upper, *work;
};

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] && r[3]) {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static int find_mount(const char *path, struct ovl *o, struct aj_err *err)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	static char line[16384], opts[8192];
	char mnt[PATH_MAX], type[64];
	bool found = false;

	if (!f)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open /proc/self/mountinfo");
	/* The last match is the one on top. */
	while (fgets(line, sizeof line, f)) {
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %8191s", type, opts) != 2)
			continue;
		unescape(mnt);
		if (strcmp(mnt, path) == 0 && strcmp(type, "overlay") == 0) {
			found = true;
			memcpy(o->opts, opts, sizeof o->opts);
		}
	}
	if (!found)
		return aj_err_set(err, AJ_LAYER_MOUNT, ENOENT,
				  "\"%s\" is an overlayfs but not a mount point of its own", path);
	return 0;
}

/* lowerdir=a:b,upperdir=u,workdir=w; a ':' or ',' inside a path is escaped with '\'. */
static int split_opts(struct ovl *o, struct aj_err *err)
{
	for (char *p = o->opts; p && *p;) {
		char *end = p;
		while (*end && *end != ',')
			end += (*end == '\\' && end[1]) ? 2 : 1;
		if (*end)
			*end++ = '\0';
		if (strncmp(p, "lowerdir=", 9) == 0) {
			for (char *l = p + 9; l && *l && o->n_lower < MAX_LAYERS;) {
				char *c = l;
				while (*c && *c != ':')
					c += (*c == '\\' && c[1]) ? 2 : 1;
				o->lower[o->n_lower++] = l;
				l = *c ? (*c = '\0', c + 1) : NULL;
			}
		} else if (strncmp(p, "upperdir=", 9) == 0) {
			o->upper = p + 9;
		} else if (strncmp(p, "workdir=", 8) == 0) {
			o->work = p + 8;
		}
		p = end;
	}
	for (size_t i = 0; i < o->n_lower; i++)
		unescape(o->lower[i]);
	if (!o->n_lower)
		return aj_err_set(err, AJ_LAYER_MOUNT, EINVAL, "overlay root without lowerdir");
	return 0;
}

/* The layers' idmap: disk ids 0-65535 are the container's range. overlayfs creates its own
 * work files as whoever mounted it (host root, here), so host 0 must be representable too: it
 * stands for LAYER_ROOT_DISK_ID, an id no image uses, which only ever owns overlayfs's
 * scratch entries in the work directory. */
#define LAYER_ROOT_DISK_ID 4294967293u

static int layer_userns(const struct aj_plan *plan, struct aj_err *err)
{
	char map[128], path[64];
	_cleanup_close_ int rd = -1, wr = -1; /* the child holds its namespace until end of file */
	int nsfd = -1, r = -1;
	pid_t pid;

	if (aj_pipe(&rd, &wr, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "pipe");
	pid = fork();
	if (pid == 0) {
		char c;
		aj_close_fd(&wr);
		_exit(unshare(CLONE_NEWUSER) < 0 || read(rd, &c, 1) < 0 ? 1 : 0);
	}
	aj_close_fd(&rd);
	if (pid < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "fork");
	snprintf(map, sizeof map, "0 %u %u\n%u 0 1\n", plan->id_base, plan->id_count,
		 LAYER_ROOT_DISK_ID);
	/* The child unshares on its own schedule: wait until its namespace differs from ours. */
	for (int i = 0; i < 2000 && r < 0; i++) {
		struct stat a, b;
		snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
		if (stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino != b.st_ino)
			r = 0;
		else
			usleep(500);
	}
	if (r == 0) {
		snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
		if (aj_write_file(path, map) == 0) {
			snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
			if (aj_write_file(path, map) == 0) {
				snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
				nsfd = open(path, O_RDONLY | O_CLOEXEC);
			}
		}
		if (nsfd < 0)
			aj_err_sys(err, AJ_LAYER_USERNS, "idmap for the rootfs layers (%s)", path);
	} else {
		aj_err_set(err, AJ_LAYER_USERNS, ETIMEDOUT, "a user namespace for the rootfs layers");
	}
	aj_close_fd(&wr);
	waitpid(pid, NULL, 0);
	return nsfd;
}

static int attach_at(const char *src, int nsfd, bool ro, const char *dir, struct aj_err *err)
{
	_cleanup_close_ int tree = aj_userns_idmapped_tree(src, nsfd, ro, err);

	if (tree < 0)
		return -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", dir);
	if (move_mount(tree, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "attach an idmapped copy of \"%s\"", src);
	return 0;
}

/* Upper and work directories must share one mount: their common parent is idmapped. */
static int mount_layers(struct ovl *o, int nsfd, const char *scratch, char *data, size_t len,
			struct aj_err *err)
{
	char dir[PATH_MAX], up[PATH_MAX], wk[PATH_MAX];
	size_t off = (size_t)snprintf(data, len, "lowerdir=");

	for (size_t i = 0; i < o->n_lower; i++) {
		snprintf(dir, sizeof dir, "%s/l%zu", scratch, i);
		if (attach_at(o->lower[i], nsfd, true, dir, err) < 0)
			return -1;
		off += (size_t)snprintf(data + off, len - off, "%s%s", i ? ":" : "", dir);
	}
	if (o->upper && o->work) {
		unescape(o->upper);
		unescape(o->work);
		snprintf(up, sizeof up, "%s", o->upper);
		snprintf(wk, sizeof wk, "%s", o->work);
		if (strcmp(dirname(up), dirname(wk)) != 0)
			return aj_err_set(err, AJ_LAYER_MOUNT, EINVAL, "overlay root: upperdir and "
								       "workdir have different parents");
		snprintf(dir, sizeof dir, "%s/u", scratch);
		if (attach_at(up, nsfd, false, dir, err) < 0)
			return -1;
		snprintf(up, sizeof up, "%s", o->upper);
		snprintf(wk, sizeof wk, "%s", o->work);
		off += (size_t)snprintf(data + off, len - off, ",upperdir=%s/%s,workdir=%s/%s", dir,
					basename(up), dir, basename(wk));
	}
	if (off >= len)
		return aj_err_set(err, AJ_LAYER_MOUNT, E2BIG, "overlay options too long");
	return 0;
}

static void clear_scratch(const char *scratch, size_t n_lower)
{
	char dir[PATH_MAX];

	for (size_t i = 0; i <= n_lower + 1; i++) {
		if (i < n_lower)
			snprintf(dir, sizeof dir, "%s/l%zu", scratch, i);
		else
			snprintf(dir, sizeof dir, "%s/%s", scratch, i == n_lower ? "u" : "root");
		umount2(dir, MNT_DETACH);
		rmdir(dir);
	}
	rmdir(scratch);
}

/* The idmapped layers and the overlay over them, mounted in scratch (which the caller
 * clears); the overlay's detached copy, or -1. */
static int mount_overlay(struct aj_plan *plan, struct ovl *o, const char *scratch, char *data,
			 size_t len, struct aj_err *err)
{
	char root[PATH_MAX];
	_cleanup_close_ int nsfd = layer_userns(plan, err);
	int tree;

	if (nsfd < 0 || mount_layers(o, nsfd, scratch, data, len, err) < 0)
		return -1;
	snprintf(root, sizeof root, "%s/root", scratch);
	if (mkdir(root, 0700) < 0 || mount("overlay", root, "overlay", 0, data) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT,
				  "mount the rootfs overlay over idmapped layers");
	tree = (int)open_tree(AT_FDCWD, root, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "detach the rootfs overlay");
	return tree;
}

static int overlay_tree(struct aj_plan *plan, const char *scratch, struct aj_err *err)
{
	static struct ovl o;
	static char data[32768];
	int tree;

	memset(&o, 0, sizeof o);
	if (find_mount(plan->ops[0].src, &o, err) < 0 || split_opts(&o, err) < 0)
		return -1;
	/* Our own mount namespace: nothing mounted here is seen by the host, and all of it
	 * goes when this process exits; the container keeps its detached copy. */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "a private mount namespace for the rootfs");
	if (mkdir(scratch, 0700) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", scratch);
	tree = mount_overlay(plan, &o, scratch, data, sizeof data, err);
	clear_scratch(scratch, o.n_lower);
	return tree;
}

int aj_container_rootfs_tree(struct aj_plan *plan, const char *scratch, struct aj_err *err)
{
	struct aj_op *op = &plan->ops[0];
	struct statfs sf;

	if (statfs(op->src, &sf) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "statfs \"%s\"", op->src);
	if (sf.f_type != OVERLAYFS_SUPER_MAGIC)
		return 0; /* bound through an idmapped mount by aj_userns_prepare_trees() */
	op->tree_fd = overlay_tree(plan, scratch, err);
	if (op->tree_fd < 0)
		return -1;
	op->flags &= ~AJ_OPF_FROM_PARENT;
	return 0;
}
