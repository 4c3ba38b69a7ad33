/* The cgroup v1 backend against simulated hierarchies (cgroup_sim.h), one per controller
 * list: which hierarchies a sandbox joins, the limit files it writes, the statistics it parses,
 * the freezer, and removal. Includes the common layout where cpu and cpuacct share one
 * hierarchy ("cpu,cpuacct"). */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "cgroup/cgroup.h"
#include "cgroup_sim.h"
#include "unit.h"

static struct aj_cgroup_env env;

/* hier[c]: the hierarchy directory name under SIM/v1 for controller c ("cpu,cpuacct"). */
static void make_env(const char *const hier[AJ_CG__COUNT])
{
	memset(&env, 0, sizeof env);
	env.mode = AJ_CGROUP_V1;
	env.ops = &aj_cgroup_v1_ops;
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		char root[400];
		snprintf(root, sizeof root, "%s/v1/%s", sim_root, hier[c]);
		mkdir(root, 0755); /* the hierarchy root (may already exist when shared) */
		snprintf(env.parent[c], sizeof env.parent[c], "%s/agentjail", root);
		env.usable[c] = true;
	}
}

static const char *const separate[AJ_CG__COUNT] = {
	[AJ_CG_MEMORY] = "memory", [AJ_CG_PIDS] = "pids", [AJ_CG_CPU] = "cpu",
	[AJ_CG_CPUACCT] = "cpuacct", [AJ_CG_FREEZER] = "freezer",
};

static void full(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {
		.memory = 256ULL << 20, .pids = 64, .cpu_milli = 500, .freezable = true};
	struct aj_cgroup_join j = {.clone_into = -1};
	struct aj_err err;
	bool all_used = true, paths_ok = true;

	make_env(separate);
	CHECK(env.ops->create(&cg, "run-1", &lim, &err) == 0,
	      "create with memory, pids, cpu and the freezer");
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		char want[700];
		snprintf(want, sizeof want, "%s/run-1", env.parent[c]);
		all_used = all_used && cg.used[c];
		paths_ok = paths_ok && cg.path[c] && strcmp(cg.path[c], want) == 0 && sim_exists(want);
	}
	CHECK(all_used, "every controller is used (cpuacct for CPU time, freezer for pause)");
	CHECK(paths_ok, "one PARENT/NAME directory per hierarchy");
	CHECK_STR(sim_read(cg.path[AJ_CG_MEMORY], "memory.limit_in_bytes"), "268435456",
		  "memory.limit_in_bytes");
	CHECK_STR(sim_read(cg.path[AJ_CG_MEMORY], "memory.memsw.limit_in_bytes"), "268435456",
		  "memory+swap gets the same bound: no escape to swap");
	CHECK_STR(sim_read(cg.path[AJ_CG_PIDS], "pids.max"), "64", "pids.max");
	CHECK_STR(sim_read(cg.path[AJ_CG_CPU], "cpu.cfs_period_us"), "100000", "cpu.cfs_period_us");
	CHECK_STR(sim_read(cg.path[AJ_CG_CPU], "cpu.cfs_quota_us"), "50000",
		  "cpu.cfs_quota_us is half the period for 0.5 CPUs");

	CHECK(env.ops->open_join(&cg, &j, &err) == 0 && j.n_tasks == AJ_CG__COUNT &&
		      j.clone_into == -1,
	      "open_join opens one tasks file per hierarchy and no clone_into descriptor");
	aj_cgroup_join_close(&j);
	CHECK(j.n_tasks == 0, "join_close releases them");

	CHECK(env.ops->attach(&cg, 4242, &err) == 0 &&
		      strcmp(sim_read(cg.path[AJ_CG_PIDS], "cgroup.procs"), "4242") == 0 &&
		      strcmp(sim_read(cg.path[AJ_CG_FREEZER], "cgroup.procs"), "4242") == 0,
	      "attach writes the pid into every hierarchy");
	for (int c = 0; c < AJ_CG__COUNT; c++)
		sim_write(cg.path[c], "cgroup.procs", "");

	CHECK(env.ops->freeze(&cg, true, &err) == 0 &&
		      strcmp(sim_read(cg.path[AJ_CG_FREEZER], "freezer.state"), "FROZEN") == 0,
	      "freeze writes FROZEN");
	CHECK(env.ops->freeze(&cg, false, &err) == 0 &&
		      strcmp(sim_read(cg.path[AJ_CG_FREEZER], "freezer.state"), "THAWED") == 0,
	      "thaw writes THAWED");
	CHECK(env.ops->kill_all(&cg, &err) == 0 &&
		      strcmp(sim_read(cg.path[AJ_CG_FREEZER], "freezer.state"), "THAWED") == 0,
	      "kill_all leaves the cgroup thawed so that SIGKILL is delivered");

	char saved[AJ_CG__COUNT][700];
	for (int c = 0; c < AJ_CG__COUNT; c++)
		snprintf(saved[c], sizeof saved[c], "%s", cg.path[c]);
	CHECK(env.ops->destroy(&cg, &err) == 0, "destroy");
	bool gone = true;
	for (int c = 0; c < AJ_CG__COUNT; c++)
		gone = gone && !sim_exists(saved[c]) && !cg.used[c] && sim_exists(env.parent[c]);
	CHECK(gone, "destroy removes the directory in every hierarchy and keeps the parents");
	aj_cgroup_free(&cg);
}

