/* OCI bundle -> plan. The rootfs is ops[0]; the bundle's mounts follow in the bundle's order
 * (order matters: a later mount may land inside an earlier one), then the default devices,
 * sysctls, masked and read-only paths, as runc applies them. */
#include "oci/plan_oci.h"

#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
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
#include "oci/plan_internal.h"
#include "oci/seccomp.h"
#include "rules/caps.h"
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
	/* A plain directory, or an overlay whose upper directory is one: either way a host
	 * directory, written with the image's ids (its root's as host uid 0). */
	if (!c->spec.root_ro)
		snprintf(c->host_write, sizeof c->host_write, "root.path");
	c->plan.ops[0].mprop = c->spec.root_propagation;
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
	} else {
		ADD(&c->plan, AJ_OP_BIND, m->dst, src,
		    AJ_OPF_FROM_PARENT | AJ_OPF_CANONICAL | ro |
			    (m->flags & MS_NOEXEC ? AJ_OPF_NOEXEC : 0),
		    ll, "a bind mount of the bundle, ids shown as the container's own");
		if (!ro && !c->host_write[0])
			snprintf(c->host_write, sizeof c->host_write, "mounts[%zu] (%s)", i, m->dst);
	}
	c->plan.ops[c->plan.n_ops - 1].mprop = m->propagation;
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
	op->mprop = m->propagation;
	if (strcmp(m->dst, "/dev") == 0 && strcmp(type, "tmpfs") == 0)
		return dev_defaults(c, true, err);
	return 0;
}

/* linux.devices: the host's node of each (spec.c allows only harmless character devices),
 * checked to be the device the bundle names. */
