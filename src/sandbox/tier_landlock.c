/* The landlock tier's launch. Without a pid namespace, the process aj_sandbox_start() forks
 * is no PID 1 whose end takes the sandbox with it. It becomes the sandbox's keeper:
 *
 *   supervisor      child subreaper: catches what outlives the keeper
 *    └ keeper       "agentjail-init"; no_new_privs, rlimits and cgroup like the sandbox, but
 *      │            outside its Landlock domain: Landlock scopes signals and ptrace to the
 *      │            domain, so nothing inside can kill, trace or read the keeper. A child
 *      │            subreaper: every process the sandbox orphans (double forks, setsid
 *      │            daemons) is reparented to it and stays findable. It reaps, forwards
 *      │            signals, reports the command's end, then kills whatever is left; also
 *      │            when the supervisor disappears.
 *      └ command    Landlock and seccomp applied after the fork, just before exec.
 */
#include "sandbox/tier_landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "common/tree.h"
#include "sandbox/caps.h"
#include "sandbox/init_internal.h"
#include "sandbox/proctree.h"
#include "sandbox/seccomp.h"

#define SETUP_TIMEOUT_MS 30000
#define CTL_FD 3

/* ---- supervisor side ------------------------------------------------------------------- */

int aj_tier_landlock_prepare(const struct aj_plan *plan, struct aj_err *err)
{
	static const char *const subdirs[] = {"home", "tmp"};
	char path[4200];

	/* If the keeper itself is gone, what the sandbox orphaned comes back to the supervisor
	 * rather than to the host's init, and can still be found and killed. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_CHILD_SUBREAPER)");
	/* mkdir, not "exists or create": in a shared /tmp a directory made by someone else under
	 * this name must never become the sandbox's home. */
	if (mkdir(plan->scratch, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "create the scratch directory \"%s\"",
				  plan->scratch);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(subdirs); i++) {
		snprintf(path, sizeof path, "%s/%s", plan->scratch, subdirs[i]);
		if (mkdir(path, 0700) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "create \"%s\"", path);
	}
	return 0;
}

void aj_tier_landlock_kill(pid_t spare)
{
	unsigned left = aj_proctree_kill(getpid(), spare);

	if (left)
		fprintf(stderr, "agentjail: %u process(es) of the sandbox still alive after 5 s of "
				"SIGKILL\n",
			left);
}

void aj_tier_landlock_cleanup(const struct aj_plan *plan)
{
	char parent[4200];
	const char *name;
	char *slash;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	struct aj_err err;

	if (plan->tier != AJ_TIER_LANDLOCK || !plan->scratch)
		return;
	snprintf(parent, sizeof parent, "%s", plan->scratch);
	slash = strrchr(parent, '/');
	if (!slash)
		return;
	*slash = '\0';
	name = slash + 1;
	dfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Only the directory this launch made: ours, and not a symlink planted in its place. */
	if (dfd < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid())
		return;
	if (aj_tree_remove_at(dfd, name, &err) < 0) {
		aj_err_prefix(&err, "remove the scratch directory \"%s\"", plan->scratch);
		aj_err_print(&err, stderr);
	}
}

/* ---- the command ---------------------------------------------------------------------- */

/* What the command's child tells the keeper when it cannot exec. */
struct spawn_report {
	int stage; /* 0: a setup step failed (err); 1: chdir; 2: exec */
	int errnum;
	struct aj_err err;
};

/* Dispositions and the mask survive execve: the keeper's signal handling must not reach the
 * command (nor what the caller ignored, such as SIGPIPE). */
