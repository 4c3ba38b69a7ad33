/* Namespaces a container joins by path (a pod's network, IPC and UTS namespaces, a shared
 * pid namespace), and what they need done from outside the container.
 *
 * The creating process joins them before the clone: a namespace made elsewhere belongs to
 * another user namespace (the host's, or another container's), over which the container's
 * root has no capability. For the same reason whatever the container's mounts and settings
 * need from such a namespace is made here, by the creator, which is root of the host:
 *   - mqueue of a joined IPC namespace, sysfs of a joined network namespace and proc of a
 *     joined pid namespace are made as detached mounts of that namespace (fsopen/fsmount)
 *     that the container's init attaches where its bundle mounts them (tree_fd of the
 *     AJ_OP_MOUNT operation); one that cannot be made is skipped with a note, leaving the
 *     mount point empty;
 *   - sysctls of a joined namespace are written in it (the plan says which: the bundle's,
 *     and net.ipv4.ip_unprivileged_port_start when CAP_NET_BIND_SERVICE is granted over a
 *     network namespace the container does not own);
 *   - the hostname of a joined UTS namespace is set in it.
 * A create that fails after that puts back the values it found (aj_container_join_undo).
 * The plan (src/oci/plan_oci.c) has already refused what must not happen to the host's own
 * namespaces. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "sandbox/container.h"
#include "sandbox/sync.h"

#define HELPER_TIMEOUT_MS 10000

/* Whether the user namespace `fd` is the caller's. */
static bool same_userns(int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int join_namespaces(struct aj_container_launch *l, struct aj_err *err)
{
	/* A joined pid namespace is our children's until we return to our own: the clone's,
	 * and no later helper's (a sanitizer's at exit must see us). */
	if ((l->joined & CLONE_NEWPID) &&
	    (l->own_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC)) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "open /proc/self/ns/pid");
	for (size_t i = 0; i < l->n_join; i++)
		if (setns(l->join_fd[i], l->join_type[i]) < 0)
			return aj_err_sys(err, AJ_LAYER_NS, "join the namespace of %s",
					  l->join_path[i] ? l->join_path[i] : "(unnamed)");
	return 0;
}

static unsigned long attr_of(unsigned long mflags)
{
	return (mflags & MS_RDONLY ? MOUNT_ATTR_RDONLY : 0) |
	       (mflags & MS_NODEV ? MOUNT_ATTR_NODEV : 0) |
	       (mflags & MS_NOEXEC ? MOUNT_ATTR_NOEXEC : 0) | MOUNT_ATTR_NOSUID;
}

/* A detached instance of filesystem `type` of the caller's current namespaces, with the
 * operation's options ("k=v" or "flag", comma-separated) and flags. */
static int detached_fs(const struct aj_op *op, struct aj_err *err)
{
	_cleanup_close_ int fs = fsopen(op->mtype, FSOPEN_CLOEXEC);
	char opts[512];
	char *save = NULL;
	int m;

	if (fs < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "fsopen(%s)", op->mtype);
	snprintf(opts, sizeof opts, "%s", op->opts ? op->opts : "");
	for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(o, '=');
		int r = eq ? (*eq = '\0', fsconfig(fs, FSCONFIG_SET_STRING, o, eq + 1, 0))
			   : fsconfig(fs, FSCONFIG_SET_FLAG, o, NULL, 0);
		if (r < 0)
			return aj_err_sys(err, AJ_LAYER_MOUNT, "%s option \"%s\"", op->mtype, o);
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "create a %s instance", op->mtype);
	m = fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)attr_of(op->mflags));
	if (m < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "mount a %s instance", op->mtype);
	return m;
}

/* proc shows the pid namespace its mounter is a member of, and setns(CLONE_NEWPID) only
 * moves our children there: a child of ours makes it and passes it back. */
