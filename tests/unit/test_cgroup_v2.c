/* The cgroup v2 backend against a simulated unified hierarchy (cgroup_sim.h): the files it
 * writes for limits and controller delegation, the statistics it parses, freezing, killing and
 * removal. This is how v2 is tested on hosts whose cgroup2 mount has no controllers. */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "cgroup/cgroup.h"
#include "cgroup_sim.h"
#include "unit.h"

static struct aj_cgroup_env env;
static char top[256];

static void make_env(const char *parent_rel)
{
	memset(&env, 0, sizeof env);
	env.mode = AJ_CGROUP_V2;
	env.ops = &aj_cgroup_v2_ops;
	snprintf(env.v2_mount, sizeof env.v2_mount, "%s/v2", sim_root);
	for (int c = 0; c < AJ_CG__COUNT; c++) {
		snprintf(env.parent[c], sizeof env.parent[c], "%s/v2%s", sim_root, parent_rel);
		env.usable[c] = true;
	}
}

static void create_with_limits(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.memory = 256ULL << 20, .pids = 64, .cpu_milli = 500};
	struct aj_err err;
	char dir[700], mid[600];

	make_env("/agentjail.slice/sub");
	snprintf(mid, sizeof mid, "%s/v2/agentjail.slice", sim_root);
	CHECK(env.ops->create(&cg, "run-1", &lim, &err) == 0, "create with memory, pids and cpu");
	snprintf(dir, sizeof dir, "%s/run-1", env.parent[0]);
	CHECK(cg.path[0] && strcmp(cg.path[0], dir) == 0, "the cgroup is PARENT/NAME");
	CHECK(cg.used[0], "the cgroup is marked used");
	CHECK(cg.path[AJ_CG_PIDS] && cg.path[AJ_CG_CPU] && strcmp(cg.path[AJ_CG_PIDS], dir) == 0 &&
		      strcmp(cg.path[AJ_CG_CPU], dir) == 0,
	      "every controller shares the one directory");
	CHECK_STR(sim_read(dir, "memory.max"), "268435456", "memory.max is the limit in bytes");
	CHECK_STR(sim_read(dir, "memory.swap.max"), "0", "memory.swap.max is 0: no escape to swap");
	CHECK_STR(sim_read(dir, "pids.max"), "64", "pids.max");
	CHECK_STR(sim_read(dir, "cpu.max"), "50000 100000", "cpu.max is quota and period in us");
	CHECK_STR(sim_read(env.v2_mount, "cgroup.subtree_control"), "+memory +pids +cpu",
		  "the root delegates the controllers");
	CHECK_STR(sim_read(mid, "cgroup.subtree_control"), "+memory +pids +cpu",
		  "each level between root and parent delegates them");
	CHECK_STR(sim_read(env.parent[0], "cgroup.subtree_control"), "+memory +pids +cpu",
		  "the parent delegates them to the sandbox cgroup");
	CHECK_STR(sim_read(dir, "cgroup.subtree_control"), "",
		  "the sandbox cgroup itself delegates nothing");

	CHECK(env.ops->create(&cg, "run-1", &lim, &err) < 0 && err.layer == AJ_LAYER_CGROUP &&
		      err.errnum == EEXIST && strstr(err.msg, dir),
	      "creating an existing cgroup fails naming its path");

	CHECK(env.ops->attach(&cg, 4242, &err) == 0 &&
		      strcmp(sim_read(dir, "cgroup.procs"), "4242") == 0,
	      "attach writes the pid into cgroup.procs");
	sim_write(dir, "cgroup.procs", "");

	struct aj_cgroup_join j = {.clone_into = -1};
	struct stat a, b;
	CHECK(env.ops->open_join(&cg, &j, &err) == 0 && j.clone_into >= 0 && j.n_tasks == 0,
	      "open_join gives a directory descriptor for CLONE_INTO_CGROUP");
	CHECK(fstat(j.clone_into, &a) == 0 && stat(dir, &b) == 0 && a.st_ino == b.st_ino,
	      "the descriptor is the sandbox cgroup's directory");
	aj_cgroup_join_close(&j);
	CHECK(j.clone_into == -1, "join_close resets the descriptor");

	CHECK(env.ops->destroy(&cg, &err) == 0 && !sim_exists(dir) && !cg.used[0],
	      "destroy removes the cgroup");
	CHECK(sim_exists(env.parent[0]), "destroy leaves the parent");
	CHECK(env.ops->destroy(&cg, &err) == 0, "a second destroy is harmless");
	aj_cgroup_free(&cg);
	CHECK(cg.path[0] == NULL, "free releases the paths");
}

