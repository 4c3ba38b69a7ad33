/* The sandbox's PID 1. It runs under every restriction of the sandbox (it applied them to
 * itself), starts the command, reaps every process that ends up parented to it, forwards
 * signals from the supervisor to the command's process group, and reports the command's end.
 * When it exits, the kernel kills whatever is left in the pid namespace: daemons, double
 * forks and setsid'd processes included.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/trace.h"
#include "sandbox/init_internal.h"
#include "sandbox/initproto.h"
#include "sandbox/launch.h"

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void noop_handler(int sig)
{
	(void)sig;
}

/* The signals a command must get back at their default action: execve resets caught signals
 * by itself, so only those init ignores (inherited from agentjail's caller, as nohup leaves
 * SIGHUP) need it. One read of SigIgn instead of a sigaction call per signal in every spawn;
 * all of them where it cannot be read. */
static sigset_t reset_on_spawn;
static bool reset_known; /* set by aj_init_setup_signals() */
/* The signals init has a handler for: its own and any it inherited (a sanitizer's, say).
 * aj_init_spawn's child, which runs on init's memory until execve, sets them back to the
 * default before it opens its signal mask. */
static sigset_t handled;

static void set_of(sigset_t *set, unsigned long long bits)
{
	sigemptyset(set);
	for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
		if (bits & (1ULL << (sig - 1)))
			sigaddset(set, sig);
}

/* The ignored and the caught signals, from SigIgn and SigCgt; every signal in both where
 * they cannot be read. */
static void find_dispositions(sigset_t *ignored, sigset_t *caught)
{
	_cleanup_close_ int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	char buf[4096], *ign_at, *cgt_at;
	unsigned long long ign, cgt;
	ssize_t n;

	sigfillset(ignored);
	sigfillset(caught);
	if (fd < 0 || (n = read(fd, buf, sizeof buf - 1)) <= 0)
		return;
	buf[n] = '\0';
	ign_at = strstr(buf, "\nSigIgn:");
	cgt_at = strstr(buf, "\nSigCgt:");
	if (!ign_at || !cgt_at || sscanf(ign_at + 8, "%llx", &ign) != 1 ||
	    sscanf(cgt_at + 8, "%llx", &cgt) != 1)
		return;
	set_of(ignored, ign);
	set_of(caught, cgt);
}

/* PID 1 only receives signals it has a handler for; with handlers installed and the signals
 * blocked, they queue for the signalfd. */
int aj_init_setup_signals(sigset_t *mask)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = noop_handler;
	sigemptyset(mask);
	sigaddset(mask, SIGCHLD);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
		sigaddset(mask, forwarded[i]);
		sigaction(forwarded[i], &sa, NULL);
	}
	sigaction(SIGCHLD, &sa, NULL);
	sigprocmask(SIG_BLOCK, mask, NULL);
	find_dispositions(&reset_on_spawn, &handled);
	reset_known = true;
	return signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* What a failed child tells init: through its close-on-exec pipe (spawn_as), or in init's own
 * memory (aj_init_spawn). */
struct spawn_fail {
	int stage, err;
};

static void __attribute__((noreturn)) child_fail(int fd, int stage)
{
	struct spawn_fail f = {stage, errno};

	if (write(fd, &f, sizeof f) < 0)
		_exit(127);
	_exit(127);
}

/* What runs in aj_init_spawn's child, on a stack the address sanitizer does not know: it must
 * leave no poisoned frame there (the child ends in execve, its frames never unwind, and the next
 * child's calls would trip over them). */
#define CHILD_CODE __attribute__((no_sanitize("address")))

/* "/proc/self/fd/N", without snprintf: aj_init_spawn's child shares init's memory. */
static CHILD_CODE void fd_path(char *buf, size_t len, int fd)
{
	static const char dir[] = "/proc/self/fd/";
	char digits[12];
	size_t n = 0, at = sizeof dir - 1;
	unsigned v = (unsigned)fd;

	memcpy(buf, dir, at);
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0 && n < sizeof digits);
	while (n && at + 1 < len)
		buf[at++] = digits[--n];
	buf[at] = '\0';
}

