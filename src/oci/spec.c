/* config.json -> struct aj_oci_spec, as tables of rows of the field-table engine
 * (common/jfields.h): the document, its mounts and its linux object here, the process in
 * spec_process.c. The tables are read in their own order, not the document's: ociVersion
 * first, the hooks refused before anything else is looked at, and the namespaces before the
 * sysctls, whose allowlist depends on them; that a container has a process is checked last.
 * Fields no row names are ignored (the spec's rule for unknown fields).
 *
 * Errors are config.json's: "config.json: PATH: ...", EINVAL for a malformed field, ENOTSUP
 * for one agentjail will not honour. The engine's type, range and missing-field problems are
 * worded here from the row (its `expect`); the rows' own checks word theirs. Paths are those
 * the OCI verbs have always printed: elements of string lists as "process.args: [1]", some
 * members as "mounts[1]: options" (AJ_JF_NAMED_APART, AJ_JF_ELEMS_APART). Null is an absent
 * value where the rows say so (AJ_JF_NULLABLE) and a wrong one elsewhere. */
#include "oci/spec.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "oci/spec_internal.h"

/* ---- shared with spec_process.c --------------------------------------------------------- */

int oci_error(const struct aj_jf_error *e, struct aj_err *err)
{
	switch (e->problem) {
	case AJ_JF_TYPE:
	case AJ_JF_RANGE: return OCI_BAD(e->path, "expected %s", aj_jf_expect(e->field));
	case AJ_JF_MISSING: return OCI_BAD(e->path, "required");
	case AJ_JF_NONE:
	case AJ_JF_UNKNOWN:
	case AJ_JF_VALUE:
	case AJ_JF_NOMEM: break;
	}
	return aj_err_set(err, AJ_LAYER_POLICY, e->err.errnum ? e->err.errnum : EINVAL,
			  "config.json: %s", e->err.msg);
}

int oci_read_sub(const struct aj_jf_field *rows, json_t *v, void *base, const char *path,
		 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return aj_jf_read(rows, v, base, &(struct aj_jf_opts){o->layer, o->flags, path, o->arg}, e);
}

void oci_note(const struct aj_jf_opts *o, const char *path, const char *why)
{
	if (OCI_CTX(o)->notes)
		aj_strv_pushf(OCI_CTX(o)->notes, "%s: %s", path, why);
}

int oci_note_not_applied(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	oci_note(o, path, "not applied");
	return 0;
}

/* ---- mounts ---------------------------------------------------------------------------- */

/* Options that are flags of the mount itself; anything else is data for the filesystem. */
static const struct {
	const char *name;
	unsigned long set, clear, propagation;
} mount_flags[] = {
	{"ro", MS_RDONLY, 0, 0},          {"rw", 0, MS_RDONLY, 0},
	{"nosuid", MS_NOSUID, 0, 0},      {"suid", 0, MS_NOSUID, 0},
	{"nodev", MS_NODEV, 0, 0},        {"dev", 0, MS_NODEV, 0},
	{"noexec", MS_NOEXEC, 0, 0},      {"exec", 0, MS_NOEXEC, 0},
	{"relatime", MS_RELATIME, 0, 0},  {"norelatime", 0, MS_RELATIME, 0},
	{"strictatime", MS_STRICTATIME, 0, 0}, {"noatime", MS_NOATIME, 0, 0},
	{"nodiratime", MS_NODIRATIME, 0, 0},   {"sync", MS_SYNCHRONOUS, 0, 0},
	{"async", 0, MS_SYNCHRONOUS, 0},  {"dirsync", MS_DIRSYNC, 0, 0},
	{"mand", 0, 0, 0},                {"nomand", 0, 0, 0},
	{"defaults", 0, 0, 0},
	/* Propagation, applied in the container's own mount namespace: every mount starts
	 * private there (nothing propagates to or from the host), and a peer group made inside
	 * has only the container's mounts in it. */
	{"private", 0, 0, MS_PRIVATE},  {"rprivate", 0, 0, MS_PRIVATE | MS_REC},
	{"slave", 0, 0, MS_SLAVE},      {"rslave", 0, 0, MS_SLAVE | MS_REC},
	{"shared", 0, 0, MS_SHARED},    {"rshared", 0, 0, MS_SHARED | MS_REC},
	{"unbindable", 0, 0, MS_UNBINDABLE}, {"runbindable", 0, 0, MS_UNBINDABLE | MS_REC},
};

