#include "sandbox/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "host/features.h"

int aj_idrange_acquire(uint32_t *base, int *lock_fd, struct aj_err *err)
{
	char dir[] = AJ_RUNTIME_DIR "/ids", path[128];
	uint32_t start;

	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "create \"%s\"", dir);
	if (getrandom(&start, sizeof start, 0) != sizeof start)
		start = (uint32_t)getpid();
	/* Start at a random slot so concurrent launches rarely contend for the same lock. */
	for (uint32_t i = 0; i < AJ_ID_RANGES; i++) {
		uint32_t slot = (start + i) % AJ_ID_RANGES;
		_cleanup_close_ int fd = -1;

		snprintf(path, sizeof path, "%s/%u", dir, slot);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return aj_err_sys(err, AJ_LAYER_USERNS, "open \"%s\"", path);
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno != EWOULDBLOCK)
				return aj_err_sys(err, AJ_LAYER_USERNS, "lock \"%s\"", path);
			continue;
		}
		/* Free, unless a container's processes still run in it (idrange_pod.c). */
		if (aj_idrange_left_behind(fd))
			continue;
		*base = AJ_ID_BASE + slot * 65536u;
		*lock_fd = aj_steal_fd(&fd);
		return 0;
	}
	return aj_err_set(err, AJ_LAYER_USERNS, EBUSY, "all %u host id ranges are in use",
			  AJ_ID_RANGES);
}

static int write_proc(pid_t pid, const char *file, const char *data, struct aj_err *err)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	if (aj_write_file(path, data) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "write \"%s\" to %s", data, path);
	return 0;
}

int aj_userns_write_maps(pid_t pid, const struct aj_plan *plan, struct aj_err *err)
{
	char map[64];

	/* Rootless with subordinate ids: the setuid helpers write what the caller may not. */
	if (plan->subids)
		return aj_subids_map(plan->image->subids, pid, err);
	if (plan->privileged) {
		snprintf(map, sizeof map, "0 %u %u\n", plan->id_base, plan->id_count);
		if (write_proc(pid, "uid_map", map, err) < 0)
			return -1;
		return write_proc(pid, "gid_map", map, err);
	}
	/* Unprivileged: one id each way, and setgroups denied first, as the kernel requires
	 * (otherwise dropping a supplementary group could grant access). */
	snprintf(map, sizeof map, "%u %u 1\n", plan->uid, plan->id_base);
	if (write_proc(pid, "uid_map", map, err) < 0 || write_proc(pid, "setgroups", "deny", err) < 0)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", plan->gid, plan->host_gid_base);
	return write_proc(pid, "gid_map", map, err);
}

/* The disk id that the sandbox's root stands for in an owner map: overlayfs creates its work
 * files as whoever mounted it (the sandbox's root), so that id must be representable too. It
 * only ever owns overlay bookkeeping in agentjail's own directories. */
#define AJ_IDMAP_ROOT_DISK_ID 65534u

static void id_map(char *buf, size_t len, uint32_t disk, uint32_t host, uint32_t count,
		   uint32_t root_host)
{
	int n = snprintf(buf, len, "%u %u %u\n", disk, host, count);

	/* When the sandbox user is root (an image's), the first line already maps it. */
	if (root_host != UINT32_MAX && root_host != host && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "%u %u 1\n",
			 disk == AJ_IDMAP_ROOT_DISK_ID ? AJ_IDMAP_ROOT_DISK_ID - 1
						       : AJ_IDMAP_ROOT_DISK_ID,
			 root_host);
}

/* Holds the user namespace it was cloned into until the parent has opened it, then is
 * killed: it never runs anything of its own (it may never be scheduled before the kill). */
