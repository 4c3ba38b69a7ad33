/* `create` of an OCI container: the clone, the child's enforcement sequence, and the
 * container's init (see oci.h for the process shape and why there is no monitor). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/lazylib.h"
#include "host/features.h"
#include "sandbox/mount.h"
#include "sandbox/container.h"
#include "sandbox/steps.h"
#include "sandbox/sync.h"
#include "sandbox/userns.h"

#define SETUP_TIMEOUT_MS 30000
/* Where the child keeps what it needs after every other descriptor is closed. FD_PROCS,
 * the container's cgroup.procs, only with a joined pid namespace. */
enum { FD_SYNC = 3, FD_FIFO, FD_LOCK, FD_TTY, FD_PROCS, FD_FIRST_FREE };

/* Signals init passes to the process: all that a caller can send and a process may handle.
 * The synchronous ones (SEGV, BUS, ...) concern init itself; KILL and STOP cannot be caught. */
static const int forwarded[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE,
				SIGALRM, SIGTERM, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU,
				SIGURG,  SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGWINCH,
				SIGIO,   SIGPWR};

static void noop(int sig)
{
	(void)sig;
}

/* PID 1 receives only the signals it has a handler for: install one, block them, and read
 * them from a signalfd. */
static int init_signals(void)
{
	struct sigaction sa;
	sigset_t mask;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = noop;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaction(SIGCHLD, &sa, NULL);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(forwarded); i++) {
		sigaddset(&mask, forwarded[i]);
		sigaction(forwarded[i], &sa, NULL);
	}
	sigprocmask(SIG_BLOCK, &mask, NULL);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void restore_signals(void)
{
	sigset_t none;

	sigemptyset(&none);
	signal(SIGCHLD, SIG_DFL);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(forwarded); i++)
		signal(forwarded[i], SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Until `start`: 0 once it wrote to the fifo, or the signal that ended the wait. */
static int wait_start(int sfd)
{
	for (;;) {
		struct pollfd p[2] = {{.fd = FD_FIFO, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;
		char c;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return SIGABRT;
		if (p[0].revents && read(FD_FIFO, &c, 1) >= 0)
			return 0;
		while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
			if (si.ssi_signo != SIGCHLD)
				return (int)si.ssi_signo;
	}
}

static int exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void start_process(const struct aj_container_launch *l, int sfd, int tty)
{
	struct aj_err err;
	int code;

	aj_err_clear(&err);
	close(sfd);
	close(FD_FIFO);
	restore_signals();
	code = aj_container_exec_process(l->proc, tty, l->filter, l->filter_len, &err);
	aj_err_print(&err, stderr);
	_exit(code);
}

/* The pids cgroup.procs lists (in our pid namespace), without ours; how many. */
static size_t listed(pid_t *pids, size_t max)
{
	static char buf[65536];
	ssize_t n = lseek(FD_PROCS, 0, SEEK_SET) < 0 ? -1 : read(FD_PROCS, buf, sizeof buf - 1);
	size_t k = 0;

	buf[n > 0 ? n : 0] = '\0';
	for (char *p = buf, *end; k < max; p = end) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (v > 0 && v != getpid())
			pids[k++] = (pid_t)v;
	}
	return k;
}

/* One round: SIGKILL to each of init's children among the processes of the container's
 * cgroup (what else is there, exec'd processes, is in another Landlock domain, beyond
 * init's signals: the shim's `kill --all` and `delete` end those). A pidfd pins each;
 * waitid() tells a child (ECHILD: not ours). How many children were found. */
static size_t kill_children(void)
{
	static pid_t pids[4096];
	size_t n = listed(pids, AJ_ARRAY_SIZE(pids)), found = 0;

	for (size_t i = 0; i < n; i++) {
		int fd = (int)syscall(SYS_pidfd_open, pids[i], 0);
		siginfo_t si;

		if (fd < 0)
			continue;
		memset(&si, 0, sizeof si);
		if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG | WNOWAIT) == 0) {
			syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
			found++;
		}
		close(fd);
	}
	return found;
}

/* In a joined pid namespace the kernel ends nothing when init exits. init, a child
 * subreaper, ends its children (orphans come to it) until none is left, reaping them, so
 * that what the process started goes with it, as in a pid namespace of its own. Bounded. */
