/* OCI bundle -> plan. The rootfs is ops[0]; the bundle's mounts follow in the bundle's order
 * (order matters: a later mount may land inside an earlier one), then the default devices,
 * sysctls, masked and read-only paths, as runc applies them. */
#include "oci/plan_oci.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "oci/seccomp.h"
#include "rules/landlock.h"

#define ADD(...)                                                         \
	do {                                                             \
		if (!aj_plan_add_op(__VA_ARGS__))                        \
			return aj_err_sys(err, AJ_LAYER_POLICY, "plan"); \
	} while (0)

static int host_path(const char *bundle, const char *p, char *out, const char *what,
		     struct aj_err *err)
{
	char joined[PATH_MAX + 8];

	if ((size_t)snprintf(joined, sizeof joined, "%s%s%s", p[0] == '/' ? "" : bundle,
			     p[0] == '/' ? "" : "/", p) >= sizeof joined)
		return aj_err_set(err, AJ_LAYER_POLICY, ENAMETOOLONG, "%s: path too long", what);
	/* The bundle is the orchestrator's and trusted: its paths may go through symlinks on
	 * the host (runc follows them too). Inside the container nothing is followed out of
	 * its root. */
	if (!realpath(joined, out))
		return aj_err_sys(err, AJ_LAYER_POLICY, "config.json: %s: \"%s\"", what, joined);
	return 0;
}

static int root_op(struct aj_oci_cplan *c, struct aj_err *err)
{
	if (host_path(c->bundle, c->spec.root_path, c->rootfs, "root.path", err) < 0)
		return -1;
	ADD(&c->plan, AJ_OP_BIND, "/", c->rootfs, AJ_OPF_FROM_PARENT | AJ_OPF_CANONICAL,
	    c->spec.root_ro ? AJ_LL_RX : AJ_LL_RW,
	    "the bundle's root filesystem, its ids shown as the container's own");
	return 0;
}

static int dev_defaults(struct aj_oci_cplan *c, bool fresh, struct aj_err *err)
{
	static const char *const nodes[] = {"/dev/null", "/dev/zero", "/dev/full",
					    "/dev/random", "/dev/urandom", "/dev/tty"};
	static const char *const links[][2] = {{"/dev/ptmx", "pts/ptmx"},
					       {"/dev/fd", "/proc/self/fd"},
					       {"/dev/stdin", "/proc/self/fd/0"},
					       {"/dev/stdout", "/proc/self/fd/1"},
					       {"/dev/stderr", "/proc/self/fd/2"}};

	for (size_t i = 0; i < AJ_ARRAY_SIZE(nodes); i++)
		ADD(&c->plan, AJ_OP_BIND, nodes[i], nodes[i], AJ_OPF_DEV | AJ_OPF_OPTIONAL,
		    i == 5 ? AJ_LL_TTY : AJ_LL_DEV, "a harmless device of the host");
	for (size_t i = 0; fresh && i < AJ_ARRAY_SIZE(links); i++)
		ADD(&c->plan, AJ_OP_SYMLINK, links[i][0], links[i][1], 0, 0, "standard /dev link");
	return 0;
}

static const char *static_type(const char *t)
{
	static const char *const types[] = {"tmpfs", "proc", "sysfs", "devpts", "mqueue",
					    "cgroup2"};

	for (size_t i = 0; i < AJ_ARRAY_SIZE(types); i++)
		if (strcmp(t, types[i]) == 0)
			return types[i];
	return NULL;
}

static int bind_op(struct aj_oci_cplan *c, const struct aj_oci_mount *m, size_t i,
		   uint64_t ll, struct aj_err *err)
{
	char src[PATH_MAX], what[64];
	unsigned ro = m->flags & MS_RDONLY ? AJ_OPF_RO : 0;
	struct stat st;

	snprintf(what, sizeof what, "mounts[%zu].source", i);
	if (host_path(c->bundle, m->src, src, what, err) < 0 || stat(src, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_POLICY, "config.json: %s: \"%s\"", what, m->src);
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		ADD(&c->plan, AJ_OP_BIND, m->dst, src, AJ_OPF_DEV | ro, AJ_LL_DEV,
		    "a device node the bundle binds in");
		return 0;
	}
	ADD(&c->plan, AJ_OP_BIND, m->dst, src,
	    AJ_OPF_FROM_PARENT | AJ_OPF_CANONICAL | ro |
		    (m->flags & MS_NOEXEC ? AJ_OPF_NOEXEC : 0),
	    ll, "a bind mount of the bundle, ids shown as the container's own");
	return 0;
}

