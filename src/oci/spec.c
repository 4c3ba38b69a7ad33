/* config.json -> struct aj_oci_spec. Table-driven where the spec is a list of names (mount
 * options, namespaces, rlimits, sysctls); every error carries the field path. */
#include "oci/spec.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "common/cleanup.h"

#define BAD(path, fmt, ...) aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "config.json: %s: " fmt, path, \
				       ##__VA_ARGS__)

/* ---- typed getters --------------------------------------------------------------------- */

static int get_str(json_t *o, const char *key, const char *where, bool required, char **out,
		   struct aj_err *err)
{
	json_t *v = json_object_get(o, key);
	char path[256];

	snprintf(path, sizeof path, "%s%s%s", where, where[0] ? "." : "", key);
	if (!v || json_is_null(v))
		return required ? BAD(path, "required") : 0;
	if (!json_is_string(v))
		return BAD(path, "expected a string");
	if (!(*out = strdup(json_string_value(v))))
		return aj_err_sys(err, AJ_LAYER_POLICY, "%s", path);
	return 0;
}

static int get_u64(json_t *o, const char *key, const char *where, uint64_t *out, bool *have,
		   struct aj_err *err)
{
	json_t *v = json_object_get(o, key);
	char path[256];

	snprintf(path, sizeof path, "%s.%s", where, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return BAD(path, "expected a non-negative integer");
	*out = (uint64_t)json_integer_value(v);
	if (have)
		*have = true;
	return 0;
}

static int get_strv(json_t *o, const char *key, const char *where, struct aj_strv *out,
		    struct aj_err *err)
{
	json_t *a = json_object_get(o, key), *v;
	size_t i;
	char path[256];

	snprintf(path, sizeof path, "%s%s%s", where, where[0] ? "." : "", key);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return BAD(path, "expected an array of strings");
	json_array_foreach(a, i, v) {
		if (!json_is_string(v))
			return BAD(path, "[%zu]: expected a string", i);
		aj_strv_push(out, json_string_value(v));
	}
	return 0;
}

static json_t *get_obj(json_t *o, const char *key, const char *where, int *bad,
		       struct aj_err *err)
{
	json_t *v = json_object_get(o, key);
	char path[256];

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_object(v)) {
		snprintf(path, sizeof path, "%s%s%s", where, where[0] ? "." : "", key);
		*bad = BAD(path, "expected an object");
		return NULL;
	}
	return v;
}

