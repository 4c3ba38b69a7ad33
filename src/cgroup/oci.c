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
	struct aj_cgroup_oci_hier *h;

	snprintf(dir, sizeof dir, "%s%s", mnt, path);
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (has_opt(opts, known[c])) {
			mine = true;
			if (!o->cg.used[c])
				set_path(o, c, dir);
		}
	if (mine || o->n_extra == AJ_CG_OCI_EXTRA)
		return;
	h = &o->extra[o->n_extra++];
	snprintf(h->dir, sizeof h->dir, "%s", dir);
	h->mnt_len = strlen(mnt);
	/* The controllers, without the mount's other options (rw, relatime, ...). */
	h->ctl[0] = '\0';
	for (const char *p = opts; p && *p;) {
		size_t n = strcspn(p, ",");
		if (strncmp(p, "rw", n) != 0 && strncmp(p, "ro", n) != 0 &&
		    strncmp(p, "relatime", n) != 0 && strncmp(p, "noatime", n) != 0 &&
		    strncmp(p, "nosuid", n) != 0 && strncmp(p, "nodev", n) != 0 &&
		    strncmp(p, "noexec", n) != 0)
			snprintf(h->ctl + strlen(h->ctl), sizeof h->ctl - strlen(h->ctl), "%s%.*s",
				 h->ctl[0] ? "," : "", (int)n, p);
		p = p[n] ? p + n + 1 : NULL;
	}
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
	o->rel_len = strlen(path);
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

/* Makes one level of a container's cgroup path, recording it if it is new. */
static int make_level(struct aj_cgroup_oci *o, const char *path, struct aj_err *err)
{
	if (mkdir(path, 0755) == 0)
		aj_strv_push(&o->made, path);
	else if (errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "create cgroup \"%s\"", path);
	return 0;
}

/* Every level of dir below its hierarchy's mount (dir[0..mnt_len)). */
static int make_levels(struct aj_cgroup_oci *o, const char *dir, size_t mnt_len,
		       struct aj_err *err)
{
	char path[512];

	snprintf(path, sizeof path, "%s", dir);
	for (char *p = strchr(path + mnt_len + 1, '/');; p = strchr(p + 1, '/')) {
		if (p)
			*p = '\0';
		if (make_level(o, path, err) < 0)
			return -1;
		if (!p)
			return 0;
		*p = '/';
	}
}

/* v1 cpuset: every level made gets its parent's CPUs and memory nodes, or nothing could
 * join it ("No space left on device"). */
static int cpuset_levels(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_hier *h,
			 struct aj_err *err)
{
	char path[512], parent[512];

	snprintf(path, sizeof path, "%s", h->dir);
	for (char *p = path + h->mnt_len; p && *p;) {
		char *slash = strchr(p + 1, '/');
		if (slash)
			*slash = '\0';
		snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(path, '/') - path), path);
		if (make_level(o, path, err) < 0)
			return -1;
		for (int i = 0; i < 2; i++) {
			const char *f = i ? "cpuset.mems" : "cpuset.cpus";
			char file[600];
			_cleanup_free_ char *mine = NULL, *theirs = NULL;
			snprintf(file, sizeof file, "%s/%s", path, f);
			mine = aj_read_file(file, 4096, NULL);
			if (mine && mine[0] != '\n' && mine[0])
				continue;
			snprintf(file, sizeof file, "%s/%s", parent, f);
			theirs = aj_read_file(file, 4096, NULL);
			if (theirs && aj_cgroup_write(path, f, theirs, err) < 0)
				return -1;
		}
		if (slash)
			*slash = '/';
		p = slash;
	}
	return 0;
}

static int mkdir_all(struct aj_cgroup_oci *o, struct aj_err *err)
{
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c] &&
		    make_levels(o, o->cg.path[c], strlen(o->cg.path[c]) - o->rel_len, err) < 0)
			return -1;
	for (size_t i = 0; i < o->n_extra; i++) {
		const struct aj_cgroup_oci_hier *h = &o->extra[i];
		if (has_opt(h->ctl, "cpuset") ? cpuset_levels(o, h, err) < 0
					      : make_levels(o, h->dir, h->mnt_len, err) < 0)
			return -1;
	}
	return 0;
}