static int mount_op(struct aj_oci_cplan *c, const struct aj_oci_mount *m, size_t i,
		    struct aj_err *err)
{
	uint64_t ll = m->flags & MS_RDONLY ? AJ_LL_RX : AJ_LL_RW;
	const char *type = m->type;
	struct aj_op *op;

	if (m->flags & MS_NOEXEC)
		ll &= ~AJ_LL_FS_EXECUTE;
	if (m->bind)
		return bind_op(c, m, i, ll, err);
	if (strcmp(type, "cgroup") == 0 || strcmp(type, "cgroup2") == 0) {
		/* On a v1 host a user namespace cannot mount the v1 hierarchies: the container
		 * sees an empty read-only directory there (its limits still apply). */
		type = c->feat.cgroup->mode == AJ_CGROUP_V2 ? "cgroup2" : "tmpfs";
		if (strcmp(type, "tmpfs") == 0)
			aj_strv_pushf(&c->notes, "mounts[%zu] (%s): cgroup v1 host: an empty "
						 "read-only directory, not the cgroup tree",
				      i, m->dst);
	}
	if (strcmp(type, "proc") == 0 || strcmp(type, "sysfs") == 0)
		ll = AJ_LL_RO;
	else if (strcmp(type, "devpts") == 0)
		ll = AJ_LL_TTY | AJ_LL_FS_READ_DIR;
	op = aj_plan_add_op(&c->plan, AJ_OP_MOUNT, m->dst, m->src ? m->src : type, 0, ll,
			    "a mount of the bundle");
	if (!op)
		return aj_err_sys(err, AJ_LAYER_POLICY, "plan");
	if (m->data)
		op->opts = aj_xstrdup(m->data);
	op->mtype = static_type(type);
	op->mflags = m->flags | (strcmp(m->type, "cgroup") == 0 ? MS_RDONLY : 0);
	if (strcmp(m->dst, "/dev") == 0 && strcmp(type, "tmpfs") == 0)
		return dev_defaults(c, true, err);
	return 0;
}

static int sysctl_ops(struct aj_oci_cplan *c, struct aj_err *err)
{
	for (size_t i = 0; i < c->spec.sysctl.n; i++) {
		const char *kv = c->spec.sysctl.v[i], *eq = strchr(kv, '=');
		char path[300];
		struct aj_op *op;

		snprintf(path, sizeof path, "/proc/sys/%.*s", (int)(eq - kv), kv);
		for (char *p = path + 10; *p; p++)
			if (*p == '.')
				*p = '/';
		op = aj_plan_add_op(&c->plan, AJ_OP_FILE, path, eq + 1, 0, 0, "linux.sysctl");
		if (!op)
			return aj_err_sys(err, AJ_LAYER_POLICY, "plan");
		op->len = strlen(eq + 1);
		op->mode = 0644;
	}
	return 0;
}

static int rootfs_ops(struct aj_oci_cplan *c, struct aj_err *err)
{
	bool dev_mounted = false;

	if (root_op(c, err) < 0)
		return -1;
	for (size_t i = 0; i < c->spec.n_mounts; i++) {
		dev_mounted = dev_mounted || strcmp(c->spec.mounts[i].dst, "/dev") == 0;
		if (mount_op(c, &c->spec.mounts[i], i, err) < 0)
			return -1;
	}
	if (!dev_mounted && dev_defaults(c, false, err) < 0)
		return -1;
	if (sysctl_ops(c, err) < 0)
		return -1;
	for (size_t i = 0; i < c->spec.masked.n; i++)
		ADD(&c->plan, AJ_OP_MASK, c->spec.masked.v[i], NULL, AJ_OPF_OPTIONAL, 0,
		    "linux.maskedPaths");
	for (size_t i = 0; i < c->spec.readonly.n; i++)
		ADD(&c->plan, AJ_OP_BIND, c->spec.readonly.v[i], c->spec.readonly.v[i],
		    AJ_OPF_SELF | AJ_OPF_RO | AJ_OPF_OPTIONAL, 0, "linux.readonlyPaths");
	aj_plan_set_layer(&c->plan, AJ_PL_ROOTFS, AJ_LS_ENFORCED,
			  "the bundle's root filesystem (%s), idmapped to the container's ids; "
			  "%zu operations",
			  c->spec.root_ro ? "read-only" : "writable", c->plan.n_ops);
	return 0;
}

