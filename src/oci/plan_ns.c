/* A bundle's namespaces: new ones (the clone makes them, in the container's own user
 * namespace) and joined ones (a pod's network, IPC and UTS namespaces, a shared pid
 * namespace, any namespace file), and what belongs to them: the hostname and the sysctls.
 *
 * What belongs to a new namespace is done inside, by the container's root. A joined one
 * belongs to another user namespace (the host's, or another container's), so what the bundle
 * asks of it is done from outside by the creating process (sandbox/container_join.c), and
 * never to the host's own namespaces: a sysctl of one is refused, a hostname for it is left
 * with a note. Joined paths are checked when create opens them: a path that is no namespace,
 * or one of another type, is refused naming the field. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "common/cleanup.h"
#include "oci/plan_internal.h"

static const struct {
	int type, layer;
	const char *name, *proc; /* the spec's name; the file in /proc/PID/ns */
} kinds[] = {
	{CLONE_NEWNS, AJ_PL_MOUNTNS, "mount", "mnt"},   {CLONE_NEWPID, AJ_PL_PIDNS, "pid", "pid"},
	{CLONE_NEWIPC, AJ_PL_IPCNS, "ipc", "ipc"},      {CLONE_NEWUTS, AJ_PL_UTSNS, "uts", "uts"},
	{CLONE_NEWNET, AJ_PL_NETNS, "network", "net"},
	{CLONE_NEWCGROUP, AJ_PL_CGROUPNS, "cgroup", "cgroup"},
	{CLONE_NEWUSER, AJ_PL_USERNS, "user", "user"},
};

static size_t kind_of(int type)
{
	size_t k = 0;

	while (k + 1 < AJ_ARRAY_SIZE(kinds) && kinds[k].type != type)
		k++;
	return k;
}

static void ns_layer(struct aj_oci_cplan *c, size_t k)
{
	const char *path = NULL;

	if (!aj_oci_spec_has_ns(&c->spec, kinds[k].type, &path)) {
		aj_plan_set_layer(&c->plan, kinds[k].layer, AJ_LS_OFF,
				  "SHARED WITH THE HOST by the bundle (no %s namespace)", kinds[k].name);
		return;
	}
	if (path) {
		aj_plan_set_layer(&c->plan, kinds[k].layer, AJ_LS_ENFORCED, "joins %s", path);
		return;
	}
	if (kinds[k].type != CLONE_NEWCGROUP)
		c->plan.clone_flags |= kinds[k].type;
	aj_plan_set_layer(&c->plan, kinds[k].layer, AJ_LS_ENFORCED, "a new %s namespace",
			  kinds[k].name);
}

int oci_plan_namespaces(struct aj_oci_cplan *c, struct aj_err *err)
{
	if (!aj_oci_spec_has_ns(&c->spec, CLONE_NEWPID, NULL))
		return aj_err_set(err, AJ_LAYER_POLICY, ENOTSUP,
				  "config.json: linux.namespaces: a pid namespace is required: the "
				  "container's init must be the ancestor of every process in it");
	c->plan.clone_flags = CLONE_NEWUSER | CLONE_NEWNS;
	for (size_t k = 0; kinds[k].type != CLONE_NEWUSER; k++)
		ns_layer(c, k);
	/* runc's reading: an empty hostname is none. */
	if (c->spec.hostname && c->spec.hostname[0] &&
	    !aj_oci_spec_has_ns(&c->spec, CLONE_NEWUTS, NULL))
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
				  "config.json: hostname: needs a uts namespace (new or joined): the "
				  "host's name is not the container's to set");
	return 0;
}

/* "/proc/sys/a/b" of "a.b=value"; the value after '='. */
static const char *sysctl_path(const char *kv, char *path, size_t len)
{
	const char *eq = strchr(kv, '=');

	snprintf(path, len, "/proc/sys/%.*s", (int)(eq - kv), kv);
	for (char *p = path + 10; *p; p++)
		if (*p == '.')
			*p = '/';
	return eq + 1;
}