static void create_minimal(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits none = {0};
	struct aj_err err;
	char dir[700];

	/* No swap accounting; memory usable: accounting only. */
	sim_swap = false;
	make_env("/acct");
	CHECK(env.ops->create(&cg, "run-2", &none, &err) == 0, "create without limits");
	snprintf(dir, sizeof dir, "%s/run-2", env.parent[0]);
	CHECK_STR(sim_read(env.parent[0], "cgroup.subtree_control"), "+memory",
		  "memory is delegated for accounting alone");
	CHECK_STR(sim_read(dir, "memory.max"), "", "no memory.max without a memory limit");
	CHECK_STR(sim_read(dir, "pids.max"), "", "no pids.max without a pids limit");
	CHECK_STR(sim_read(dir, "cpu.max"), "", "no cpu.max without a cpu quota");
	env.ops->destroy(&cg, &err);
	aj_cgroup_free(&cg);

	struct aj_cgroup_limits mem = {.memory = 64ULL << 20};
	CHECK(env.ops->create(&cg, "run-3", &mem, &err) == 0,
	      "a memory limit without swap accounting is fine");
	snprintf(dir, sizeof dir, "%s/run-3", env.parent[0]);
	CHECK_STR(sim_read(dir, "memory.max"), "67108864", "memory.max 64 MiB");
	CHECK(!sim_exists(strcat(dir, "/memory.swap.max")),
	      "memory.swap.max is not created where the kernel has none");
	env.ops->destroy(&cg, &err);
	aj_cgroup_free(&cg);
	sim_swap = true;

	/* Nothing usable and nothing asked: no controller is enabled anywhere. */
	make_env("/bare");
	for (int c = 0; c < AJ_CG__COUNT; c++)
		env.usable[c] = false;
	CHECK(env.ops->create(&cg, "run-4", &none, &err) == 0, "create with nothing to enable");
	CHECK_STR(sim_read(env.parent[0], "cgroup.subtree_control"), "",
		  "no controller is enabled when none is needed");
	env.ops->destroy(&cg, &err);
	aj_cgroup_free(&cg);
}

