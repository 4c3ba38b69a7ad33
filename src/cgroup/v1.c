/* cgroup v1 backend: one directory per controller hierarchy. Used on legacy and hybrid hosts
 * (the controllers live in v1 hierarchies even when a cgroup2 mount exists beside them). */
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

/* Controllers can share a hierarchy (cpu,cpuacct is the usual v1 layout): their cgroup is one
 * directory, handled once. True if an earlier used controller has the same directory. */
static bool alias(const struct aj_cgroup *cg, int c)
{
	for (int k = 0; k < c; k++)
		if (cg->used[k] && cg->path[k] && cg->path[c] && !strcmp(cg->path[k], cg->path[c]))
			return true;
	return false;
}

static int make_dir(struct aj_cgroup *cg, int c, const char *name, struct aj_err *err)
{
	const char *parent = cg->env->parent[c];
	char path[700];

	for (int k = 0; k < c; k++)
		if (cg->used[k] && !strcmp(cg->env->parent[k], parent)) {
			cg->path[c] = aj_xstrdup(cg->path[k]);
			cg->used[c] = true;
			return 0;
		}

	if (aj_mkdir_p(parent, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "create parent cgroup \"%s\"", parent);
	snprintf(path, sizeof path, "%s/%s", parent, name);
	if (mkdir(path, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "create cgroup \"%s\"", path);
	cg->path[c] = aj_xstrdup(path);
	cg->used[c] = true;
	return 0;
}

static int write_memory(struct aj_cgroup *cg, uint64_t bytes, struct aj_err *err)
{
	char v[32];
	char sw[700];

	snprintf(v, sizeof v, "%lu", bytes);
	if (aj_cgroup_write(cg->path[AJ_CG_MEMORY], "memory.limit_in_bytes", v, err) < 0)
		return -1;
	/* With swap accounting, memory+swap gets the same bound: a memory limit that can be
	 * escaped into swap is not a limit. Without swap accounting swap is not bounded, and the
	 * plan says so. */
	snprintf(sw, sizeof sw, "%s/memory.memsw.limit_in_bytes", cg->path[AJ_CG_MEMORY]);
	if (access(sw, F_OK) == 0 &&
	    aj_cgroup_write(cg->path[AJ_CG_MEMORY], "memory.memsw.limit_in_bytes", v, err) < 0)
		return -1;
	return 0;
}

static int write_cpu(struct aj_cgroup *cg, uint64_t milli, struct aj_err *err)
{
	char v[32];

	if (aj_cgroup_write(cg->path[AJ_CG_CPU], "cpu.cfs_period_us", "100000", err) < 0)
		return -1;
	snprintf(v, sizeof v, "%lu", milli * 100);
	return aj_cgroup_write(cg->path[AJ_CG_CPU], "cpu.cfs_quota_us", v, err);
}

static int v1_create(struct aj_cgroup *cg, const char *name, const struct aj_cgroup_limits *lim,
		     struct aj_err *err)
{
	unsigned need = aj_cgroup_needed(lim);
	char v[32];

	/* Memory (peak, OOM kills) and CPU accounting are cheap and feed the report, so they
	 * are used whenever usable even without a limit. */
	if (cg->env->usable[AJ_CG_MEMORY])
		need |= 1u << AJ_CG_MEMORY;
	if (cg->env->usable[AJ_CG_CPUACCT])
		need |= 1u << AJ_CG_CPUACCT;
	if (lim->freezable)
		need |= 1u << AJ_CG_FREEZER;
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if ((need & (1u << c)) && make_dir(cg, c, name, err) < 0)
			return -1;
	if (lim->memory && write_memory(cg, lim->memory, err) < 0)
		return -1;
	if (lim->pids) {
		snprintf(v, sizeof v, "%lu", lim->pids);
		if (aj_cgroup_write(cg->path[AJ_CG_PIDS], "pids.max", v, err) < 0)
			return -1;
	}
	if (lim->cpu_milli && write_cpu(cg, lim->cpu_milli, err) < 0)
		return -1;
	return 0;
}

static int v1_attach(struct aj_cgroup *cg, pid_t pid, struct aj_err *err)
{
	char v[32];

	snprintf(v, sizeof v, "%d", (int)pid);
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (cg->used[c] && !alias(cg, c) &&
		    aj_cgroup_write(cg->path[c], "cgroup.procs", v, err) < 0)
			return -1;
	return 0;
}

static int v1_open_join(struct aj_cgroup *cg, struct aj_cgroup_join *j, struct aj_err *err)
{
	char path[760];

	j->clone_into = -1;
	j->n_tasks = 0;
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		if (!cg->used[c] || alias(cg, c))
			continue;
		snprintf(path, sizeof path, "%s/tasks", cg->path[c]);
		j->tasks[j->n_tasks] = open(path, O_WRONLY | O_CLOEXEC);
		if (j->tasks[j->n_tasks] < 0) {
			aj_cgroup_join_close(j);
			return aj_err_sys(err, AJ_LAYER_CGROUP, "open \"%s\"", path);
		}
		j->n_tasks++;
	}
	return 0;
}

/* What stats() reads, by index into cg->stat_fd1; V1_PROCS is kill_all()'s first look. */
enum {
	V1_MEM_PEAK,
	V1_MEM_OOM,
	V1_MEM_CUR,
	V1_PIDS_CUR,
	V1_PIDS_EVENTS,
	V1_CPU_USAGE,
	V1_CPU_STAT,
	V1_PROCS,
	V1__STATS
};
_Static_assert(V1__STATS <= AJ_CG_STAT_FILES, "AJ_CG_STAT_FILES too small");

/* The controller kill_all() looks at first: each task is in every hierarchy used. */
static int first_used(const struct aj_cgroup *cg)
{
	for (int c = 0; c < AJ_CG__COUNT; c++)
		if (cg->used[c] && c != AJ_CG_FREEZER)
			return c;
	return -1;
}

static void v1_open_stats(struct aj_cgroup *cg)
{
	int c = first_used(cg);

	if (cg->used[AJ_CG_MEMORY]) {
		aj_cgroup_open_stat(cg, V1_MEM_PEAK, cg->path[AJ_CG_MEMORY],
				    "memory.max_usage_in_bytes");
		aj_cgroup_open_stat(cg, V1_MEM_OOM, cg->path[AJ_CG_MEMORY], "memory.oom_control");
		aj_cgroup_open_stat(cg, V1_MEM_CUR, cg->path[AJ_CG_MEMORY], "memory.usage_in_bytes");
	}
	if (cg->used[AJ_CG_PIDS]) {
		aj_cgroup_open_stat(cg, V1_PIDS_CUR, cg->path[AJ_CG_PIDS], "pids.current");
		aj_cgroup_open_stat(cg, V1_PIDS_EVENTS, cg->path[AJ_CG_PIDS], "pids.events");
	}
	if (cg->used[AJ_CG_CPUACCT])
		aj_cgroup_open_stat(cg, V1_CPU_USAGE, cg->path[AJ_CG_CPUACCT], "cpuacct.usage");
	if (cg->used[AJ_CG_CPU])
		aj_cgroup_open_stat(cg, V1_CPU_STAT, cg->path[AJ_CG_CPU], "cpu.stat");
	if (c >= 0)
		aj_cgroup_open_stat(cg, V1_PROCS, cg->path[c], "cgroup.procs");
}

static int v1_stats(struct aj_cgroup *cg, struct aj_cgroup_stats *st, struct aj_err *err)
{
	const char *mem = cg->path[AJ_CG_MEMORY], *pids = cg->path[AJ_CG_PIDS];
	uint64_t ns;

	(void)err;
	memset(st, 0, sizeof *st);
	if (cg->used[AJ_CG_MEMORY]) {
		st->have_memory_peak = aj_cgroup_stat_u64(cg, V1_MEM_PEAK, mem,
							  "memory.max_usage_in_bytes",
							  &st->memory_peak) == 0;
		st->have_oom = aj_cgroup_stat_keyed(cg, V1_MEM_OOM, mem, "memory.oom_control",
						    "oom_kill", &st->oom_kills) == 0;
		st->have_memory_current = aj_cgroup_stat_u64(cg, V1_MEM_CUR, mem,
							     "memory.usage_in_bytes",
							     &st->memory_current) == 0;
	}
	if (cg->used[AJ_CG_PIDS]) {
		st->have_pids_current = aj_cgroup_stat_u64(cg, V1_PIDS_CUR, pids, "pids.current",
							   &st->pids_current) == 0;
		st->have_pids_events = aj_cgroup_stat_keyed(cg, V1_PIDS_EVENTS, pids,
							    "pids.events", "max",
							    &st->pids_max_hits) == 0;
	}
	if (cg->used[AJ_CG_CPUACCT] &&
	    aj_cgroup_stat_u64(cg, V1_CPU_USAGE, cg->path[AJ_CG_CPUACCT], "cpuacct.usage",
			       &ns) == 0) {
		st->have_cpu = true;
		st->cpu_usec = ns / 1000;
	}
	if (cg->used[AJ_CG_CPU])
		aj_cgroup_stat_keyed(cg, V1_CPU_STAT, cg->path[AJ_CG_CPU], "cpu.stat",
				     "nr_throttled", &st->nr_throttled);
	return 0;
}

static void v1_sample(struct aj_cgroup *cg, struct aj_cgroup_sampler *s,
		      struct aj_cgroup_stats *st)
{
	uint64_t ns;

	memset(st, 0, sizeof *st);
	if (cg->used[AJ_CG_MEMORY])
		st->have_memory_current =
			aj_cgroup_sample_u64(&s->fd1[0], cg->path[AJ_CG_MEMORY],
					     "memory.usage_in_bytes", &st->memory_current) == 0;
	if (cg->used[AJ_CG_PIDS])
		st->have_pids_current = aj_cgroup_sample_u64(&s->fd1[1], cg->path[AJ_CG_PIDS],
							     "pids.current",
							     &st->pids_current) == 0;
	if (cg->used[AJ_CG_CPUACCT] &&
	    aj_cgroup_sample_u64(&s->fd1[2], cg->path[AJ_CG_CPUACCT], "cpuacct.usage", &ns) == 0) {
		st->have_cpu = true;
		st->cpu_usec = ns / 1000;
	}
}

/* The freezer's state as the kernel reports it now (reading it re-checks the tasks). */
static bool freezer_reads(const char *dir, const char *want)
{
	char path[760], buf[32];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof path, "%s/freezer.state", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return !strcmp(buf, want);
}

static int v1_freeze(struct aj_cgroup *cg, bool frozen, struct aj_err *err)
{
	const char *dir = cg->path[AJ_CG_FREEZER];

	if (!cg->used[AJ_CG_FREEZER])
		return aj_err_set(err, AJ_LAYER_CGROUP, ENOTSUP,
				  "this sandbox has no freezer cgroup: %s",
				  cg->env->why[AJ_CG_FREEZER][0] ? cg->env->why[AJ_CG_FREEZER]
								  : "not created");
	if (!frozen) /* thawing takes effect at once */
		return aj_cgroup_write(dir, "freezer.state", "THAWED", err);
	/* Writing FROZEN only starts freezing; the state reads FREEZING until every task has
	 * stopped, and a snapshot must not copy a workspace that is still being written. A task
	 * forked while the freezer walks the cgroup can escape that walk and leave it FREEZING
	 * for good, so FROZEN is written again on every round, and now and then the cgroup is
	 * thawed for a moment first (as runc's v1 freezer does). */
	for (uint64_t i = 0, end = aj_now_monotonic_us() + AJ_CGROUP_FREEZE_WAIT_MS * 1000ULL;
	     aj_now_monotonic_us() < end; i++) {
		struct timespec ts = {0, i % 50 == 49 ? 10 * 1000 * 1000 : 100 * 1000};
		if (i % 50 == 49) {
			aj_cgroup_write(dir, "freezer.state", "THAWED", NULL);
			nanosleep(&ts, NULL);
		}
		if (aj_cgroup_write(dir, "freezer.state", "FROZEN", err) < 0)
			return -1;
		if (freezer_reads(dir, "FROZEN"))
			return 0;
		nanosleep(&ts, NULL);
	}
	aj_cgroup_write(dir, "freezer.state", "THAWED", NULL); /* not left half frozen */
	return aj_err_set(err, AJ_LAYER_CGROUP, ETIMEDOUT,
			  "freezer cgroup \"%s\" did not reach FROZEN within %d ms; thawed again",
			  dir, AJ_CGROUP_FREEZE_WAIT_MS);
}

static int v1_kill_frozen(struct aj_cgroup *cg, struct aj_err *err)
{
	int r = 0;

	if (cg->used[AJ_CG_FREEZER])
		aj_cgroup_write(cg->path[AJ_CG_FREEZER], "freezer.state", "FROZEN", NULL);
	for (int c = 0; c < AJ_CG__COUNT && r == 0; c++)
		if (cg->used[c] && c != AJ_CG_FREEZER) {
			if (cg->used[AJ_CG_FREEZER]) {
				aj_cgroup_kill_procs_once(cg->path[c]);
				aj_cgroup_write(cg->path[AJ_CG_FREEZER], "freezer.state", "THAWED",
						NULL);
			}
			r = aj_cgroup_kill_procs(cg->path[c], err);
			break;
		}
	return r;
}

/* Whether the cgroup of controller c lists no task (unreadable: not known to be empty),
 * through the descriptor open_stats() opened when there is one. A second read through it
 * within a second may get the kernel's cached list of the first: one that listed tasks
 * costs another kill round; an empty one stays true, as nothing joins an empty cgroup. */
static bool v1_empty(struct aj_cgroup *cg, int c)
{
	char path[760], buf[2];
	_cleanup_free_ char *s = NULL;

	if (c == first_used(cg) && cg->stat_fd1[V1_PROCS])
		return pread(cg->stat_fd1[V1_PROCS] - 1, buf, sizeof buf, 0) == 0;
	snprintf(path, sizeof path, "%s/cgroup.procs", cg->path[c]);
	s = aj_read_file(path, 1 << 20, NULL);
	return s && !s[0];
}

static int v1_kill_all(struct aj_cgroup *cg, struct aj_err *err)
{
	/* An empty cgroup stays empty (nothing in it can fork, and only root moves tasks in):
	 * nothing to freeze. That is the usual case, once the sandbox's init is gone and took
	 * its pid namespace along; freezing and thawing it cost a stop tens of milliseconds.
	 * Otherwise frozen tasks cannot fork between our read of cgroup.procs and the kill;
	 * SIGKILL is delivered to frozen tasks once they are thawed. */
	int c = first_used(cg);

	return c < 0 || v1_empty(cg, c) ? 0 : v1_kill_frozen(cg, err);
}

static int v1_destroy(struct aj_cgroup *cg, struct aj_err *err)
{
	int r = 0;

	aj_cgroup_close_stats(cg);

	for (int c = AJ_CG__COUNT; c-- > 0;) {
		if (!cg->used[c])
			continue;
		if (!alias(cg, c) && aj_cgroup_rmdir(cg->path[c], err) < 0)
			r = -1;
		else
			cg->used[c] = false;
	}
	return r;
}

static int v1_set_limits(struct aj_cgroup *cg, const struct aj_cgroup_limits *lim,
			 unsigned which, struct aj_err *err)
{
	static const int ctrls[] = {AJ_CG_MEMORY, AJ_CG_PIDS, AJ_CG_CPU};
	char v[32] = "", sw[700];

	for (size_t i = 0; i < sizeof ctrls / sizeof ctrls[0]; i++)
		if ((which & (1u << ctrls[i])) && !cg->path[ctrls[i]])
			return aj_err_set(err, AJ_LAYER_CGROUP, ENOTSUP,
					  "the sandbox's cgroup has no %s controller (it was made "
					  "without a %s limit): stop it, update it and start it",
					  aj_cgroup_ctrl_name(ctrls[i]), aj_cgroup_ctrl_name(ctrls[i]));
	if (which & (1u << AJ_CG_MEMORY)) {
		const char *m = cg->path[AJ_CG_MEMORY];
		uint64_t cur = 0;
		/* v1's "no limit" is the largest page-aligned value; memsw must stay >= memory:
		 * raised first when the limit goes up, lowered after when it goes down. */
		uint64_t bytes = lim->memory ? lim->memory : (uint64_t)INT64_MAX / 4096 * 4096;
		bool memsw;

		if (lim->memory && aj_cgroup_read_u64(m, "memory.usage_in_bytes", &cur) == 0 &&
		    cur > lim->memory)
			return aj_err_set(err, AJ_LAYER_CGROUP, EBUSY,
					  "memory: %lu bytes asked, the sandbox uses %lu now", lim->memory,
					  cur);
		snprintf(v, sizeof v, "%lu", bytes);
		snprintf(sw, sizeof sw, "%s/memory.memsw.limit_in_bytes", m);
		memsw = access(sw, F_OK) == 0;
		if (memsw && aj_cgroup_write(m, "memory.memsw.limit_in_bytes", v, NULL) < 0) {
			/* lowering: memory first */
			if (aj_cgroup_write(m, "memory.limit_in_bytes", v, err) < 0 ||
			    aj_cgroup_write(m, "memory.memsw.limit_in_bytes", v, err) < 0)
				return -1;
		} else if (aj_cgroup_write(m, "memory.limit_in_bytes", v, err) < 0) {
			return -1;
		}
	}
	if (which & (1u << AJ_CG_PIDS)) {
		if (lim->pids)
			snprintf(v, sizeof v, "%lu", lim->pids);
		if (aj_cgroup_write(cg->path[AJ_CG_PIDS], "pids.max", lim->pids ? v : "max", err) < 0)
			return -1;
	}
	if (which & (1u << AJ_CG_CPU)) {
		if (lim->cpu_milli)
			return write_cpu(cg, lim->cpu_milli, err);
		return aj_cgroup_write(cg->path[AJ_CG_CPU], "cpu.cfs_quota_us", "-1", err);
	}
	return 0;
}

const struct aj_cgroup_ops aj_cgroup_v1_ops = {
	.name = "v1",
	.create = v1_create,
	.attach = v1_attach,
	.open_join = v1_open_join,
	.stats = v1_stats,
	.open_stats = v1_open_stats,
	.sample = v1_sample,
	.freeze = v1_freeze,
	.kill_all = v1_kill_all,
	.destroy = v1_destroy,
	.set_limits = v1_set_limits,
};