const char *const aj_oci_mount_options[] = {
	"ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec", "relatime",
	"norelatime", "strictatime", "noatime", "nodiratime", "sync", "async", "dirsync",
	"mand", "nomand", "defaults", "private", "rprivate", "slave", "rslave", "shared",
	"rshared", "unbindable", "runbindable", "bind", "rbind", NULL,
};

static const char *const mount_types[] = {"bind", "tmpfs", "proc", "sysfs", "devpts",
					  "mqueue", "cgroup", "cgroup2", NULL};

/* The index of a flag option in mount_flags, or the table's size. */
static size_t mount_flag(const char *o)
{
	size_t k;

	for (k = 0; k < AJ_ARRAY_SIZE(mount_flags); k++)
		if (strcmp(o, mount_flags[k].name) == 0)
			break;
	return k;
}

static bool is_bind(const char *o)
{
	return strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0;
}

static int check_mount_option(const char *path, const char *o, struct aj_err *err)
{
	if (is_bind(o) || mount_flag(o) < AJ_ARRAY_SIZE(mount_flags) || strchr(o, '=') ||
	    strcmp(o, "newinstance") == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: unknown mount option \"%s\"", path, o);
}

/* The checked options, in order: binds, flags set and cleared, the rest as data. dst: the
 * mount (the row's offset is 0). */
static int apply_mount_options(const struct aj_jf_field *f, const char *path, json_t *v,
			       void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_oci_mount *m = dst;
	size_t i, k;
	json_t *el;

	json_array_foreach(v, i, el) {
		const char *opt = json_string_value(el);
		char *data;

		k = mount_flag(opt);
		if (is_bind(opt)) {
			m->bind = true;
			m->recursive = m->recursive || opt[0] == 'r';
		} else if (k < AJ_ARRAY_SIZE(mount_flags)) {
			m->flags = (m->flags | mount_flags[k].set) & ~mount_flags[k].clear;
			if (mount_flags[k].propagation)
				m->propagation = mount_flags[k].propagation;
		} else {
			data = aj_xasprintf("%s%s%s", m->data ? m->data : "", m->data ? "," : "", opt);
			free(m->data);
			m->data = data;
		}
	}
	return 0;
}

#define M(m) offsetof(struct aj_oci_mount, m)
static const struct aj_jf_field mount_rows[] = {
	{.name = "destination", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED | AJ_JF_NULLABLE,
	 .off = M(dst)},
	{.name = "type", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = M(type)},
	{.name = "source", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = M(src)},
	{.name = "options", .type = AJ_JF_ARRAY, .flags = AJ_JF_NAMED_APART, .off = 0,
	 .check = check_mount_option, .parse = apply_mount_options},
	OCI_END,
};
#undef M

static bool has_dotdot(const char *p)
{
	size_t n = strlen(p);

	return strstr(p, "/../") || (n >= 3 && strcmp(p + n - 3, "/..") == 0);
}

/* The whole mount: where, and a bind's source or another mount's type. */
static int check_mount(const struct aj_jf_field *f, const char *path, json_t *v,
		       struct aj_oci_mount *m, struct aj_jf_error *e)
{
	if (m->dst[0] != '/')
		return OCI_REFUSE(path, "destination: \"%s\" is not an absolute path", m->dst);
	if (has_dotdot(m->dst))
		return OCI_REFUSE(path, "destination: \"%s\" has a \"..\" component", m->dst);
	if (m->bind || (m->type && strcmp(m->type, "bind") == 0)) {
		m->bind = true;
		free(m->type);
		m->type = aj_xstrdup("bind");
		if (!m->src || m->src[0] != '/')
			return OCI_REFUSE(path, "source: a bind mount needs an absolute host path");
		return 0;
	}
	for (size_t k = 0; m->type && mount_types[k]; k++)
		if (strcmp(m->type, mount_types[k]) == 0)
			return 0;
	return OCI_REFUSE(path, "type: \"%s\" is not supported (bind, tmpfs, proc, sysfs, devpts, "
				"mqueue, cgroup, cgroup2)",
		      m->type ? m->type : "(none)");
}

