/* Backend detection (once) and helpers shared by the v1 and v2 backends. */
#include "cgroup/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"

static const char *const ctrl_names[AJ_CG__COUNT] = {
	[AJ_CG_MEMORY] = "memory", [AJ_CG_PIDS] = "pids", [AJ_CG_CPU] = "cpu",
	[AJ_CG_CPUACCT] = "cpuacct", [AJ_CG_FREEZER] = "freezer",
};

const char *aj_cgroup_ctrl_name(int ctrl)
{
	return ctrl >= 0 && ctrl < AJ_CG__COUNT ? ctrl_names[ctrl] : "?";
}

const char *aj_cgroup_mode_name(int mode)
{
	switch (mode) {
	case AJ_CGROUP_V1: return "v1";
	case AJ_CGROUP_V2: return "v2";
	default: return "none";
	}
}

unsigned aj_cgroup_needed(const struct aj_cgroup_limits *lim)
{
	unsigned m = 0;
	if (lim->memory)
		m |= 1u << AJ_CG_MEMORY;
	if (lim->pids)
		m |= 1u << AJ_CG_PIDS;
	if (lim->cpu_milli)
		m |= 1u << AJ_CG_CPU;
	return m;
}

/* Mount points in mountinfo escape space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] && r[3]) {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static bool opt_has(const char *opts, const char *name)
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

struct mounts {
	char v2[256];
	char v1[AJ_CG__COUNT][256];
	char v1_opts[AJ_CG__COUNT][128]; /* the hierarchy's controller list, e.g. "cpu,cpuacct" */
};

static void parse_mountinfo(struct mounts *m)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	memset(m, 0, sizeof *m);
	while (f && fgets(line, sizeof line, f)) {
		char root[512], mnt[512], fstype[64], super[512];
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %511s %511s", root, mnt) != 2 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, super) != 2)
			continue;
		if (strcmp(root, "/") != 0)
			continue; /* a bind of a sub-cgroup, not the hierarchy itself */
		unescape_octal(mnt);
		if (strcmp(fstype, "cgroup2") == 0 && !m->v2[0])
			snprintf(m->v2, sizeof m->v2, "%s", mnt);
		if (strcmp(fstype, "cgroup") != 0)
			continue;
		for (int c = 0; c < AJ_CG__COUNT; c++)
			if (opt_has(super, ctrl_names[c]) && !m->v1[c][0]) {
				snprintf(m->v1[c], sizeof m->v1[c], "%s", mnt);
				snprintf(m->v1_opts[c], sizeof m->v1_opts[c], "%s", super);
			}
	}
}

/* The cgroup of this process in the hierarchy whose controller list contains `ctrl`
 * ("" for the v2 line). */
