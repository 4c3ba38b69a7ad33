/* A simulated cgroup filesystem for the cgroup backend tests, so that both backends can be
 * tested on any host (one with no cgroup v2 controllers included) without touching the
 * host's cgroups.
 *
 * The tree lives in a temporary directory: SIM/v2 is a unified hierarchy, SIM/v1/CTRLS one
 * v1 hierarchy per controller list ("memory", "cpu,cpuacct"). What cgroupfs does on its own
 * is done here by interposing mkdir() and rmdir() for paths below SIM (the test binary's
 * definitions win over libc's for the statically linked library):
 *   - mkdir creates the interface files a new cgroup has, empty, so that what the backend
 *     writes can be read back exactly;
 *   - rmdir removes them first, and fails with EBUSY while cgroup.procs lists a task or a
 *     child cgroup exists, as the kernel does.
 * Only include this header from one test program.
 */
#ifndef AJ_TESTS_CGROUP_SIM_H
#define AJ_TESTS_CGROUP_SIM_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char sim_root[128];
/* Whether new cgroups get memory.swap.max (v2) / memory.memsw.limit_in_bytes (v1): kernels
 * without swap accounting lack them. */
static bool sim_swap = true;

static const char *const sim_v2_files[] = {
	"cgroup.procs", "cgroup.subtree_control", "cgroup.controllers", "cgroup.freeze",
	"cgroup.events", "cgroup.kill", "memory.max", "memory.peak", "memory.events",
	"pids.max", "pids.events", "cpu.max", "cpu.stat", NULL,
};

static const struct {
	const char *ctrl;
	const char *files[5];
} sim_v1_files[] = {
	{"memory", {"memory.limit_in_bytes", "memory.max_usage_in_bytes", "memory.oom_control"}},
	{"pids", {"pids.max", "pids.events"}},
	{"cpu", {"cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.stat"}},
	{"cpuacct", {"cpuacct.usage"}},
	{"freezer", {"freezer.state"}},
};

static bool sim_owns(const char *path)
{
	size_t n = strlen(sim_root);
	return n && strncmp(path, sim_root, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static void sim_touch(const char *dir, const char *name)
{
	char p[1024];
	int fd;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

static void sim_populate(const char *dir)
{
	char v1[256], *ctrls, *save = NULL;
	const char *rest = dir + strlen(sim_root);

	if (strncmp(rest, "/v2/", 4) == 0 || strcmp(rest, "/v2") == 0) {
		for (size_t i = 0; sim_v2_files[i]; i++)
			sim_touch(dir, sim_v2_files[i]);
		if (sim_swap)
			sim_touch(dir, "memory.swap.max");
		return;
	}
	if (strncmp(rest, "/v1/", 4) != 0)
		return;
	snprintf(v1, sizeof v1, "%s", rest + 4);
	if (strchr(v1, '/'))
		*strchr(v1, '/') = '\0';
	sim_touch(dir, "cgroup.procs");
	sim_touch(dir, "tasks");
	for (ctrls = strtok_r(v1, ",", &save); ctrls; ctrls = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof sim_v1_files / sizeof sim_v1_files[0]; i++) {
			if (strcmp(sim_v1_files[i].ctrl, ctrls) != 0)
				continue;
			for (size_t j = 0; j < 5 && sim_v1_files[i].files[j]; j++)
				sim_touch(dir, sim_v1_files[i].files[j]);
			if (sim_swap && strcmp(ctrls, "memory") == 0)
				sim_touch(dir, "memory.memsw.limit_in_bytes");
		}
}

int mkdir(const char *path, mode_t mode)
{
	int r = (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);

	if (r == 0 && sim_owns(path))
		sim_populate(path);
	return r;
}

int rmdir(const char *path)
{
	if (sim_owns(path)) {
		char procs[1024];
		struct stat st;
		DIR *d;
		struct dirent *e;
		bool busy = false;

		snprintf(procs, sizeof procs, "%s/cgroup.procs", path);
		if (stat(procs, &st) == 0 && st.st_size > 0)
			busy = true;
		d = opendir(path);
		while (d && (e = readdir(d)))
			if (e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				busy = true;
		if (d)
			rewinddir(d);
		while (!busy && d && (e = readdir(d)))
			if (e->d_type == DT_REG)
				unlinkat(dirfd(d), e->d_name, 0);
		if (d)
			closedir(d);
		if (busy) {
			errno = EBUSY;
			return -1;
		}
	}
	return (int)syscall(SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR);
}

static int sim_init(void)
{
	char dir[] = "/tmp/ajunit-cgroup.XXXXXX";

	if (!mkdtemp(dir))
		return -1;
	snprintf(sim_root, sizeof sim_root, "%s", dir);
	return 0;
}

static void sim_cleanup(void)
{
	char cmd[256];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", sim_root);
	if (sim_root[0] && system(cmd) != 0)
		printf("# could not remove %s\n", sim_root);
}

/* The content of dir/file ("<missing>" if absent). */
static const char *sim_read(const char *dir, const char *file)
{
	static char buf[4][512];
	static int slot;
	char p[1024];
	char *b = buf[slot++ % 4];
	FILE *f;
	size_t n;

	snprintf(p, sizeof p, "%s/%s", dir, file);
	f = fopen(p, "re");
	if (!f)
		return "<missing>";
	n = fread(b, 1, sizeof buf[0] - 1, f);
	b[n] = '\0';
	fclose(f);
	return b;
}

/* What the kernel would report in dir/file (replaces the content). */
static void sim_write(const char *dir, const char *file, const char *content)
{
	char p[1024];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", dir, file);
	f = fopen(p, "we");
	if (!f)
		return;
	fputs(content, f);
	fclose(f);
}

static bool sim_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

#endif