/* Each element into the spec's next mount (counted before it is read, so that the spec's
 * free releases what a failed read left). */
static int add_mount(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_oci_spec *s = OCI_CTX(o)->s;
	struct aj_oci_mount *m;

	s->mounts = aj_xrealloc(s->mounts, (s->n_mounts + 1) * sizeof *s->mounts);
	m = &s->mounts[s->n_mounts++];
	memset(m, 0, sizeof *m);
	if (oci_read_sub(mount_rows, v, m, path, o, e) < 0)
		return -1;
	return check_mount(f, path, v, m, e);
}

static const struct aj_jf_field mount_el = {.name = "", .type = AJ_JF_OBJECT, .parse = add_mount};

/* ---- linux: namespaces ------------------------------------------------------------------ */

const char *const aj_oci_ns_names[] = {"pid", "network", "mount", "ipc", "uts", "user",
				       "cgroup", NULL};
static const int ns_flags[] = {CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWIPC,
			       CLONE_NEWUTS, CLONE_NEWUSER, CLONE_NEWCGROUP};

struct ns_doc {
	int type; /* index in aj_oci_ns_names */
	char *path;
};

static const struct aj_jf_field ns_rows[] = {
	{.name = "type", .type = AJ_JF_ENUM, .flags = AJ_JF_REQUIRED | AJ_JF_NAMED_APART,
	 .off = offsetof(struct ns_doc, type), .values = aj_oci_ns_names,
	 .expect = "pid, network, mount, ipc, uts, user or cgroup"},
	{.name = "path", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct ns_doc, path)},
	OCI_END,
};

static int add_ns(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		  const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_oci_spec *s = OCI_CTX(o)->s;
	struct ns_doc d = {0, NULL};
	_cleanup_free_ char *ns_path = NULL;
	int flag;

	if (oci_read_sub(ns_rows, v, &d, path, o, e) < 0) {
		free(d.path);
		return -1;
	}
	ns_path = d.path;
	flag = ns_flags[d.type];
	if (aj_oci_spec_has_ns(s, flag, NULL))
		return OCI_REFUSE(path, "the %s namespace is listed twice", aj_oci_ns_names[d.type]);
	if (ns_path && (flag == CLONE_NEWUSER || flag == CLONE_NEWNS))
		return OCI_REFUSE(path, "joining an existing %s namespace is not supported: agentjail "
					"gives every container its own",
			      aj_oci_ns_names[d.type]);
	s->ns[s->n_ns].type = flag;
	s->ns[s->n_ns++].path = aj_steal_ptr(&ns_path);
	return 0;
}

static const struct aj_jf_field ns_el = {.name = "", .type = AJ_JF_OBJECT, .parse = add_ns};

/* Also when the list is absent: a container's mounts need a namespace of their own. */
static int need_mount_ns(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (aj_oci_spec_has_ns(OCI_CTX(o)->s, CLONE_NEWNS, NULL))
		return 0;
	return OCI_REFUSE(path, "a mount namespace is required");
}

/* ---- linux: resources, sysctls, what is refused ------------------------------------------ */

static int unsupported(struct aj_jf_error *e, const char *path, const char *why)
{
	return aj_err_set(&e->err, AJ_LAYER_POLICY, ENOTSUP, "%s: %s", path, why);
}

static int check_abs_path(const char *path, const char *s, struct aj_err *err)
{
	return s[0] == '/' ? 0 : aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: not an absolute path",
					    path);
}

#define S(m) offsetof(struct aj_oci_spec, m)

static int read_resources(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			  const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return oci_read_resources(v, path, o, e);
}