/* ---- process --------------------------------------------------------------------------- */

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{"RLIMIT_AS", RLIMIT_AS},           {"RLIMIT_CORE", RLIMIT_CORE},
	{"RLIMIT_CPU", RLIMIT_CPU},         {"RLIMIT_DATA", RLIMIT_DATA},
	{"RLIMIT_FSIZE", RLIMIT_FSIZE},     {"RLIMIT_LOCKS", RLIMIT_LOCKS},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}, {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
	{"RLIMIT_NICE", RLIMIT_NICE},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
	{"RLIMIT_NPROC", RLIMIT_NPROC},     {"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO},   {"RLIMIT_RTTIME", RLIMIT_RTTIME},
	{"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING}, {"RLIMIT_STACK", RLIMIT_STACK},
};

static int parse_rlimits(json_t *a, const char *where, struct aj_container_process *p,
			 struct aj_err *err)
{
	json_t *r;
	size_t i;
	char path[256];

	if (!a)
		return 0;
	if (!json_is_array(a))
		return BAD(where, "rlimits: expected an array");
	json_array_foreach(a, i, r) {
		const char *type = json_string_value(json_object_get(r, "type"));
		json_t *soft = json_object_get(r, "soft"), *hard = json_object_get(r, "hard");
		size_t k;

		snprintf(path, sizeof path, "%s.rlimits[%zu]", where, i);
		for (k = 0; type && k < AJ_ARRAY_SIZE(rlimit_names); k++)
			if (strcmp(type, rlimit_names[k].name) == 0)
				break;
		if (!type || k == AJ_ARRAY_SIZE(rlimit_names))
			return BAD(path, "type: expected one of RLIMIT_NOFILE, RLIMIT_NPROC, ...");
		if (!json_is_integer(soft) || !json_is_integer(hard))
			return BAD(path, "soft and hard must be integers");
		if (p->n_rlimits == AJ_CONTAINER_MAX_RLIMITS)
			return BAD(path, "too many rlimits");
		p->rlimits[p->n_rlimits++] = (struct aj_container_rlimit){
			rlimit_names[k].resource, (uint64_t)json_integer_value(soft),
			(uint64_t)json_integer_value(hard)};
	}
	return 0;
}

static int parse_user(json_t *u, const char *where, struct aj_container_process *p,
		      struct aj_err *err)
{
	char path[256];
	uint64_t v = 0;
	json_t *a, *g;
	size_t i;

	snprintf(path, sizeof path, "%s.user", where);
	if (!json_is_object(u))
		return BAD(path, "expected an object with uid and gid");
	if (get_u64(u, "uid", path, &v, NULL, err) < 0)
		return -1;
	p->uid = (uint32_t)v;
	v = 0;
	if (get_u64(u, "gid", path, &v, NULL, err) < 0)
		return -1;
	p->gid = (uint32_t)v;
	if (p->uid > 65535 || p->gid > 65535)
		return BAD(path, "uid and gid must be below 65536 (each container has 65536 ids)");
	if (json_object_get(u, "username"))
		return BAD(path, "username: not supported (Windows only)");
	a = json_object_get(u, "additionalGids");
	if (a && !json_is_array(a))
		return BAD(path, "additionalGids: expected an array");
	json_array_foreach(a, i, g) {
		if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) > 65535)
			return BAD(path, "additionalGids[%zu]: expected an id below 65536", i);
		if (p->n_groups == AJ_CONTAINER_MAX_GROUPS)
			return BAD(path, "additionalGids: more than %d", AJ_CONTAINER_MAX_GROUPS);
		p->groups[p->n_groups++] = (gid_t)json_integer_value(g);
	}
	return 0;
}