static int idmap_holder(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

/* The holder's end, once its namespace is open. No exit signal: only our waitpid with __WALL
 * takes it, nobody's waitpid(-1). */
static void reap_holder(pid_t *holder)
{
	if (*holder > 0)
		while (waitpid(*holder, NULL, __WALL) < 0 && errno == EINTR)
			;
	*holder = 0;
}

/* A user namespace whose only mapping is disk_uid -> host_uid (and the same for gids), held
 * by a child until it has been opened; used only as an idmap. The child shares our memory
 * (CLONE_VM), so spawning it copies no page tables. It is killed once the namespace is open
 * and left in *holder, to be reaped later: waiting here for its exit, on whichever CPU it
 * lands, would keep the sandbox's clone waiting too. */
static int idmap_userns(uid_t disk_uid, gid_t disk_gid, uint32_t host_uid, uint32_t host_gid,
			uint32_t count, uint32_t root_host, pid_t *holder, struct aj_err *err)
{
	static char stack[16384] __attribute__((aligned(16)));
	static bool stack_lost; /* a holder that could not be killed may still be on it */
	int nsfd = -1;
	char map[128], path[64];
	pid_t pid;

	if (stack_lost)
		return aj_err_set(err, AJ_LAYER_USERNS, EBUSY,
				  "an earlier idmap namespace's holder could not be killed");
	reap_holder(holder); /* one at a time: the stack is shared */
	pid = clone(idmap_holder, stack + sizeof stack, CLONE_VM | CLONE_NEWUSER, NULL);
	if (pid < 0)
		return aj_userns_fail(err, errno, "clone(CLONE_NEWUSER) for an idmapped mount");
	id_map(map, sizeof map, disk_uid, host_uid, count, root_host);
	if (write_proc(pid, "uid_map", map, err) == 0) {
		id_map(map, sizeof map, disk_gid, host_gid, count, root_host);
		if (write_proc(pid, "gid_map", map, err) == 0) {
			snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
			nsfd = open(path, O_RDONLY | O_CLOEXEC);
			if (nsfd < 0)
				aj_err_sys(err, AJ_LAYER_USERNS, "open \"%s\"", path);
		}
	}
	if (kill(pid, SIGKILL) < 0) {
		/* Our own unreaped child: cannot happen. Waiting for it would never end, so it is
		 * left alone, its stack is not used again, and the preparation fails. */
		int e = errno;

		stack_lost = true;
		if (nsfd >= 0)
			close(nsfd);
		return aj_err_set(err, AJ_LAYER_USERNS, e, "kill the idmap namespace's holder %d",
				  (int)pid);
	}
	*holder = pid;
	return nsfd;
}

/* One idmap namespace per distinct mapping; most plans need a single one. */
struct idmap_cache {
	struct {
		uid_t uid;
		gid_t gid;
		uint32_t count;
		bool with_root;
		int fd;
	} e[32];
	size_t n;
	pid_t holder; /* the last namespace's holder, killed, not reaped yet */
};

/* Owner-mapped (count 1): disk uid:gid appear as the sandbox user. Canonical (count 65536):
 * disk ids are the sandbox's own ids, shown through the sandbox's host range. */
static int cached_userns(struct idmap_cache *c, const struct aj_plan *plan, uid_t uid, gid_t gid,
			 uint32_t count, bool with_root, struct aj_err *err)
{
	uint32_t host_uid = count == 1 ? plan->id_base + plan->uid : plan->id_base;
	uint32_t host_gid = count == 1 ? plan->id_base + plan->gid : plan->id_base;
	int fd;

	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].uid == uid && c->e[i].gid == gid && c->e[i].count == count &&
		    c->e[i].with_root == with_root)
			return c->e[i].fd;
	/* Owner maps for overlays also map the sandbox's root, see AJ_IDMAP_ROOT_DISK_ID. */
	if (c->n == AJ_ARRAY_SIZE(c->e))
		return aj_err_set(err, AJ_LAYER_USERNS, E2BIG,
				  "more than %zu distinct owners among the granted paths",
				  AJ_ARRAY_SIZE(c->e));
	fd = idmap_userns(uid, gid, host_uid, host_gid, count,
			  count == 1 && with_root ? plan->id_base : UINT32_MAX, &c->holder, err);
	if (fd >= 0) {
		c->e[c->n].uid = uid;
		c->e[c->n].gid = gid;
		c->e[c->n].count = count;
		c->e[c->n].with_root = with_root;
		c->e[c->n++].fd = fd;
	}
	return fd;
}

