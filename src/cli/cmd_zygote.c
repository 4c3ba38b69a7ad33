/* serve's zygote: the process that forks the supervisors of the daemon's sandboxes, so that
 * they share its pages instead of each starting the binary again.
 *
 * Why: a supervisor exec'd from the binary relocates it first. agentjail is a static PIE,
 * and the dynamic loader writes every pointer of the libraries linked into it (SQLite,
 * libevent: about 130 KiB of .data.rel.ro) at each start, and those of OpenSSL (360 KiB more)
 * when a supervisor loads it for its /etc digest or its egress proxy (common/openssl.h):
 * some 130 page faults and half a MiB of private memory per supervisor, for pages that are
 * the same in all of them. Forked from one process that did this once (the zygote loads
 * OpenSSL when it starts), the supervisors share those pages (and the rest of the loaded
 * image) until one writes to them, which none does.
 *
 * The process model stays that of docs/architecture.md: `serve` starts the zygote with a
 * fork and an exec of this binary (`agentjail __zygote`) before it makes any thread, so the
 * zygote is a fresh, single-threaded process that never had the daemon's memory, sockets or
 * tokens. It reads requests on descriptor 3 (SOCK_SEQPACKET: "STATE_DIR\0ID\0" with the
 * ready pipe and the supervisor's log attached) and answers each with a double fork: the
 * child starts a new session and forks the supervisor, in its own session as the manager's
 * own fork and exec makes it, and then the zygote's child (below); a daemon or a zygote that
 * dies takes no sandbox with it. The supervisor runs aj_supervise() as `__supervise` would, its
 * stdio, signal state and descriptors set up as by the manager's exec_supervisor().
 *
 * What it gives up: the supervisors of one daemon share one address-space layout and pointer
 * guard, the zygote's (randomised at each start of serve), instead of one each (not the
 * stack canary: below); the manager's fork and
 * exec (`agentjail create` from the CLI, or a daemon whose zygote is gone) still gives each
 * its own. The zygote exits when the daemon closes its end or dies (parent-death signal).
 *
 * So that a crash cannot be used to guess what they share: each supervisor draws a stack
 * canary of its own before it runs (x86-64: the frames below it never return); and the
 * zygote is the subreaper of what it forks (the supervisors, and what they leave orphaned,
 * become its children when the intermediate child exits) and reaps them. Once one dies of
 * a signal that says its memory went wrong (SIGSEGV, SIGBUS, SIGABRT ...: a bad pointer, a
 * failed check), the zygote execs every later supervisor, each then with a layout of its
 * own, as the manager's fork and exec would. A daemon or zygote that dies still takes no
 * sandbox with it: its children are reparented to init.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/zygote.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/fdpass.h"
#include "common/openssl.h"
#include "common/proctitle.h"
#include "common/util.h"
#include "common/warn.h"
#include "manager/manager.h"
#include "supervisor/persist.h"

#define ZYGOTE_FD AJ_SUPERVISE_READY_FD

/* ---- the daemon's side ------------------------------------------------------------------- */

int aj_zygote_start(const char *state_dir, struct aj_err *err)
{
	extern char **environ;
	char *argv[] = {"agentjail", "__zygote", "--state-dir", (char *)state_dir, NULL};
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "socketpair for the zygote");
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork the zygote");
	}
	if (pid == 0) { /* single-threaded still: serve calls this before any thread */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(sv[1], ZYGOTE_FD) < 0)
			_exit(127);
		close_range(ZYGOTE_FD + 1, ~0U, 0);
		execve("/proc/self/exe", argv, environ);
		_exit(127);
	}
	close(sv[1]);
	return sv[0];
}

/* ---- the zygote --------------------------------------------------------------------------- */

/* What the manager's read_ready() takes as a failed start, when no supervisor can say it. */
static void tell_failed(int ready, int e)
{
	char line[256];
	int n = snprintf(line, sizeof line,
			 "{\"ok\":false,\"layer\":\"process\",\"message\":\"the zygote could not "
			 "fork the supervisor: %s\",\"errno\":%d}\n",
			 strerror(e), e);

	aj_write_all(ready, line, (size_t)n);
}