static int devices(struct aj_oci_cplan *c, struct aj_err *err)
{
	for (size_t i = 0; i < c->spec.devices.n; i++) {
		const char *kv = c->spec.devices.v[i], *host = strchr(kv, '=') + 1;
		char dst[4096];
		struct stat st;

		snprintf(dst, sizeof dst, "%.*s", (int)(host - 1 - kv), kv);
		if (stat(host, &st) < 0 || !S_ISCHR(st.st_mode))
			return aj_err_set(err, AJ_LAYER_POLICY, ENOTSUP,
					  "config.json: linux.devices: \"%s\": this host has no %s",
					  dst, host);
		ADD(&c->plan, AJ_OP_BIND, dst, host, AJ_OPF_DEV, AJ_LL_DEV,
		    "linux.devices: the host's node, as it is (mode and owner are the host's)");
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
	if (devices(c, err) < 0)
		return -1;
	if (oci_plan_sysctls(c, err) < 0)
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
	if (a && c->host_write[0]) {
		/* A set-ID file made in a host directory would be host root's; a nested user
		 * namespace would give back CAP_SETFCAP over it. These two groups stay. */
		if (aj_oci_seccomp_host_guard(&c->plan.sc_owned, &c->plan.sc_len, err) < 0)
			return -1;
		c->plan.sc_insns = c->plan.sc_owned;
		aj_plan_set_layer(&c->plan, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
				  "the bundle's profile (io.agentjail.seccomp=bundle) and, of "
				  "agentjail's deny list, only its setid and namespaces groups: the "
				  "container writes into a host directory (%s)",
				  c->host_write);
	} else if (a) {
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

/* ---- identity -------------------------------------------------------------------------- */

const char *aj_oci_pod_key(const json_t *annotations)
{
	static const char *const keys[] = {"io.kubernetes.cri.sandbox-id",
					   "io.kubernetes.cri-o.SandboxID"};

	for (size_t i = 0; i < AJ_ARRAY_SIZE(keys); i++) {
		const char *v = json_string_value(json_object_get(annotations, keys[i]));
		if (v && *v)
			return v;
	}
	return NULL;
}

bool aj_oci_sandbox_container(const json_t *annotations)
{
	const char *t = json_string_value(json_object_get(annotations,
							  "io.kubernetes.cri.container-type"));

	return t && strcmp(t, "sandbox") == 0;
}

/* The containers of a pod share its host id range (docs/kubernetes.md says why): one user
 * namespace each, with the same mapping, so that the pod's IPC objects and shared volumes
 * have the same owners in all of them. */
static void identity(struct aj_oci_cplan *c)
{
	const char *pod = aj_oci_pod_key(c->spec.annotations);
	struct aj_layer_status *l = &c->plan.layers[AJ_PL_USERNS];
	size_t n = strlen(l->detail);

	if (!pod)
		return;
	snprintf(l->detail + n, sizeof l->detail - n, "; the host id range of its pod, shared by "
						     "the pod's containers");
	aj_strv_pushf(&c->notes, "user namespace: the container's own, mapped to the host id range "
				 "of pod %s, which the pod's containers share",
		      pod);
}

/* ---- capabilities ------------------------------------------------------------------------ */

static int cap_outside(const char *what, const char *set, uint64_t extra, const char *of,
		       struct aj_err *err)
{
	char names[512];

	aj_cap_format(extra, names, sizeof names);
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
			  "%s: process.capabilities.%s: %s not in %s", what, set, names, of);
}

int aj_oci_caps_check(const struct aj_container_process *p, const char *what,
		      struct aj_err *err)
{
	const uint64_t *k = p->caps;

	/* What capset(2) and PR_CAP_AMBIENT_RAISE would refuse, refused here by field. */
	if (k[AJ_CAPSET_EFFECTIVE] & ~k[AJ_CAPSET_PERMITTED])
		return cap_outside(what, "effective", k[AJ_CAPSET_EFFECTIVE] & ~k[AJ_CAPSET_PERMITTED],
				   "permitted", err);
	if (k[AJ_CAPSET_INHERITABLE] & ~k[AJ_CAPSET_BOUNDING])
		return cap_outside(what, "inheritable",
				   k[AJ_CAPSET_INHERITABLE] & ~k[AJ_CAPSET_BOUNDING], "bounding",
				   err);
	if (k[AJ_CAPSET_AMBIENT] & ~(k[AJ_CAPSET_PERMITTED] & k[AJ_CAPSET_INHERITABLE]))
		return cap_outside(what, "ambient",
				   k[AJ_CAPSET_AMBIENT] &
					   ~(k[AJ_CAPSET_PERMITTED] & k[AJ_CAPSET_INHERITABLE]),
				   "both permitted and inheritable", err);
	return 0;
}

void aj_oci_caps_cap(const struct aj_oci_cplan *c, struct aj_container_process *p)
{
	for (int s = 0; s < AJ_CAPSET__COUNT; s++)
		p->caps[s] &= c->cap_ceiling;
}

/* Where the container writes into a host directory, its root writes there as host uid 0
 * (the canonical idmap: disk ids are the container's), so a file capability set there is
 * stored without a root id (the kernel's v2 form) and a set-ID bit is host root's: both
 * would hold for any host user who runs the file. CAP_SETFCAP and CAP_FSETID are withheld
 * from every set there, as from an image root's sandbox that writes into a host directory;
 * set-ID modes are refused by agentjail's seccomp "setid" group (seccomp_layer keeps it). */
static void host_write_caps(struct aj_oci_cplan *c, char *detail, size_t len)
{
	const uint64_t fs = (UINT64_C(1) << CAP_SETFCAP) | (UINT64_C(1) << CAP_FSETID);
	uint64_t asked = 0;

	if (!c->host_write[0])
		return;
	c->cap_ceiling &= ~fs;
	for (int s = 0; s < AJ_CAPSET__COUNT; s++)
		asked |= c->caps_asked[s];
	snprintf(detail, len, "; CAP_SETFCAP and CAP_FSETID withheld (writes into a host "
			      "directory: %s)", c->host_write);
	if (asked & fs)
		aj_strv_pushf(&c->notes, "process.capabilities: CAP_SETFCAP and CAP_FSETID not "
					 "granted: the container writes into a host directory "
					 "(%s) as host uid 0, where a file capability or a set-ID "
					 "file it made would hold on the host",
			      c->host_write);
}

/* The bundle's sets, checked, capped by io.agentjail.capabilities and host_write_caps(). */
static int capabilities(struct aj_oci_cplan *c, struct aj_err *err)
{
	const char *a = aj_oci_annotation(&c->spec, "io.agentjail.capabilities");
	const uint64_t *k = c->spec.proc.caps;
	char bad[64], capped[96] = "", hw[192] = "";

	memcpy(c->caps_asked, k, sizeof c->caps_asked);
	c->cap_ceiling = aj_cap_all();
	if (a && aj_cap_parse_list(a, &c->cap_ceiling, bad, sizeof bad) < 0)
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
				  "annotations: io.agentjail.capabilities: \"%s\" is not a "
				  "capability (a list such as \"CAP_CHOWN,CAP_NET_BIND_SERVICE\", or "
				  "\"none\")",
				  bad);
	if (aj_oci_caps_check(&c->spec.proc, "config.json", err) < 0)
		return -1;
	if (a)
		snprintf(capped, sizeof capped, "; at most %d (io.agentjail.capabilities)",
			 __builtin_popcountll(c->cap_ceiling));
	host_write_caps(c, hw, sizeof hw);
	aj_oci_caps_cap(c, &c->spec.proc);
	if (!(k[AJ_CAPSET_BOUNDING] | k[AJ_CAPSET_PERMITTED] | k[AJ_CAPSET_AMBIENT]))
		aj_plan_set_layer(&c->plan, AJ_PL_CAPS, AJ_LS_ENFORCED,
				  "every capability dropped (the bundle asks none)%s", capped);
	else
		aj_plan_set_layer(&c->plan, AJ_PL_CAPS, AJ_LS_ENFORCED,
				  "the bundle's, over the container's own user namespace only: "
				  "bounding %d, effective %d, permitted %d, inheritable %d, ambient "
				  "%d%s%s",
				  __builtin_popcountll(k[AJ_CAPSET_BOUNDING]),
				  __builtin_popcountll(k[AJ_CAPSET_EFFECTIVE]),
				  __builtin_popcountll(k[AJ_CAPSET_PERMITTED]),
				  __builtin_popcountll(k[AJ_CAPSET_INHERITABLE]),
				  __builtin_popcountll(k[AJ_CAPSET_AMBIENT]), capped, hw);
	return 0;
}

static void other_layers(struct aj_oci_cplan *c)
{
	struct aj_plan *p = &c->plan;

	if (c->spec.proc.no_new_privs)
		aj_plan_set_layer(p, AJ_PL_NNP, AJ_LS_ENFORCED,
				  "set (process.noNewPrivileges): setuid and file capabilities "
				  "cannot raise privileges");
	else
		aj_plan_set_layer(p, AJ_PL_NNP, AJ_LS_OFF,
				  "not asked by the bundle: setuid and file capabilities work inside, "
				  "within the container's user namespace and its bounding set");
	aj_plan_set_layer(p, AJ_PL_SESSION, AJ_LS_ENFORCED, "the process has its own session%s",
			  c->spec.proc.terminal ? " and the container's own terminal" : "");
	aj_plan_set_layer(p, AJ_PL_ENV, AJ_LS_ENFORCED, "the bundle's %zu variables only",
			  c->spec.proc.env.n);
	aj_plan_set_layer(p, AJ_PL_RLIMITS, AJ_LS_ENFORCED, "%zu from the bundle",
			  c->spec.proc.n_rlimits);
	aj_plan_set_layer(p, AJ_PL_TIMEOUT, AJ_LS_OFF, "the orchestrator's");
	aj_plan_set_layer(p, AJ_PL_OUTPUT, AJ_LS_OFF, "the orchestrator's (the shim keeps it)");
}

/* The devices every container has stay usable whatever the bundle's allowlist says, as the
 * runtime spec's default devices must: their rules follow the bundle's. ptmx and the
 * pseudo-terminals are the container's own devpts's. (linux.devices are the bundle's to
 * allow, as with runc.) */
static void device_allowlist(struct aj_oci_cplan *c)
{
	static const struct {
		int64_t major, minor;
	} always[] = {{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 1}, {5, 2}, {136, AJ_CG_UNSET}};
	struct aj_cgroup_oci_limits *r = &c->spec.res;

	if (!r->n_devices)
		return;
	r->devices = aj_xrealloc(r->devices, (r->n_devices + AJ_ARRAY_SIZE(always)) * sizeof *r->devices);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(always); i++) {
		struct aj_cgroup_oci_device *d = &r->devices[r->n_devices++];
		memset(d, 0, sizeof *d);
		d->allow = true;
		d->type = aj_xstrdup("c");
		d->access = aj_xstrdup("rwm");
		d->major = always[i].major;
		d->minor = always[i].minor;
	}
}

