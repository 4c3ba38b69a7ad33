/* cgroup v2 backend: one directory in the unified hierarchy. */
#include "cgroup/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"

static const int v2_ctrls[] = {AJ_CG_MEMORY, AJ_CG_PIDS, AJ_CG_CPU};

/* In v2 a parent can only hand a controller to its children if it has no processes of its own
 * ("no internal processes"). A delegated cgroup that agentjail itself runs in (rootless, e.g.
 * under `systemd-run --user --scope -p Delegate=yes`) has one: ours. Move this process into a
 * leaf so that the parent becomes a pure inner node. */
static int move_self_to_leaf(const char *parent, struct aj_err *err)
{
	char leaf[700], pid[32];

	snprintf(leaf, sizeof leaf, "%s/agentjail-supervisors", parent);
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "create leaf cgroup \"%s\"", leaf);
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	return aj_cgroup_write(leaf, "cgroup.procs", pid, err);
}

static int enable_controllers(const char *dir, unsigned need, struct aj_err *err)
{
	char buf[64] = "";

	for (size_t i = 0; i < AJ_ARRAY_SIZE(v2_ctrls); i++)
		if (need & (1u << v2_ctrls[i])) {
			strcat(buf, buf[0] ? " +" : "+");
			strcat(buf, aj_cgroup_ctrl_name(v2_ctrls[i]));
		}
	if (!buf[0])
		return 0;
	if (aj_cgroup_write(dir, "cgroup.subtree_control", buf, err) == 0)
		return 0;
	if (err && err->errnum == EBUSY) {
		if (move_self_to_leaf(dir, err) < 0)
			return aj_err_hint(err, "the parent cgroup \"%s\" has processes; move them "
						"into a leaf cgroup or pass --cgroup-parent",
					   dir);
		return aj_cgroup_write(dir, "cgroup.subtree_control", buf, err);
	}
	return -1;
}