static void end_all(void)
{
	for (int round = 0; round < 1000; round++) {
		size_t n = kill_children();
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (n == 0 && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			return;
		nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
	}
}

static void __attribute__((noreturn)) init_exit(const struct aj_container_launch *l, int code)
{
	if (l->joined & CLONE_NEWPID)
		end_all();
	_exit(code);
}

static void __attribute__((noreturn)) init_main(const struct aj_container_launch *l, int tty)
{
	int sfd = init_signals(), sig;
	struct aj_err err;
	pid_t cmd;

	if (sfd < 0)
		_exit(125);
	if ((sig = wait_start(sfd)) != 0)
		_exit(128 + sig);
	/* Orphans come to init, not to the joined namespace's own init (the kernel does it
	 * for a pid namespace of the container's own). */
	if ((l->joined & CLONE_NEWPID) && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		_exit(125);
	cmd = fork();
	if (cmd == 0)
		start_process(l, sfd, tty);
	if (cmd < 0)
		_exit(125);
	/* init needs nothing of the bundle's capabilities any more (the process has them). */
	aj_err_clear(&err);
	if (aj_container_init_caps(&err) < 0) {
		kill(cmd, SIGKILL);
		init_exit(l, 125);
	}
	if (tty >= 0)
		close(tty);
	close(FD_FIFO);
	for (;;) {
		struct pollfd p = {.fd = sfd, .events = POLLIN};
		struct signalfd_siginfo si;
		int status;
		pid_t pid;

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			_exit(125);
		while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
			if (si.ssi_signo != SIGCHLD)
				kill(cmd, (int)si.ssi_signo);
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			if (pid == cmd) /* the kernel ends the rest of a new pid namespace */
				init_exit(l, exit_code(status));
	}
}

/* The enforcement sequence, in the order of docs/architecture.md: the shared steps of
 * steps.h, whose comments say why each sits where it does, and the container's own. */
static int child_setup(struct aj_container_launch *l, int sync_fd, int lock, int procs,
		       int *tty, struct aj_err *err)
{
	/* Stdio stays 0-2 (the shim's); what init keeps goes to fixed numbers. */
	int keep[FD_FIRST_FREE - FD_SYNC] = {sync_fd, l->fifo_fd, lock, -1, procs};

	/* 1. The id maps and the cgroup come from the parent. */
	if (aj_step_wait_go(sync_fd, "runtime", err) < 0)
		return -1;
	/* 2. Nothing inside may read this process's memory while it is root. */
	aj_step_undumpable();
	if (aj_step_become_ns_root("container's", err) < 0)
		return -1;
	/* 3. A cgroup namespace if the bundle asks for one; the root; loopback, hostname. */
	if (l->new_cgroupns && aj_step_cgroup_ns(err) < 0)
		return -1;
	if (aj_mount_build_tree_root(l->plan, l->root_readonly, err) < 0 ||
	    aj_step_network(l->plan, l->hostname, err) < 0)
		return -1;
	/* 4. The terminal comes from the container's own devpts, so after the mounts. */
	if (l->console_fd >= 0 && aj_container_console(l->proc, l->console_fd, tty, err) < 0)
		return -1;
	keep[FD_TTY - FD_SYNC] = *tty;
	if (aj_step_place_fds(keep, FD_FIRST_FREE - FD_SYNC, FD_SYNC, FD_SYNC, err) < 0)
		return -1;
	if (*tty >= 0)
		*tty = FD_TTY;
	if (aj_container_rlimits(l->proc, err) < 0)
		return -1;
	/* With a terminal, the caller's stdio must not stay open in init: go-runc reads
	 * `create`'s output until end-of-file, which would then never come. */
	for (int fd = 0; *tty >= 0 && fd < 3; fd++)
		if (dup2(*tty, fd) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "terminal as init's stdio");
	/* 5. init has no controlling terminal; the process gets its own session. */
	if (aj_step_new_session(err) < 0)
		return -1;
	/* 6. init keeps CAP_KILL beyond the bundle's sets (aj_container_init_caps). */
	return aj_container_confine(l->plan, l->proc, UINT64_C(1) << CAP_KILL, err);
}

static void __attribute__((noreturn)) child_main(struct aj_container_launch *l, int sync_fd, int lock,
						 int procs)
{
	struct aj_sync_msg msg;
	int tty = -1;

	memset(&msg, 0, sizeof msg);
	aj_lazylib_forbid(); /* a root the sandbox controls is never searched for a library */
	aj_step_die_with_parent(NULL);
	if (child_setup(l, sync_fd, lock, procs, &tty, &msg.err) < 0)
		aj_step_fail(&msg.err, sync_fd);
	/* From here the container outlives its creator by design: no parent-death signal. */
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	msg.type = AJ_SYNC_READY;
	msg.pid = 1;
	aj_sync_send(FD_SYNC, &msg);
	close(FD_SYNC);
	init_main(l, tty);
}

static int handshake(struct aj_container_launch *l, pid_t pid, int sync_fd, struct aj_err *err)
{
	struct aj_sync_msg go = {.type = AJ_SYNC_GO}, ready;

	if (aj_userns_write_maps(pid, l->plan, err) < 0 || aj_cgroup_oci_attach(l->cg, pid, err) < 0)
		return -1;
	if (l->proc->have_oom_score && aj_container_oom_score(pid, l->proc->oom_score_adj, err) < 0)
		return -1;
	if (aj_sync_send(sync_fd, &go) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "signal the container to start");
	if (aj_sync_recv(sync_fd, &ready, SETUP_TIMEOUT_MS) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the container to be built");
	if (ready.type == AJ_SYNC_ERROR) {
		*err = ready.err;
		return -1;
	}
	if (ready.type != AJ_SYNC_READY)
		return aj_err_set(err, AJ_LAYER_PROCESS, EPROTO, "unexpected message %u", ready.type);
	return 0;
}

/* The container's cgroup.procs, for init in a joined pid namespace (end_all). */
static int open_procs(const struct aj_cgroup_oci *cg, struct aj_err *err)
{
	const char *dir = aj_cgroup_oci_procs_dir(cg);
	char path[600];
	int fd;

	if (!dir)
		return aj_err_set(err, AJ_LAYER_CGROUP, ENOENT, "the container has no cgroup");
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_CGROUP, "open \"%s\"", path);
	return fd;
}

/* What a create that failed undoes: what it wrote in joined namespaces, the trees not
 * attached yet, and the child, killed and reaped. Returns -1. */
static int create_failed(struct aj_container_launch *l, pid_t pid, int pidfd)
{
	aj_container_join_undo(l);
	aj_container_unjoin(l, NULL);
	aj_userns_close_trees(l->plan);
	if (pid > 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

int aj_container_create(struct aj_container_launch *l, pid_t *pid, struct aj_err *err)
{
	_cleanup_close_ int lock = -1, pidfd = -1, ours = -1, childs = -1, procs = -1;
	int sv[2];

	*pid = -1;
	if ((l->joined & CLONE_NEWPID) && (procs = open_procs(l->cg, err)) < 0)
		return -1;
	if ((l->id_key ? aj_idrange_acquire_shared(l->id_key, &l->plan->id_base, &lock, err)
		       : aj_idrange_acquire(&l->plan->id_base, &lock, err)) < 0 ||
	    /* What may outlive init in a joined pid namespace keeps the range (a pod's
	     * members keep theirs through the pod's own pid namespace). */
	    ((l->joined & CLONE_NEWPID) && !l->id_key &&
	     aj_idrange_note_cgroup(lock, aj_cgroup_oci_procs_dir(l->cg), err) < 0) ||
	    aj_container_rootfs_tree(l->plan, l->scratch, err) < 0 ||
	    aj_userns_prepare_trees(l->plan, err) < 0 || aj_container_join(l, err) < 0)
		return create_failed(l, *pid, pidfd);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		aj_err_sys(err, AJ_LAYER_PROCESS, "socketpair");
		return create_failed(l, *pid, pidfd);
	}
	ours = sv[0];
	childs = sv[1];
	*pid = (pid_t)syscall(SYS_clone, (unsigned long)l->plan->clone_flags | CLONE_PIDFD | SIGCHLD,
			      NULL, &pidfd, NULL, 0);
	if (*pid == 0) { /* the child: never returns, so no cleanup runs here */
		aj_close_fd(&ours);
		/* It keeps the id range's lock for the container's life. */
		child_main(l, childs, lock, procs);
	}
	aj_close_fd(&childs);
	aj_userns_close_trees(l->plan);
	if (*pid > 0 && aj_container_unjoin(l, err) < 0)
		return create_failed(l, *pid, pidfd);
	if (*pid < 0) {
		aj_userns_fail(err, errno, "clone into new namespaces");
		return create_failed(l, *pid, pidfd);
	}
	if (handshake(l, *pid, ours, err) < 0)
		return create_failed(l, *pid, pidfd);
	return 0;
}