static void stats(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.memory = 32ULL << 20, .pids = 8};
	struct aj_cgroup_stats st;
	struct aj_err err;
	const char *d;

	make_env("/stats");
	env.ops->create(&cg, "run-5", &lim, &err);
	d = cg.path[0];
	sim_write(d, "memory.peak", "123456789\n");
	sim_write(d, "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n");
	sim_write(d, "pids.events", "max.imposed 9\nmax 7\n");
	sim_write(d, "cpu.stat", "usage_usec 4242\nuser_usec 4000\nsystem_usec 242\nnr_periods 10\n"
				 "nr_throttled 3\nthrottled_usec 99\n");
	CHECK(env.ops->stats(&cg, &st, &err) == 0, "stats");
	CHECK(st.have_memory_peak && st.memory_peak == 123456789, "memory.peak");
	CHECK(st.have_oom && st.oom_kills == 2, "oom_kill from memory.events (not oom or oom_group_kill)");
	CHECK(st.have_pids_events && st.pids_max_hits == 7, "max from pids.events (not max.imposed)");
	CHECK(st.have_cpu && st.cpu_usec == 4242, "usage_usec from cpu.stat");
	CHECK(st.nr_throttled == 3, "nr_throttled from cpu.stat");

	struct aj_cgroup_sampler smp = {{0}};
	sim_write(d, "memory.current", "4096\n");
	sim_write(d, "pids.current", "3\n");
	env.ops->sample(&cg, &smp, &st);
	CHECK(st.have_memory_current && st.memory_current == 4096 && st.have_pids_current &&
		      st.pids_current == 3 && st.have_cpu && st.cpu_usec == 4242 && !st.have_oom,
	      "sample: memory.current, pids.current and usage_usec only");
	sim_write(d, "memory.current", "8192\n");
	sim_write(d, "cpu.stat", "usage_usec 5000\nuser_usec 4000\n");
	env.ops->sample(&cg, &smp, &st);
	CHECK(smp.fd1[0] && smp.fd1[2] && st.memory_current == 8192 && st.cpu_usec == 5000,
	      "sample: the kept descriptors read what the files say now");
	aj_cgroup_sampler_close(&smp);
	CHECK(!smp.fd1[0] && !smp.fd1[1] && !smp.fd1[2], "sample: the sampler's descriptors closed");

	unlink(strcat(strcpy((char[800]){0}, d), "/memory.peak"));
	sim_write(d, "memory.events", "low 0\n");
	CHECK(env.ops->stats(&cg, &st, &err) == 0 && !st.have_memory_peak && !st.have_oom &&
		      st.oom_kills == 0,
	      "missing memory.peak and oom_kill are reported as unknown, not as 0 values");

	/* Opened ahead, as a run does while its command runs: read through the descriptors at
	 * the end, even a file whose path is gone by then. */
	int n_open = 0;
	sim_write(d, "memory.peak", "2048\n");
	sim_write(d, "memory.events", "oom_kill 1\n");
	env.ops->open_stats(&cg);
	for (int i = 0; i < AJ_CG_STAT_FILES; i++)
		n_open += cg.stat_fd1[i] != 0;
	CHECK(n_open == 6, "open_stats opens the six statistics files");
	sim_write(d, "memory.peak", "65536\n");
	sim_write(d, "cpu.stat", "usage_usec 6000\nnr_throttled 4\n");
	unlink(strcat(strcpy((char[800]){0}, d), "/memory.peak"));
	CHECK(env.ops->stats(&cg, &st, &err) == 0 && st.have_memory_peak &&
		      st.memory_peak == 65536 && st.oom_kills == 1 && st.cpu_usec == 6000 &&
		      st.nr_throttled == 4,
	      "stats through the descriptors: what the files say now");
	env.ops->destroy(&cg, &err);
	n_open = 0;
	for (int i = 0; i < AJ_CG_STAT_FILES; i++)
		n_open += cg.stat_fd1[i] != 0;
	CHECK(n_open == 0, "destroy closes them");
	aj_cgroup_free(&cg);
}

static void freeze_and_kill(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.pids = 8};
	struct aj_err err;
	const char *d;
	int status = 0;
	pid_t child;
	char pid[32];

	make_env("/freeze");
	env.ops->create(&cg, "run-6", &lim, &err);
	d = cg.path[0];
	sim_write(d, "cgroup.events", "populated 1\nfrozen 1\n");
	CHECK(env.ops->freeze(&cg, true, &err) == 0, "freeze returns once cgroup.events says frozen");
	CHECK_STR(sim_read(d, "cgroup.freeze"), "1", "freeze writes 1 to cgroup.freeze");
	CHECK(env.ops->freeze(&cg, false, &err) < 0 && err.layer == AJ_LAYER_CGROUP &&
		      err.errnum == ETIMEDOUT && strstr(err.msg, "did not thaw") && strstr(err.msg, d),
	      "a cgroup that stays frozen is an error naming it");
	sim_write(d, "cgroup.events", "populated 1\nfrozen 0\n");
	CHECK(env.ops->freeze(&cg, false, &err) == 0 && strcmp(sim_read(d, "cgroup.freeze"), "0") == 0,
	      "thaw writes 0 and returns once thawed");
	CHECK(env.ops->freeze(&cg, true, &err) < 0 && err.layer == AJ_LAYER_CGROUP &&
		      err.errnum == ETIMEDOUT && strstr(err.msg, "did not freeze") && strstr(err.msg, d),
	      "a cgroup that does not report frozen within the wait is an error naming it");
	CHECK_STR(sim_read(d, "cgroup.freeze"), "0",
		  "a freeze that did not complete is undone (the cgroup is not left half frozen)");
	sim_write(d, "cgroup.events", "");
	CHECK(env.ops->freeze(&cg, true, &err) < 0 && strcmp(sim_read(d, "cgroup.freeze"), "0") == 0,
	      "an unreadable cgroup.events is no success: the freeze fails and is undone");

	CHECK(env.ops->kill_all(&cg, &err) == 0, "kill_all on an empty cgroup");
	CHECK_STR(sim_read(d, "cgroup.kill"), "1", "kill_all uses cgroup.kill");

	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(pid, sizeof pid, "%d\n", (int)child);
	sim_write(d, "cgroup.procs", pid);
	CHECK(aj_cgroup_kill_procs_once(d) == 1, "one round of kill_procs signals the listed task");
	waitpid(child, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the task got SIGKILL");

	/* A task the kernel has not yet let go of keeps the cgroup busy. */
	sim_write(d, "cgroup.procs", "999999999\n");
	CHECK(env.ops->destroy(&cg, &err) < 0 && err.layer == AJ_LAYER_CGROUP &&
		      err.errnum == EBUSY && strstr(err.msg, d),
	      "removing a busy cgroup fails with EBUSY naming it");
	CHECK(cg.used[0], "a cgroup that could not be removed stays marked used");
	sim_write(d, "cgroup.procs", "");
	CHECK(env.ops->destroy(&cg, &err) == 0 && !sim_exists(d), "once empty it is removed");
	aj_cgroup_free(&cg);
}