int aj_oci_sysctl_ns(const char *name)
{
	static const char *const ipc[] = {"kernel.shmmax", "kernel.shmmni", "kernel.shmall",
					  "kernel.shm_rmid_forced", "kernel.msgmax",
					  "kernel.msgmni", "kernel.msgmnb", "kernel.sem"};
	size_t n = strcspn(name, "=");

	for (size_t i = 0; i < AJ_ARRAY_SIZE(ipc); i++)
		if (strlen(ipc[i]) == n && strncmp(name, ipc[i], n) == 0)
			return CLONE_NEWIPC;
	if (strncmp(name, "fs.mqueue.", 10) == 0)
		return CLONE_NEWIPC;
	return strncmp(name, "net.", 4) == 0 ? CLONE_NEWNET : 0;
}

/* Namespaced sysctls (runc's and Kubernetes' safe set), only with a namespace of the kind
 * they belong to in the list (new or joined): never the host's. Whether a joined one is the
 * host's is checked when it is opened (plan_ns.c). */
static bool sysctl_allowed(const char *name, const struct aj_oci_spec *s)
{
	int ns = aj_oci_sysctl_ns(name);

	return ns && aj_oci_spec_has_ns(s, ns, NULL);
}

/* A name that could leave /proc/sys is refused in the words of a bad value, as before. */
static int check_sysctl_name(const char *path, const char *name, struct aj_err *err)
{
	if (!strchr(name, '/') && !strstr(name, ".."))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: expected a string value", path);
}

/* After the namespaces (the table's order): net.* needs the container's own. */
static int add_sysctls(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_oci_spec *s = OCI_CTX(o)->s;
	const char *k;
	json_t *val;

	json_object_foreach(v, k, val) {
		if (!sysctl_allowed(k, s))
			return OCI_REFUSE(path, "\"%s\" is not a namespaced sysctl agentjail allows "
						"(kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.* with an ipc "
						"namespace, net.* with a network namespace)",
				      k);
		aj_strv_pushf(&s->sysctl, "%s=%s", k, json_string_value(val));
	}
	return 0;
}

static const struct aj_jf_field sysctl_value = {.name = "", .type = AJ_JF_STRING,
						.expect = "a string value"};

/* Present and not empty ([] and {} are nothing asked). */
static bool asks(const json_t *v)
{
	return !(json_is_array(v) && json_array_size(v) == 0) &&
	       !(json_is_object(v) && json_object_size(v) == 0);
}

static int refuse_unsupported(const struct aj_jf_field *f, const char *path, json_t *v,
			      void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return asks(v) ? unsupported(e, path, "not supported by agentjail") : 0;
}

static int refuse_mappings(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			   const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return asks(v) ? unsupported(e, path,
				     "agentjail maps every container to its own unprivileged host "
				     "id range; bundle-provided mappings are not supported")
		       : 0;
}

/* linux.devices: the character devices a container may be given, bound from the host
 * (a user namespace can make no device node, and the kernel would not honour one it made).
 * Those CRI passes for ordinary workloads; nothing that reaches the host's hardware,
 * memory, consoles or logs. */
static const struct {
	unsigned major, minor;
	const char *host;
} safe_devices[] = {
	{1, 3, "/dev/null"},  {1, 5, "/dev/zero"},    {1, 7, "/dev/full"},
	{1, 8, "/dev/random"}, {1, 9, "/dev/urandom"}, {5, 0, "/dev/tty"},
	{10, 229, "/dev/fuse"}, {10, 200, "/dev/net/tun"},
};

struct device_doc {
	char *path, *type;
	int64_t major, minor;
};

static const struct aj_jf_field device_rows[] = {
	{.name = "path", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct device_doc, path), .check = check_abs_path},
	{.name = "type", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct device_doc, type)},
	{.name = "major", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct device_doc, major), .min = 0, .max = UINT32_MAX,
	 .expect = "a device number"},
	{.name = "minor", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct device_doc, minor), .min = 0, .max = UINT32_MAX,
	 .expect = "a device number"},
	/* fileMode, uid, gid: a node bound from the host keeps the host's. */
	OCI_END,
};