static void only_what_is_needed(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.pids = 10};
	struct aj_err err;

	sim_swap = false;
	make_env(separate);
	env.usable[AJ_CG_MEMORY] = false;
	CHECK(env.ops->create(&cg, "run-2", &lim, &err) == 0, "create with a pids limit only");
	CHECK(cg.used[AJ_CG_PIDS] && cg.used[AJ_CG_CPUACCT] && !cg.used[AJ_CG_MEMORY] &&
		      !cg.used[AJ_CG_CPU] && !cg.used[AJ_CG_FREEZER],
	      "pids for the limit, cpuacct for accounting, nothing else");
	CHECK(!cg.path[AJ_CG_MEMORY] && !cg.path[AJ_CG_FREEZER], "unused controllers have no path");
	CHECK(env.ops->freeze(&cg, true, &err) < 0 && err.layer == AJ_LAYER_CGROUP &&
		      err.errnum == ENOTSUP && strstr(err.msg, "freezer"),
	      "freezing without a freezer cgroup is an error naming the freezer");
	CHECK(env.ops->destroy(&cg, &err) == 0, "destroy");
	aj_cgroup_free(&cg);

	/* A memory limit on a kernel without swap accounting. */
	env.usable[AJ_CG_MEMORY] = true;
	lim = (struct aj_cgroup_limits){.memory = 16ULL << 20};
	CHECK(env.ops->create(&cg, "run-3", &lim, &err) == 0,
	      "a memory limit without memory.memsw is fine");
	CHECK_STR(sim_read(cg.path[AJ_CG_MEMORY], "memory.limit_in_bytes"), "16777216",
		  "memory.limit_in_bytes 16 MiB");
	CHECK_STR(sim_read(cg.path[AJ_CG_MEMORY], "memory.memsw.limit_in_bytes"), "<missing>",
		  "memory.memsw.limit_in_bytes is not created");
	env.ops->destroy(&cg, &err);
	aj_cgroup_free(&cg);
	sim_swap = true;
}