static int detached_proc(const struct aj_op *op, struct aj_err *err)
{
	_cleanup_close_ int ours = -1, theirs = -1;
	struct aj_sync_msg m;
	int sv[2], fd = -1;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "socketpair");
	ours = sv[0];
	theirs = sv[1];
	pid = fork();
	if (pid < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "fork into the joined pid namespace");
	if (pid == 0) {
		/* It lives in the joined pid namespace, visible to the pod: nothing of it may
		 * be read from there. */
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		memset(&m, 0, sizeof m);
		m.type = AJ_SYNC_READY;
		fd = detached_fs(op, &m.err);
		if (fd < 0)
			m.type = AJ_SYNC_ERROR;
		_exit(aj_sync_send_fd(theirs, &m, fd) < 0 ? 1 : 0);
	}
	aj_close_fd(&theirs);
	if (aj_sync_recv_fd(ours, &m, HELPER_TIMEOUT_MS, &fd) < 0)
		aj_err_sys(err, AJ_LAYER_MOUNT, "wait for proc of the joined pid namespace");
	else if (m.type == AJ_SYNC_ERROR)
		*err = m.err;
	waitpid(pid, NULL, 0);
	if (fd >= 0 && m.type != AJ_SYNC_READY)
		aj_close_fd(&fd);
	return fd;
}

/* The namespace a filesystem of the bundle's mounts belongs to, or 0. */
static int owner_ns(const char *type)
{
	if (strcmp(type, "mqueue") == 0)
		return CLONE_NEWIPC;
	if (strcmp(type, "sysfs") == 0)
		return CLONE_NEWNET;
	if (strcmp(type, "proc") == 0)
		return CLONE_NEWPID;
	return 0;
}

static void premade_mounts(struct aj_container_launch *l)
{
	for (size_t i = 0; i < l->plan->n_ops; i++) {
		struct aj_op *op = &l->plan->ops[i];
		struct aj_err err;
		int ns = op->kind == AJ_OP_MOUNT && op->mtype ? owner_ns(op->mtype) : 0;

		if (!ns || !(l->joined & ns))
			continue;
		aj_err_clear(&err);
		op->tree_fd = ns == CLONE_NEWPID ? detached_proc(op, &err) : detached_fs(op, &err);
		if (op->tree_fd >= 0)
			continue;
		/* Nothing mounted there is no weakening: the container sees less. */
		aj_strv_pushf(l->notes, "mounts (%s at %s): the joined namespace's %s could not be "
					"made (%s); the directory is left empty",
			      op->mtype, op->dst, op->mtype, err.msg);
		op->kind = AJ_OP_DIR;
	}
}

static bool ipc_sysctl(const char *kv)
{
	return strncmp(kv, "/proc/sys/kernel/", 17) == 0 || strncmp(kv, "/proc/sys/fs/mqueue/", 20) == 0;
}

static int write_one(const char *kv, struct aj_err *err)
{
	char path[256];
	const char *eq = strchr(kv, '=');

	if (!eq)
		return 0;
	snprintf(path, sizeof path, "%.*s", (int)(eq - kv), kv);
	if (aj_write_file(path, eq + 1) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "write \"%s\" to %s in the joined namespace",
				  eq + 1, path);
	return 0;
}

/* An IPC namespace's sysctls may be written by its owner's root only (the kernel's
 * ipc_permissions), whatever capabilities the writer has: a child of ours joins the owning
 * user namespace as its root and writes them. */
static int write_ipc_sysctls(const struct aj_container_launch *l, const struct aj_strv *kvs,
			     struct aj_err *err)
{
	_cleanup_close_ int userns = -1;
	struct aj_sync_msg m;
	int sv[2], ipc = -1;
	pid_t pid;