/* Live limits (agentjail update): raised, lowered, lifted; memory below use refused with the
 * figures and nothing changed; a controller the cgroup lacks refused. */
static void set_limits(void)
{
	struct aj_cgroup cg = {.env = &env};
	struct aj_cgroup_limits lim = {.memory = 256ULL << 20, .pids = 64, .cpu_milli = 500};
	struct aj_cgroup_limits want = {.memory = 512ULL << 20, .pids = 0, .cpu_milli = 1500};
	unsigned all = 1u << AJ_CG_MEMORY | 1u << AJ_CG_PIDS | 1u << AJ_CG_CPU;
	struct aj_err err;
	char dir[700];

	make_env("/live");
	CHECK(env.ops->create(&cg, "run-l", &lim, &err) == 0, "create with limits");
	snprintf(dir, sizeof dir, "%s/run-l", env.parent[0]);
	CHECK(env.ops->set_limits(&cg, &want, all, &err) == 0, "set_limits: memory, pids, cpu");
	CHECK_STR(sim_read(dir, "memory.max"), "536870912", "memory raised");
	CHECK_STR(sim_read(dir, "pids.max"), "max", "pids lifted");
	CHECK_STR(sim_read(dir, "cpu.max"), "150000 100000", "cpu raised to 1.5");
	sim_write(dir, "memory.current", "300000000");
	want.memory = 128ULL << 20;
	CHECK(env.ops->set_limits(&cg, &want, all, &err) < 0 && err.errnum == EBUSY &&
		      strstr(err.msg, "134217728") && strstr(err.msg, "300000000"),
	      "memory below current use: EBUSY with both figures");
	CHECK_STR(sim_read(dir, "cpu.max"), "150000 100000", "... and nothing changed");
	want.memory = 400ULL << 20;
	CHECK(env.ops->set_limits(&cg, &want, 1u << AJ_CG_MEMORY, &err) == 0 &&
		      !strcmp(sim_read(dir, "memory.max"), "419430400"),
	      "memory lowered, above use");
	CHECK(unlink(strcat(strcat(dir, "/"), "pids.max")) == 0, "(a cgroup without pids)");
	CHECK(env.ops->set_limits(&cg, &want, 1u << AJ_CG_PIDS, &err) < 0 &&
		      err.errnum == ENOTSUP && strstr(err.msg, "stop it, update it and start it"),
	      "a controller the cgroup lacks: ENOTSUP, with the way to get one");
	env.ops->destroy(&cg, &err);
	aj_cgroup_free(&cg);
}

int main(void)
{
	if (sim_init() < 0) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(top, sizeof top, "%s/v2", sim_root);
	mkdir(top, 0755); /* the hierarchy's root, with the files the kernel has */
	create_with_limits();
	create_minimal();
	stats();
	freeze_and_kill();
	set_limits();
	sim_cleanup();
	UNIT_EXIT();
}