/* A detached, private copy of the mount tree at path, resolved without following symlinks
 * (grants were checked to be canonical; a link appearing since then is refused, not
 * followed), idmapped through nsfd unless nsfd < 0. */
static int make_tree(const char *path, int nsfd, bool ro, struct aj_err *err)
{
	struct mount_attr attr = {0};
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int pfd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	_cleanup_close_ int fd = -1;

	if (pfd < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open \"%s\" (symlinks are not followed)",
				  path);
	fd = (int)open_tree(pfd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					     AT_RECURSIVE);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open_tree \"%s\"", path);
	attr.attr_set = (nsfd >= 0 ? MOUNT_ATTR_IDMAP : 0) | MOUNT_ATTR_NOSUID |
			MOUNT_ATTR_NODEV | (ro ? MOUNT_ATTR_RDONLY : 0);
	attr.userns_fd = nsfd >= 0 ? (uint64_t)nsfd : 0;
	/* Private, the whole tree: a clone of a shared mount (systemd makes / shared) joins
	 * its peer group, and this one is cloned here, in the host's mount namespace, so the
	 * kernel's demotion of shared mounts for a less privileged namespace never applies to
	 * it. Attached in the sandbox it would send every mount made beneath it (a mask, a
	 * protected .git part, a bundle's tmpfs, /proc of a container's root) to the host. */
	attr.propagation = MS_PRIVATE;
	if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
		aj_err_sys(err, AJ_LAYER_MOUNT, "idmap \"%s\" to the sandbox's ids", path);
		if (errno == EINVAL)
			aj_err_hint(err, "its filesystem (or a mount below it) does not support "
					 "idmapped mounts; run agentjail as the owner of the path "
					 "(rootless mode) instead of as root");
		return -1;
	}
	return aj_steal_fd(&fd);
}

static int owner_userns(struct idmap_cache *cache, const struct aj_plan *plan, const char *path,
			bool with_root, struct aj_err *err)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "stat \"%s\"", path);
	return cached_userns(cache, plan, st.st_uid, st.st_gid, 1, with_root, err);
}

static int idmapped_tree(struct aj_plan *plan, struct aj_op *op, struct idmap_cache *cache,
			 struct aj_err *err)
{
	/* In the gvisor tier runsc's gofer creates files as the sandbox's root and then gives
	 * them to their owner: its id must be representable, as for overlayfs's work files. */
	bool with_root = plan->tier == AJ_TIER_GVISOR;
	int nsfd = op->flags & AJ_OPF_NOIDMAP ? -1
		   : op->flags & AJ_OPF_CANONICAL
			   ? cached_userns(cache, plan, 0, 0, 65536, false, err)
			   : owner_userns(cache, plan, op->src, with_root, err);

	if (nsfd < 0 && !(op->flags & AJ_OPF_NOIDMAP))
		return -1;
	op->tree_fd = make_tree(op->src, nsfd, op->flags & AJ_OPF_RO, err);
	return op->tree_fd < 0 ? -1 : 0;
}

/* Overlay layers: canonical ones through the sandbox's full range; an overlay over a host
 * directory like that directory would be bound (its owner shown as the sandbox user). */
static int overlay_trees(struct aj_plan *plan, struct idmap_cache *cache, struct aj_err *err)
{
	struct aj_overlay *o = &plan->ovl;
	int nsfd = o->canonical ? cached_userns(cache, plan, 0, 0, 65536, false, err)
				: owner_userns(cache, plan, plan->policy->workspace, true, err);

	if (nsfd < 0)
		return -1;
	for (size_t i = 0; i < o->n_lowers; i++)
		if ((o->lower_fds[i] = make_tree(o->lowers[i], nsfd, true, err)) < 0)
			return -1;
	o->rw_fd = make_tree(o->rw_dir, nsfd, false, err);
	return o->rw_fd < 0 ? -1 : 0;
}