/* The command's stdio: its terminal, opened after setsid so that it becomes the controlling
 * one, or the three descriptors it was given. Only system calls: aj_init_spawn's child runs
 * in init's memory. 0, or -1 with errno set. */
static CHILD_CODE int place_stdio(const struct aj_spawn *sp)
{
	char tty[32];
	int in[3];

	if (sp->tty_fd >= 0) {
		int fd;

		fd_path(tty, sizeof tty, sp->tty_fd);
		if ((fd = open(tty, O_RDWR | O_CLOEXEC)) < 0)
			return -1;
		for (int i = 0; i < 3; i++)
			if (fd == i ? fcntl(i, F_SETFD, 0) < 0 : dup2(fd, i) < 0)
				return -1;
		return 0;
	}
	if (!sp->stdio)
		return 0;
	/* A descriptor at 0-2 that belongs elsewhere is copied above 2 first, so that placing
	 * one cannot close another; the rest are placed as they are (no spare slots needed). */
	for (int i = 0; i < 3; i++) {
		in[i] = sp->stdio[i];
		if (in[i] >= 0 && in[i] < 3 && in[i] != i &&
		    (in[i] = fcntl(in[i], F_DUPFD_CLOEXEC, 3)) < 0)
			return -1;
	}
	for (int i = 0; i < 3; i++)
		if (in[i] == i ? fcntl(i, F_SETFD, 0) < 0 : dup2(in[i], i) < 0)
			return -1;
	return 0;
}

/* The child of spawn_as: a clean signal slate, its own session, its stdio, its user, then
 * exec. The credential switch drops every capability unless the user is root. */
static void __attribute__((noreturn)) child(const struct aj_spawn *sp, int fail_fd)
{
	extern char **environ;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&reset_on_spawn, sig) == 1)
			sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0 || place_stdio(sp) < 0)
		child_fail(fail_fd, AJ_ISTAGE_EXEC);
	/* An init that works with the sandbox user's effective ids (the gvisor tier's, whose
	 * Sentry has no setfsuid) is root again first: its real and saved uid are 0. */
	if (geteuid() != 0 && getuid() == 0 && (seteuid(0) < 0 || setegid(0) < 0))
		child_fail(fail_fd, AJ_ISTAGE_USER);
	if ((sp->set_groups && setgroups(sp->n_groups, sp->groups) < 0) ||
	    setresgid(sp->gid, sp->gid, sp->gid) < 0 || setresuid(sp->uid, sp->uid, sp->uid) < 0)
		child_fail(fail_fd, AJ_ISTAGE_USER);
	if (sp->cwd && chdir(sp->cwd) < 0)
		child_fail(fail_fd, AJ_ISTAGE_CHDIR);
	environ = (char **)sp->envp;
	execvpe(sp->argv[0], sp->argv, (char **)sp->envp);
	child_fail(fail_fd, AJ_ISTAGE_EXEC);
}

/* fork and exec as another user (posix_spawn cannot switch ids). */
static int spawn_as(const struct aj_spawn *sp, pid_t *pid, int *stage)
{
	struct spawn_fail f;
	int fds[2];
	ssize_t n;
	pid_t c;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return errno;
	c = fork();
	if (c < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return e;
	}
	if (c == 0) {
		close(fds[0]);
		child(sp, fds[1]);
	}
	close(fds[1]);
	do
		n = read(fds[0], &f, sizeof f);
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == (ssize_t)sizeof f) {
		waitpid(c, NULL, 0);
		*stage = f.stage;
		return f.err ? f.err : EIO;
	}
	*pid = c;
	return 0;
}

/* execvp's search, as glibc's posix_spawnp makes it: the PATH of the command's environment
 * (the system's default where it has none), no shell for a file that is not an executable, a
 * name longer than NAME_MAX refused. Returns the errno that counts: EACCES if a match could
 * not be run and nothing later could, else the last one. */