/* ---- namespaces ------------------------------------------------------------------------- */

static void ns_layer(struct aj_oci_cplan *c, int layer, int type, const char *name)
{
	const char *path = NULL;

	if (!aj_oci_spec_has_ns(&c->spec, type, &path)) {
		aj_plan_set_layer(&c->plan, layer, AJ_LS_OFF,
				  "SHARED WITH THE HOST by the bundle (no %s namespace)", name);
		return;
	}
	if (path) {
		aj_plan_set_layer(&c->plan, layer, AJ_LS_ENFORCED, "joins %s", path);
		return;
	}
	if (type != CLONE_NEWCGROUP)
		c->plan.clone_flags |= type;
	aj_plan_set_layer(&c->plan, layer, AJ_LS_ENFORCED, "a new %s namespace", name);
}

static int namespaces(struct aj_oci_cplan *c, struct aj_err *err)
{
	if (!aj_oci_spec_has_ns(&c->spec, CLONE_NEWPID, NULL))
		return aj_err_set(err, AJ_LAYER_POLICY, ENOTSUP,
				  "config.json: linux.namespaces: a pid namespace is required: the "
				  "container's init must be the ancestor of every process in it");
	c->plan.clone_flags = CLONE_NEWUSER | CLONE_NEWNS;
	ns_layer(c, AJ_PL_MOUNTNS, CLONE_NEWNS, "mount");
	ns_layer(c, AJ_PL_PIDNS, CLONE_NEWPID, "pid");
	ns_layer(c, AJ_PL_IPCNS, CLONE_NEWIPC, "ipc");
	ns_layer(c, AJ_PL_UTSNS, CLONE_NEWUTS, "uts");
	ns_layer(c, AJ_PL_NETNS, CLONE_NEWNET, "network");
	ns_layer(c, AJ_PL_CGROUPNS, CLONE_NEWCGROUP, "cgroup");
	if (c->spec.hostname && !(c->plan.clone_flags & CLONE_NEWUTS))
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
				  "config.json: hostname: needs a new uts namespace");
	return 0;
}

/* ---- layers ----------------------------------------------------------------------------- */

static int seccomp_layer(struct aj_oci_cplan *c, struct aj_err *err)
{
	const char *a = aj_oci_annotation(&c->spec, "io.agentjail.seccomp");
	char detail[160];

	if (c->spec.seccomp && aj_oci_seccomp_compile(c->spec.seccomp, &c->filter, &c->filter_len,
						      &c->filter_unknown, err) < 0)
		return -1;
	if (a && strcmp(a, "bundle") != 0)
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "annotations: "
					"io.agentjail.seccomp: \"%s\" (only \"bundle\")", a);
	if (a && !c->filter)
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "annotations: io.agentjail.seccomp="
					"bundle needs the bundle's own linux.seccomp profile");
	snprintf(detail, sizeof detail, "; the bundle's profile stacked on it (%zu unknown "
		 "syscall names skipped)", c->filter_unknown);
	if (a) {
		c->plan.sc_insns = NULL;
		aj_plan_set_layer(&c->plan, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
				  "the bundle's profile only (io.agentjail.seccomp=bundle); "
				  "agentjail's deny list is off");
	} else if (c->filter) {
		size_t n = strlen(c->plan.layers[AJ_PL_SECCOMP].detail);
		snprintf(c->plan.layers[AJ_PL_SECCOMP].detail + n,
			 sizeof c->plan.layers[0].detail - n, "%s", detail);
	}
	return 0;
}

static int landlock_layer(struct aj_oci_cplan *c, struct aj_err *err)
{
	const char *a = aj_oci_annotation(&c->spec, "io.agentjail.landlock");

	if (a && strcmp(a, "off") != 0)
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
				  "annotations: io.agentjail.landlock: \"%s\" (only \"off\")", a);
	/* The network is the orchestrator's (its namespace, its CNI): no TCP rules. */
	c->plan.ll_net = 0;
	aj_plan_set_layer(&c->plan, AJ_PL_LANDLOCK_NET, AJ_LS_OFF,
			  "the container's network is its namespace's (the orchestrator's)");
	if (!a)
		return 0;
	c->plan.ll_fs = c->plan.ll_scope = 0;
	aj_plan_set_layer(&c->plan, AJ_PL_LANDLOCK_FS, AJ_LS_OFF,
			  "turned off by the bundle (io.agentjail.landlock=off)");
	aj_plan_set_layer(&c->plan, AJ_PL_LANDLOCK_SCOPE, AJ_LS_OFF,
			  "turned off by the bundle (io.agentjail.landlock=off)");
	return 0;
}