	for (size_t i = 0; i < l->n_join; i++)
		if (l->join_type[i] == CLONE_NEWIPC)
			ipc = l->join_fd[i];
	userns = ioctl(ipc, NS_GET_USERNS);
	if (userns < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "the owner of the joined ipc namespace");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "socketpair");
	pid = fork();
	if (pid == 0) {
		/* Root of the pod's owner from here: whatever suid_dumpable says, nothing of
		 * this process (the creator's copy) may be read by the pod's processes. */
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		memset(&m, 0, sizeof m);
		m.type = AJ_SYNC_READY;
		/* An owner that is our own user namespace (an ipc namespace the host made):
		 * setns() into it is EINVAL, and we are its root already. */
		if ((!same_userns(userns) && setns(userns, CLONE_NEWUSER) < 0) ||
		    setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
			aj_err_sys(&m.err, AJ_LAYER_NS, "become root of the joined ipc namespace's owner");
		for (size_t i = 0; !m.err.msg[0] && i < kvs->n; i++)
			if (ipc_sysctl(kvs->v[i]))
				write_one(kvs->v[i], &m.err);
		if (m.err.msg[0])
			m.type = AJ_SYNC_ERROR;
		_exit(aj_sync_send(sv[1], &m) < 0 ? 1 : 0);
	}
	close(sv[1]);
	if (pid < 0 || aj_sync_recv(sv[0], &m, HELPER_TIMEOUT_MS) < 0)
		m.type = 0;
	close(sv[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (m.type == AJ_SYNC_READY)
		return 0;
	if (m.type == AJ_SYNC_ERROR)
		*err = m.err;
	else
		aj_err_sys(err, AJ_LAYER_NS, "write the joined ipc namespace's sysctls");
	return -1;
}

static int write_sysctls(const struct aj_container_launch *l, const struct aj_strv *kvs,
			 struct aj_err *err)
{
	bool ipc = false;

	for (size_t i = 0; i < kvs->n; i++) {
		if (ipc_sysctl(kvs->v[i]))
			ipc = true;
		else if (write_one(kvs->v[i], err) < 0)
			return -1;
	}
	return ipc ? write_ipc_sysctls(l, kvs, err) : 0;
}

/* What the sysctls about to be written hold now ("PATH=value"), for a create that fails
 * (aj_container_join_undo). Read in the joined namespaces, as anyone of them may. */
static void save_sysctls(struct aj_container_launch *l)
{
	for (size_t i = 0; i < l->outside_sysctl->n; i++) {
		const char *kv = l->outside_sysctl->v[i], *eq = strchr(kv, '=');
		char path[256];
		_cleanup_free_ char *now = NULL;

		if (!eq)
			continue;
		snprintf(path, sizeof path, "%.*s", (int)(eq - kv), kv);
		if (!(now = aj_read_file(path, 4096, NULL)))
			continue;
		now[strcspn(now, "\n")] = '\0';
		aj_strv_pushf(&l->undo_sysctl, "%s=%s", path, now);
	}
}

static int set_hostname(struct aj_container_launch *l, struct aj_err *err)
{
	char now[sizeof l->undo_hostname] = "";

	if (gethostname(now, sizeof now - 1) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "gethostname in the joined uts namespace");
	if (strcmp(now, l->outside_hostname) == 0)
		return 0;
	if (sethostname(l->outside_hostname, strlen(l->outside_hostname)) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "sethostname \"%s\" in the joined uts namespace",
				  l->outside_hostname);
	memcpy(l->undo_hostname, now, sizeof now);
	return 0;
}

int aj_container_join(struct aj_container_launch *l, struct aj_err *err)
{
	/* Joined by the caller itself, before the clone: the container's init will be in a user
	 * namespace of its own, with no rights over these. What was there before is kept, for
	 * a create that fails later to put back. */
	if (join_namespaces(l, err) < 0)
		return -1;
	if (l->outside_sysctl) {
		save_sysctls(l);
		if (write_sysctls(l, l->outside_sysctl, err) < 0)
			return -1;
	}
	if (l->outside_hostname && set_hostname(l, err) < 0)
		return -1;
	premade_mounts(l);
	return 0;
}

void aj_container_join_undo(struct aj_container_launch *l)
{
	struct aj_err err;

	/* Best effort: a value that cannot be put back leaves no other choice. */
	aj_err_clear(&err);
	if (l->undo_sysctl.n)
		write_sysctls(l, &l->undo_sysctl, &err);
	if (l->undo_hostname[0])
		sethostname(l->undo_hostname, strlen(l->undo_hostname));
	aj_strv_clear(&l->undo_sysctl);
	l->undo_hostname[0] = '\0';
}

int aj_container_unjoin(struct aj_container_launch *l, struct aj_err *err)
{
	int r = 0;

	if (l->own_pidns >= 0 && setns(l->own_pidns, CLONE_NEWPID) < 0)
		r = aj_err_sys(err, AJ_LAYER_NS, "return to our own pid namespace");
	aj_close_fd(&l->own_pidns);
	return r;
}
