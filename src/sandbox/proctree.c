/* Process tree walks over /proc (see proctree.h). */
#include "sandbox/proctree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"

#define GIVE_UP_US 5000000u

struct proc {
	pid_t pid, ppid;
	char state;
	bool in_tree;
};

struct table {
	struct proc *v;
	size_t n, cap;
};

/* Parent and state from /proc/PID/stat, "PID (COMM) S PPID ...": COMM may hold spaces and
 * parentheses, so the fields are read after the last ')'. */
static bool read_stat(pid_t pid, pid_t *ppid, char *state)
{
	char path[64], buf[512];
	const char *rp;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && sscanf(rp + 1, " %c %d", state, ppid) == 2;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct proc *)a)->pid, y = ((const struct proc *)b)->pid;
	return (x > y) - (x < y);
}

/* Every process of the host, sorted by pid. */
static int scan(struct table *t)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return -1;
	t->n = 0;
	while ((e = readdir(d))) {
		struct proc p = {.in_tree = false};
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || !read_stat((pid_t)pid, &p.ppid, &p.state))
			continue;
		p.pid = (pid_t)pid;
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 1024;
			t->v = aj_xrealloc(t->v, t->cap * sizeof *t->v);
		}
		t->v[t->n++] = p;
	}
	if (t->n)
		qsort(t->v, t->n, sizeof *t->v, by_pid);
	return 0;
}

static const struct proc *find(const struct table *t, pid_t pid)
{
	struct proc key = {.pid = pid};
	return t->n ? bsearch(&key, t->v, t->n, sizeof *t->v, by_pid) : NULL;
}

static bool in_tree(const struct table *t, pid_t pid, pid_t root)
{
	const struct proc *p = pid == root ? NULL : find(t, pid);
	return pid == root || (p && p->in_tree);
}

/* Marks root's descendants, spare and its own descendants excluded, until nothing changes
 * (the table is in /proc order, not parents first). */
static void mark(struct table *t, pid_t root, pid_t spare)
{
	bool changed = true;

	while (changed) {
		changed = false;
		for (size_t i = 0; i < t->n; i++) {
			struct proc *p = &t->v[i];
			if (p->in_tree || p->pid == spare || p->pid == root ||
			    !in_tree(t, p->ppid, root))
				continue;
			p->in_tree = true;
			changed = true;
		}
	}
}

/* The pidfd pins one process; while it lives its pid is not recycled, so if its parent is
 * still in the tree after the pidfd was taken, it is the process we saw (or one forked in
 * the tree meanwhile): either way ours to kill. */
static void kill_one(const struct table *t, const struct proc *p, pid_t root)
{
	_cleanup_close_ int fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	pid_t ppid;
	char state;

	if (fd < 0)
		return;
	if (read_stat(p->pid, &ppid, &state) && in_tree(t, ppid, root))
		syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
}

/* One round: reaps root's dead children, signals the live ones; returns how many
 * processes of the tree are left (alive, or dead and not reaped yet). */
static unsigned round_of(struct table *t, pid_t root, pid_t spare, unsigned *alive)
{
	pid_t self = getpid();
	unsigned left = 0;

	mark(t, root, spare);
	*alive = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct proc *p = &t->v[i];
		if (!p->in_tree)
			continue;
		if (p->ppid == self && (p->state == 'Z' || p->state == 'X') &&
		    waitpid(p->pid, NULL, WNOHANG) == p->pid)
			continue;
		left++;
		/* A zombie whose parent is in the tree is reparented to the subreaper (root)
		 * once that parent is killed, and reaped by a later round. */
		if (p->state != 'Z' && p->state != 'X') {
			(*alive)++;
			kill_one(t, p, root);
		}
	}
	return left;
}

unsigned aj_proctree_kill(pid_t root, pid_t spare)
{
	struct table t = {NULL, 0, 0};
	uint64_t end = aj_now_monotonic_us() + GIVE_UP_US;
	long nap_ns = 200 * 1000;
	unsigned alive = 0;

	for (;;) {
		if (scan(&t) < 0 || round_of(&t, root, spare, &alive) == 0 ||
		    aj_now_monotonic_us() > end)
			break;
		nanosleep(&(struct timespec){0, nap_ns}, NULL);
		if (nap_ns < 20 * 1000 * 1000)
			nap_ns *= 2;
	}
	free(t.v);
	return alive;
}