static void other_layers(struct aj_oci_cplan *c)
{
	struct aj_plan *p = &c->plan;
	char caps[160] = "";

	if (c->spec.proc.caps.n)
		snprintf(caps, sizeof caps, "; the bundle asked for %zu, none granted (see "
			 "oci.capabilities)", c->spec.proc.caps.n);
	aj_plan_set_layer(p, AJ_PL_CAPS, AJ_LS_ENFORCED, "every capability dropped%s", caps);
	aj_plan_set_layer(p, AJ_PL_NNP, AJ_LS_ENFORCED, "set%s",
			  c->spec.proc.no_new_privs ? "" : " (although the bundle did not ask)");
	aj_plan_set_layer(p, AJ_PL_SESSION, AJ_LS_ENFORCED, "the process has its own session%s",
			  c->spec.proc.terminal ? " and the container's own terminal" : "");
	aj_plan_set_layer(p, AJ_PL_ENV, AJ_LS_ENFORCED, "the bundle's %zu variables only",
			  c->spec.proc.env.n);
	aj_plan_set_layer(p, AJ_PL_RLIMITS, AJ_LS_ENFORCED, "%zu from the bundle",
			  c->spec.proc.n_rlimits);
	aj_plan_set_layer(p, AJ_PL_TIMEOUT, AJ_LS_OFF, "the orchestrator's");
	aj_plan_set_layer(p, AJ_PL_OUTPUT, AJ_LS_OFF, "the orchestrator's (the shim keeps it)");
}

static void resource_layers(struct aj_oci_cplan *c)
{
	const struct aj_oci_resources *r = &c->spec.res;
	const char *mode = aj_cgroup_mode_name(c->feat.cgroup->mode);

	if (r->memory)
		aj_plan_set_layer(&c->plan, AJ_PL_MEMORY, AJ_LS_ENFORCED, "%lu bytes (cgroup %s, %s)",
				  (unsigned long)r->memory, mode, c->cgroup_path);
	else
		aj_plan_set_layer(&c->plan, AJ_PL_MEMORY, AJ_LS_OFF, "no limit in the bundle");
	if (r->pids)
		aj_plan_set_layer(&c->plan, AJ_PL_PIDS, AJ_LS_ENFORCED, "%lu tasks (cgroup %s)",
				  (unsigned long)r->pids, mode);
	else
		aj_plan_set_layer(&c->plan, AJ_PL_PIDS, AJ_LS_OFF, "no limit in the bundle");
	if (r->cpu_quota > 0)
		aj_plan_set_layer(&c->plan, AJ_PL_CPU, AJ_LS_ENFORCED, "quota %ld us per %lu us",
				  (long)r->cpu_quota,
				  (unsigned long)(r->cpu_period ? r->cpu_period : 100000));
	else
		aj_plan_set_layer(&c->plan, AJ_PL_CPU, AJ_LS_OFF, "no quota in the bundle%s",
				  r->cpu_shares ? " (shares set)" : "");
}

/* runc's cgroupfs placement; the systemd form "slice:prefix:name" is mapped onto the same
 * tree (agentjail drives cgroupfs itself). */
static int cgroup_path(struct aj_oci_cplan *c, const char *id, bool systemd, struct aj_err *err)
{
	const char *p = c->spec.cgroups_path;
	char a[256], b[256], n[256];

	if (!p || !*p)
		snprintf(c->cgroup_path, sizeof c->cgroup_path, "/agentjail/%s", id);
	else if (strchr(p, ':') && sscanf(p, "%255[^:]:%255[^:]:%255s", a, b, n) == 3)
		snprintf(c->cgroup_path, sizeof c->cgroup_path, "/%s/%s-%s.scope", a, b, n);
	else
		snprintf(c->cgroup_path, sizeof c->cgroup_path, "%s%s", p[0] == '/' ? "" : "/agentjail/",
			 p);
	if (systemd)
		aj_strv_pushf(&c->notes, "--systemd-cgroup: agentjail writes cgroupfs itself; "
					 "cgroup at %s", c->cgroup_path);
	if (!aj_path_is_clean_abs(c->cgroup_path))
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
				  "config.json: linux.cgroupsPath: \"%s\" is not a clean path", p);
	return 0;
}

