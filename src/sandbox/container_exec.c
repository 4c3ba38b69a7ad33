/* `exec` into an OCI container: a new process in the namespaces, cgroup and confinement of
 * the container's init (see oci.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/lazylib.h"
#include "common/util.h"
#include "sandbox/container.h"
#include "sandbox/steps.h"

#define JOIN_NS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | \
		 CLONE_NEWCGROUP)
enum { FD_RESULT = 3, FD_TTY, FD_FIRST_FREE };

/* What goes back to the caller when the exec fails: the error and the exit code for it. */
struct result {
	int code;
	struct aj_err err;
};

/* The shared steps of steps.h, whose comments say why each sits where it does, and the
 * exec's own. */
static int child_setup(struct aj_container_launch *l, int pidfd, int go, int *result, int *tty,
		       struct aj_err *err)
{
	int keep[FD_FIRST_FREE - FD_RESULT] = {*result, -1};
	char c;

	/* 1. The caller moves us into the cgroup first: every later child starts there. */
	if (read(go, &c, 1) != 1)
		return aj_err_set(err, AJ_LAYER_PROCESS, EPIPE, "the runtime went away");
	aj_step_undumpable();
	/* 2. All of init's namespaces at once; root and cwd become the container's root. */
	if (setns(pidfd, JOIN_NS) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "join the container's namespaces");
	if (aj_step_become_ns_root("container's", err) < 0)
		return -1;
	if (l->console_fd >= 0 && aj_container_console(l->proc, l->console_fd, tty, err) < 0)
		return -1;
	/* Stdio stays 0-2; the result pipe and the terminal go to fixed numbers. */
	keep[FD_TTY - FD_RESULT] = *tty;
	if (aj_step_place_fds(keep, FD_FIRST_FREE - FD_RESULT, FD_RESULT, FD_RESULT, err) < 0)
		return -1;
	*result = FD_RESULT;
	if (*tty >= 0)
		*tty = FD_TTY;
	if (aj_container_rlimits(l->proc, err) < 0)
		return -1;
	return aj_container_confine(l->plan, l->proc, 0, err);
}

static void __attribute__((noreturn)) child_main(struct aj_container_launch *l, int pidfd, int go,
						 int result)
{
	struct result r;
	int tty = -1;

	memset(&r, 0, sizeof r);
	aj_lazylib_forbid(); /* a root the sandbox controls is never searched for a library */
	aj_step_die_with_parent(NULL);
	r.code = 125;
	if (child_setup(l, pidfd, go, &result, &tty, &r.err) == 0) {
		/* The process outlives the caller (it is the shim's now): a parent-death signal
		 * would survive the execve and kill it when `exec --detach` returns. */
		prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
		r.code = aj_container_exec_process(l->proc, tty, l->filter, l->filter_len, &r.err);
	}
	aj_write_all(result, &r, sizeof r);
	_exit(r.code);
}

static int open_init(const struct aj_container_launch *l, struct aj_err *err)
{
	_cleanup_close_ int fd = (int)syscall(SYS_pidfd_open, l->init_pid, 0);

	if (fd < 0 || !aj_proc_alive(l->init_pid, l->init_start))
		return aj_err_set(err, AJ_LAYER_PROCESS, ESRCH, "container not running");
	return aj_steal_fd(&fd);
}

/* The process's end of the handshake: in the cgroup, then go, then its result. */
static int release(struct aj_container_launch *l, pid_t pid, int go, int result, struct aj_err *err)
{
	struct result r;
	ssize_t n;

	if (aj_cgroup_oci_attach(l->cg, pid, err) < 0 ||
	    (l->proc->have_oom_score && aj_container_oom_score(pid, l->proc->oom_score_adj, err) < 0))
		return -1;
	if (write(go, "g", 1) != 1)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "start the process");
	n = aj_read_full(result, &r, sizeof r);
	if (n == 0)
		return 0; /* closed by a successful execve */
	if (n != (ssize_t)sizeof r)
		return aj_err_set(err, AJ_LAYER_PROCESS, EPROTO, "the process died while being set up");
	*err = r.err;
	return -1;
}

int aj_container_exec(struct aj_container_launch *l, pid_t *pid, int *status, struct aj_err *err)
{
	_cleanup_close_ int pidfd = open_init(l, err), own = -1;
	/* go: the process waits for it; result: its setup's outcome, end of file at execve. */
	_cleanup_close_ int go_r = -1, go_w = -1, res_r = -1, res_w = -1;
	int r, st;

	if (pidfd < 0)
		return -1;
	own = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "open /proc/self/ns/pid");
	if (aj_pipe(&go_r, &go_w, O_CLOEXEC) < 0 || aj_pipe(&res_r, &res_w, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "pipe");
	/* setns(CLONE_NEWPID) applies to our children only: the fork below lands inside. */
	if (setns(pidfd, CLONE_NEWPID) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "join the container's pid namespace");
	*pid = fork();
	if (*pid == 0) { /* never returns: no cleanup runs in the child */
		aj_close_fd(&go_w);
		aj_close_fd(&res_r);
		child_main(l, pidfd, go_r, res_w);
	}
	/* Back to our own for any later child (a sanitizer's helper at exit, say). */
	if (setns(own, CLONE_NEWPID) < 0 && *pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		return aj_err_sys(err, AJ_LAYER_NS, "return to our pid namespace");
	}
	aj_close_fd(&go_r);
	aj_close_fd(&res_w);
	if (*pid < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork into the container");
	r = release(l, *pid, go_w, res_r, err);
	aj_close_fd(&go_w);
	aj_close_fd(&res_r);
	if (r < 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		return -1;
	}
	if (!l->detach) {
		if (waitpid(*pid, &st, 0) < 0)
			return aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the process");
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	return 0;
}