static CHILD_CODE int exec_search(char *const argv[], char *const envp[])
{
	const char *file = argv[0], *path = "/bin:/usr/bin", *p, *end;
	size_t flen = strlen(file);
	char buf[PATH_MAX];
	bool denied = false;
	int last = ENOENT;

	if (!*file)
		return ENOENT;
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return errno;
	}
	if (flen > NAME_MAX)
		return ENAMETOOLONG;
	for (char *const *e = envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0) {
			path = *e + 5;
			break;
		}
	for (p = path;; p = end + 1) {
		size_t dlen;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		if (dlen + 1 + flen + 1 <= sizeof buf) { /* a longer entry names nothing */
			memcpy(buf, p, dlen);
			if (dlen) /* an empty entry is the working directory */
				buf[dlen++] = '/';
			memcpy(buf + dlen, file, flen + 1);
			execve(buf, argv, envp);
			switch (last = errno) {
			case EACCES:
				denied = true;
				break;
			case ENOENT:
			case ENOTDIR:
			case ESTALE:
			case ENODEV:
			case ETIMEDOUT:
				break;
			default:
				return last;
			}
		}
		if (!*end)
			return denied ? EACCES : last;
	}
}

/* What aj_init_spawn's child shares with init. */
struct vfork_args {
	const struct aj_spawn *sp;
	struct spawn_fail fail;
};

/* aj_init_spawn's child. It runs on init's memory (CLONE_VM) while init waits for its exec or
 * its end (CLONE_VFORK), every signal blocked: so it makes system calls and calls string
 * functions only, and of init's memory writes a->fail, besides errno (init's too: the child
 * has no thread area of its own) and, the first time, lazily bound library addresses. That
 * holds as long as init has one thread. The signals init catches go back to the default
 * first, since a signal taken before execve would run init's handler here, then those init
 * ignores; the mask opens last. */
static CHILD_CODE int vfork_child(void *arg)
{
	struct vfork_args *a = arg;
	const struct aj_spawn *sp = a->sp;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&handled, sig) == 1 || sigismember(&reset_on_spawn, sig) == 1)
			sigaction(sig, &dfl, NULL);
	a->fail.stage = AJ_ISTAGE_EXEC;
	if (setsid() < 0 || place_stdio(sp) < 0)
		goto fail;
	if (sp->cwd && chdir(sp->cwd) < 0) {
		a->fail.stage = AJ_ISTAGE_CHDIR;
		goto fail;
	}
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		goto fail;
	a->fail.err = exec_search(sp->argv, sp->envp);
	_exit(127);
fail:
	a->fail.err = errno;
	_exit(127);
}

/* The stack of aj_init_spawn's child: init is single-threaded and waits while it runs, so
 * one serves every spawn. */
static char vfork_stack[64 * 1024] __attribute__((aligned(64)));

/* A clone that shares init's memory and suspends init until the child has exec'd: no copy of
 * init's page tables, and, unlike posix_spawn, no sigaction pair for each of the 64 signals,
 * which each pass the sandbox's seccomp filter. */
int aj_init_spawn(const struct aj_spawn *sp, pid_t *pid, int *stage)
{
	struct vfork_args a = {.sp = sp};
	sigset_t all, old;
	pid_t c;
	int e;

	*stage = AJ_ISTAGE_EXEC;
	if (!reset_known) {
		sigfillset(&reset_on_spawn);
		sigfillset(&handled);
	}
	if (sp->as_user)
		return spawn_as(sp, pid, stage);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	c = clone(vfork_child, vfork_stack + sizeof vfork_stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
		  &a);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (c < 0)
		return e;
	if (a.fail.err) {
		waitpid(c, NULL, 0);
		*stage = a.fail.stage;
		return a.fail.err;
	}
	*pid = c;
	return 0;
}