static bool joins(const struct aj_oci_cplan *c, int type)
{
	const char *path = NULL;

	return aj_oci_spec_has_ns(&c->spec, type, &path) && path;
}

int oci_plan_sysctls(struct aj_oci_cplan *c, struct aj_err *err)
{
	for (size_t i = 0; i < c->spec.sysctl.n; i++) {
		const char *kv = c->spec.sysctl.v[i], *val;
		char path[300];
		struct aj_op *op;

		if (joins(c, aj_oci_sysctl_ns(kv)))
			continue; /* written from outside, once opened */
		val = sysctl_path(kv, path, sizeof path);
		op = aj_plan_add_op(&c->plan, AJ_OP_FILE, path, val, 0, 0, "linux.sysctl");
		if (!op)
			return aj_err_sys(err, AJ_LAYER_POLICY, "plan");
		op->len = strlen(val);
		op->mode = 0644;
	}
	return 0;
}

/* ---- joined namespaces, when create opens them ----------------------------------------- */

static bool same_file(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int open_one(struct aj_oci_cplan *c, size_t i, struct aj_err *err)
{
	const struct aj_oci_ns *ns = &c->spec.ns[i];
	size_t k = kind_of(ns->type);
	char host[64];
	int t;

	/* O_PATH first: opening a FIFO or a device for reading could block or act on it.
	 * Only a file of nsfs is opened for real, through the descriptor (the same file). */
	_cleanup_close_ int path_fd = open(ns->path, O_PATH | O_CLOEXEC);
	struct statfs sfs;
	char self[64];

	if (path_fd < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "config.json: linux.namespaces[%zu].path: \"%s\"",
				  i, ns->path);
	if (fstatfs(path_fd, &sfs) == 0 && sfs.f_type == NSFS_MAGIC) {
		snprintf(self, sizeof self, "/proc/self/fd/%d", path_fd);
		c->ns_fd[i] = open(self, O_RDONLY | O_CLOEXEC);
	}
	t = c->ns_fd[i] < 0 ? -1 : ioctl(c->ns_fd[i], NS_GET_NSTYPE);
	if (t < 0)
		return aj_err_set(err, AJ_LAYER_NS, EINVAL, "config.json: linux.namespaces[%zu].path: "
				  "\"%s\" is not a namespace file (/proc/PID/ns/%s or a bind mount of one)",
				  i, ns->path, kinds[k].proc);
	if (t != ns->type)
		return aj_err_set(err, AJ_LAYER_NS, EINVAL, "config.json: linux.namespaces[%zu].path: "
				  "\"%s\" is a %s namespace, not %s",
				  i, ns->path, kinds[kind_of(t)].name, kinds[k].name);
	/* The host's: this runtime's own (it runs in the host's namespaces, as containerd's
	 * shim does), or init's where this process may look at init's. */
	snprintf(host, sizeof host, "/proc/self/ns/%s", kinds[k].proc);
	c->ns_host[i] = same_file(c->ns_fd[i], host);
	snprintf(host, sizeof host, "/proc/1/ns/%s", kinds[k].proc);
	c->ns_host[i] = c->ns_host[i] || same_file(c->ns_fd[i], host);
	if (c->ns_host[i])
		aj_plan_set_layer(&c->plan, kinds[k].layer, AJ_LS_OFF,
				  "SHARED WITH THE HOST: joins the host's own %s namespace (%s)",
				  kinds[k].name, ns->path);
	return 0;
}

/* Whether the container's namespace of this type is the host's: joined from the host, or
 * not in the list at all. */
static bool host_ns(const struct aj_oci_cplan *c, int type)
{
	for (size_t i = 0; i < c->spec.n_ns; i++)
		if (c->spec.ns[i].type == type)
			return c->ns_host[i];
	return true;
}

static int outside_sysctls(struct aj_oci_cplan *c, struct aj_err *err)
{
	for (size_t i = 0; i < c->spec.sysctl.n; i++) {
		const char *kv = c->spec.sysctl.v[i], *val;
		int t = aj_oci_sysctl_ns(kv);
		char path[300];

		if (!joins(c, t))
			continue;
		if (host_ns(c, t))
			return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
					  "config.json: linux.sysctl: \"%.*s\": the %s namespace the "
					  "container joins is the host's own",
					  (int)strcspn(kv, "="), kv, kinds[kind_of(t)].name);
		val = sysctl_path(kv, path, sizeof path);
		aj_strv_pushf(&c->outside_sysctl, "%s=%s", path, val);
	}
	return 0;
}