static bool own_cgroup(const char *self_cgroup, const char *ctrl, char *out, size_t len)
{
	const char *p = self_cgroup;

	/* Lines are "hierarchy-id:controller-list:path"; the v2 line has an empty list. */
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		char line[1024];
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n < sizeof line) {
			memcpy(line, p, n);
			line[n] = '\0';
			char *c1 = strchr(line, ':');
			char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (c2) {
				*c2 = '\0';
				const char *ctrls = c1 + 1;
				bool match = ctrl[0] ? opt_has(ctrls, ctrl) : ctrls[0] == '\0';
				if (match) {
					snprintf(out, len, "%s", c2 + 1);
					return true;
				}
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/* Can this process create cgroups under dir? Looks at dir, or its nearest existing ancestor
 * when dir does not exist yet (it is then created on first use). */
static bool dir_writable(const char *dir, char *why, size_t why_len)
{
	char buf[512];
	struct statvfs sv;

	snprintf(buf, sizeof buf, "%s", dir);
	for (;;) {
		if (access(buf, F_OK) == 0)
			break;
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf) {
			snprintf(why, why_len, "no existing directory above %s", dir);
			return false;
		}
		*slash = '\0';
	}
	if (statvfs(buf, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		snprintf(why, why_len, "%s is on a read-only cgroup mount", buf);
		return false;
	}
	if (access(buf, W_OK) != 0) {
		snprintf(why, why_len, "%s is not writable by uid %u (no delegated cgroup)", buf,
			 (unsigned)geteuid());
		return false;
	}
	return true;
}

static void join(char *out, size_t len, const char *mnt, const char *rel)
{
	if (strcmp(rel, "/") == 0)
		rel = "";
	snprintf(out, len, "%s%s%s", mnt, rel[0] == '/' || !rel[0] ? "" : "/", rel);
}

static void detect_v2(struct aj_cgroup_env *env, const struct mounts *m, const char *override,
		      const char *self_cgroup)
{
	char own[512] = "/", rel[512], ctrls_path[600], why[256] = "";
	_cleanup_free_ char *ctrls = NULL;
	bool writable;

	own_cgroup(self_cgroup, "", own, sizeof own);
	if (override)
		snprintf(rel, sizeof rel, "%s", override);
	else if (geteuid() == 0)
		snprintf(rel, sizeof rel, "/agentjail");
	else
		snprintf(rel, sizeof rel, "%s", own);
	snprintf(env->v2_mount, sizeof env->v2_mount, "%s", m->v2);
	/* What the parent can offer its children: its own cgroup.controllers, or the root's when
	 * the parent is created on first use. */
	join(ctrls_path, sizeof ctrls_path, m->v2, rel);
	strncat(ctrls_path, "/cgroup.controllers", sizeof ctrls_path - strlen(ctrls_path) - 1);
	ctrls = aj_read_file(ctrls_path, 4096, NULL);
	if (!ctrls) {
		snprintf(ctrls_path, sizeof ctrls_path, "%s/cgroup.controllers", m->v2);
		ctrls = aj_read_file(ctrls_path, 4096, NULL);
	}
	join(env->parent[0], sizeof env->parent[0], m->v2, rel);
	writable = dir_writable(env->parent[0], why, sizeof why);
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		const char *name = c == AJ_CG_CPUACCT || c == AJ_CG_FREEZER ? "" : ctrl_names[c];
		char words[4096];
		bool listed = true;

		snprintf(env->parent[c], sizeof env->parent[c], "%s", env->parent[0]);
		if (name[0]) {
			snprintf(words, sizeof words, "%s", ctrls ? ctrls : "");
			for (char *p = words; *p; p++)
				if (*p == ' ' || *p == '\n')
					*p = ',';
			listed = opt_has(words, name);
		}
		env->usable[c] = listed && writable;
		if (!listed)
			snprintf(env->why[c], sizeof env->why[c],
				 "the %s controller is not in %s", name, ctrls_path);
		else if (!writable)
			snprintf(env->why[c], sizeof env->why[c], "%s", why);
	}
}

static void detect_v1(struct aj_cgroup_env *env, const struct mounts *m, const char *override,
		      const char *self_cgroup)
{
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		char own[512] = "/", rel[600];
		if (!m->v1[c][0]) {
			snprintf(env->why[c], sizeof env->why[c],
				 "no cgroup v1 hierarchy with the %s controller is mounted",
				 ctrl_names[c]);
			continue;
		}
		own_cgroup(self_cgroup, ctrl_names[c], own, sizeof own);
		if (override)
			snprintf(rel, sizeof rel, "%s", override);
		else if (geteuid() == 0)
			/* Nest under our own cgroup: limits the caller already lives under keep
			 * applying to its sandboxes (v1 has no "no internal processes" rule). */
			snprintf(rel, sizeof rel, "%s/agentjail", strcmp(own, "/") ? own : "");
		else
			snprintf(rel, sizeof rel, "%s", own);
		join(env->parent[c], sizeof env->parent[c], m->v1[c], rel);
		env->usable[c] = dir_writable(env->parent[c], env->why[c], sizeof env->why[c]);
	}
}

void aj_cgroup_detect_into(struct aj_cgroup_env *env, const char *root,
			   const char *parent_override, const char *proc_self_cgroup)
{
	struct mounts m;
	_cleanup_free_ char *self = NULL;
	bool v2_has_controllers = false;

	(void)root;
	memset(env, 0, sizeof *env);
	parse_mountinfo(&m);
	if (!proc_self_cgroup) {
		self = aj_read_file("/proc/self/cgroup", 65536, NULL);
		proc_self_cgroup = self ? self : "";
	}
	if (m.v2[0]) {
		char p[300];
		_cleanup_free_ char *c = NULL;
		snprintf(p, sizeof p, "%s/cgroup.controllers", m.v2);
		c = aj_read_file(p, 4096, NULL);
		v2_has_controllers = c && (strstr(c, "memory") || strstr(c, "pids"));
	}
	/* A hybrid host (v1 controllers plus a cgroup2 mount that has none of ours) is driven
	 * through v1; the controller-less cgroup2 mount cannot limit anything. */
	if (v2_has_controllers || (m.v2[0] && !m.v1[AJ_CG_MEMORY][0] && !m.v1[AJ_CG_PIDS][0])) {
		env->mode = AJ_CGROUP_V2;
		env->ops = &aj_cgroup_v2_ops;
		detect_v2(env, &m, parent_override, proc_self_cgroup);
		/* memory.swap.max exists in every non-root cgroup unless swap accounting is off. */
		env->swap_limited = access("/proc/swaps", F_OK) == 0;
	} else if (m.v1[AJ_CG_MEMORY][0] || m.v1[AJ_CG_PIDS][0] || m.v1[AJ_CG_CPU][0]) {
		char p[300];
		env->mode = AJ_CGROUP_V1;
		env->ops = &aj_cgroup_v1_ops;
		detect_v1(env, &m, parent_override, proc_self_cgroup);
		snprintf(p, sizeof p, "%s/memory.memsw.limit_in_bytes", m.v1[AJ_CG_MEMORY]);
		env->swap_limited = m.v1[AJ_CG_MEMORY][0] && access(p, F_OK) == 0;
	} else {
		env->mode = AJ_CGROUP_NONE;
		for (int c = 0; c < AJ_CG__COUNT; c++)
			snprintf(env->why[c], sizeof env->why[c], "no cgroup filesystem is mounted");
	}
}