static void resource_layers(struct aj_oci_cplan *c)
{
	const struct aj_cgroup_oci_limits *r = &c->spec.res;
	const char *mode = aj_cgroup_mode_name(c->feat.cgroup->mode);

	if (aj_cg_set(r->memory) && r->memory > 0)
		aj_plan_set_layer(&c->plan, AJ_PL_MEMORY, AJ_LS_ENFORCED, "%lld bytes (cgroup %s, %s)",
				  (long long)r->memory, mode, c->cgroup_path);
	else
		aj_plan_set_layer(&c->plan, AJ_PL_MEMORY, AJ_LS_OFF, "no limit in the bundle");
	if (aj_cg_set(r->pids) && r->pids > 0)
		aj_plan_set_layer(&c->plan, AJ_PL_PIDS, AJ_LS_ENFORCED, "%lld tasks (cgroup %s)",
				  (long long)r->pids, mode);
	else
		aj_plan_set_layer(&c->plan, AJ_PL_PIDS, AJ_LS_OFF, "no limit in the bundle");
	if (aj_cg_set(r->cpu_quota) && r->cpu_quota > 0)
		aj_plan_set_layer(&c->plan, AJ_PL_CPU, AJ_LS_ENFORCED, "quota %lld us per %lld us%s%s",
				  (long long)r->cpu_quota,
				  aj_cg_set(r->cpu_period) && r->cpu_period > 0
					  ? (long long)r->cpu_period
					  : 100000LL,
				  r->cpus ? ", CPUs " : "", r->cpus ? r->cpus : "");
	else
		aj_plan_set_layer(&c->plan, AJ_PL_CPU, AJ_LS_OFF, "no quota in the bundle%s%s%s",
				  aj_cg_set(r->cpu_shares) ? " (shares set)" : "",
				  r->cpus ? "; CPUs " : "", r->cpus ? r->cpus : "");
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
	for (size_t i = 0; i < AJ_CONTAINER_MAX_NS; i++)
		c->ns_fd[i] = -1;
	snprintf(c->bundle, sizeof c->bundle, "%s", bundle);
	if (aj_oci_spec_parse(config, &c->spec, err) < 0 || policy(c, err) < 0)
		return -1;
	c->plan.policy = &c->pol;
	c->plan.features = &c->feat;
	c->have_plan = true;
	if (aj_plan_base_layers(&c->plan, err) < 0 || oci_plan_namespaces(c, err) < 0 ||
	    cgroup_path(c, id, systemd_cgroup, err) < 0 || rootfs_ops(c, err) < 0 ||
	    process(c, err) < 0 || capabilities(c, err) < 0 || landlock_layer(c, err) < 0 ||
	    seccomp_layer(c, err) < 0)
		return -1;
	other_layers(c);
	device_allowlist(c);
	resource_layers(c);
	identity(c);
	return 0;
}