static void default_signals(void)
{
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The command's own enforcement steps, in the forked child. Never returns. */
static void command_child(const struct aj_plan *plan, int report_fd)
{
	extern char **environ;
	struct spawn_report r;

	memset(&r, 0, sizeof r);
	aj_err_clear(&r.err);
	default_signals();
	/* 1. A session and process group of its own: the keeper signals the whole group, and
	 *    no terminal is controlling it (no TIOCSTI into the caller's). */
	if (setsid() < 0) {
		aj_err_sys(&r.err, AJ_LAYER_PROCESS, "setsid for the command");
		goto report;
	}
	/* 2. The working directory: told apart from a missing program, as in the other tier. */
	if (chdir(plan->cwd) < 0) {
		r.stage = 1;
		r.errnum = errno;
		goto report;
	}
	/* 3. Landlock: filesystem, TCP, scopes. From here on this process is inside the
	 *    sandbox's domain and the keeper outside it. */
	if (aj_sandbox_apply_landlock(plan, &r.err) < 0)
		goto report;
	/* 4. seccomp last, so that the filter need not allow any of the steps above. */
	if (plan->sc_insns && aj_seccomp_load(plan->sc_insns, plan->sc_len, &r.err) < 0)
		goto report;
	/* execvp searches the PATH of its own environment: make it the command's. */
	environ = (char **)plan->env.v;
	execvp(plan->argv.v[0], plan->argv.v);
	r.stage = 2;
	r.errnum = errno;
report:
	(void)!write(report_fd, &r, sizeof r);
	_exit(125);
}

/* Forks the command. -1: a setup step failed (err). 0: *cmd is its pid, or -1 if chdir or
 * exec failed (the READY message says which). The report pipe is close-on-exec: end of file
 * without a report means the exec happened. */
static int spawn_command(const struct aj_plan *plan, struct aj_sync_msg *ready, pid_t *cmd,
			 struct aj_err *err)
{
	struct spawn_report r;
	int pfd[2];
	ssize_t n;
	pid_t pid;

	memset(ready, 0, sizeof *ready);
	ready->type = AJ_SYNC_READY;
	*cmd = -1;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "pipe for the command's start");
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		command_child(plan, pfd[1]);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork the command");
	}
	do
		n = read(pfd[0], &r, sizeof r);
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == 0) {
		ready->pid = *cmd = pid;
		return 0;
	}
	waitpid(pid, NULL, 0);
	if (n != (ssize_t)sizeof r)
		return aj_err_set(err, AJ_LAYER_PROCESS, EIO, "the command's start report");
	if (r.stage == 0) {
		*err = r.err;
		return -1;
	}
	ready->exec_errno = r.errnum;
	snprintf(ready->exec_stage, sizeof ready->exec_stage, "%s", r.stage == 1 ? "chdir" : "exec");
	return 0;
}

/* ---- the keeper --------------------------------------------------------------------------- */

/* Nothing of the sandbox outlives the keeper, as nothing outlives a pid namespace's init. */
static void __attribute__((noreturn)) end(int code)
{
	aj_proctree_kill(getpid(), 0);
	_exit(code);
}

static void __attribute__((noreturn)) finish(int status, const struct aj_sync_msg *ready)
{
	struct aj_sync_msg m;

	memset(&m, 0, sizeof m);
	m.type = AJ_SYNC_EXIT;
	m.status = status;
	m.exec_errno = ready->exec_errno;
	memcpy(m.exec_stage, ready->exec_stage, sizeof m.exec_stage);
	getrusage(RUSAGE_CHILDREN, &m.ru);
	aj_sync_send(CTL_FD, &m);
	end(0);
}

static void control(const struct aj_plan *plan, pid_t cmd)
{
	struct aj_sync_msg m;

	if (aj_sync_recv(CTL_FD, &m, 0) < 0) {
		if (errno != EPIPE)
			return;
		/* The supervisor is gone (killed: it would have waited for us otherwise): take
		 * the sandbox with us, and its scratch directory, which nobody else will. */
		aj_proctree_kill(getpid(), 0);
		aj_tier_landlock_cleanup(plan);
		_exit(1);
	}
	if (m.type == AJ_SYNC_SIGNAL && m.status > 0 && m.status < NSIG)
		kill(-cmd, m.status);
}

/* Reaps the command and every orphan reparented here; returns when none is waiting. */
static void reap(pid_t cmd, const struct aj_sync_msg *ready)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if (pid == cmd)
			finish(status, ready);
}

static void __attribute__((noreturn))
keeper_loop(const struct aj_plan *plan, int sfd, pid_t cmd, const struct aj_sync_msg *ready)
{
	for (;;) {
		struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
				      {.fd = CTL_FD, .events = POLLIN}};
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			end(1);
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			control(plan, cmd);
		while (p[0].revents && read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
			if (si.ssi_signo != SIGCHLD)
				kill(-cmd, (int)si.ssi_signo);
		reap(cmd, ready);
	}
}