static int policy(struct aj_oci_cplan *c, struct aj_err *err)
{
	aj_policy_init(&c->pol);
	c->pol.uid = c->spec.proc.uid;
	c->pol.gid = c->spec.proc.gid;
	/* The TCP layer is decided by landlock_layer(); host keeps the shared code from
	 * denying it. */
	c->pol.net_mode = AJ_NET_HOST;
	aj_features_probe(&c->feat, NULL);
	if (!c->feat.privileged)
		return aj_err_set(err, AJ_LAYER_USERNS, EPERM,
				  "agentjail's OCI runtime needs root with full capabilities (as "
				  "containerd runs it): each container gets its own host id range"),
		       aj_err_hint(err, "run containerd (or this command) as root");
	return 0;
}

static int process(struct aj_oci_cplan *c, struct aj_err *err)
{
	(void)err;
	aj_strv_copy(&c->plan.argv, &c->spec.proc.args);
	aj_strv_copy(&c->plan.env, &c->spec.proc.env);
	c->plan.cwd = aj_xstrdup(c->spec.proc.cwd);
	return 0;
}

int aj_oci_cplan_build(struct aj_oci_cplan *c, const char *bundle, json_t *config,
		       const char *id, bool systemd_cgroup, struct aj_err *err)
{
	memset(c, 0, sizeof *c);
	snprintf(c->bundle, sizeof c->bundle, "%s", bundle);
	if (aj_oci_spec_parse(config, &c->spec, err) < 0 || policy(c, err) < 0)
		return -1;
	c->plan.policy = &c->pol;
	c->plan.features = &c->feat;
	c->have_plan = true;
	if (aj_plan_base_layers(&c->plan, err) < 0 || namespaces(c, err) < 0 ||
	    cgroup_path(c, id, systemd_cgroup, err) < 0 || rootfs_ops(c, err) < 0 ||
	    process(c, err) < 0 || landlock_layer(c, err) < 0 || seccomp_layer(c, err) < 0)
		return -1;
	other_layers(c);
	resource_layers(c);
	return 0;
}

void aj_oci_cplan_free(struct aj_oci_cplan *c)
{
	if (c->have_plan)
		aj_plan_free(&c->plan);
	if (c->pol.preset)
		aj_policy_free(&c->pol);
	aj_oci_spec_free(&c->spec);
	aj_strv_free(&c->notes);
	free(c->filter);
	c->filter = NULL;
	c->have_plan = false;
}

void aj_oci_cplan_launch(struct aj_oci_cplan *c, struct aj_container_launch *l)
{
	memset(l, 0, sizeof *l);
	l->plan = &c->plan;
	l->proc = &c->spec.proc;
	l->filter = c->filter;
	l->filter_len = c->filter_len;
	l->root_readonly = c->spec.root_ro;
	l->hostname = c->spec.hostname;
	l->new_cgroupns = aj_oci_spec_has_ns(&c->spec, CLONE_NEWCGROUP, NULL);
	l->console_fd = l->fifo_fd = -1;
}

static json_t *strv_json(const struct aj_strv *v)
{
	json_t *a = json_array();

	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->v[i]));
	return a;
}

json_t *aj_oci_cplan_report(const struct aj_oci_cplan *c)
{
	json_t *r = aj_plan_to_json(&c->plan), *oci = json_object(), *caps = json_object();
	json_t *notes = strv_json(&c->notes);

	for (size_t i = 0; i < c->spec.notes.n; i++)
		json_array_append_new(notes, json_string(c->spec.notes.v[i]));
	json_object_set_new(caps, "requested", strv_json(&c->spec.proc.caps));
	json_object_set_new(caps, "granted", json_array());
	json_object_set_new(oci, "bundle", json_string(c->bundle));
	json_object_set_new(oci, "rootfs", json_string(c->rootfs));
	json_object_set_new(oci, "cgroup", json_string(c->cgroup_path));
	json_object_set_new(oci, "capabilities", caps);
	json_object_set_new(oci, "bundle_seccomp", json_boolean(c->filter != NULL));
	json_object_set_new(oci, "notes", notes);
	json_object_set_new(r, "oci", oci);
	return r;
}
