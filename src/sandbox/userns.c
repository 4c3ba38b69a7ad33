#include "sandbox/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

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
		int fd;

		snprintf(path, sizeof path, "%s/%u", dir, slot);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return aj_err_sys(err, AJ_LAYER_USERNS, "open \"%s\"", path);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*base = AJ_ID_BASE + slot * 65536u;
			*lock_fd = fd;
			return 0;
		}
		close(fd);
		if (errno != EWOULDBLOCK)
			return aj_err_sys(err, AJ_LAYER_USERNS, "lock \"%s\"", path);
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

static int idmap_holder(void *arg)
{
	int *pfd = arg;
	char c;

	close(pfd[1]); /* our copy of the write end: EOF must come when the parent closes its */
	(void)!read(pfd[0], &c, 1);
	return 0;
}

/* A user namespace whose only mapping is disk_uid -> host_uid (and the same for gids), held
 * by a child until it has been opened; used only as an idmap. The child shares our memory
 * (CLONE_VM) and only blocks in read(), so spawning and reaping it copies no page tables. */
static int idmap_userns(uid_t disk_uid, gid_t disk_gid, uint32_t host_uid, uint32_t host_gid,
			struct aj_err *err)
{
	static char stack[16384] __attribute__((aligned(16)));
	int pfd[2], nsfd = -1;
	char map[64], path[64];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "pipe");
	pid = clone(idmap_holder, stack + sizeof stack, CLONE_VM | CLONE_NEWUSER | SIGCHLD,
		    pfd);
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return aj_err_sys(err, AJ_LAYER_USERNS, "clone(CLONE_NEWUSER) for an idmap");
	}
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)disk_uid, host_uid);
	if (write_proc(pid, "uid_map", map, err) == 0) {
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)disk_gid, host_gid);
		if (write_proc(pid, "gid_map", map, err) == 0) {
			snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
			nsfd = open(path, O_RDONLY | O_CLOEXEC);
			if (nsfd < 0)
				aj_err_sys(err, AJ_LAYER_USERNS, "open \"%s\"", path);
		}
	}
	close(pfd[1]);
	waitpid(pid, NULL, __WALL);
	close(pfd[0]);
	return nsfd;
}

/* One idmap namespace per distinct owner; most plans have a single owner. */
struct idmap_cache {
	struct {
		uid_t uid;
		gid_t gid;
		int fd;
	} e[8];
	size_t n;
};

static int cached_userns(struct idmap_cache *c, const struct aj_plan *plan, const struct stat *st,
			 struct aj_err *err)
{
	int fd;

	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].uid == st->st_uid && c->e[i].gid == st->st_gid)
			return c->e[i].fd;
	fd = idmap_userns(st->st_uid, st->st_gid, plan->id_base + plan->uid,
			  plan->id_base + plan->gid, err);
	if (fd >= 0 && c->n < AJ_ARRAY_SIZE(c->e)) {
		c->e[c->n].uid = st->st_uid;
		c->e[c->n].gid = st->st_gid;
		c->e[c->n++].fd = fd;
	}
	return fd;
}

static int idmapped_tree(struct aj_plan *plan, struct aj_op *op, struct idmap_cache *cache,
			 struct aj_err *err)
{
	struct stat st;
	struct mount_attr attr = {0};
	int nsfd, fd;

	if (stat(op->src, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "stat \"%s\"", op->src);
	nsfd = cached_userns(cache, plan, &st, err);
	if (nsfd < 0)
		return -1;
	fd = (int)open_tree(AT_FDCWD, op->src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open_tree \"%s\"", op->src);
	attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			(op->flags & AJ_OPF_RO ? MOUNT_ATTR_RDONLY : 0);
	attr.userns_fd = (uint64_t)nsfd;
	if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
		aj_err_sys(err, AJ_LAYER_MOUNT, "idmap \"%s\" (owner uid %u) to the sandbox user",
			   op->src, (unsigned)st.st_uid);
		if (errno == EINVAL)
			aj_err_hint(err, "its filesystem (or a mount below it) does not support "
					 "idmapped mounts; run agentjail as the owner of the path "
					 "(rootless mode) instead of as root");
		close(fd);
		return -1;
	}
	op->tree_fd = fd;
	return 0;
}

static int make_source_dir(const struct aj_op *op, struct aj_err *err)
{
	char parent[4096];
	struct stat st;
	char *slash;

	if (lstat(op->src, &st) == 0)
		return 0;
	snprintf(parent, sizeof parent, "%s", op->src);
	slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	if (stat(parent, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "stat \"%s\"", parent);
	if (mkdir(op->src, 0755) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create \"%s\"", op->src);
	/* As root, leave it owned like .git itself, as `git init` would have. */
	if (lchown(op->src, st.st_uid, st.st_gid) < 0 && geteuid() == 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "chown \"%s\"", op->src);
	return 0;
}

int aj_userns_prepare_trees(struct aj_plan *plan, struct aj_err *err)
{
	struct idmap_cache cache = {.n = 0};
	int r = 0;

	for (size_t i = 0; i < plan->n_ops && r == 0; i++) {
		struct aj_op *op = &plan->ops[i];
		if ((op->flags & AJ_OPF_MKSRC) && make_source_dir(op, err) < 0)
			r = -1;
		else if ((op->flags & AJ_OPF_FROM_PARENT) && idmapped_tree(plan, op, &cache, err) < 0)
			r = -1;
	}
	/* The mounts keep their idmap; the namespaces themselves are no longer needed. */
	for (size_t i = 0; i < cache.n; i++)
		close(cache.e[i].fd);
	return r;
}

void aj_userns_close_trees(struct aj_plan *plan)
{
	for (size_t i = 0; i < plan->n_ops; i++)
		if (plan->ops[i].tree_fd >= 0) {
			close(plan->ops[i].tree_fd);
			plan->ops[i].tree_fd = -1;
		}
}
