/* The cgroup guard: removes a sandbox's cgroups when its supervisor dies without doing it.
 *
 * A supervisor killed with SIGKILL cleans nothing up. Its sandbox dies with it (init has
 * PR_SET_PDEATHSIG), but the emptied cgroup directories would stay until the next launch's
 * sweep. The guard is a child that shares the supervisor's memory (CLONE_VM, so spawning it
 * copies no page tables) and waits for end-of-file on a pipe whose only writer is the
 * supervisor: that end-of-file comes when the supervisor exits for any reason. The guard
 * then kills whatever is left in the cgroups and removes them.
 *
 * The channel is a socket, not a pipe, so that the supervisor can also hand the guard
 * descriptors to hold until it exits (aj_cgroup_guard_hold()): whatever their last close
 * costs is then paid after the supervisor has returned.
 *
 * It holds O_PATH descriptors of each cgroup and of its parent, taken at start, so it only
 * ever removes the very directories it was given, never a same-named successor. Once the
 * supervisor is gone the guard runs alone in the shared memory, yet it may have died in
 * the middle of anything (malloc included): the guard makes raw system calls (no libc
 * state, no sanitizer interceptors) and uses only its own static buffers. A released guard
 * runs beside the live supervisor, whose thread-local errno it shares: its calls never
 * write errno (guard_sys()).
 */
#include "cgroup/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

#define GUARD_MAX AJ_CG__COUNT

/* A system call that never writes errno: on failure it returns -errno. Where there is no
 * inline version, glibc's syscall() (which does write it) stands in. */
static long guard_sys(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
#else
	long r = syscall(nr, a, b, c, d);

	return r < 0 ? -errno : r;
#endif
}

static struct {
	int rfd;
	int linger; /* the caller's descriptor the guard holds until it exits, or -1 */
	size_t n;
	int dir[GUARD_MAX];
	int parent[GUARD_MAX];
	char base[GUARD_MAX][256];
	char procs[65536];
} g_state;
static bool g_started;
static pid_t g_finishing = -1; /* a released guard not reaped yet */

static void nap_ms(long ms)
{
	struct timespec ts = {0, ms * 1000 * 1000};
	guard_sys(SYS_nanosleep, (long)&ts, 0, 0, 0);
}

/* SIGKILLs the tasks listed in the cgroup; returns how many were listed. */
static int kill_listed(int dirfd)
{
	int fd = (int)guard_sys(SYS_openat, dirfd, (long)"cgroup.procs", O_RDONLY | O_CLOEXEC, 0);
	ssize_t n;
	int listed = 0;
	long pid = 0;
	bool digits = false;

	if (fd < 0)
		return 0;
	n = guard_sys(SYS_read, fd, (long)g_state.procs, sizeof g_state.procs - 1, 0);
	guard_sys(SYS_close, fd, 0, 0, 0);
	for (ssize_t i = 0; i < (n > 0 ? n : 0); i++) {
		char c = g_state.procs[i];
		if (c >= '0' && c <= '9') {
			pid = pid * 10 + (c - '0');
			digits = true;
			continue;
		}
		if (digits && pid > 0) {
			guard_sys(SYS_kill, pid, SIGKILL, 0, 0);
			listed++;
		}
		pid = 0;
		digits = false;
	}
	return listed;
}

/* A v1 freezer's tasks take their SIGKILL only once thawed (a paused sandbox's); where the
 * file is missing (another controller, v2, whose frozen tasks die of SIGKILL) nothing
 * happens. */
static void thaw(int dirfd)
{
	int fd = (int)guard_sys(SYS_openat, dirfd, (long)"freezer.state", O_WRONLY | O_CLOEXEC, 0);

	if (fd < 0)
		return;
	guard_sys(SYS_write, fd, (long)"THAWED", 6, 0);
	guard_sys(SYS_close, fd, 0, 0, 0);
}

/* Removes the cgroup if its name still names the directory we were given. */
static void remove_one(size_t i)
{
	struct stat mine, now;

	/* What the calls fill in; set for the static analyzer, which cannot see into them. */
	mine.st_ino = now.st_ino = 0;
	mine.st_dev = now.st_dev = 0;
	if (guard_sys(SYS_newfstatat, g_state.dir[i], (long)"", (long)&mine, AT_EMPTY_PATH) < 0)
		return;
	for (int round = 0; round < 500; round++) { /* bounded: ~5 s */
		if (guard_sys(SYS_newfstatat, g_state.parent[i], (long)g_state.base[i], (long)&now,
			      AT_SYMLINK_NOFOLLOW) < 0 ||
		    now.st_ino != mine.st_ino || now.st_dev != mine.st_dev)
			return; /* already removed (by the supervisor, usually) */
		kill_listed(g_state.dir[i]);
		thaw(g_state.dir[i]);
		if (guard_sys(SYS_unlinkat, g_state.parent[i], (long)g_state.base[i], AT_REMOVEDIR,
			      0) != -EBUSY)
			return;
		nap_ms(10);
	}
}

/* One message of the supervisor's: > 0, and a descriptor it carried is now ours, open until
 * the guard exits; 0 at end-of-file; < 0 on an error (taken as end-of-file). The buffers are
 * on the guard's own stack. */
static long receive(void)
{
	char byte, ctl[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8)));
	struct iovec iov;
	struct msghdr msg;

	/* Field by field: an initializer may become a call to memset. */
	iov.iov_base = &byte;
	iov.iov_len = 1;
	msg.msg_name = NULL;
	msg.msg_namelen = 0;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl;
	msg.msg_controllen = sizeof ctl;
	msg.msg_flags = 0;
	return guard_sys(SYS_recvmsg, g_state.rfd, (long)&msg, 0, 0);
}