/* CAP_NET_BIND_SERVICE counts over the network namespace's owner only: in a joined one (a
 * pod's, owned by the host's user namespace) the container's own does not reach. There the
 * namespace's threshold for privileged ports is lowered instead, so that the grant means
 * what it says; never in the host's. */
static void bind_service(struct aj_oci_cplan *c)
{
	const uint64_t *k = c->spec.proc.caps;
	const uint64_t nbs = UINT64_C(1) << CAP_NET_BIND_SERVICE;
	const char *name = "net.ipv4.ip_unprivileged_port_start";

	if (!((k[AJ_CAPSET_BOUNDING] | k[AJ_CAPSET_PERMITTED] | k[AJ_CAPSET_AMBIENT]) & nbs) ||
	    (aj_oci_spec_has_ns(&c->spec, CLONE_NEWNET, NULL) && !joins(c, CLONE_NEWNET)))
		return;
	for (size_t i = 0; i < c->spec.sysctl.n; i++)
		if (strncmp(c->spec.sysctl.v[i], name, strlen(name)) == 0)
			return; /* the bundle says what it wants */
	if (host_ns(c, CLONE_NEWNET)) {
		aj_strv_pushf(&c->notes, "process.capabilities: CAP_NET_BIND_SERVICE does not reach "
					 "the host's network namespace: ports below 1024 stay closed "
					 "there");
		return;
	}
	aj_strv_pushf(&c->outside_sysctl, "/proc/sys/net/ipv4/ip_unprivileged_port_start=0");
	aj_strv_pushf(&c->notes, "process.capabilities: CAP_NET_BIND_SERVICE over the joined "
				 "network namespace (owned by another user namespace): %s set to 0 "
				 "in it",
		      name);
}

int aj_oci_cplan_open_ns(struct aj_oci_cplan *c, struct aj_err *err)
{
	const char *h = c->spec.hostname;

	for (size_t i = 0; i < c->spec.n_ns; i++)
		if (c->spec.ns[i].path && open_one(c, i, err) < 0)
			return -1;
	if (outside_sysctls(c, err) < 0)
		return -1;
	bind_service(c);
	if (h && h[0] && joins(c, CLONE_NEWUTS)) {
		if (host_ns(c, CLONE_NEWUTS))
			aj_strv_pushf(&c->notes, "hostname: \"%s\" not set: the uts namespace the "
						 "container joins is the host's own",
				      h);
		else
			c->outside_hostname = h;
	}
	return 0;
}

void oci_plan_ns_launch(struct aj_oci_cplan *c, struct aj_container_launch *l)
{
	for (size_t i = 0; i < c->spec.n_ns; i++) {
		if (c->ns_fd[i] < 0)
			continue;
		l->join_fd[l->n_join] = c->ns_fd[i];
		l->join_type[l->n_join] = c->spec.ns[i].type;
		l->join_path[l->n_join++] = c->spec.ns[i].path;
		l->joined |= c->spec.ns[i].type;
	}
	l->outside_sysctl = &c->outside_sysctl;
	l->outside_hostname = c->outside_hostname;
	l->notes = &c->notes;
	/* A new uts namespace gets its name from inside. */
	l->hostname = c->spec.hostname && c->spec.hostname[0] && !joins(c, CLONE_NEWUTS)
			      ? c->spec.hostname
			      : NULL;
}

void oci_plan_ns_free(struct aj_oci_cplan *c)
{
	for (size_t i = 0; i < AJ_CONTAINER_MAX_NS; i++)
		aj_close_fd(&c->ns_fd[i]);
	aj_strv_free(&c->outside_sysctl);
}