/* Set once a process the zygote reaped crashed: from then on every supervisor is exec'd. */
static bool g_exec_supervisors;

/* A stack canary of this process's own instead of the zygote's, which every supervisor it
 * forked would otherwise share. Only for a process whose frames below the caller never
 * return (run_supervisor ends in exit()): those checked the old value on entry. Not inlined
 * and without a canary of its own, or its own exit would check the old value against the new
 * (it takes an address, so -fstack-protector-strong would give it one). x86-64 keeps the
 * canary at %fs:0x28 (the compiler's ABI); its low byte stays 0, as the loader makes it, so
 * that a string copy cannot run past it. Elsewhere (aarch64 keeps it in a global the loader
 * makes read-only) the supervisors keep sharing the zygote's. */
static __attribute__((noinline, no_stack_protector)) void new_stack_canary(void)
{
#if defined(__x86_64__)
	uint64_t v;

	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		_exit(127);
	v &= ~(uint64_t)0xff;
	__asm__ volatile("movq %0, %%fs:0x28" : : "r"(v) : "memory");
#endif
}

/* The supervisor, in the grandchild: stdio, descriptor 3 and signal state as the manager's
 * exec_supervisor() leaves them, then the supervisor itself (or, after a crash, this binary
 * exec'd as `__supervise`). Never returns. */
static void run_supervisor(const char *state_dir, const char *id, int ready, int log)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	char title[128];
	sigset_t none;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* Every disposition the default, as after the manager's exec: what serve's own caller
	 * ignored (nohup's SIGHUP, a shell's SIGINT) and the zygote's SIGPIPE do not carry
	 * over. Fails harmlessly for SIGKILL and SIGSTOP. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0 ||
	    (ready == ZYGOTE_FD ? 0 : dup2(ready, ZYGOTE_FD)) < 0)
		_exit(127);
	close_range(ZYGOTE_FD + 1, ~0U, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (g_exec_supervisors) {
		extern char **environ;
		char *argv[AJ_SUPERVISE_ARGC + 1];

		aj_mgr_supervise_argv(argv, state_dir, id);
		aj_fd_set_cloexec(ZYGOTE_FD, false);
		execve("/proc/self/exe", argv, environ);
		_exit(127);
	}
	aj_fd_set_cloexec(ZYGOTE_FD, true);
	new_stack_canary();
	snprintf(title, sizeof title, "agentjail __supervise %s", id);
	aj_proctitle_set(title);
	exit(aj_supervise(state_dir, id, ZYGOTE_FD, &aj_warn_stderr));
}

static bool id_ok(const char *id)
{
	size_t n = strlen(id);

	return n > 0 && n <= 64 && strspn(id, "0123456789abcdef") == n;
}