/* Starts the one-shot command; fills the READY message. */
static pid_t start_command(const struct aj_plan *plan, struct aj_sync_msg *ready)
{
	struct aj_spawn sp = {.argv = plan->argv.v, .envp = plan->env.v, .tty_fd = -1};
	gid_t groups[32];
	pid_t pid = -1;
	int r, stage;

	memset(ready, 0, sizeof *ready);
	ready->type = AJ_SYNC_READY;
	/* The command inherits init's working directory; a failure here is told apart from a
	 * missing program. */
	if (chdir(plan->cwd) < 0) {
		ready->exec_errno = errno;
		snprintf(ready->exec_stage, sizeof ready->exec_stage, "chdir");
		return -1;
	}
	aj_init_user(plan, NULL, &sp, groups, sizeof groups / sizeof groups[0], NULL);
	r = aj_init_spawn(&sp, &pid, &stage);
	if (r != 0) {
		ready->exec_errno = r;
		snprintf(ready->exec_stage, sizeof ready->exec_stage, "%s",
			 stage == AJ_ISTAGE_USER ? "user" : "exec");
		return -1;
	}
	ready->pid = pid;
	return pid;
}

/* init holds no end of the command's pipes, so the supervisor sees EOF when the command's
 * tree closes them. */
void aj_init_detach_stdio(void)
{
	_cleanup_close_ int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
}

static void finish(int ctl_fd, int status, const struct aj_sync_msg *ready)
{
	struct aj_sync_msg m;

	memset(&m, 0, sizeof m);
	m.type = AJ_SYNC_EXIT;
	m.status = status;
	m.exec_errno = ready->exec_errno;
	memcpy(m.exec_stage, ready->exec_stage, sizeof m.exec_stage);
	getrusage(RUSAGE_CHILDREN, &m.ru);
	aj_sync_send(ctl_fd, &m);
	_exit(0);
}

/* runsc ends with 128+N when the command dies of signal N (it cannot die of it itself): the
 * gvisor tier reports that as the signal, as the other tiers do (a command that exits with
 * such a code itself is reported the same way; shells cannot tell them apart either). */
static int runsc_status(int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 32)
		return WEXITSTATUS(status) - 128;
	return status;
}

static void reap(int ctl_fd, pid_t cmd, bool gvisor, const struct aj_sync_msg *ready)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if (pid == cmd)
			finish(ctl_fd, gvisor ? runsc_status(status) : status, ready);
}

static void handle_ctl(int ctl_fd, pid_t target)
{
	struct aj_sync_msg m;

	if (aj_sync_recv(ctl_fd, &m, 0) < 0) {
		if (errno == EPIPE)
			_exit(1); /* the supervisor is gone: take the sandbox with us */
		return;
	}
	if (m.type == AJ_SYNC_SIGNAL && m.status > 0 && m.status < NSIG)
		kill(target, m.status);
}

void aj_init_main(const struct aj_plan *plan, int ctl_fd)
{
	struct aj_sync_msg ready;
	sigset_t mask;
	int sfd = aj_init_setup_signals(&mask);
	pid_t cmd, target;

	if (plan->argv.n == 0)
		aj_init_serve(plan, ctl_fd, sfd);

	aj_trace("init: start command");
	cmd = start_command(plan, &ready);
	aj_trace("init: command started");

	aj_sync_send(ctl_fd, &ready);
	aj_init_detach_stdio();
	if (cmd < 0)
		finish(ctl_fd,
		       (ready.exec_errno == ENOENT && strcmp(ready.exec_stage, "exec") == 0 ? 127
											 : 126)
			       << 8,
		       &ready);
	/* The command's process group; in the gvisor tier runsc alone, which forwards the
	 * signal to the command inside its Sentry (its gofer, in the same group, would die of
	 * it and take the sandbox along). */
	target = plan->tier == AJ_TIER_GVISOR ? cmd : -cmd;
	for (;;) {
		struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ctl_fd, .events = POLLIN}};
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			_exit(1);
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			handle_ctl(ctl_fd, target);
		while (p[0].revents && read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
			if (si.ssi_signo != SIGCHLD)
				kill(target, (int)si.ssi_signo);
		}
		reap(ctl_fd, cmd, plan->tier == AJ_TIER_GVISOR, &ready);
	}
}