static void stats(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.memory = 64ULL << 20, .pids = 8, .cpu_milli = 1000};
	struct aj_cgroup_stats st;
	struct aj_err err;

	make_env(separate);
	env.ops->create(&cg, "run-4", &lim, &err);
	sim_write(cg.path[AJ_CG_MEMORY], "memory.max_usage_in_bytes", "5242880\n");
	sim_write(cg.path[AJ_CG_MEMORY], "memory.oom_control",
		  "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
	sim_write(cg.path[AJ_CG_PIDS], "pids.events", "max 11\n");
	sim_write(cg.path[AJ_CG_CPUACCT], "cpuacct.usage", "7000123\n");
	sim_write(cg.path[AJ_CG_CPU], "cpu.stat", "nr_periods 20\nnr_throttled 5\nthrottled_time 1\n");
	CHECK(env.ops->stats(&cg, &st, &err) == 0, "stats");
	CHECK(st.have_memory_peak && st.memory_peak == 5242880, "peak from memory.max_usage_in_bytes");
	CHECK(st.have_oom && st.oom_kills == 4, "oom_kill from memory.oom_control");
	CHECK(st.have_pids_events && st.pids_max_hits == 11, "max from pids.events");
	CHECK(st.have_cpu && st.cpu_usec == 7000, "cpuacct.usage nanoseconds become microseconds");
	CHECK(st.nr_throttled == 5, "nr_throttled from cpu.stat");

	struct aj_cgroup_sampler smp = {{0}};
	sim_write(cg.path[AJ_CG_MEMORY], "memory.usage_in_bytes", "4096\n");
	sim_write(cg.path[AJ_CG_PIDS], "pids.current", "3\n");
	env.ops->sample(&cg, &smp, &st);
	CHECK(st.have_memory_current && st.memory_current == 4096 && st.have_pids_current &&
		      st.pids_current == 3 && st.have_cpu && st.cpu_usec == 7000 && !st.have_memory_peak,
	      "sample: usage_in_bytes, pids.current and cpuacct.usage only");
	sim_write(cg.path[AJ_CG_MEMORY], "memory.usage_in_bytes", "8192\n");
	sim_write(cg.path[AJ_CG_CPUACCT], "cpuacct.usage", "9000000\n");
	env.ops->sample(&cg, &smp, &st);
	CHECK(smp.fd1[0] && smp.fd1[2] && st.memory_current == 8192 && st.cpu_usec == 9000,
	      "sample: the kept descriptors read what the files say now");
	aj_cgroup_sampler_close(&smp);
	CHECK(!smp.fd1[0] && !smp.fd1[1] && !smp.fd1[2], "sample: the sampler's descriptors closed");

	/* Opened ahead, as a run does while its command runs: the end's figures are what the
	 * files say then, read through the descriptors (one file's path is gone here, so a read
	 * by path would miss it), and kill_all's look at cgroup.procs goes through one too. */
	int n_open = 0;
	sim_write(cg.path[AJ_CG_MEMORY], "cgroup.procs", "");
	env.ops->open_stats(&cg);
	for (int i = 0; i < AJ_CG_STAT_FILES; i++)
		n_open += cg.stat_fd1[i] != 0;
	CHECK(n_open == 8, "open_stats opens the seven statistics files and cgroup.procs");
	sim_write(cg.path[AJ_CG_MEMORY], "memory.max_usage_in_bytes", "6291456\n");
	sim_write(cg.path[AJ_CG_PIDS], "pids.events", "max 12\n");
	sim_write(cg.path[AJ_CG_CPUACCT], "cpuacct.usage", "8000000\n");
	unlink(strcat(strcpy((char[800]){0}, cg.path[AJ_CG_MEMORY]), "/memory.max_usage_in_bytes"));
	CHECK(env.ops->stats(&cg, &st, &err) == 0 && st.have_memory_peak &&
		      st.memory_peak == 6291456 && st.pids_max_hits == 12 && st.cpu_usec == 8000 &&
		      st.oom_kills == 4 && st.nr_throttled == 5,
	      "stats through the descriptors: what the files say now");
	/* A new file at the path lists a task that does not exist (a pid beyond pid_max): read
	 * by path, kill_all would find it there until it gives up with EBUSY. */
	unlink(strcat(strcpy((char[800]){0}, cg.path[AJ_CG_MEMORY]), "/cgroup.procs"));
	sim_write(cg.path[AJ_CG_MEMORY], "cgroup.procs", "999999999\n");
	CHECK(env.ops->kill_all(&cg, &err) == 0,
	      "kill_all reads cgroup.procs through the descriptor opened ahead");
	sim_write(cg.path[AJ_CG_MEMORY], "cgroup.procs", "");
	env.ops->destroy(&cg, &err);
	n_open = 0;
	for (int i = 0; i < AJ_CG_STAT_FILES; i++)
		n_open += cg.stat_fd1[i] != 0;
	CHECK(n_open == 0, "destroy closes them");
	aj_cgroup_free(&cg);
}

/* Most v1 hosts mount cpu and cpuacct together (/sys/fs/cgroup/cpu,cpuacct with cpu and
 * cpuacct as symlinks): both controllers then have the same parent directory. */
static void comounted_cpu_cpuacct(void)
{
	static const char *const shared[AJ_CG__COUNT] = {
		[AJ_CG_MEMORY] = "memory", [AJ_CG_PIDS] = "pids", [AJ_CG_CPU] = "cpu,cpuacct",
		[AJ_CG_CPUACCT] = "cpu,cpuacct", [AJ_CG_FREEZER] = "freezer",
	};
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.memory = 64ULL << 20, .cpu_milli = 250};
	struct aj_err err;
	char dir[700];

	make_env(shared);
	snprintf(dir, sizeof dir, "%s/run-5", env.parent[AJ_CG_CPU]);
	aj_err_clear(&err);
	CHECK(env.ops->create(&cg, "run-5", &lim, &err) == 0,
	      "create with a CPU quota where cpu and cpuacct share a hierarchy");
	if (err.msg[0])
		printf("#   error: %s: %s\n", err.msg, strerror(err.errnum));
	CHECK_STR(sim_read(dir, "cpu.cfs_quota_us"), "25000", "the quota is written");
	aj_err_clear(&err);
	CHECK(env.ops->destroy(&cg, &err) == 0 && !sim_exists(dir),
	      "destroy removes the shared directory once, without error");
	aj_cgroup_free(&cg);
	/* leave nothing behind for the next case even if the above failed */
	rmdir(dir);
}