void aj_oci_cplan_free(struct aj_oci_cplan *c)
{
	if (c->have_plan)
		aj_plan_free(&c->plan);
	if (c->pol.preset)
		aj_policy_free(&c->pol);
	oci_plan_ns_free(c);
	aj_oci_spec_free(&c->spec);
	aj_strv_free(&c->notes);
	free(c->filter);
	c->filter = NULL;
	c->have_plan = false;
}

void aj_oci_cplan_launch(struct aj_oci_cplan *c, struct aj_container_launch *l)
{
	const char *cgns = NULL;

	memset(l, 0, sizeof *l);
	l->plan = &c->plan;
	l->proc = &c->spec.proc;
	l->filter = c->filter;
	l->filter_len = c->filter_len;
	l->root_readonly = c->spec.root_ro;
	l->new_cgroupns = aj_oci_spec_has_ns(&c->spec, CLONE_NEWCGROUP, &cgns) && !cgns;
	l->console_fd = l->fifo_fd = l->own_pidns = -1;
	oci_plan_ns_launch(c, l);
}

static json_t *strv_json(const struct aj_strv *v)
{
	json_t *a = json_array();

	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->v[i]));
	return a;
}

static json_t *capsets_json(const uint64_t *sets)
{
	json_t *o = json_object();

	for (int s = 0; s < AJ_CAPSET__COUNT; s++) {
		json_t *a = json_array();
		for (int k = 0; k <= AJ_CAP_LAST; k++)
			if ((sets[s] >> k) & 1)
				json_array_append_new(a, json_string(aj_cap_name(k)));
		json_object_set_new(o, aj_capset_names[s], a);
	}
	return o;
}

json_t *aj_oci_cplan_report(const struct aj_oci_cplan *c)
{
	json_t *r = aj_plan_to_json(&c->plan), *oci = json_object(), *caps = json_object();
	json_t *notes = strv_json(&c->notes);

	for (size_t i = 0; i < c->spec.notes.n; i++)
		json_array_append_new(notes, json_string(c->spec.notes.v[i]));
	json_object_set_new(caps, "requested", capsets_json(c->caps_asked));
	json_object_set_new(caps, "granted", capsets_json(c->spec.proc.caps));
	json_object_set_new(caps, "user_namespace", json_string("the container's own"));
	json_object_set_new(oci, "bundle", json_string(c->bundle));
	json_object_set_new(oci, "rootfs", json_string(c->rootfs));
	json_object_set_new(oci, "cgroup", json_string(c->cgroup_path));
	json_object_set_new(oci, "capabilities", caps);
	json_object_set_new(oci, "bundle_seccomp", json_boolean(c->filter != NULL));
	json_object_set_new(oci, "notes", notes);
	json_object_set_new(r, "oci", oci);
	return r;
}