/* Enables the controllers on every level from the hierarchy root down to the parent. */
static int prepare_parent(const struct aj_cgroup_env *env, unsigned need, struct aj_err *err)
{
	const char *parent = env->parent[0];
	size_t mlen = strlen(env->v2_mount);
	char path[512];

	if (aj_mkdir_p(parent, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "create parent cgroup \"%s\"", parent);
	snprintf(path, sizeof path, "%s", parent);
	for (char *p = path + mlen; ; p++) {
		if (*p == '/' || *p == '\0') {
			char saved = *p;
			struct stat st;
			*p = '\0';
			/* Levels we may not write (above a delegated subtree) must already offer the
			 * controllers; detection checked that they are listed. */
			if (access(path, W_OK) == 0 && stat(path, &st) == 0 &&
			    enable_controllers(path[0] ? path : "/", need, err) < 0)
				return -1;
			*p = saved;
			if (saved == '\0')
				break;
		}
	}
	return 0;
}

static int v2_create(struct aj_cgroup *cg, const char *name, const struct aj_cgroup_limits *lim,
		     struct aj_err *err)
{
	unsigned need = aj_cgroup_needed(lim);
	char path[700], v[64];

	if (cg->env->usable[AJ_CG_MEMORY])
		need |= 1u << AJ_CG_MEMORY; /* accounting for the report */
	if (prepare_parent(cg->env, need, err) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/%s", cg->env->parent[0], name);
	if (mkdir(path, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "create cgroup \"%s\"", path);
	/* One directory serves every controller; path[0] is canonical, the rest alias it. */
	for (int c = 0; c < AJ_CG__COUNT; c++)
		cg->path[c] = aj_xstrdup(path);
	cg->used[0] = true;
	if (lim->memory) {
		snprintf(v, sizeof v, "%lu", lim->memory);
		if (aj_cgroup_write(path, "memory.max", v, err) < 0)
			return -1;
		/* Swapping out past the limit would turn a memory bomb into a disk bomb. */
		char sw[760];
		snprintf(sw, sizeof sw, "%s/memory.swap.max", path);
		if (access(sw, F_OK) == 0 && aj_cgroup_write(path, "memory.swap.max", "0", err) < 0)
			return -1;
	}
	if (lim->pids) {
		snprintf(v, sizeof v, "%lu", lim->pids);
		if (aj_cgroup_write(path, "pids.max", v, err) < 0)
			return -1;
	}
	if (lim->cpu_milli) {
		snprintf(v, sizeof v, "%lu 100000", lim->cpu_milli * 100);
		if (aj_cgroup_write(path, "cpu.max", v, err) < 0)
			return -1;
	}
	return 0;
}

static int v2_attach(struct aj_cgroup *cg, pid_t pid, struct aj_err *err)
{
	char v[32];

	snprintf(v, sizeof v, "%d", (int)pid);
	return aj_cgroup_write(cg->path[0], "cgroup.procs", v, err);
}

static int v2_open_join(struct aj_cgroup *cg, struct aj_cgroup_join *j, struct aj_err *err)
{
	j->n_tasks = 0;
	j->clone_into = open(cg->path[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->clone_into < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "open \"%s\"", cg->path[0]);
	return 0;
}

/* What stats() reads, by index into cg->stat_fd1. */
enum { V2_MEM_PEAK, V2_MEM_CUR, V2_PIDS_CUR, V2_MEM_EVENTS, V2_PIDS_EVENTS, V2_CPU_STAT, V2__STATS };
_Static_assert(V2__STATS <= AJ_CG_STAT_FILES, "AJ_CG_STAT_FILES too small");

static void v2_open_stats(struct aj_cgroup *cg)
{
	const char *p = cg->path[0];

	aj_cgroup_open_stat(cg, V2_MEM_PEAK, p, "memory.peak");
	aj_cgroup_open_stat(cg, V2_MEM_CUR, p, "memory.current");
	aj_cgroup_open_stat(cg, V2_PIDS_CUR, p, "pids.current");
	aj_cgroup_open_stat(cg, V2_MEM_EVENTS, p, "memory.events");
	aj_cgroup_open_stat(cg, V2_PIDS_EVENTS, p, "pids.events");
	aj_cgroup_open_stat(cg, V2_CPU_STAT, p, "cpu.stat");
}

static int v2_stats(struct aj_cgroup *cg, struct aj_cgroup_stats *st, struct aj_err *err)
{
	const char *p = cg->path[0];

	(void)err;
	memset(st, 0, sizeof *st);
	st->have_memory_peak =
		aj_cgroup_stat_u64(cg, V2_MEM_PEAK, p, "memory.peak", &st->memory_peak) == 0;
	st->have_memory_current = aj_cgroup_stat_u64(cg, V2_MEM_CUR, p, "memory.current",
						     &st->memory_current) == 0;
	st->have_pids_current =
		aj_cgroup_stat_u64(cg, V2_PIDS_CUR, p, "pids.current", &st->pids_current) == 0;
	st->have_oom = aj_cgroup_stat_keyed(cg, V2_MEM_EVENTS, p, "memory.events", "oom_kill",
					    &st->oom_kills) == 0;
	st->have_pids_events = aj_cgroup_stat_keyed(cg, V2_PIDS_EVENTS, p, "pids.events", "max",
						    &st->pids_max_hits) == 0;
	st->have_cpu = aj_cgroup_stat_keyed(cg, V2_CPU_STAT, p, "cpu.stat", "usage_usec",
					    &st->cpu_usec) == 0;
	aj_cgroup_stat_keyed(cg, V2_CPU_STAT, p, "cpu.stat", "nr_throttled", &st->nr_throttled);
	return 0;
}

static void v2_sample(struct aj_cgroup *cg, struct aj_cgroup_sampler *s,
		      struct aj_cgroup_stats *st)
{
	const char *p = cg->path[0];

	memset(st, 0, sizeof *st);
	st->have_memory_current =
		aj_cgroup_sample_u64(&s->fd1[0], p, "memory.current", &st->memory_current) == 0;
	st->have_pids_current =
		aj_cgroup_sample_u64(&s->fd1[1], p, "pids.current", &st->pids_current) == 0;
	st->have_cpu =
		aj_cgroup_sample_keyed(&s->fd1[2], p, "cpu.stat", "usage_usec", &st->cpu_usec) == 0;
}

static int v2_freeze(struct aj_cgroup *cg, bool frozen, struct aj_err *err)
{
	const char *p = cg->path[0];

	if (aj_cgroup_write(p, "cgroup.freeze", frozen ? "1" : "0", err) < 0)
		return -1;
	/* Freezing is asynchronous; report success once cgroup.events says so (bounded). An
	 * unreadable cgroup.events is no success: a snapshot must not copy a running sandbox. */
	for (int i = 0; i < AJ_CGROUP_FREEZE_WAIT_MS; i++) {
		uint64_t v;
		struct timespec ts = {0, 1000 * 1000};
		if (aj_cgroup_read_keyed(p, "cgroup.events", "frozen", &v) == 0 &&
		    v == (frozen ? 1u : 0u))
			return 0;
		nanosleep(&ts, NULL);
	}
	if (frozen)
		aj_cgroup_write(p, "cgroup.freeze", "0", NULL); /* not left half frozen */
	return aj_err_set(err, AJ_LAYER_CGROUP, ETIMEDOUT, "cgroup \"%s\" did not %s within %d ms%s",
			  p, frozen ? "freeze" : "thaw", AJ_CGROUP_FREEZE_WAIT_MS,
			  frozen ? "; thawed again" : "");
}

static int v2_kill_all(struct aj_cgroup *cg, struct aj_err *err)
{
	const char *p = cg->path[0];
	char kill_file[760];

	snprintf(kill_file, sizeof kill_file, "%s/cgroup.kill", p);
	/* cgroup.kill (5.14+) kills atomically, forks in flight included. */
	if (access(kill_file, F_OK) == 0)
		aj_cgroup_write(p, "cgroup.kill", "1", NULL);
	return aj_cgroup_kill_procs(p, err);
}

static int v2_destroy(struct aj_cgroup *cg, struct aj_err *err)
{
	aj_cgroup_close_stats(cg);
	if (!cg->used[0])
		return 0;
	if (aj_cgroup_rmdir(cg->path[0], err) < 0)
		return -1;
	cg->used[0] = false;
	return 0;
}

static int has_file(const char *dir, const char *file)
{
	char path[800];

	snprintf(path, sizeof path, "%s/%s", dir, file);
	return access(path, F_OK) == 0;
}

static int v2_set_limits(struct aj_cgroup *cg, const struct aj_cgroup_limits *lim,
			 unsigned which, struct aj_err *err)
{
	static const struct {
		int ctrl;
		const char *file;
	} rows[] = {{AJ_CG_MEMORY, "memory.max"}, {AJ_CG_PIDS, "pids.max"}, {AJ_CG_CPU, "cpu.max"}};
	const char *p = cg->path[0];
	char v[64] = "";

	/* Every file first: a change either applies whole or not at all. */
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if ((which & (1u << rows[i].ctrl)) && (!p || !has_file(p, rows[i].file)))
			return aj_err_set(err, AJ_LAYER_CGROUP, ENOTSUP,
					  "the sandbox's cgroup has no %s controller (it was made "
					  "without a %s limit): stop it, update it and start it",
					  aj_cgroup_ctrl_name(rows[i].ctrl),
					  aj_cgroup_ctrl_name(rows[i].ctrl));
	if ((which & (1u << AJ_CG_MEMORY)) && lim->memory) {
		uint64_t cur = 0;
		if (aj_cgroup_read_u64(p, "memory.current", &cur) == 0 && cur > lim->memory)
			return aj_err_set(err, AJ_LAYER_CGROUP, EBUSY,
					  "memory: %lu bytes asked, the sandbox uses %lu now", lim->memory,
					  cur);
	}
	if (which & (1u << AJ_CG_MEMORY)) {
		if (lim->memory)
			snprintf(v, sizeof v, "%lu", lim->memory);
		if (aj_cgroup_write(p, "memory.max", lim->memory ? v : "max", err) < 0)
			return -1;
		/* as at create: a limit that swap escapes is none */
		if (lim->memory && has_file(p, "memory.swap.max") &&
		    aj_cgroup_write(p, "memory.swap.max", "0", err) < 0)
			return -1;
	}
	if (which & (1u << AJ_CG_PIDS)) {
		if (lim->pids)
			snprintf(v, sizeof v, "%lu", lim->pids);
		if (aj_cgroup_write(p, "pids.max", lim->pids ? v : "max", err) < 0)
			return -1;
	}
	if (which & (1u << AJ_CG_CPU)) {
		if (lim->cpu_milli)
			snprintf(v, sizeof v, "%lu 100000", lim->cpu_milli * 100);
		if (aj_cgroup_write(p, "cpu.max", lim->cpu_milli ? v : "max 100000", err) < 0)
			return -1;
	}
	return 0;
}

const struct aj_cgroup_ops aj_cgroup_v2_ops = {
	.name = "v2",
	.create = v2_create,
	.attach = v2_attach,
	.open_join = v2_open_join,
	.stats = v2_stats,
	.open_stats = v2_open_stats,
	.sample = v2_sample,
	.freeze = v2_freeze,
	.kill_all = v2_kill_all,
	.destroy = v2_destroy,
	.set_limits = v2_set_limits,
};