static int guard_main(void *arg)
{
	uint64_t all = ~(uint64_t)0;

	(void)arg;
	/* The terminal's signals are for the supervisor; the guard must outlive it. With every
	 * signal blocked, recvmsg() never fails with EINTR. */
	guard_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof all);
	while (receive() > 0)
		;
	/* Every controller's tasks killed and thawed first: one frozen by the freezer keeps the
	 * others' directories busy too. */
	for (size_t i = 0; i < g_state.n; i++) {
		kill_listed(g_state.dir[i]);
		thaw(g_state.dir[i]);
	}
	for (size_t i = 0; i < g_state.n; i++)
		remove_one(i);
	return 0;
}

/* Closes every descriptor of ours except the ones the guard keeps. */
static void close_others(void)
{
	int keep[2 * GUARD_MAX + 2];
	size_t nk = 0;
	unsigned lo = 0;

	keep[nk++] = g_state.rfd;
	if (g_state.linger >= 0)
		keep[nk++] = g_state.linger;
	for (size_t i = 0; i < g_state.n; i++) {
		keep[nk++] = g_state.dir[i];
		keep[nk++] = g_state.parent[i];
	}
	for (size_t i = 1; i < nk; i++) /* insertion sort: a handful of entries */
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < nk; i++) {
		if ((unsigned)keep[i] > lo)
			guard_sys(SYS_close_range, lo, (unsigned)keep[i] - 1, 0, 0);
		lo = (unsigned)keep[i] + 1;
	}
	guard_sys(SYS_close_range, lo, ~0U, 0, 0);
}

static int guard_entry(void *arg)
{
	close_others();
	return guard_main(arg);
}

/* Closes our copies; the numbers stay, since the guard (same memory, own descriptor table)
 * reads them. */
static void close_state(void)
{
	for (size_t i = 0; i < g_state.n; i++) {
		close(g_state.dir[i]);
		close(g_state.parent[i]);
	}
}

static int add_dir(const char *path, struct aj_err *err)
{
	const char *slash = strrchr(path, '/');
	char parent[768];
	size_t i = g_state.n;
	_cleanup_close_ int dir = -1, up = -1;

	for (size_t k = 0; k < i; k++) /* v1 co-mounted controllers share a directory */
		if (strcmp(g_state.base[k], slash + 1) == 0) {
			struct stat a, b;
			if (stat(path, &a) == 0 && fstat(g_state.dir[k], &b) == 0 &&
			    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
				return 0;
		}
	if (!slash || slash == path || strlen(slash + 1) >= sizeof g_state.base[0] ||
	    (size_t)(slash - path) >= sizeof parent)
		return aj_err_set(err, AJ_LAYER_CGROUP, EINVAL, "cgroup path \"%s\"", path);
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "open \"%s\"", path);
	up = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (up < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "open \"%s\"", parent);
	g_state.dir[i] = aj_steal_fd(&dir);
	g_state.parent[i] = aj_steal_fd(&up);
	memcpy(g_state.base[i], slash + 1, strlen(slash + 1) + 1);
	g_state.n++;
	return 0;
}

/* The guard released last reads g_state until it exits: it goes before g_state is reused. */
static void reap_finishing(void)
{
	if (g_finishing <= 0)
		return;
	while (waitpid(g_finishing, NULL, __WALL) < 0 && errno == EINTR)
		;
	g_finishing = -1;
}

int aj_cgroup_guard_start(struct aj_cgroup_guard *guard, const struct aj_cgroup *cg,
			  int linger_fd, struct aj_err *err)
{
	static char stack[32768] __attribute__((aligned(16)));
	int pfd[2];
	_cleanup_close_ int rd = -1, wr = -1;

	guard->pid = -1;
	guard->wfd = -1;
	if (g_started)
		return aj_err_set(err, AJ_LAYER_INTERNAL, EBUSY, "one cgroup guard per process");
	reap_finishing();
	g_state.n = 0;
	g_state.linger = linger_fd;
	for (int c = 0; cg && c < AJ_CG__COUNT; c++)
		if (cg->path[c] && add_dir(cg->path[c], err) < 0) {
			close_state();
			return -1;
		}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pfd) < 0) {
		close_state();
		return aj_err_sys(err, AJ_LAYER_CGROUP, "socket pair for the cgroup guard");
	}
	rd = pfd[0];
	wr = pfd[1];
	g_state.rfd = rd;
	/* No SIGCHLD: the guard is not one of the sandbox's processes for anyone's waitpid.
	 * Without CLONE_FILES it has descriptors of its own: ours go once it exists. */
	guard->pid = clone(guard_entry, stack + sizeof stack, CLONE_VM, NULL);
	close_state();
	if (guard->pid < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "clone the cgroup guard");
	guard->wfd = aj_steal_fd(&wr);
	g_started = true;
	return 0;
}

int aj_cgroup_guard_hold(struct aj_cgroup_guard *guard, int fd, struct aj_err *err)
{
	char byte = 0, ctl[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8))) = {0};
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	if (guard->pid <= 0)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ESRCH, "no cgroup guard to hand over to");
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	/* Once queued, the descriptor is held by the guard's end even before it is read. */
	if (sendmsg(guard->wfd, &msg, MSG_NOSIGNAL) < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "hand a descriptor to the cgroup guard");
	return 0;
}

void aj_cgroup_guard_release(struct aj_cgroup_guard *guard)
{
	if (guard->pid <= 0)
		return;
	/* The supervisor removed the cgroups already; the guard finds them gone and exits, on
	 * its own time: its exit closes the lingering descriptor, which may block. */
	aj_close_fd(&guard->wfd);
	g_finishing = guard->pid;
	guard->pid = -1;
	guard->wfd = -1;
	g_started = false;
}