static int parse_caps(json_t *c, const char *where, struct aj_container_process *p,
		      struct aj_err *err)
{
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted",
					   "ambient"};
	char path[256];

	if (!c)
		return 0;
	snprintf(path, sizeof path, "%s.capabilities", where);
	if (!json_is_object(c))
		return BAD(path, "expected an object");
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sets); i++) {
		struct aj_strv names = {0};
		int r = get_strv(c, sets[i], path, &names, err);
		for (size_t k = 0; r == 0 && k < names.n; k++) {
			if (strncmp(names.v[k], "CAP_", 4) != 0)
				r = BAD(path, "%s[%zu]: \"%s\" is not a capability name", sets[i], k,
					names.v[k]);
			else if (!aj_strv_contains(&p->caps, names.v[k]))
				aj_strv_push(&p->caps, names.v[k]);
		}
		aj_strv_free(&names);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int parse_console_size(json_t *c, const char *where, struct aj_container_process *p,
			      struct aj_err *err)
{
	uint64_t h = 0, w = 0;
	char path[256];

	if (!c)
		return 0;
	snprintf(path, sizeof path, "%s.consoleSize", where);
	if (get_u64(c, "height", path, &h, NULL, err) < 0 ||
	    get_u64(c, "width", path, &w, NULL, err) < 0)
		return -1;
	if (h > 65535 || w > 65535)
		return BAD(path, "too large");
	p->rows = (unsigned)h;
	p->cols = (unsigned)w;
	return 0;
}

int aj_oci_process_parse(json_t *o, const char *where, struct aj_container_process *p,
			 struct aj_strv *notes, struct aj_err *err)
{
	char path[256];
	json_t *v;

	memset(p, 0, sizeof *p);
	if (!json_is_object(o))
		return BAD(where, "expected an object");
	if ((v = json_object_get(o, "terminal")) && !json_is_boolean(v)) {
		snprintf(path, sizeof path, "%s.terminal", where);
		return BAD(path, "expected a boolean");
	}
	p->terminal = json_is_true(v);
	if (get_strv(o, "args", where, &p->args, err) < 0 ||
	    get_strv(o, "env", where, &p->env, err) < 0 ||
	    get_str(o, "cwd", where, true, &p->cwd, err) < 0 ||
	    parse_user(json_object_get(o, "user"), where, p, err) < 0 ||
	    parse_caps(json_object_get(o, "capabilities"), where, p, err) < 0 ||
	    parse_rlimits(json_object_get(o, "rlimits"), where, p, err) < 0 ||
	    parse_console_size(json_object_get(o, "consoleSize"), where, p, err) < 0)
		return -1;
	if (p->args.n == 0) {
		snprintf(path, sizeof path, "%s.args", where);
		return BAD(path, "at least the program is required");
	}
	if (p->cwd[0] != '/') {
		snprintf(path, sizeof path, "%s.cwd", where);
		return BAD(path, "\"%s\" is not an absolute path", p->cwd);
	}
	for (size_t i = 0; i < p->env.n; i++)
		if (!strchr(p->env.v[i], '=')) {
			snprintf(path, sizeof path, "%s.env", where);
			return BAD(path, "[%zu]: \"%s\" is not NAME=value", i, p->env.v[i]);
		}
	if ((v = json_object_get(o, "noNewPrivileges")) && !json_is_boolean(v)) {
		snprintf(path, sizeof path, "%s.noNewPrivileges", where);
		return BAD(path, "expected a boolean");
	}
	p->no_new_privs = json_is_true(v);
	if ((v = json_object_get(o, "oomScoreAdj")) && json_is_integer(v)) {
		p->have_oom_score = true;
		p->oom_score_adj = (int)json_integer_value(v);
	}
	if (json_object_get(o, "apparmorProfile") && notes)
		aj_strv_push(notes, "process.apparmorProfile: not applied; Landlock and seccomp "
				    "confine the container");
	if (json_object_get(o, "selinuxLabel") && notes)
		aj_strv_push(notes, "process.selinuxLabel: not applied");
	return 0;
}

void aj_oci_process_free(struct aj_container_process *p)
{
	aj_strv_free(&p->args);
	aj_strv_free(&p->env);
	aj_strv_free(&p->caps);
	free(p->cwd);
	p->cwd = NULL;
}

/* ---- mounts ---------------------------------------------------------------------------- */

/* Options that are flags of the mount itself; anything else is data for the filesystem. */
static const struct {
	const char *name;
	unsigned long set, clear;
} mount_flags[] = {
	{"ro", MS_RDONLY, 0},          {"rw", 0, MS_RDONLY},
	{"nosuid", MS_NOSUID, 0},      {"suid", 0, MS_NOSUID},
	{"nodev", MS_NODEV, 0},        {"dev", 0, MS_NODEV},
	{"noexec", MS_NOEXEC, 0},      {"exec", 0, MS_NOEXEC},
	{"relatime", MS_RELATIME, 0},  {"norelatime", 0, MS_RELATIME},
	{"strictatime", MS_STRICTATIME, 0}, {"noatime", MS_NOATIME, 0},
	{"nodiratime", MS_NODIRATIME, 0},   {"sync", MS_SYNCHRONOUS, 0},
	{"async", 0, MS_SYNCHRONOUS},  {"dirsync", MS_DIRSYNC, 0},
	{"mand", 0, 0},                {"nomand", 0, 0},
	{"defaults", 0, 0},
	/* Propagation: every container mount is private here (nothing propagates to or from
	 * the host), which is the safe end of what a bundle may ask. */
	{"private", 0, 0},  {"rprivate", 0, 0}, {"slave", 0, 0}, {"rslave", 0, 0},
	{"shared", 0, 0},   {"rshared", 0, 0},  {"unbindable", 0, 0}, {"runbindable", 0, 0},
};

const char *const aj_oci_mount_options[] = {
	"ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec", "relatime",
	"norelatime", "strictatime", "noatime", "nodiratime", "sync", "async", "dirsync",
	"mand", "nomand", "defaults", "private", "rprivate", "slave", "rslave", "shared",
	"rshared", "unbindable", "runbindable", "bind", "rbind", NULL,
};

static const char *const mount_types[] = {"bind", "tmpfs", "proc", "sysfs", "devpts",
					  "mqueue", "cgroup", "cgroup2", NULL};

static int add_data(char **data, const char *opt)
{
	char *n = NULL;

	if (asprintf(&n, "%s%s%s", *data ? *data : "", *data ? "," : "", opt) < 0)
		return -1;
	free(*data);
	*data = n;
	return 0;
}

static int mount_options(json_t *opts, const char *path, struct aj_oci_mount *m,
			 struct aj_err *err)
{
	json_t *v;
	size_t i;

	if (opts && !json_is_array(opts))
		return BAD(path, "options: expected an array of strings");
	json_array_foreach(opts, i, v) {
		const char *o = json_string_value(v);
		size_t k;

		if (!o)
			return BAD(path, "options[%zu]: expected a string", i);
		if (strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0) {
			m->bind = true;
			m->recursive = m->recursive || o[0] == 'r';
			continue;
		}
		for (k = 0; k < AJ_ARRAY_SIZE(mount_flags); k++)
			if (strcmp(o, mount_flags[k].name) == 0)
				break;
		if (k < AJ_ARRAY_SIZE(mount_flags)) {
			m->flags = (m->flags | mount_flags[k].set) & ~mount_flags[k].clear;
			continue;
		}
		if (!strchr(o, '=') && strcmp(o, "newinstance") != 0)
			return BAD(path, "options[%zu]: unknown mount option \"%s\"", i, o);
		if (add_data(&m->data, o) < 0)
			return aj_err_sys(err, AJ_LAYER_POLICY, "%s", path);
	}
	return 0;
}

static int parse_mount(json_t *o, const char *path, struct aj_oci_mount *m, struct aj_err *err)
{
	size_t k;

	if (!json_is_object(o))
		return BAD(path, "expected an object");
	if (get_str(o, "destination", path, true, &m->dst, err) < 0 ||
	    get_str(o, "type", path, false, &m->type, err) < 0 ||
	    get_str(o, "source", path, false, &m->src, err) < 0 ||
	    mount_options(json_object_get(o, "options"), path, m, err) < 0)
		return -1;
	if (m->dst[0] != '/')
		return BAD(path, "destination: \"%s\" is not an absolute path", m->dst);
	if (strstr(m->dst, "/../") || (strlen(m->dst) >= 3 && !strcmp(m->dst + strlen(m->dst) - 3,
								       "/..")))
		return BAD(path, "destination: \"%s\" has a \"..\" component", m->dst);
	if (m->bind || (m->type && strcmp(m->type, "bind") == 0)) {
		m->bind = true;
		free(m->type);
		if (!(m->type = strdup("bind")))
			return aj_err_sys(err, AJ_LAYER_POLICY, "%s", path);
		if (!m->src || m->src[0] != '/')
			return BAD(path, "source: a bind mount needs an absolute host path");
		return 0;
	}
	for (k = 0; m->type && mount_types[k]; k++)
		if (strcmp(m->type, mount_types[k]) == 0)
			return 0;
	return BAD(path, "type: \"%s\" is not supported (bind, tmpfs, proc, sysfs, devpts, "
			 "mqueue, cgroup, cgroup2)",
		   m->type ? m->type : "(none)");
}

static int parse_mounts(json_t *a, struct aj_oci_spec *s, struct aj_err *err)
{
	json_t *o;
	size_t i;
	char path[64];

	if (!a)
		return 0;
	if (!json_is_array(a))
		return BAD("mounts", "expected an array");
	s->mounts = calloc(json_array_size(a) + 1, sizeof *s->mounts);
	if (!s->mounts)
		return aj_err_sys(err, AJ_LAYER_POLICY, "mounts");
	json_array_foreach(a, i, o) {
		snprintf(path, sizeof path, "mounts[%zu]", i);
		s->n_mounts++;
		if (parse_mount(o, path, &s->mounts[i], err) < 0)
			return -1;
	}
	return 0;
}

/* ---- linux ----------------------------------------------------------------------------- */

const char *const aj_oci_ns_names[] = {"pid", "network", "mount", "ipc", "uts", "user",
				       "cgroup", NULL};
static const int ns_flags[] = {CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWIPC,
			       CLONE_NEWUTS, CLONE_NEWUSER, CLONE_NEWCGROUP};

static int parse_namespaces(json_t *a, struct aj_oci_spec *s, struct aj_err *err)
{
	json_t *o;
	size_t i;
	char path[64];

	if (a && !json_is_array(a))
		return BAD("linux.namespaces", "expected an array");
	json_array_foreach(a, i, o) {
		const char *type = json_string_value(json_object_get(o, "type"));
		size_t k;

		snprintf(path, sizeof path, "linux.namespaces[%zu]", i);
		for (k = 0; type && aj_oci_ns_names[k]; k++)
			if (strcmp(type, aj_oci_ns_names[k]) == 0)
				break;
		if (!type || !aj_oci_ns_names[k])
			return BAD(path, "type: expected pid, network, mount, ipc, uts, user or "
					 "cgroup");
		for (size_t j = 0; j < s->n_ns; j++)
			if (s->ns[j].type == ns_flags[k])
				return BAD(path, "the %s namespace is listed twice", type);
		s->ns[s->n_ns].type = ns_flags[k];
		if (get_str(o, "path", path, false, &s->ns[s->n_ns].path, err) < 0)
			return -1;
		s->n_ns++;
		if (s->ns[s->n_ns - 1].path && (ns_flags[k] == CLONE_NEWUSER ||
						ns_flags[k] == CLONE_NEWNS))
			return BAD(path, "joining an existing %s namespace is not supported: "
					 "agentjail gives every container its own",
				   type);
	}
	if (!aj_oci_spec_has_ns(s, CLONE_NEWNS, NULL))
		return BAD("linux.namespaces", "a mount namespace is required");
	return 0;
}

static int parse_resources(json_t *r, struct aj_oci_spec *s, struct aj_err *err)
{
	json_t *mem, *pids, *cpu;
	uint64_t quota = 0;
	bool have_quota = false;
	int bad = 0;

	if (!r)
		return 0;
	mem = get_obj(r, "memory", "linux.resources", &bad, err);
	pids = get_obj(r, "pids", "linux.resources", &bad, err);
	cpu = get_obj(r, "cpu", "linux.resources", &bad, err);
	if (bad)
		return -1;
	if ((mem && get_u64(mem, "limit", "linux.resources.memory", &s->res.memory, NULL, err) < 0) ||
	    (pids && get_u64(pids, "limit", "linux.resources.pids", &s->res.pids, NULL, err) < 0) ||
	    (cpu && (get_u64(cpu, "quota", "linux.resources.cpu", &quota, &have_quota, err) < 0 ||
		     get_u64(cpu, "period", "linux.resources.cpu", &s->res.cpu_period, NULL, err) < 0 ||
		     get_u64(cpu, "shares", "linux.resources.cpu", &s->res.cpu_shares, NULL, err) < 0)))
		return -1;
	s->res.cpu_quota = have_quota ? (int64_t)quota : -1;
	for (const char *const *k = (const char *const[]){"blockIO", "hugepageLimits", "network",
							    "rdma", "unified", NULL};
	     *k; k++)
		if (json_object_get(r, *k))
			aj_strv_pushf(&s->notes, "linux.resources.%s: not applied", *k);
	if (json_object_get(r, "devices"))
		aj_strv_push(&s->notes, "linux.resources.devices: not needed: the container can "
					"create no device nodes and sees only the harmless ones "
					"bound into its /dev");
	return 0;
}

/* Namespaced sysctls that only affect the container (runc's and Kubernetes' safe set). */
static bool sysctl_allowed(const char *name, const struct aj_oci_spec *s)
{
	static const char *const exact[] = {"kernel.shmmax", "kernel.shmmni", "kernel.shmall",
					    "kernel.shm_rmid_forced", "kernel.msgmax",
					    "kernel.msgmni", "kernel.msgmnb", "kernel.sem"};
	const char *netns_path = NULL;

	for (size_t i = 0; i < AJ_ARRAY_SIZE(exact); i++)
		if (strcmp(name, exact[i]) == 0)
			return true;
	if (strncmp(name, "fs.mqueue.", 10) == 0)
		return true;
	/* net.* belongs to the network namespace: only a container's own. */
	return strncmp(name, "net.", 4) == 0 && aj_oci_spec_has_ns(s, CLONE_NEWNET, &netns_path) &&
	       !netns_path;
}

static int parse_sysctl(json_t *o, struct aj_oci_spec *s, struct aj_err *err)
{
	const char *k;
	json_t *v;

	if (o && !json_is_object(o))
		return BAD("linux.sysctl", "expected an object");
	json_object_foreach(o, k, v) {
		if (!json_is_string(v) || strchr(k, '/') || strstr(k, ".."))
			return BAD("linux.sysctl", "\"%s\": expected a string value", k);
		if (!sysctl_allowed(k, s))
			return BAD("linux.sysctl", "\"%s\" is not a namespaced sysctl agentjail "
						   "allows (kernel.shm*, kernel.msg*, kernel.sem, "
						   "fs.mqueue.*, net.* with a private network "
						   "namespace)",
				   k);
		aj_strv_pushf(&s->sysctl, "%s=%s", k, json_string_value(v));
	}
	return 0;
}

static int refuse_present(json_t *o, const char *where, const char *const *keys,
			  const char *why, struct aj_err *err)
{
	for (; *keys; keys++) {
		json_t *v = json_object_get(o, *keys);
		if (v && !json_is_null(v) &&
		    !(json_is_array(v) && json_array_size(v) == 0) &&
		    !(json_is_object(v) && json_object_size(v) == 0))
			return aj_err_set(err, AJ_LAYER_POLICY, ENOTSUP, "config.json: %s%s%s: %s",
					  where, where[0] ? "." : "", *keys, why);
	}
	return 0;
}

static int parse_linux(json_t *l, struct aj_oci_spec *s, struct aj_err *err)
{
	static const char *const unsupported[] = {"intelRdt", "personality", "timeOffsets",
						  "memoryPolicy", NULL};
	static const char *const mappings[] = {"uidMappings", "gidMappings", NULL};

	if (!json_is_object(l))
		return BAD("linux", "expected an object");
	if (refuse_present(l, "linux", unsupported, "not supported by agentjail", err) < 0 ||
	    refuse_present(l, "linux", mappings,
			   "agentjail maps every container to its own unprivileged host id range; "
			   "bundle-provided mappings are not supported",
			   err) < 0)
		return -1;
	if (json_object_get(l, "devices") && json_array_size(json_object_get(l, "devices")))
		return aj_err_set(err, AJ_LAYER_POLICY, ENOTSUP,
				  "config.json: linux.devices: creating device nodes is not "
				  "supported; /dev holds null, zero, full, random, urandom and tty");
	if (parse_namespaces(json_object_get(l, "namespaces"), s, err) < 0 ||
	    parse_resources(json_object_get(l, "resources"), s, err) < 0 ||
	    get_strv(l, "maskedPaths", "linux", &s->masked, err) < 0 ||
	    get_strv(l, "readonlyPaths", "linux", &s->readonly, err) < 0 ||
	    parse_sysctl(json_object_get(l, "sysctl"), s, err) < 0 ||
	    get_str(l, "cgroupsPath", "linux", false, &s->cgroups_path, err) < 0)
		return -1;
	s->seccomp = json_incref(json_object_get(l, "seccomp"));
	if (s->seccomp && !json_is_object(s->seccomp))
		return BAD("linux.seccomp", "expected an object");
	for (size_t i = 0; i < s->masked.n; i++)
		if (s->masked.v[i][0] != '/')
			return BAD("linux.maskedPaths", "[%zu]: not an absolute path", i);
	for (size_t i = 0; i < s->readonly.n; i++)
		if (s->readonly.v[i][0] != '/')
			return BAD("linux.readonlyPaths", "[%zu]: not an absolute path", i);
	return 0;
}

/* ---- document -------------------------------------------------------------------------- */

static int parse_root(json_t *r, struct aj_oci_spec *s, struct aj_err *err)
{
	json_t *ro;

	if (!json_is_object(r))
		return BAD("root", "required: an object with path");
	if (get_str(r, "path", "root", true, &s->root_path, err) < 0)
		return -1;
	ro = json_object_get(r, "readonly");
	if (ro && !json_is_boolean(ro))
		return BAD("root.readonly", "expected a boolean");
	s->root_ro = json_is_true(ro);
	return 0;
}

static int parse_annotations(json_t *a, struct aj_oci_spec *s, struct aj_err *err)
{
	const char *k;
	json_t *v;

	if (a && !json_is_object(a))
		return BAD("annotations", "expected an object");
	json_object_foreach(a, k, v)
		if (!json_is_string(v))
			return BAD("annotations", "\"%s\": expected a string", k);
	s->annotations = a ? json_incref(a) : json_object();
	return 0;
}

int aj_oci_spec_parse(json_t *root, struct aj_oci_spec *s, struct aj_err *err)
{
	static const char *const hooks[] = {"hooks", NULL};
	json_t *proc;

	memset(s, 0, sizeof *s);
	if (!json_is_object(root))
		return BAD("(document)", "expected a JSON object");
	if (get_str(root, "ociVersion", "", true, &s->oci_version, err) < 0)
		return -1;
	if (strncmp(s->oci_version, "1.", 2) != 0)
		return BAD("ociVersion", "\"%s\": only runtime-spec 1.x is supported",
			   s->oci_version);
	if (refuse_present(root, "", hooks, "hooks run host programs with the runtime's "
					    "privileges; agentjail does not run them",
			   err) < 0)
		return -1;
	proc = json_object_get(root, "process");
	if (proc && aj_oci_process_parse(proc, "process", &s->proc, &s->notes, err) < 0)
		return -1;
	s->have_proc = proc != NULL;
	if (parse_root(json_object_get(root, "root"), s, err) < 0 ||
	    get_str(root, "hostname", "", false, &s->hostname, err) < 0 ||
	    parse_mounts(json_object_get(root, "mounts"), s, err) < 0 ||
	    parse_annotations(json_object_get(root, "annotations"), s, err) < 0)
		return -1;
	if (!json_is_object(json_object_get(root, "linux")))
		return BAD("linux", "required on Linux");
	if (parse_linux(json_object_get(root, "linux"), s, err) < 0)
		return -1;
	if (!s->have_proc)
		return BAD("process", "required to create a container");
	return 0;
}

void aj_oci_spec_free(struct aj_oci_spec *s)
{
	aj_oci_process_free(&s->proc);
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
