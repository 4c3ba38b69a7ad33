/* Resource control through cgroups, cgroup v2 and v1 behind one table of operations.
 *
 * aj_cgroup_detect() runs once per process and decides the backend: v2 when /sys/fs/cgroup is
 * a cgroup2 mount (unified hierarchy, the norm), v1 otherwise (legacy or hybrid hierarchies:
 * the v1 controllers do the work, a controller-less cgroup2 mount is ignored). It also finds,
 * per controller, the parent cgroup where sandbox cgroups are created and whether this process
 * may write there; nothing is re-guessed per call.
 *
 * A struct aj_cgroup is one sandbox's cgroup. It owns its path strings; aj_cgroup_destroy()
 * removes the directories and aj_cgroup_free() releases memory (destroy first).
 */
#ifndef AJ_CGROUP_CGROUP_H
#define AJ_CGROUP_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

enum aj_cgroup_mode { AJ_CGROUP_NONE = 0, AJ_CGROUP_V1, AJ_CGROUP_V2 };

enum aj_cg_ctrl {
	AJ_CG_MEMORY = 0,
	AJ_CG_PIDS,
	AJ_CG_CPU,
	AJ_CG_CPUACCT, /* v1 only: CPU time accounting */
	AJ_CG_FREEZER, /* v1 only: v2 has cgroup.freeze in every cgroup */
	AJ_CG__COUNT
};

struct aj_cgroup_limits {
	uint64_t memory;    /* bytes, 0 = none */
	uint64_t pids;      /* 0 = none */
	uint64_t cpu_milli; /* 0 = none */
	bool freezable;     /* also join the freezer (v1) so the sandbox can be paused */
};

struct aj_cgroup_stats {
	bool have_memory_peak, have_cpu, have_oom, have_pids_events;
	bool have_memory_current, have_pids_current;
	uint64_t memory_current; /* bytes the cgroup uses now (page cache included) */
	uint64_t pids_current;   /* tasks now */
	uint64_t memory_peak;   /* bytes */
	uint64_t cpu_usec;      /* user + system of every task that ran in the cgroup */
	uint64_t oom_kills;     /* tasks killed by the OOM killer for the memory limit */
	uint64_t pids_max_hits; /* forks refused by the pids limit */
	uint64_t nr_throttled;  /* CPU quota periods in which the cgroup was throttled */
};

struct aj_cgroup_env {
	enum aj_cgroup_mode mode;
	/* Absolute host directory under which sandbox cgroups are created, per controller
	 * (v2: the same directory for all). Empty when the controller is unavailable. */
	char parent[AJ_CG__COUNT][512];
	bool usable[AJ_CG__COUNT];
	char why[AJ_CG__COUNT][256]; /* the failed probe, when !usable */
	char v2_mount[256];
	bool swap_limited; /* a memory limit also bounds swap (memsw / swap.max exist) */
	const struct aj_cgroup_ops *ops;
};

/* How many files stats() reads at most. */
#define AJ_CG_STAT_FILES 8

struct aj_cgroup {
	const struct aj_cgroup_env *env;
	char *path[AJ_CG__COUNT]; /* NULL for controllers not used by this cgroup */
	bool used[AJ_CG__COUNT];
	/* The files stats() and kill_all() read, opened ahead by open_stats(), each stored plus
	 * one (0: read by path at the time); closed by destroy() and aj_cgroup_free(). */
	int stat_fd1[AJ_CG_STAT_FILES];
};

/* How a freshly cloned sandbox enters its cgroup without the cost of a migration by someone
 * else: on v2 it is cloned straight into it (CLONE_INTO_CGROUP on `clone_into`); on v1 the
 * single-threaded child writes "0" into each controller's "tasks" file (`tasks`), which
 * moves only itself and so avoids the global threadgroup lock whose RCU grace period costs
 * milliseconds per launch. The descriptors are opened by the supervisor, with its rights. */
struct aj_cgroup_join {
	int clone_into;
	int tasks[AJ_CG__COUNT];
	size_t n_tasks;
};

/* How long freeze() waits for the kernel: frozen within a few ms normally, longer only when
 * tasks sit in uninterruptible sleep (NFS, FUSE). */
#define AJ_CGROUP_FREEZE_WAIT_MS 2000

/* Descriptors a periodic sampler keeps open on one cgroup's figures (memory in use, tasks,
 * CPU time), so that a sample is three reads from offset 0 (a cgroup file is generated anew
 * at each read from there) instead of six files opened by path. Each is stored plus one, so
 * that a zeroed struct holds none; aj_cgroup_sampler_close() closes them. */
struct aj_cgroup_sampler {
	int fd1[3];
};