static void errors(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.pids = 8};
	struct aj_err err;
	char busy[700];

	make_env(separate);
	snprintf(busy, sizeof busy, "%s/run-6", env.parent[AJ_CG_PIDS]);
	mkdir(busy, 0755);
	CHECK(env.ops->create(&cg, "run-6", &lim, &err) < 0 && err.layer == AJ_LAYER_CGROUP &&
		      err.errnum == EEXIST && strstr(err.msg, busy),
	      "an existing cgroup is an error naming its path");
	env.ops->destroy(&cg, &err);
	aj_cgroup_free(&cg);
	rmdir(busy);

	CHECK(env.ops->create(&cg, "run-7", &lim, &err) == 0, "create");
	sim_write(cg.path[AJ_CG_PIDS], "cgroup.procs", "999999999\n");
	CHECK(env.ops->destroy(&cg, &err) < 0 && err.errnum == EBUSY &&
		      strstr(err.msg, cg.path[AJ_CG_PIDS]),
	      "a busy cgroup cannot be removed: EBUSY naming it");
	CHECK(cg.used[AJ_CG_PIDS] && !cg.used[AJ_CG_CPUACCT],
	      "the others were removed; the busy one stays marked used for a retry");
	sim_write(cg.path[AJ_CG_PIDS], "cgroup.procs", "");
	CHECK(env.ops->destroy(&cg, &err) == 0 && !sim_exists(cg.path[AJ_CG_PIDS]),
	      "the retry removes it");
	aj_cgroup_free(&cg);
}

/* Live limits (agentjail update) on v1: memory and memsw together, the quota, pids lifted;
 * below use refused; a controller the cgroup was made without refused. */
static void set_limits(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.memory = 256ULL << 20, .cpu_milli = 500};
	struct aj_cgroup_limits want = {.memory = 512ULL << 20, .cpu_milli = 0};
	struct aj_err err;

	make_env(separate);
	CHECK(env.ops->create(&cg, "run-l", &lim, &err) == 0, "create with memory and cpu");
	/* the kernel replaces a cgroup file's value; the simulation's files only overwrite */
	sim_write(cg.path[AJ_CG_CPU], "cpu.cfs_quota_us", "");
	CHECK(env.ops->set_limits(&cg, &want, 1u << AJ_CG_MEMORY | 1u << AJ_CG_CPU, &err) == 0,
	      "set_limits: memory raised, cpu lifted");
	CHECK_STR(sim_read(cg.path[AJ_CG_MEMORY], "memory.limit_in_bytes"), "536870912",
		  "memory.limit_in_bytes raised");
	CHECK_STR(sim_read(cg.path[AJ_CG_MEMORY], "memory.memsw.limit_in_bytes"), "536870912",
		  "memsw raised with it");
	CHECK_STR(sim_read(cg.path[AJ_CG_CPU], "cpu.cfs_quota_us"), "-1", "the quota lifted");
	sim_write(cg.path[AJ_CG_MEMORY], "memory.usage_in_bytes", "300000000");
	want.memory = 128ULL << 20;
	CHECK(env.ops->set_limits(&cg, &want, 1u << AJ_CG_MEMORY, &err) < 0 &&
		      err.errnum == EBUSY && strstr(err.msg, "300000000"),
	      "memory below use: EBUSY with the figures");
	CHECK(env.ops->set_limits(&cg, &want, 1u << AJ_CG_PIDS, &err) < 0 && err.errnum == ENOTSUP,
	      "pids, which the cgroup was made without: ENOTSUP");
	env.ops->destroy(&cg, &err);
	aj_cgroup_free(&cg);
}

int main(void)
{
	char v1[200];

	if (sim_init() < 0) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(v1, sizeof v1, "%s/v1", sim_root);
	mkdir(v1, 0755);
	full();
	only_what_is_needed();
	stats();
	comounted_cpu_cpuacct();
	errors();
	set_limits();
	sim_cleanup();
	UNIT_EXIT();
}