/* An image root's layers and system layer: canonical, through the sandbox's full range. */
static int root_trees(struct aj_plan *plan, struct idmap_cache *cache, struct aj_err *err)
{
	struct aj_overlay *o = &plan->root;
	int nsfd = cached_userns(cache, plan, 0, 0, 65536, false, err);

	if (nsfd < 0)
		return -1;
	for (size_t i = 0; i < o->n_lowers; i++)
		if ((o->lower_fds[i] = make_tree(o->lowers[i], nsfd, true, err)) < 0)
			return -1;
	o->rw_fd = make_tree(o->rw_dir, nsfd, false, err);
	return o->rw_fd < 0 ? -1 : 0;
}

/* Creates a missing protected .git part (hooks directory, empty config) the way git init
 * would, owned like its parent. Relative to the parent opened without following symlinks: a
 * workspace may hold links planted by an earlier run, and this runs with the caller's rights
 * (root, in privileged mode). */
static int make_source(const struct aj_op *op, struct aj_err *err)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	char parent[4096];
	const char *name;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	char *slash;
	int r;

	snprintf(parent, sizeof parent, "%s", op->src);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return aj_err_set(err, AJ_LAYER_MOUNT, EINVAL, "create \"%s\"", op->src);
	*slash = '\0';
	name = slash + 1;
	dfd = (int)syscall(SYS_openat2, AT_FDCWD, parent, &how, sizeof how);
	if (dfd < 0 || fstat(dfd, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open \"%s\" (symlinks are not followed)",
				  parent);
	if (op->flags & AJ_OPF_MKFILE) {
		_cleanup_close_ int f = openat(dfd, name,
					       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					       0644);
		r = f < 0 ? -1 : 0;
	} else {
		r = mkdirat(dfd, name, 0755);
	}
	if (r < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", op->src);
	if (geteuid() == 0 && fchownat(dfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "chown \"%s\"", op->src);
	return 0;
}

/* The mounts keep their idmap; the namespaces themselves are no longer needed. */
static void idmap_cache_close(struct idmap_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		aj_close_fd(&c->e[i].fd);
	reap_holder(&c->holder);
}

int aj_userns_prepare_trees(struct aj_plan *plan, struct aj_err *err)
{
	__attribute__((cleanup(idmap_cache_close))) struct idmap_cache cache = {.n = 0};
	int r = 0;

	cache.holder = plan->idmap_holder; /* a previous preparation's, not closed yet */
	plan->idmap_holder = 0;

	for (size_t i = 0; i < plan->n_ops && r == 0; i++) {
		struct aj_op *op = &plan->ops[i];
		if ((op->flags & AJ_OPF_MKSRC) && make_source(op, err) < 0)
			r = -1;
		else if ((op->flags & AJ_OPF_FROM_PARENT) && op->kind == AJ_OP_BIND &&
			 idmapped_tree(plan, op, &cache, err) < 0)
			r = -1;
	}
	if (r == 0 && plan->ovl.on && plan->privileged)
		r = overlay_trees(plan, &cache, err);
	if (r == 0 && plan->root.on && plan->privileged)
		r = root_trees(plan, &cache, err);
	plan->idmap_holder = cache.holder;
	cache.holder = 0;
	return r;
}

void aj_userns_close_trees(struct aj_plan *plan)
{
	reap_holder(&plan->idmap_holder);
	for (size_t i = 0; i < plan->root.n_lowers; i++)
		aj_close_fd(&plan->root.lower_fds[i]);
	aj_close_fd(&plan->root.rw_fd);
	for (size_t i = 0; i < plan->ovl.n_lowers; i++)
		aj_close_fd(&plan->ovl.lower_fds[i]);
	aj_close_fd(&plan->ovl.rw_fd);
	for (size_t i = 0; i < plan->n_ops; i++)
		aj_close_fd(&plan->ops[i].tree_fd);
}

int aj_userns_idmapped_tree(const char *path, int userns_fd, bool ro, struct aj_err *err)
{
	return make_tree(path, userns_fd, ro, err);
}