static int add_device(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_oci_spec *s = OCI_CTX(o)->s;
	struct device_doc d = {NULL, NULL, 0, 0};
	_cleanup_free_ char *dpath = NULL, *type = NULL;
	int r = oci_read_sub(device_rows, v, &d, path, o, e);

	dpath = d.path;
	type = d.type;
	if (r < 0)
		return -1;
	if (strcmp(type, "c") != 0 && strcmp(type, "u") != 0)
		return OCI_REFUSE(path, "type \"%s\" (\"%s\"): only character devices are passed "
					"into a container (block devices and fifos are not)",
			      type, dpath);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(safe_devices); i++)
		if (safe_devices[i].major == d.major && safe_devices[i].minor == d.minor) {
			aj_strv_pushf(&s->devices, "%s=%s", dpath, safe_devices[i].host);
			return 0;
		}
	aj_err_set(&e->err, AJ_LAYER_POLICY, ENOTSUP,
		   "%s: c %lld:%lld (\"%s\") is not a device agentjail passes into a container "
		   "(null, zero, full, random, urandom, tty, fuse, net/tun)",
		   path, (long long)d.major, (long long)d.minor, dpath);
	return -1;
}

static const struct aj_jf_field device_el = {.name = "", .type = AJ_JF_OBJECT,
					     .parse = add_device};

static int read_root_propagation(const struct aj_jf_field *f, const char *path, json_t *v,
				 void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	static const char *const names[] = {"shared", "slave", "private", "unbindable",
					    "rshared", "rslave", "rprivate", "runbindable"};
	static const unsigned long flags[] = {MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE};
	const char *s = json_string_value(v);

	for (size_t i = 0; s && i < AJ_ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i]) == 0) {
			OCI_CTX(o)->s->root_propagation = flags[i % 4] | (i >= 4 ? MS_REC : 0);
			return 0;
		}
	return s ? OCI_REFUSE(path, "\"%s\" (shared, slave, private or unbindable)", s) : 0;
}

static int keep_seccomp(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	OCI_CTX(o)->s->seccomp = json_incref(v);
	return 0;
}

#define UNSUPPORTED(n)                                                                         \
	{.name = (n), .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .parse = refuse_unsupported}
#define MAPPINGS(n)                                                                            \
	{.name = (n), .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .parse = refuse_mappings}
#define PATHS(n, m)                                                                            \
	{.name = (n), .type = AJ_JF_ARRAY, .flags = AJ_JF_NULLABLE | AJ_JF_ELEMS_APART,          \
	 .off = S(m), .check = check_abs_path}

static const struct aj_jf_field linux_rows[] = {
	UNSUPPORTED("intelRdt"),
	UNSUPPORTED("personality"),
	UNSUPPORTED("timeOffsets"),
	UNSUPPORTED("memoryPolicy"),
	MAPPINGS("uidMappings"),
	MAPPINGS("gidMappings"),
	{.name = "devices", .type = AJ_JF_ARRAY, .flags = AJ_JF_NULLABLE, .sub = &device_el,
	 .expect = "an array"},
	{.name = "namespaces", .type = AJ_JF_ARRAY, .flags = AJ_JF_SEES_ABSENT, .sub = &ns_el,
	 .parse = need_mount_ns, .expect = "an array"},
	{.name = "resources", .type = AJ_JF_ANY, .parse = read_resources},
	PATHS("maskedPaths", masked),
	PATHS("readonlyPaths", readonly),
	{.name = "sysctl", .type = AJ_JF_MAP, .flags = AJ_JF_ELEMS_APART, .check = check_sysctl_name,
	 .sub = &sysctl_value, .parse = add_sysctls},
	{.name = "cgroupsPath", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = S(cgroups_path)},
	{.name = "rootfsPropagation", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE,
	 .parse = read_root_propagation},
	{.name = "seccomp", .type = AJ_JF_OBJECT, .parse = keep_seccomp},
	OCI_END,
};

/* ---- document ---------------------------------------------------------------------------- */

static int check_version(const char *path, const char *s, struct aj_err *err)
{
	if (strncmp(s, "1.", 2) == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
			  "%s: \"%s\": only runtime-spec 1.x is supported", path, s);
}

static int refuse_hooks(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return asks(v) ? unsupported(e, path, "hooks run host programs with the runtime's "
					      "privileges; agentjail does not run them")
		       : 0;
}

static int read_spec_process(const struct aj_jf_field *f, const char *path, json_t *v,
			     void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_oci_spec *s = OCI_CTX(o)->s;
	struct oci_read ctx = {s, &s->proc, &s->notes};

	s->have_proc = true;
	return oci_read_process(v, path, &ctx, e);
}

