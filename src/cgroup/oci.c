/* See oci.h. */
#include "cgroup/oci.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"

static const char *const known[AJ_CG__COUNT] = {
	[AJ_CG_MEMORY] = "memory", [AJ_CG_PIDS] = "pids", [AJ_CG_CPU] = "cpu",
	[AJ_CG_CPUACCT] = "cpuacct", [AJ_CG_FREEZER] = "freezer",
};

static bool has_opt(const char *opts, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = opts; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

static void set_path(struct aj_cgroup_oci *o, int c, const char *dir)
{
	free(o->cg.path[c]);
	o->cg.path[c] = aj_xstrdup(dir);
	o->cg.used[c] = true;
}

/* One v1 hierarchy (mounted at mnt with super options `opts`). */
static void v1_hierarchy(struct aj_cgroup_oci *o, const char *mnt, const char *opts,
			 const char *path)
{
	char dir[512];
	bool mine = false;

	if (has_opt(opts, "cpuset"))
		return;
	snprintf(dir, sizeof dir, "%s%s", mnt, path);
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (has_opt(opts, known[c])) {
			mine = true;
			if (!o->cg.used[c])
				set_path(o, c, dir);
		}
	if (!mine && o->n_extra < AJ_CG_OCI_EXTRA)
		snprintf(o->extra[o->n_extra++], sizeof o->extra[0], "%s", dir);
}

static int scan_v1(struct aj_cgroup_oci *o, const char *path, struct aj_err *err)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	if (!f)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "open /proc/self/mountinfo");
	while (fgets(line, sizeof line, f)) {
		char root[512], mnt[512], type[64], super[512];
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %511s %511s", root, mnt) != 2 ||
		    sscanf(dash + 3, "%63s %*s %511s", type, super) != 2)
			continue;
		if (strcmp(type, "cgroup") == 0 && strcmp(root, "/") == 0)
			v1_hierarchy(o, mnt, super, path);
	}
	return 0;
}

int aj_cgroup_oci_open(struct aj_cgroup_oci *o, const char *path, struct aj_err *err)
{
	char dir[512];

	memset(o, 0, sizeof *o);
	if (!aj_path_is_clean_abs(path) || strcmp(path, "/") == 0)
		return aj_err_set(err, AJ_LAYER_CGROUP, EINVAL,
				  "cgroup path \"%s\" is not a clean absolute path below the root",
				  path);
	aj_cgroup_detect_into(&o->env, NULL, NULL, NULL);
	o->cg.env = &o->env;
	if (o->env.mode == AJ_CGROUP_V1)
		return scan_v1(o, path, err);
	if (o->env.mode != AJ_CGROUP_V2)
		return aj_err_set(err, AJ_LAYER_CGROUP, ENOENT, "no cgroup filesystem is mounted");
	snprintf(dir, sizeof dir, "%s%s", o->env.v2_mount, path);
	for (int c = 0; c < AJ_CG__COUNT; c++)
		set_path(o, c, dir);
	for (int c = 1; c < AJ_CG__COUNT; c++)
		o->cg.used[c] = false; /* one directory: path[0] is the canonical one */
	return 0;
}

static int mkdir_all(struct aj_cgroup_oci *o, struct aj_err *err)
{
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c] && aj_mkdir_p(o->cg.path[c], 0755) < 0)
			return aj_err_sys(err, AJ_LAYER_CGROUP, "create cgroup \"%s\"", o->cg.path[c]);
	for (size_t i = 0; i < o->n_extra; i++)
		if (aj_mkdir_p(o->extra[i], 0755) < 0)
			return aj_err_sys(err, AJ_LAYER_CGROUP, "create cgroup \"%s\"", o->extra[i]);
	return 0;
}

/* v2: a controller reaches the container only if every ancestor enables it for its
 * children. Levels that do not offer one (a delegated subtree) are left as they are. */
static void v2_enable(const struct aj_cgroup_oci *o)
{
	char path[512];
	size_t mlen = strlen(o->env.v2_mount);

	snprintf(path, sizeof path, "%s", o->cg.path[0]);
	for (char *p = path + mlen; (p = strchr(p + 1, '/'));) {
		*p = '\0';
		aj_cgroup_write(path, "cgroup.subtree_control", "+memory +pids +cpu", NULL);
		*p = '/';
	}
	aj_cgroup_write(o->env.v2_mount, "cgroup.subtree_control", "+memory +pids +cpu", NULL);
}

static int write_u64(const char *dir, const char *file, uint64_t v, struct aj_err *err)
{
	char s[32];

	snprintf(s, sizeof s, "%lu", (unsigned long)v);
	return aj_cgroup_write(dir, file, s, err);
}

static int v1_limits(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		     struct aj_err *err)
{
	const char *mem = o->cg.path[AJ_CG_MEMORY], *cpu = o->cg.path[AJ_CG_CPU];
	char memsw[600];

	if (l->memory && mem) {
		if (write_u64(mem, "memory.limit_in_bytes", l->memory, err) < 0)
			return -1;
		/* A limit that can be escaped into swap is not a limit. */
		snprintf(memsw, sizeof memsw, "%s/memory.memsw.limit_in_bytes", mem);
		if (access(memsw, F_OK) == 0 &&
		    write_u64(mem, "memory.memsw.limit_in_bytes", l->memory, err) < 0)
			return -1;
	}
	if (l->pids && o->cg.path[AJ_CG_PIDS] &&
	    write_u64(o->cg.path[AJ_CG_PIDS], "pids.max", l->pids, err) < 0)
		return -1;
	if (cpu && l->cpu_shares && write_u64(cpu, "cpu.shares", l->cpu_shares, err) < 0)
		return -1;
	if (cpu && l->cpu_quota > 0 &&
	    (write_u64(cpu, "cpu.cfs_period_us", l->cpu_period ? l->cpu_period : 100000, err) < 0 ||
	     write_u64(cpu, "cpu.cfs_quota_us", (uint64_t)l->cpu_quota, err) < 0))
		return -1;
	return 0;
}

