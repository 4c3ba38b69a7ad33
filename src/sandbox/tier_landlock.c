/* The landlock tier's launch (docs/threat-model.md, "The landlock tier"): a sandbox without
 * any namespace, for hosts that refuse unprivileged user namespaces. aj_sandbox_start()
 * forks (no namespace flags) through this tier's table of operations
 * (aj_tier_landlock_launch, launch_internal.h); the rest of the launch and of the supervisor
 * is shared. Without a pid namespace, the forked process is no PID 1 whose end takes the
 * sandbox with it. It becomes the sandbox's keeper:
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
 *
 * The scratch directory (plan->scratch, HOME and TMPDIR) is made by the supervisor before
 * the fork (prepare) and removed once the sandbox is gone (cleanup), or by the keeper when
 * the supervisor disappears.
 */
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
#include "common/lazylib.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "common/tree.h"
#include "common/util.h"
#include "common/warn.h"
#include "sandbox/caps.h"
#include "sandbox/init_internal.h"
#include "sandbox/launch_internal.h"
#include "sandbox/proctree.h"
#include "sandbox/steps.h"

#define CTL_FD AJ_STEP_CTL_FD

/* ---- supervisor side ------------------------------------------------------------------- */

/* Before the fork: the supervisor becomes the child subreaper of everything the sandbox
 * will orphan, and creates the scratch directory. */
static int prepare(const struct aj_plan *plan, struct aj_err *err)
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

/* Every process of the sandbox is a descendant of the supervisor but `spare`. */
static void kill_tree(pid_t spare, const struct aj_warn *warn)
{
	unsigned left = aj_proctree_kill(getpid(), spare);

	if (left)
		aj_warn(warn, "%u process(es) of the sandbox still alive after 5 s of SIGKILL",
			left);
}