struct aj_cgroup_ops {
	const char *name;
	/* Creates the cgroup `name` under the parents and writes the limits. Only controllers
	 * with a limit (plus accounting where cheap) are used. */
	int (*create)(struct aj_cgroup *cg, const char *name, const struct aj_cgroup_limits *lim,
		      struct aj_err *err);
	int (*attach)(struct aj_cgroup *cg, pid_t pid, struct aj_err *err);
	int (*open_join)(struct aj_cgroup *cg, struct aj_cgroup_join *j, struct aj_err *err);
	int (*stats)(struct aj_cgroup *cg, struct aj_cgroup_stats *st, struct aj_err *err);
	/* Opens the files stats() (and kill_all()'s first look) will read, so that reading them
	 * at the end of a run is one pread each, without a path walk through the hierarchy; best
	 * effort: a file that does not open is read by path then, as without it. */
	void (*open_stats)(struct aj_cgroup *cg);
	/* Only memory_current, pids_current and cpu_usec (with their have_ flags), through the
	 * descriptors s keeps; for the metrics' periodic samples. */
	void (*sample)(struct aj_cgroup *cg, struct aj_cgroup_sampler *s,
		       struct aj_cgroup_stats *st);
	/* Returns once the kernel reports every task frozen (or thawed), within
	 * AJ_CGROUP_FREEZE_WAIT_MS; a freeze that does not complete is thawed again and fails. */
	int (*freeze)(struct aj_cgroup *cg, bool frozen, struct aj_err *err);
	/* SIGKILL every task in the cgroup and wait (bounded) until it is empty. */
	int (*kill_all)(struct aj_cgroup *cg, struct aj_err *err);
	int (*destroy)(struct aj_cgroup *cg, struct aj_err *err);
	/* Changes the limits of a live cgroup, those `which` names (bits of enum aj_cg_ctrl:
	 * memory, pids, cpu; 0 in lim lifts one). A controller the cgroup was made without
	 * (no limit at create) is ENOTSUP; memory below what the cgroup uses now is EBUSY with
	 * both figures, and nothing is changed. */
	int (*set_limits)(struct aj_cgroup *cg, const struct aj_cgroup_limits *lim, unsigned which,
			  struct aj_err *err);
};

/* Detects once and caches. `parent_override` (NULL for the default) is a cgroup path
 * relative to the hierarchy root(s), e.g. "/agentjail" (from --cgroup-parent).
 * `root` (NULL for "/sys/fs/cgroup") lets tests point detection at a simulated tree. */
const struct aj_cgroup_env *aj_cgroup_detect(const char *root, const char *parent_override);
/* Detection without the cache, for tests. Fills env. */
void aj_cgroup_detect_into(struct aj_cgroup_env *env, const char *root,
			   const char *parent_override, const char *proc_self_cgroup);

const char *aj_cgroup_ctrl_name(int ctrl);
const char *aj_cgroup_mode_name(int mode);

/* Which controllers the limits need (bit i = enum aj_cg_ctrl i). */
unsigned aj_cgroup_needed(const struct aj_cgroup_limits *lim);

void aj_cgroup_free(struct aj_cgroup *cg);

/* Removes empty cgroups named PREFIX* under the parents, left by supervisors that were
 * killed before they could clean up (SIGKILL). Only directories older than min_age_s are
 * touched, so a concurrent launch between mkdir and join is never raced. */
void aj_cgroup_sweep(const struct aj_cgroup_env *env, const char *prefix, int min_age_s);

/* Removes the empty cgroup `name` under each parent, if there: a targeted sweep, which does
 * not read directories that may hold thousands of sandboxes' cgroups. */
void aj_cgroup_remove_stale(const struct aj_cgroup_env *env, const char *name);

/* Child side of struct aj_cgroup_join; async-signal-safe. 0 or -errno. */
int aj_cgroup_join_self(const struct aj_cgroup_join *j);
void aj_cgroup_join_close(struct aj_cgroup_join *j);

extern const struct aj_cgroup_ops aj_cgroup_v1_ops;
extern const struct aj_cgroup_ops aj_cgroup_v2_ops;

/* Shared helpers for the backends. */
int aj_cgroup_write(const char *dir, const char *file, const char *value, struct aj_err *err);
/* Reads "key value" lines (memory.events, pids.events, cpu.stat); -1 if missing. */
int aj_cgroup_read_keyed(const char *dir, const char *file, const char *key, uint64_t *out);
int aj_cgroup_read_u64(const char *dir, const char *file, uint64_t *out);
/* The same through a sampler's descriptor *fd1 (opened at first use; reopened once if a read
 * fails). */
int aj_cgroup_sample_u64(int *fd1, const char *dir, const char *file, uint64_t *out);
int aj_cgroup_sample_keyed(int *fd1, const char *dir, const char *file, const char *key,
			   uint64_t *out);
void aj_cgroup_sampler_close(struct aj_cgroup_sampler *s);
/* dir/file into cg->stat_fd1[i] (see open_stats()), unless already open. */
void aj_cgroup_open_stat(struct aj_cgroup *cg, int i, const char *dir, const char *file);
/* The same reads as aj_cgroup_read_u64() and _keyed(), through cg->stat_fd1[i] when it is
 * open, by path otherwise. */
int aj_cgroup_stat_u64(struct aj_cgroup *cg, int i, const char *dir, const char *file,
		       uint64_t *out);
int aj_cgroup_stat_keyed(struct aj_cgroup *cg, int i, const char *dir, const char *file,
			 const char *key, uint64_t *out);
void aj_cgroup_close_stats(struct aj_cgroup *cg);
/* SIGKILLs every pid listed in dir/cgroup.procs until it reads empty (bounded). */
int aj_cgroup_kill_procs(const char *dir, struct aj_err *err);
/* One round of the above: returns how many tasks were signalled, or -1. */
int aj_cgroup_kill_procs_once(const char *dir);
int aj_cgroup_rmdir(const char *dir, struct aj_err *err);

#endif