const struct aj_cgroup_env *aj_cgroup_detect(const char *root, const char *parent_override)
{
	static struct aj_cgroup_env env;
	static bool done;

	if (!done) {
		aj_cgroup_detect_into(&env, root, parent_override, NULL);
		done = true;
	}
	return &env;
}

void aj_cgroup_free(struct aj_cgroup *cg)
{
	aj_cgroup_close_stats(cg);
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		free(cg->path[c]);
		cg->path[c] = NULL;
	}
}

static void sweep_dir(const char *dir, const char *prefix, time_t older_than)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = strlen(prefix);

	while (d && (e = readdir(d))) {
		struct stat st;
		if (strncmp(e->d_name, prefix, n) != 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_ctime > older_than)
			continue;
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR); /* fails while tasks remain: fine */
	}
}

void aj_cgroup_sweep(const struct aj_cgroup_env *env, const char *prefix, int min_age_s)
{
	time_t older_than = time(NULL) - min_age_s;

	for (int c = 0; c < AJ_CG__COUNT; c++) {
		bool seen = false;
		if (!env->usable[c])
			continue;
		for (int k = 0; k < c; k++)
			seen = seen || (env->usable[k] && strcmp(env->parent[k], env->parent[c]) == 0);
		if (!seen)
			sweep_dir(env->parent[c], prefix, older_than);
	}
}

void aj_cgroup_remove_stale(const struct aj_cgroup_env *env, const char *name)
{
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		char path[800];
		if (!env->usable[c])
			continue;
		snprintf(path, sizeof path, "%s/%s", env->parent[c], name);
		rmdir(path); /* fails while tasks remain, or when it is not there: fine */
	}
}

int aj_cgroup_join_self(const struct aj_cgroup_join *j)
{
	for (size_t i = 0; i < j->n_tasks; i++)
		if (write(j->tasks[i], "0", 1) != 1)
			return -errno;
	return 0;
}

void aj_cgroup_join_close(struct aj_cgroup_join *j)
{
	aj_close_fd(&j->clone_into);
	for (size_t i = 0; i < j->n_tasks; i++)
		aj_close_fd(&j->tasks[i]);
	j->n_tasks = 0;
}

int aj_cgroup_write(const char *dir, const char *file, const char *value, struct aj_err *err)
{
	char path[700];

	snprintf(path, sizeof path, "%s/%s", dir, file);
	if (aj_write_file(path, value) < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "write \"%s\" to \"%s\"", value, path);
	return 0;
}

/* "max" is UINT64_MAX. */
static int parse_u64(const char *s, uint64_t *out)
{
	if (strncmp(s, "max", 3) == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	return sscanf(s, "%lu", out) == 1 ? 0 : -1;
}

/* The value of the line "key value" of s (modified). */
static int parse_keyed(char *s, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	for (char *line = s; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return sscanf(line + klen + 1, "%lu", out) == 1 ? 0 : -1;
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

int aj_cgroup_read_u64(const char *dir, const char *file, uint64_t *out)
{
	char path[700];
	_cleanup_free_ char *s = NULL;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	s = aj_read_file(path, 4096, NULL);
	return s ? parse_u64(s, out) : -1;
}

int aj_cgroup_read_keyed(const char *dir, const char *file, const char *key, uint64_t *out)
{
	char path[700];
	_cleanup_free_ char *s = NULL;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	s = aj_read_file(path, 65536, NULL);
	return s ? parse_keyed(s, key, out) : -1;
}

/* Opens dir/file into *fd1 (descriptor + 1); -1 when it cannot be opened. */
static int fd1_open(int *fd1, const char *dir, const char *file)
{
	char path[700];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	*fd1 = fd + 1;
	return 0;
}

static void fd1_close_all(int *fd1, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (fd1[i])
			close(fd1[i] - 1);
		fd1[i] = 0;
	}
}

/* dir/file into buf from offset 0 through *fd1 (descriptor + 1, 0: not open yet). A failed
 * read closes it and tries once more with a fresh open. */
static int sample_read(int *fd1, const char *dir, const char *file, char *buf, size_t size)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		ssize_t n;

		if (!*fd1 && fd1_open(fd1, dir, file) < 0)
			return -1;
		n = pread(*fd1 - 1, buf, size - 1, 0);
		if (n >= 0) {
			buf[n] = '\0';
			return 0;
		}
		if (errno != EBADF) /* EBADF: not ours any more, nothing to close */
			close(*fd1 - 1);
		*fd1 = 0;
	}
	return -1;
}

