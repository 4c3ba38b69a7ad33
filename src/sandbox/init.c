/* The sandbox's PID 1. It runs under every restriction of the sandbox (it applied them to
 * itself), starts the command, reaps every process that ends up parented to it, forwards
 * signals from the supervisor to the command's process group, and reports the command's end.
 * When it exits, the kernel kills whatever is left in the pid namespace: daemons, double
 * forks and setsid'd processes included.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
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

static void find_ignored(sigset_t *set)
{
	_cleanup_close_ int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	char buf[4096], *p;
	unsigned long long ign;
	ssize_t n;

	sigfillset(set);
	if (fd < 0 || (n = read(fd, buf, sizeof buf - 1)) <= 0)
		return;
	buf[n] = '\0';
	p = strstr(buf, "\nSigIgn:");
	if (!p || sscanf(p + 8, "%llx", &ign) != 1)
		return;
	sigemptyset(set);
	for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
		if (ign & (1ULL << (sig - 1)))
			sigaddset(set, sig);
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
	find_ignored(&reset_on_spawn);
	reset_known = true;
	return signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* What a failed child tells init through its close-on-exec pipe. */
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

/* The child of spawn_as: a clean signal slate, its own session, its stdio, its user, then
 * exec. The credential switch drops every capability unless the user is root. */
static void __attribute__((noreturn)) child(const struct aj_spawn *sp, int fail_fd)
{
	extern char **environ;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	char tty[64];
	int in[3];

	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&reset_on_spawn, sig) == 1)
			sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0)
		child_fail(fail_fd, AJ_ISTAGE_EXEC);
	if (sp->tty_fd >= 0) {
		/* Opened after setsid: the controlling terminal. */
		snprintf(tty, sizeof tty, "/proc/self/fd/%d", sp->tty_fd);
		in[0] = open(tty, O_RDWR);
		if (in[0] < 0 || dup2(in[0], 0) < 0 || dup2(0, 1) < 0 || dup2(0, 2) < 0)
			child_fail(fail_fd, AJ_ISTAGE_EXEC);
	} else if (sp->stdio) {
		/* Copies above 2 first, so that placing one cannot close another. */
		for (int i = 0; i < 3; i++)
			if ((in[i] = fcntl(sp->stdio[i], F_DUPFD_CLOEXEC, 10)) < 0)
				child_fail(fail_fd, AJ_ISTAGE_EXEC);
		for (int i = 0; i < 3; i++)
			if (dup2(in[i], i) < 0)
				child_fail(fail_fd, AJ_ISTAGE_EXEC);
	}
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

int aj_init_spawn(const struct aj_spawn *sp, pid_t *pid, int *stage)
{
	extern char **environ;
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	sigset_t none;
	char tty[64];
	int r;

	*stage = AJ_ISTAGE_EXEC;
	if (!reset_known)
		sigfillset(&reset_on_spawn);
	if (sp->as_user)
		return spawn_as(sp, pid, stage);
	sigemptyset(&none);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_init(&fa);
	/* Dispositions and the mask survive execve: give the command a clean slate, in a session
	 * (and process group) of its own so that signals reach all of it. */
	posix_spawnattr_setsigdefault(&attr, &reset_on_spawn);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
						POSIX_SPAWN_SETSID);
	if (sp->tty_fd >= 0) {
		/* Reopening the terminal after setsid makes it the controlling terminal. */
		snprintf(tty, sizeof tty, "/proc/self/fd/%d", sp->tty_fd);
		posix_spawn_file_actions_addopen(&fa, 0, tty, O_RDWR, 0);
		posix_spawn_file_actions_adddup2(&fa, 0, 1);
		posix_spawn_file_actions_adddup2(&fa, 0, 2);
	} else if (sp->stdio) {
		for (int i = 0; i < 3; i++)
			posix_spawn_file_actions_adddup2(&fa, sp->stdio[i], i);
	}
	if (sp->cwd)
		posix_spawn_file_actions_addchdir_np(&fa, sp->cwd);
	/* posix_spawnp searches the PATH of the caller's environment: install the command's. */
	environ = (char **)sp->envp;
	r = posix_spawnp(pid, sp->argv[0], &fa, &attr, sp->argv, sp->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return r;
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