/* root and linux: absent (or null), required in their own words. */
static int need_root(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return v ? 0 : OCI_REFUSE(path, "required: an object with path");
}

static int need_linux(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return v ? 0 : OCI_REFUSE(path, "required on Linux");
}

static int keep_annotations(const struct aj_jf_field *f, const char *path, json_t *v,
			    void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	OCI_CTX(o)->s->annotations = json_incref(v);
	return 0;
}

static const struct aj_jf_field root_rows[] = {
	{.name = "path", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED | AJ_JF_NULLABLE,
	 .off = S(root_path)},
	{.name = "readonly", .type = AJ_JF_BOOL, .off = S(root_ro), .expect = "a boolean"},
	OCI_END,
};

static const struct aj_jf_field annotation_value = {.name = "", .type = AJ_JF_STRING};

static const struct aj_jf_field spec_rows[] = {
	{.name = "ociVersion", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED | AJ_JF_NULLABLE,
	 .off = S(oci_version), .check = check_version},
	{.name = "hooks", .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .parse = refuse_hooks},
	{.name = "process", .type = AJ_JF_OBJECT, .parse = read_spec_process},
	{.name = "root", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE | AJ_JF_SEES_ABSENT,
	 .sub = root_rows, .parse = need_root, .expect = "an object with path"},
	{.name = "hostname", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = S(hostname)},
	{.name = "mounts", .type = AJ_JF_ARRAY, .sub = &mount_el, .expect = "an array"},
	{.name = "annotations", .type = AJ_JF_MAP, .flags = AJ_JF_ELEMS_APART,
	 .sub = &annotation_value, .parse = keep_annotations},
	{.name = "linux", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE | AJ_JF_SEES_ABSENT,
	 .sub = linux_rows, .parse = need_linux, .expect = "an object (required on Linux)"},
	OCI_END,
};
#undef S

int aj_oci_spec_parse(json_t *root, struct aj_oci_spec *s, struct aj_err *err)
{
	struct oci_read ctx = {s, &s->proc, &s->notes};
	struct aj_jf_opts o = {AJ_LAYER_POLICY, OCI_READ_FLAGS, NULL, &ctx};
	struct aj_jf_error e;

	memset(s, 0, sizeof *s);
	aj_cgroup_oci_limits_init(&s->res);
	if (!json_is_object(root))
		return OCI_BAD("(document)", "expected a JSON object");
	if (aj_jf_read(spec_rows, root, s, &o, &e) < 0)
		return oci_error(&e, err);
	if (!s->annotations)
		s->annotations = json_object();
	if (!s->have_proc)
		return OCI_BAD("process", "required to create a container");
	return 0;
}

void aj_oci_spec_free(struct aj_oci_spec *s)
{
	aj_oci_process_free(&s->proc);
	aj_cgroup_oci_limits_free(&s->res);
	for (size_t i = 0; i < s->n_mounts; i++) {
		free(s->mounts[i].dst);
		free(s->mounts[i].type);
		free(s->mounts[i].src);
		free(s->mounts[i].data);
	}
	free(s->mounts);
	for (size_t i = 0; i < s->n_ns; i++)
		free(s->ns[i].path);
	free(s->oci_version);
	free(s->root_path);
	free(s->hostname);
	free(s->cgroups_path);
	aj_strv_free(&s->masked);
	aj_strv_free(&s->readonly);
	aj_strv_free(&s->sysctl);
	aj_strv_free(&s->devices);
	aj_strv_free(&s->notes);
	json_decref(s->seccomp);
	json_decref(s->annotations);
	memset(s, 0, sizeof *s);
}

bool aj_oci_spec_has_ns(const struct aj_oci_spec *s, int type, const char **path)
{
	for (size_t i = 0; i < s->n_ns; i++)
		if (s->ns[i].type == type) {
			if (path)
				*path = s->ns[i].path;
			return true;
		}
	return false;
}

const char *aj_oci_annotation(const struct aj_oci_spec *s, const char *key)
{
	return json_string_value(json_object_get(s->annotations, key));
}