/* Never following what the sandbox left in it. */
static void cleanup(const struct aj_plan *plan, const struct aj_warn *warn)
{
	char parent[4200];
	const char *name;
	char *slash;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	struct aj_err err;

	if (!plan->scratch)
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
		aj_warn_err(warn, &err);
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

/* The command's own enforcement steps, then its exec; returns only on a failure, which r
 * describes. */
static void command_steps(const struct aj_plan *plan, struct spawn_report *r)
{
	extern char **environ;

	/* 1. A session and process group of its own: the keeper signals the whole group, and
	 *    no terminal is controlling it (no TIOCSTI into the caller's). */
	if (aj_step_new_session(&r->err) < 0)
		return;
	/* 2. The working directory: told apart from a missing program, as in the other tier. */
	if (chdir(plan->cwd) < 0) {
		r->stage = 1;
		r->errnum = errno;
		return;
	}
	/* 3. Landlock: filesystem, TCP, scopes. From here on this process is inside the
	 *    sandbox's domain and the keeper outside it. */
	if (aj_step_landlock(plan, &r->err) < 0)
		return;
	/* 4. seccomp last. */
	if (aj_step_seccomp(plan->sc_insns, plan->sc_len, &r->err) < 0)
		return;
	/* execvp searches the PATH of its own environment: make it the command's. */
	environ = (char **)plan->env.v;
	execvp(plan->argv.v[0], plan->argv.v);
	r->stage = 2;
	r->errnum = errno;
}

/* The forked child: the steps, or the report of the one that failed. Never returns. */
static void command_child(const struct aj_plan *plan, int report_fd)
{
	struct spawn_report r;

	memset(&r, 0, sizeof r);
	aj_err_clear(&r.err);
	default_signals();
	command_steps(plan, &r);
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
	_cleanup_close_ int rd = -1, wr = -1;
	ssize_t n;
	pid_t pid;

	memset(ready, 0, sizeof *ready);
	ready->type = AJ_SYNC_READY;
	*cmd = -1;
	if (aj_pipe(&rd, &wr, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "pipe for the command's start");
	pid = fork();
	if (pid == 0) {
		aj_close_fd(&rd);
		command_child(plan, wr);
	}
	aj_close_fd(&wr); /* the child's: end of file once it has exec'd */
	if (pid < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork the command");
	do
		n = read(rd, &r, sizeof r);
	while (n < 0 && errno == EINTR);
	aj_close_fd(&rd);
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
		/* The keeper is its own edge here: stderr is all it has left to tell. */
		cleanup(plan, &aj_warn_stderr);
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

/* The keeper's enforcement steps (docs/architecture.md, "The landlock tier": the sequence
 * without the namespace ones), the shared ones from steps.h. The command's own steps follow
 * in command_child(). */
static int keeper_setup(const struct aj_plan *plan, const struct aj_stdio *io, int sync_fd,
			struct aj_err *err)
{
	const int keep[] = {io->in, io->out, io->err, sync_fd};

	/* 1. GO: without clone3 the supervisor moves us into the cgroup first. No parent-death
	 *    signal: if the supervisor dies, the keeper must live to clean up. */
	if (aj_step_wait_go(sync_fd, "supervisor", err) < 0)
		return -1;
	/* 2. The keeper runs as the sandbox's uid: the dumpable flag (with Landlock's ptrace
	 *    rule) keeps its memory and /proc files from the command; nothing of the caller's
	 *    environment stays in its memory. */
	aj_step_undumpable();
	aj_proctitle_wipe_environment();
	/* 3. The egress proxy's socket, on the host's loopback (no namespace to make it in). */
	if (aj_step_pass_listener(plan, sync_fd, err) < 0)
		return -1;
	/* 4. Stdio at 0-2 (inherited by the command), the control socket at 3; the rlimits. */
	if (aj_step_place_fds(keep, (int)AJ_ARRAY_SIZE(keep), 0, CTL_FD, err) < 0 ||
	    aj_step_plan_rlimits(plan, err) < 0)
		return -1;
	/* 5. Out of the caller's session and away from its terminal. */
	if (aj_step_new_session(err) < 0)
		return -1;
	/* 6. Capabilities a caller may hold (ambient, from a wrapper's file capabilities); the
	 *    bounding set stays, dropping it needs CAP_SETPCAP. */
	if (aj_caps_drop_all(err) < 0)
		return -1;
	/* 7. Orphans of the sandbox are reparented here, where they can be found. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_CHILD_SUBREAPER)");
	/* 8. no_new_privs, inherited by the command; and the supervisor is still there. */
	if (aj_step_no_new_privs(err) < 0 || aj_step_supervisor_alive(CTL_FD, err) < 0)
		return -1;
	return 0;
}

static void __attribute__((noreturn))
keeper_child(const struct aj_plan *plan, const struct aj_stdio *io,
	     const struct aj_cgroup_join *join, int sync_fd)
{
	struct aj_sync_msg ready;
	struct aj_err err;
	sigset_t mask;
	pid_t cmd;
	int sfd;

	aj_err_clear(&err);
	aj_proctitle_set("agentjail-init");
	aj_lazylib_forbid(); /* a root the sandbox controls is never searched for a library */
	/* 0. */
	if (aj_step_join_cgroup(join, &err) < 0 || keeper_setup(plan, io, sync_fd, &err) < 0)
		aj_step_fail(&err, sync_fd);
	aj_trace("keeper: set up");
	/* Signals are queued for the signalfd from before the command exists. */
	sfd = aj_init_setup_signals(&mask);
	if (sfd < 0) {
		aj_err_sys(&err, AJ_LAYER_PROCESS, "signalfd");
		aj_step_fail(&err, CTL_FD);
	}
	if (spawn_command(plan, &ready, &cmd, &err) < 0)
		aj_step_fail(&err, CTL_FD);
	aj_sync_send(CTL_FD, &ready);
	aj_init_detach_stdio();
	if (cmd < 0)
		finish((ready.exec_errno == ENOENT && strcmp(ready.exec_stage, "exec") == 0 ? 127
											  : 126)
			       << 8,
		       &ready);
	keeper_loop(plan, sfd, cmd, &ready);
}

/* ---- the tier's operations ------------------------------------------------------------------ */

static int fork_failed(int errnum, struct aj_err *err)
{
	return aj_err_set(err, AJ_LAYER_PROCESS, errnum, "fork the sandbox's keeper");
}

/* No user namespace: no maps to write. */
static int before_go(const struct aj_plan *plan, pid_t pid, struct aj_err *err)
{
	return 0;
}

/* The child's error says all there is: no user namespace to diagnose. */
static int explain(const struct aj_plan *plan, pid_t pid, struct aj_err *err)
{
	return -1;
}

const struct aj_launch_ops aj_tier_landlock_launch = {
	.prepare = prepare,
	.child = keeper_child,
	.fork_failed = fork_failed,
	.before_go = before_go,
	.explain = explain,
	.kill_tree = kill_tree,
	.cleanup = cleanup,
};