/* A directory of the container's path that exists and holds processes belongs to someone
 * else: joining it would mix the container with them, and a failed create or a delete
 * would end them. */
static int check_unused(const char *dir, struct aj_err *err)
{
	_cleanup_free_ char *s = NULL;
	char path[600];

	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	s = aj_read_file(path, 4096, NULL);
	if (!s || !s[0])
		return 0;
	return aj_err_set(err, AJ_LAYER_CGROUP, EBUSY,
			  "linux.cgroupsPath: cgroup \"%s\" already has processes (pid %ld...): "
			  "a container's cgroup must be its own",
			  dir, strtol(s, NULL, 10));
}

static int check_all_unused(const struct aj_cgroup_oci *o, struct aj_err *err)
{
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c] && check_unused(o->cg.path[c], err) < 0)
			return -1;
	for (size_t i = 0; i < o->n_extra; i++)
		if (check_unused(o->extra[i].dir, err) < 0)
			return -1;
	return 0;
}

const char *aj_cgroup_oci_dir(const struct aj_cgroup_oci *o, const char *ctl)
{
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c] && strcmp(known[c], ctl) == 0)
			return o->cg.path[c];
	for (size_t i = 0; i < o->n_extra; i++)
		if (has_opt(o->extra[i].ctl, ctl))
			return o->extra[i].dir;
	return NULL;
}

/* v2: a controller reaches the container only if every ancestor enables it for its
 * children. Levels that do not offer one (a delegated subtree) are left as they are. */
static void v2_enable(const struct aj_cgroup_oci *o)
{
	static const char *const ctl[] = {"+memory", "+pids", "+cpu", "+cpuset", "+io", "+hugetlb"};
	char path[512];
	size_t mlen = strlen(o->env.v2_mount);

	/* From the root down; one controller per write, so that one this host lacks does not
	 * keep the others off. */
	snprintf(path, sizeof path, "%s", o->cg.path[0]);
	for (char *p = path + mlen; p; p = strchr(p + 1, '/')) {
		*p = '\0';
		for (size_t i = 0; i < AJ_ARRAY_SIZE(ctl); i++)
			aj_cgroup_write(path, "cgroup.subtree_control", ctl[i], NULL);
		*p = '/';
	}
}

int aj_cgroup_oci_create(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *lim,
			 struct aj_strv *notes, struct aj_err *err)
{
	if (check_all_unused(o, err) < 0)
		return -1;
	if (o->env.mode == AJ_CGROUP_V2)
		v2_enable(o);
	if (mkdir_all(o, err) < 0)
		return -1;
	return o->env.mode == AJ_CGROUP_V2 ? aj_cgroup_oci_v2_limits(o, lim, notes, err)
					   : aj_cgroup_oci_v1_limits(o, lim, notes, err);
}

int aj_cgroup_oci_attach(struct aj_cgroup_oci *o, pid_t pid, struct aj_err *err)
{
	char v[32];

	snprintf(v, sizeof v, "%d", (int)pid);
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c] && aj_cgroup_write(o->cg.path[c], "cgroup.procs", v, err) < 0)
			return -1;
	for (size_t i = 0; i < o->n_extra; i++)
		if (aj_cgroup_write(o->extra[i].dir, "cgroup.procs", v, err) < 0)
			return -1;
	return 0;
}

/* The directory that lists every process of the container. */
static const char *procs_dir(const struct aj_cgroup_oci *o)
{
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (o->cg.used[c])
			return o->cg.path[c];
	return o->n_extra ? o->extra[0].dir : NULL;
}

const char *aj_cgroup_oci_procs_dir(const struct aj_cgroup_oci *o)
{
	return procs_dir(o);
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
		if (aj_cgroup_rmdir(o->extra[i].dir, err) < 0)
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

void aj_cgroup_oci_undo(struct aj_cgroup_oci *o)
{
	for (size_t i = o->made.n; i-- > 0;)
		aj_cgroup_rmdir(o->made.v[i], NULL);
	aj_strv_free(&o->made);
}

void aj_cgroup_oci_free(struct aj_cgroup_oci *o)
{
	aj_cgroup_free(&o->cg);
	aj_strv_free(&o->made);
}