int aj_cgroup_sample_u64(int *fd1, const char *dir, const char *file, uint64_t *out)
{
	char buf[64];

	return sample_read(fd1, dir, file, buf, sizeof buf) < 0 ? -1 : parse_u64(buf, out);
}

int aj_cgroup_sample_keyed(int *fd1, const char *dir, const char *file, const char *key,
			   uint64_t *out)
{
	char buf[1024];

	return sample_read(fd1, dir, file, buf, sizeof buf) < 0 ? -1
								 : parse_keyed(buf, key, out);
}

void aj_cgroup_open_stat(struct aj_cgroup *cg, int i, const char *dir, const char *file)
{
	if (!cg->stat_fd1[i] && dir)
		(void)fd1_open(&cg->stat_fd1[i], dir, file); /* not open: read by path at the end */
}

int aj_cgroup_stat_u64(struct aj_cgroup *cg, int i, const char *dir, const char *file,
		       uint64_t *out)
{
	return cg->stat_fd1[i] ? aj_cgroup_sample_u64(&cg->stat_fd1[i], dir, file, out)
			       : aj_cgroup_read_u64(dir, file, out);
}

int aj_cgroup_stat_keyed(struct aj_cgroup *cg, int i, const char *dir, const char *file,
			 const char *key, uint64_t *out)
{
	return cg->stat_fd1[i] ? aj_cgroup_sample_keyed(&cg->stat_fd1[i], dir, file, key, out)
			       : aj_cgroup_read_keyed(dir, file, key, out);
}

void aj_cgroup_close_stats(struct aj_cgroup *cg)
{
	fd1_close_all(cg->stat_fd1, AJ_CG_STAT_FILES);
}

void aj_cgroup_sampler_close(struct aj_cgroup_sampler *s)
{
	fd1_close_all(s->fd1, sizeof s->fd1 / sizeof s->fd1[0]);
}

int aj_cgroup_kill_procs_once(const char *dir)
{
	char path[700];
	_cleanup_free_ char *s = NULL;
	int n = 0;

	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	s = aj_read_file(path, 1 << 20, NULL);
	if (!s)
		return errno == ENOENT ? 0 : -1;
	for (char *p = s; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
			n++;
		p = end;
		while (*p == '\n')
			p++;
	}
	return n;
}

int aj_cgroup_kill_procs(const char *dir, struct aj_err *err)
{
	/* Tasks may fork while we read; each round kills what it sees, and a dying cgroup
	 * empties within a few rounds. Bounded so that a stuck task cannot hang us. */
	for (int round = 0; round < 400; round++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		int n = aj_cgroup_kill_procs_once(dir);
		char path[700];
		_cleanup_free_ char *s = NULL;

		if (n < 0)
			return aj_err_sys(err, AJ_LAYER_CGROUP, "read \"%s/cgroup.procs\"", dir);
		snprintf(path, sizeof path, "%s/cgroup.procs", dir);
		s = aj_read_file(path, 1 << 20, NULL);
		if (!s || !s[0])
			return 0;
		nanosleep(&ts, NULL);
	}
	return aj_err_set(err, AJ_LAYER_CGROUP, EBUSY, "tasks remain in \"%s\" after SIGKILL",
			  dir);
}

int aj_cgroup_rmdir(const char *dir, struct aj_err *err)
{
	/* A killed task leaves its cgroup as it exits, a moment after SIGKILL. */
	for (int i = 0; i < 200; i++) {
		struct timespec ts = {0, 2 * 1000 * 1000};
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			break;
		nanosleep(&ts, NULL);
	}
	return aj_err_sys(err, AJ_LAYER_CGROUP, "remove \"%s\"", dir);
}
