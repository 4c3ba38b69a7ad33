/* Steps shared by an OCI container's init and its exec'd processes: the terminal, resource
 * limits, dropping privileges and the final exec; made of the module's shared steps
 * (steps.h) where they are the same as every sandbox's. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdpass.h"
#include "common/util.h"
#include "sandbox/caps.h"
#include "sandbox/container.h"
#include "sandbox/steps.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/* runc's console protocol: one message whose payload is the master's name as runc opened it
 * ("/dev/ptmx") and whose only control message carries exactly one descriptor, the master. */
static int send_master(int sock, int master, struct aj_err *err)
{
	static const char name[] = "/dev/ptmx";
	struct iovec iov = {.iov_base = (void *)name, .iov_len = sizeof name - 1};

	if (aj_fdpass_send(sock, &iov, 1, &master, 1) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "send the terminal to the console socket");
	return 0;
}

/* A pseudo-terminal of the container's own devpts (opened inside its root), the master
 * handed to the caller's console socket; *tty is the slave, owned by the process's user. */
int aj_container_console(const struct aj_container_process *p, int console_fd, int *tty, struct aj_err *err)
{
	_cleanup_close_ int master = -1;
	int unlock = 0;
	struct winsize ws = {.ws_row = (unsigned short)p->rows, .ws_col = (unsigned short)p->cols};

	*tty = -1;
	master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return aj_err_sys(err, AJ_LAYER_MOUNT, "open /dev/ptmx in the container (is "
						       "devpts mounted at /dev/pts?)");
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "unlock the pseudo-terminal");
	*tty = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*tty < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "open the terminal's slave");
	if (fchown(*tty, p->uid, p->gid) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "give the terminal to uid %u", p->uid);
	if (p->rows && p->cols && ioctl(master, TIOCSWINSZ, &ws) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "set the terminal's size");
	return send_master(console_fd, master, err);
}

int aj_container_rlimits(const struct aj_container_process *p, struct aj_err *err)
{
	for (size_t i = 0; i < p->n_rlimits; i++)
		if (aj_step_setrlimit(p->rlimits[i].resource, p->rlimits[i].soft,
				      p->rlimits[i].hard, err) < 0)
			return -1;
	return 0;
}

/* The capability sets the process runs with until its own are installed: the bundle's
 * permitted set, plus CAP_SYS_ADMIN over the container's user namespace where no_new_privs
 * is off, because Landlock and seccomp filters may then only be installed with it, plus
 * what the caller keeps beyond that (init's CAP_KILL). */
static uint64_t setup_caps(const struct aj_container_process *p, uint64_t extra)
{
	return p->caps[AJ_CAPSET_PERMITTED] | extra |
	       (p->no_new_privs ? 0 : UINT64_C(1) << CAP_SYS_ADMIN);
}

/* The bounding set, the user, the capabilities the setup needs, no_new_privs as the bundle
 * asks, Landlock, agentjail's filter. Every capability here is one of the container's own
 * user namespace: none reaches a namespace the container does not own. */
int aj_container_confine(const struct aj_plan *plan, const struct aj_container_process *p,
			 uint64_t extra, struct aj_err *err)
{
	uint64_t setup = setup_caps(p, extra);

	/* 1. The bounding set first: it needs CAP_SETPCAP, which the bundle may not keep. */
	if (aj_caps_bound(p->caps[AJ_CAPSET_BOUNDING], err) < 0)
		return -1;
	/* 2. The user, keeping the permitted set across the switch away from uid 0. */
	if (aj_caps_switch_user(p->uid, p->gid, p->groups, p->n_groups, err) < 0 ||
	    aj_caps_set(setup, setup, p->caps[AJ_CAPSET_INHERITABLE], err) < 0)
		return -1;
	/* 3. no_new_privs where the bundle asks (then setuid and file capabilities stay inert);
	 * without it they work as on any system, within the container's user namespace and
	 * bounded by its bounding set. */
	if (p->no_new_privs && aj_step_no_new_privs(err) < 0)
		return -1;
	/* 4. Landlock and agentjail's filter, inherited by everything the container runs. */
	if (aj_step_landlock(plan, err) < 0)
		return -1;
	return aj_step_seccomp(plan->sc_insns, plan->sc_len, err);
}

/* The process's own sets, exactly as the bundle gives them (the ambient ones last: each
 * must be permitted and inheritable by then). */
static int final_caps(const struct aj_container_process *p, struct aj_err *err)
{
	if (aj_caps_set(p->caps[AJ_CAPSET_EFFECTIVE], p->caps[AJ_CAPSET_PERMITTED],
			p->caps[AJ_CAPSET_INHERITABLE], err) < 0)
		return -1;
	return aj_caps_ambient(p->caps[AJ_CAPSET_AMBIENT], err);
}

int aj_container_exec_process(const struct aj_container_process *p, int tty, const struct sock_filter *filter,
			size_t filter_len, struct aj_err *err)
{
	extern char **environ;
	static char *no_env[] = {NULL};
	char **envp = p->env.v ? p->env.v : no_env;

	if (aj_step_new_session(err) < 0)
		return 125;
	if (tty >= 0) {
		if (ioctl(tty, TIOCSCTTY, 0) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "make the terminal controlling"), 125;
		for (int fd = 0; fd < 3; fd++)
			if (dup2(tty, fd) < 0)
				return aj_err_sys(err, AJ_LAYER_IO, "terminal as stdio"), 125;
	}
	if (chdir(p->cwd) < 0)
		return aj_err_sys(err, AJ_LAYER_EXEC, "chdir \"%s\"", p->cwd), 126;
	/* The bundle's filter constrains the process, not agentjail's setup (execve must be
	 * allowed by it, as with any OCI runtime). With no_new_privs it comes last; without,
	 * it needs CAP_SYS_ADMIN, so it comes before the process's own sets (which the filter
	 * must then let it install: capset and prctl, as runc requires too). */
	if (p->no_new_privs && final_caps(p, err) < 0)
		return 125;
	if (aj_step_seccomp(filter, filter_len, err) < 0)
		return 125;
	if (!p->no_new_privs && final_caps(p, err) < 0)
		return 125;
	/* execvpe searches the PATH of the current environment: install the process's. */
	environ = envp;
	execvpe(p->args.v[0], p->args.v, envp);
	aj_err_sys(err, AJ_LAYER_EXEC, "exec \"%s\"", p->args.v[0]);
	return errno == ENOENT ? 127 : 126;
}

int aj_container_oom_score(pid_t pid, int adj, struct aj_err *err)
{
	char path[64], v[16];

	snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)pid);
	snprintf(v, sizeof v, "%d", adj);
	if (aj_write_file(path, v) >= 0)
		return 0;
	aj_err_sys(err, AJ_LAYER_PROCESS, "process.oomScoreAdj: write %s to %s", v, path);
	if (errno == EACCES)
		return aj_err_hint(err, "a score below the runtime's own needs CAP_SYS_RESOURCE, which "
					"this process lacks (containerd's restrict_oom_score_adj keeps "
					"scores at or above its own)");
	return -1;
}

int aj_container_init_caps(struct aj_err *err)
{
	const uint64_t kill = UINT64_C(1) << CAP_KILL;

	/* Inheritable empty, so the ambient set goes too. */
	return aj_caps_set(kill, kill, 0, err);
}