static bool supervisor_gone(void)
{
	struct pollfd p = {.fd = CTL_FD, .events = 0};
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* The keeper's enforcement steps (docs/architecture.md, "The landlock tier": the sequence
 * without the namespace ones). The command's own steps follow in command_child(). */
static int keeper_setup(const struct aj_plan *plan, const struct aj_stdio *io, int sync_fd,
			struct aj_err *err)
{
	struct aj_sync_msg go;

	/* 1. Wait for the supervisor: without clone3 it moves us into the cgroup first. No
	 *    parent-death signal: if the supervisor dies, the keeper must live to clean up. */
	if (aj_sync_recv(sync_fd, &go, SETUP_TIMEOUT_MS) < 0 || go.type != AJ_SYNC_GO)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the supervisor");
	/* 2. The keeper runs as the sandbox's uid: the dumpable flag (with Landlock's ptrace
	 *    rule) keeps its memory and /proc files from the command; nothing of the caller's
	 *    environment stays in its memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	aj_proctitle_wipe_environment();
	/* 3. The egress proxy's socket, on the host's loopback (no namespace to make it in);
	 *    before the descriptor shuffle moves the sync socket. */
	if (plan->egress.on && aj_sandbox_pass_listener(plan, sync_fd, err) < 0)
		return -1;
	/* 4. Stdio at 0-2 (inherited by the command), the control socket at 3, the rest closed;
	 *    then the rlimits, which may allow fewer descriptors than the shuffle used. */
	if (aj_sandbox_arrange_fds(io, sync_fd, err) < 0 || aj_sandbox_apply_rlimits(plan, err) < 0)
		return -1;
	/* 5. Out of the caller's session and away from its terminal. */
	if (setsid() < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "setsid");
	/* 6. Capabilities a caller may hold (ambient, from a wrapper's file capabilities). */
	if (aj_caps_drop_all(err) < 0)
		return -1;
	/* 7. Orphans of the sandbox are reparented here, where they can be found. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_CHILD_SUBREAPER)");
	/* 8. no_new_privs: setuid binaries and file capabilities cannot raise privileges, and
	 *    Landlock and seccomp accept the unprivileged command. Inherited by the command. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_NO_NEW_PRIVS)");
	if (supervisor_gone())
		return aj_err_set(err, AJ_LAYER_PROCESS, EPIPE, "the supervisor went away");
	return 0;
}

static void __attribute__((noreturn)) fail(const struct aj_err *err, int fd)
{
	struct aj_sync_msg msg;

	memset(&msg, 0, sizeof msg);
	msg.type = AJ_SYNC_ERROR;
	msg.err = *err;
	/* the sync socket may already have moved to 3 */
	if (aj_sync_send(fd, &msg) < 0)
		aj_sync_send(CTL_FD, &msg);
	_exit(125);
}

void aj_tier_landlock_child(const struct aj_plan *plan, const struct aj_stdio *io,
			    const struct aj_cgroup_join *join, int sync_fd)
{
	struct aj_sync_msg ready;
	struct aj_err err;
	sigset_t mask;
	pid_t cmd;
	int r, sfd;

	aj_err_clear(&err);
	aj_proctitle_set("agentjail-init");
	/* 0. Into the cgroup before anything else, so that every later process starts there. */
	r = aj_cgroup_join_self(join);
	if (r < 0)
		aj_err_set(&err, AJ_LAYER_CGROUP, -r, "join the sandbox's cgroup");
	if (r < 0 || keeper_setup(plan, io, sync_fd, &err) < 0)
		fail(&err, sync_fd);
	aj_trace("keeper: set up");
	/* Signals are queued for the signalfd from before the command exists. */
	sfd = aj_init_setup_signals(&mask);
	if (sfd < 0) {
		aj_err_sys(&err, AJ_LAYER_PROCESS, "signalfd");
		fail(&err, CTL_FD);
	}
	if (spawn_command(plan, &ready, &cmd, &err) < 0)
		fail(&err, CTL_FD);
	aj_sync_send(CTL_FD, &ready);
	aj_init_detach_stdio();
	if (cmd < 0)
		finish((ready.exec_errno == ENOENT && strcmp(ready.exec_stage, "exec") == 0 ? 127
											  : 126)
			       << 8,
		       &ready);
	keeper_loop(plan, sfd, cmd, &ready);
}