static int v2_limits(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		     struct aj_err *err)
{
	const char *p = o->cg.path[0];
	char v[64];

	if (l->memory) {
		if (write_u64(p, "memory.max", l->memory, err) < 0)
			return -1;
		/* absent without swap accounting; a limit escaped into swap is no limit */
		aj_cgroup_write(p, "memory.swap.max", "0", NULL);
	}
	if (l->pids && write_u64(p, "pids.max", l->pids, err) < 0)
		return -1;
	if (l->cpu_shares) /* runc's conversion of cgroup v1 shares to v2 weight */
		write_u64(p, "cpu.weight", 1 + ((l->cpu_shares - 2) * 9999) / 262142, NULL);
	if (l->cpu_quota > 0) {
		snprintf(v, sizeof v, "%ld %lu", (long)l->cpu_quota,
			 (unsigned long)(l->cpu_period ? l->cpu_period : 100000));
		if (aj_cgroup_write(p, "cpu.max", v, err) < 0)
			return -1;
	}
	return 0;
}

int aj_cgroup_oci_create(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *lim,
			 struct aj_err *err)
{
	if (o->env.mode == AJ_CGROUP_V2)
		v2_enable(o);
	if (mkdir_all(o, err) < 0)
		return -1;
	return o->env.mode == AJ_CGROUP_V2 ? v2_limits(o, lim, err) : v1_limits(o, lim, err);
}

int aj_cgroup_oci_attach(struct aj_cgroup_oci *o, pid_t pid, struct aj_err *err)
{
	char v[32];

	snprintf(v, sizeof v, "%d", (int)pid);
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c] && aj_cgroup_write(o->cg.path[c], "cgroup.procs", v, err) < 0)
			return -1;
	for (size_t i = 0; i < o->n_extra; i++)
		if (aj_cgroup_write(o->extra[i], "cgroup.procs", v, err) < 0)
			return -1;
	return 0;
}

/* The directory that lists every process of the container. */
static const char *procs_dir(const struct aj_cgroup_oci *o)
{
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c])
			return o->cg.path[c];
	return o->n_extra ? o->extra[0] : NULL;
}

int aj_cgroup_oci_pids(struct aj_cgroup_oci *o, pid_t **pids, size_t *n, struct aj_err *err)
{
	const char *dir = procs_dir(o);
	_cleanup_free_ char *s = NULL;
	char path[600];
	size_t cap = 16;

	*n = 0;
	*pids = aj_xmalloc(cap * sizeof **pids);
	if (!dir)
		return 0;
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	s = aj_read_file(path, 1 << 22, NULL);
	if (!s)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_CGROUP, "read \"%s\"", path);
	for (char *p = s, *end; *p; p = end) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (*n == cap)
			*pids = aj_xrealloc(*pids, (cap *= 2) * sizeof **pids);
		(*pids)[(*n)++] = (pid_t)v;
		while (*end == '\n')
			end++;
	}
	return 0;
}

int aj_cgroup_oci_freeze(struct aj_cgroup_oci *o, bool frozen, struct aj_err *err)
{
	return o->env.ops->freeze(&o->cg, frozen, err);
}

bool aj_cgroup_oci_frozen(struct aj_cgroup_oci *o)
{
	_cleanup_free_ char *s = NULL;
	char path[600];
	uint64_t v = 0;

	if (o->env.mode == AJ_CGROUP_V2)
		return aj_cgroup_read_keyed(o->cg.path[0], "cgroup.events", "frozen", &v) == 0 && v;
	if (!o->cg.used[AJ_CG_FREEZER])
		return false;
	snprintf(path, sizeof path, "%s/freezer.state", o->cg.path[AJ_CG_FREEZER]);
	s = aj_read_file(path, 64, NULL);
	return s && strncmp(s, "FROZEN", 6) == 0;
}

int aj_cgroup_oci_destroy(struct aj_cgroup_oci *o, struct aj_err *err)
{
	int r = 0;

	if (aj_cgroup_oci_frozen(o))
		aj_cgroup_oci_freeze(o, false, NULL);
	if (procs_dir(o) && access(procs_dir(o), F_OK) == 0 &&
	    aj_cgroup_kill_procs(procs_dir(o), err) < 0)
		return -1;
	for (size_t i = 0; i < o->n_extra; i++)
		if (aj_cgroup_rmdir(o->extra[i], err) < 0)
			r = -1;
	for (int c = AJ_CG__COUNT; c-- > 0;) {
		bool dup = false;
		if (!o->cg.used[c])
			continue;
		/* set_path() marks a controller used only once its path is set; the analyzer
		 * takes procs_dir()'s NULL check above as a hint that path[k] may be NULL. */
		for (int k = 0; k < c; k++)
			/* NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
			dup = dup || (o->cg.used[k] && strcmp(o->cg.path[k], o->cg.path[c]) == 0);
		if (!dup && aj_cgroup_rmdir(o->cg.path[c], err) < 0)
			r = -1;
	}
	return r;
}

void aj_cgroup_oci_free(struct aj_cgroup_oci *o)
{
	aj_cgroup_free(&o->cg);
}