/* One request: the supervisor forked (twice) or the failure told on the ready pipe. */
static void serve_one(const char *state_dir, const char *id, int ready, int log)
{
	pid_t pid = fork();

	if (pid == 0) {
		setsid();
		pid = fork();
		if (pid == 0)
			run_supervisor(state_dir, id, ready, log);
		if (pid < 0)
			tell_failed(ready, errno);
		_exit(0);
	}
	if (pid < 0) {
		tell_failed(ready, errno);
		return;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* The next request into buf (NUL-terminated pieces) and fds: its length, 0 at the daemon's
 * end, -1 with errno (EMSGSIZE: cut short, dropped). */
static ssize_t next_request(char *buf, size_t len, struct aj_fdset *fds)
{
	union {
		char buf[CMSG_SPACE(AJ_FDPASS_MAX * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {buf, len - 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			   .msg_controllen = sizeof ctl.buf};
	ssize_t n;

	do
		n = recvmsg(ZYGOTE_FD, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n;
	fds->n = aj_fdpass_take(&m, fds->v, AJ_FDPASS_MAX);
	buf[n] = '\0';
	if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		errno = EMSGSIZE;
		return -1;
	}
	return n;
}

/* One message: STATE_DIR NUL ID NUL, with the ready pipe and the log attached. */
static void take_request(const char *state_dir, const char *buf, size_t n, struct aj_fdset *fds)
{
	const char *id = buf + strnlen(buf, n) + 1;

	if (fds->n != 2)
		return; /* no ready pipe to answer on: the manager sees its end close */
	if (id >= buf + n || strcmp(buf, state_dir) != 0 || !id_ok(id)) {
		tell_failed(fds->v[0], EPROTO);
		return;
	}
	serve_one(state_dir, id, fds->v[0], fds->v[1]);
}

/* A death that says the process's memory went wrong, not one it was sent (SIGKILL, SIGTERM). */
static bool crash_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGILL ||
	       sig == SIGFPE || sig == SIGSYS || sig == SIGTRAP;
}

/* Reaps every child that is done; the first crash among them (said on stderr) switches the
 * zygote to exec'ing supervisors. */
static void reap_children(void)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		if (WIFSIGNALED(st) && crash_signal(WTERMSIG(st)) && !g_exec_supervisors) {
			fprintf(stderr,
				"agentjail: zygote: process %d (a supervisor, or what one left) "
				"died of %s; from now on the zygote execs each supervisor, so that "
				"none shares the layout the crash may have shown\n",
				(int)pid, strsignal(WTERMSIG(st)));
			g_exec_supervisors = true;
		}
}

static int cmd_zygote(const struct aj_verb *v, int argc, char **argv)
{
	/* A copy: the title below overwrites the argument area. */
	_cleanup_free_ char *state_dir =
		argc == 3 && !strcmp(argv[1], "--state-dir") ? aj_xstrdup(argv[2]) : NULL;
	char buf[4096 + 128];
	sigset_t chld;
	struct aj_err err;
	_cleanup_close_ int sfd = -1;

	(void)v;
	if (!state_dir || fcntl(ZYGOTE_FD, F_GETFD) < 0) {
		fprintf(stderr, "agentjail: __zygote is started by agentjail serve itself\n");
		return 125;
	}
	aj_fd_set_cloexec(ZYGOTE_FD, true);
	/* Loaded once here, OpenSSL's relocated tables are shared by every supervisor forked
	 * (their /etc digest, their egress proxy), as the binary's own are. */
	if (aj_openssl_load(&err) < 0) {
		fprintf(stderr, "agentjail: zygote: %s\n", err.msg);
		return 1;
	}
	/* A ready pipe whose reader gave up (the manager's timeout) must not end the zygote. */
	signal(SIGPIPE, SIG_IGN);
	/* SIGCHLD through a descriptor (closed in the supervisors with the rest past 3), and
	 * the supervisors as children once their intermediate parent is gone. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0 ||
	    (sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		fprintf(stderr, "agentjail: zygote: reaping its children: %s\n", strerror(errno));
		return 1;
	}
	aj_proctitle_take_environment();
	aj_proctitle_set("agentjail __zygote");
	for (;;) {
		_cleanup_fdset_ struct aj_fdset fds = {.n = 0};
		struct pollfd pfd[2] = {{.fd = ZYGOTE_FD, .events = POLLIN},
					{.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;
		ssize_t n;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return 1;
		while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
			;
		reap_children();
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = next_request(buf, sizeof buf, &fds);
		if (n == 0)
			return 0; /* the daemon closed its end */
		if (n < 0 && errno != EMSGSIZE)
			return 1;
		if (n > 0)
			take_request(state_dir, buf, (size_t)n, &fds);
	}
}

const struct aj_verb aj_verb_zygote = {
	.name = "__zygote",
	.fn = cmd_zygote,
	.summary = "forks the supervisors of agentjail serve (started by serve itself)",
	.synopsis = "__zygote --state-dir DIR",
	.flags = AJ_VERB_HIDDEN | AJ_VERB_NO_CONFIG,
};
