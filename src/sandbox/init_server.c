/* init serving a persistent sandbox: it starts commands and performs file operations on the
 * supervisor's requests (sandbox/initproto.h) and reports every command's end. A command
 * started by one request keeps running after that request is answered, so a background
 * process outlives the exec that started it; only the sandbox's end (init exiting) kills it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdpass.h"
#include "common/tree.h"
#include "common/util.h"
#include "policy/users.h"
#include "sandbox/init_internal.h"
#include "sandbox/initproto.h"
#include "sandbox/sync.h"

#define MAX_EXECS 4096
#define MAX_ARGS 4096

struct exec_slot {
	uint64_t id;
	pid_t pid;
};

static struct exec_slot execs[MAX_EXECS];
static size_t n_execs;
static char payload[AJ_INIT_MAX_PAYLOAD + 1];
static const struct aj_plan *the_plan;

int aj_init_user(const struct aj_plan *plan, const char *spec, struct aj_spawn *sp,
		 gid_t *groups, size_t max_groups, struct aj_user *who)
{
	_cleanup_free_ char *passwd = NULL, *group = NULL;
	struct aj_user u;

	if (plan->init_root && !spec) {
		sp->as_user = true;
		sp->set_groups = aj_plan_maps_range(plan);
		sp->uid = plan->uid;
		sp->gid = plan->gid;
		sp->groups = plan->groups;
		sp->n_groups = plan->n_groups;
		return 0;
	}
	if (!spec)
		return 0; /* init is the sandbox user: the command runs as init does */
	passwd = aj_read_file("/etc/passwd", 1 << 20, NULL);
	group = aj_read_file("/etc/group", 1 << 20, NULL);
	switch (aj_user_resolve(passwd, group, spec, &u)) {
	case AJ_USER_OK:
		break;
	case AJ_USER_RANGE:
		return ERANGE;
	case AJ_USER_NO_USER:
	case AJ_USER_NO_GROUP:
	default:
		return ENOENT;
	}
	if (who)
		*who = u;
	/* A sandbox on the host's root has one user; rootless, only the one id is mapped. */
	if (!plan->init_root)
		return u.uid == plan->uid && u.gid == plan->gid ? 0 : EPERM;
	if (!aj_plan_maps_range(plan) && (u.uid != 0 || u.gid != 0))
		return EPERM;
	sp->as_user = true;
	sp->set_groups = aj_plan_maps_range(plan);
	sp->uid = u.uid;
	sp->gid = u.gid;
	sp->n_groups = 0;
	for (size_t i = 0; i < u.n_groups && i < max_groups; i++)
		groups[sp->n_groups++] = u.groups[i];
	sp->groups = groups;
	return 0;
}

/* A command as another user than the sandbox's: HOME, USER and LOGNAME are that user's (as
 * su and docker exec -u give them). envp has room for three more entries. */
static void user_env(char **envp, size_t *n, const struct aj_user *u)
{
	static char home[sizeof u->home + 8], user[sizeof u->name + 8], logname[sizeof u->name + 8];
	struct {
		const char *name;
		char *buf;
		size_t len;
		const char *value;
	} vars[] = {{"HOME", home, sizeof home, u->home[0] ? u->home : "/"},
		    {"USER", user, sizeof user, u->name},
		    {"LOGNAME", logname, sizeof logname, u->name}};

	for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
		size_t nl = strlen(vars[v].name), i;
		if (!vars[v].value[0])
			continue;
		snprintf(vars[v].buf, vars[v].len, "%s=%s", vars[v].name, vars[v].value);
		for (i = 0; i < *n; i++)
			if (!strncmp(envp[i], vars[v].name, nl) && envp[i][nl] == '=')
				break;
		envp[i] = vars[v].buf;
		if (i == *n)
			envp[++*n - 1] = vars[v].buf;
	}
	envp[*n] = NULL;
}

static void reply(int ctl, uint32_t op, uint64_t id, int err, const int *fd)
{
	struct aj_init_hdr h;

	memset(&h, 0, sizeof h);
	h.op = op;
	h.id = id;
	h.err = err;
	if (aj_init_send(ctl, &h, NULL, fd, fd ? 1 : 0) == 0)
		return;
	if (errno == EPIPE)
		_exit(1);
	/* A descriptor that cannot cross: in the gvisor tier this init runs inside the Sentry,
	 * which hands none of its own files to the host (EINVAL). The supervisor gets the
	 * error instead of waiting for an answer that never comes. */
	if (fd) {
		h.err = errno == EINVAL ? EOPNOTSUPP : errno;
		aj_init_send(ctl, &h, NULL, NULL, 0);
	}
}

static int dir_usable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno;
	return S_ISDIR(st.st_mode) ? (access(path, X_OK) == 0 ? 0 : errno) : ENOTDIR;
}

/* A relayed terminal (AJ_IEXEC_RELAY): the pair is made here, the command gets its peer. */
static int relay_open(const struct aj_init_hdr *h, struct aj_spawn *sp, int *master)
{
	int e = aj_init_tty_open(h->arg, master, &sp->tty_fd);

	if (e)
		*master = sp->tty_fd = -1;
	return e;
}

/* After the spawn: the master goes to the relay (which takes it), the peer stays the
 * command's alone. A relay that cannot start leaves the command without its terminal: it is
 * killed, and its end reported as any other. */
static void relay_start(uint64_t id, pid_t pid, int master, int slave, int sock)
{
	if (slave >= 0)
		close(slave);
	if (master < 0)
		return;
	if (pid <= 0) {
		close(master);
		return;
	}
	if (aj_init_tty_relay(id, pid, master, sock) != 0)
		kill(-pid, SIGKILL);
}

static void do_exec(int ctl, const struct aj_init_hdr *h, const int *fds, size_t nfds)
{
	static char *strs[MAX_ARGS + 1];
	char *argv[MAX_ARGS + 1], *envp[MAX_ARGS + 4];
	struct aj_user who;
	struct aj_spawn sp = {.argv = argv, .envp = envp, .tty_fd = -1};
	struct aj_init_hdr r;
	int n = aj_init_strings(payload, h->len, strs, MAX_ARGS);
	size_t want = 1 + h->argc + h->envc + (h->flags & AJ_IEXEC_USER ? 1 : 0);
	gid_t groups[AJ_USER_MAX_GROUPS];
	int e = 0, stage = AJ_ISTAGE_EXEC, master = -1;
	bool relay = (h->flags & (AJ_IEXEC_TTY | AJ_IEXEC_RELAY)) == (AJ_IEXEC_TTY | AJ_IEXEC_RELAY);
	pid_t pid = -1;

	memset(&r, 0, sizeof r);
	if (n < 0 || h->argc == 0 || (size_t)n != want ||
	    n_execs == MAX_EXECS || (h->flags & AJ_IEXEC_TTY ? nfds != 1 : nfds != 3)) {
		e = n_execs == MAX_EXECS ? EAGAIN : EPROTO;
	} else {
		memcpy(argv, strs + 1, h->argc * sizeof *argv);
		argv[h->argc] = NULL;
		memcpy(envp, strs + 1 + h->argc, h->envc * sizeof *envp);
		envp[h->envc] = NULL;
		sp.cwd = strs[0][0] ? strs[0] : NULL;
		if (h->flags & AJ_IEXEC_TTY)
			sp.tty_fd = relay ? -1 : fds[0];
		else
			sp.stdio = fds;
		/* A missing directory is not a missing command: said before anything is
		 * started. */
		if (sp.cwd && (e = dir_usable(sp.cwd)) != 0)
			r.arg = AJ_ISTAGE_CHDIR;
		else if (relay && (e = relay_open(h, &sp, &master)) != 0)
			r.arg = AJ_ISTAGE_EXEC;
		else if ((e = aj_init_user(the_plan, h->flags & AJ_IEXEC_USER ? strs[want - 1] : NULL,
					   &sp, groups, AJ_USER_MAX_GROUPS, &who)) != 0)
			r.arg = AJ_ISTAGE_USER;
		else {
			size_t ne = h->envc;
			if (h->flags & AJ_IEXEC_USER)
				user_env(envp, &ne, &who);
			if ((e = aj_init_spawn(&sp, &pid, &stage)) != 0)
				r.arg = (uint32_t)stage;
		}
	}
	if (e == 0) {
		execs[n_execs].id = h->id;
		execs[n_execs++].pid = pid;
	}
	if (relay)
		relay_start(h->id, e ? 0 : pid, master, sp.tty_fd, fds[0]);
	r.op = AJ_IOP_STARTED;
	r.id = h->id;
	r.err = e;
	r.pid = e ? 0 : pid;
	if (aj_init_send(ctl, &r, NULL, NULL, 0) < 0 && errno == EPIPE)
		_exit(1);
}

static void do_signal(const struct aj_init_hdr *h)
{
	for (size_t i = 0; i < n_execs; i++)
		if (execs[i].id == h->id && h->arg > 0 && h->arg < NSIG)
			kill(-execs[i].pid, h->arg); /* the command's own session and group */
}

static int remove_path(const char *path, bool recursive)
{
	char parent[4096], *slash;
	_cleanup_close_ int dfd = -1;
	struct aj_err err;

	if (!recursive)
		return unlink(path) == 0 || (errno == EISDIR && rmdir(path) == 0) ? 0 : errno;
	snprintf(parent, sizeof parent, "%s", path);
	slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return EINVAL;
	*slash = '\0';
	dfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno;
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return ENOENT;
	if (aj_tree_remove_at(dfd, slash + 1, &err) < 0)
		return err.errnum ? err.errnum : EIO;
	return 0;
}

/* Opens a path for a client. init serves every client one request at a time, so nothing may
 * block it: a FIFO without a peer would hang open() (O_NONBLOCK prevents that), and only
 * regular files and directories are handed out (plus the terminal multiplexer the supervisor
 * asks for), since a client reading a FIFO or a device the sandbox planted could wait forever. */
int aj_init_open_for_client(const char *path, int flags, mode_t mode, int *out)
{
	struct stat st;
	_cleanup_close_ int fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode);

	*out = -1;
	if (fd < 0)
		return errno;
	if (flags & O_PATH) {
		*out = aj_steal_fd(&fd);
		return 0;
	}
	if (fstat(fd, &st) < 0)
		return errno;
	if (!(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ||
	      (S_ISCHR(st.st_mode) && strcmp(path, "/dev/ptmx") == 0)))
		return ENXIO;
	if (fcntl(fd, F_SETFL, flags & O_APPEND) < 0) /* blocking again, for the client */
		return errno;
	*out = aj_steal_fd(&fd);
	return 0;
}

static void do_file(int ctl, const struct aj_init_hdr *h)
{
	char *strs[2];
	int n = aj_init_strings(payload, h->len, strs, 2);
	_cleanup_close_ int fd = -1;
	int e = 0;

	if (n < 1 || (h->op == AJ_IOP_RENAME && n != 2)) {
		reply(ctl, AJ_IOP_DONE, h->id, EPROTO, NULL);
		return;
	}
	switch (h->op) {
	case AJ_IOP_OPEN:
		e = aj_init_open_for_client(strs[0], (int)h->flags, (mode_t)h->arg, &fd);
		break;
	case AJ_IOP_MKDIR:
		if (h->flags & AJ_IFILE_PARENTS)
			e = aj_mkdir_p(strs[0], (mode_t)h->arg) < 0 ? errno : 0;
		else
			e = mkdir(strs[0], (mode_t)h->arg) < 0 ? errno : 0;
		break;
	case AJ_IOP_REMOVE:
		e = remove_path(strs[0], h->flags & AJ_IFILE_RECURSIVE);
		break;
	case AJ_IOP_RENAME:
		e = rename(strs[0], strs[1]) < 0 ? errno : 0;
		break;
	default:
		e = EPROTO;
	}
	reply(ctl, AJ_IOP_DONE, h->id, e, fd >= 0 ? &fd : NULL);
}

/* inotify for a client (E2B's WatchDir): the watch is added here, inside the sandbox, so the
 * path resolves in the sandbox's mount tree and the sandbox user's rights decide whether it
 * may be watched; the client only reads events from the descriptor. Given an instance, the
 * watch is added to it (a new subdirectory of a recursive watch); else a new one is made and
 * handed out. Only directories are watched. */
static void do_watch(int ctl, const struct aj_init_hdr *h, const int *fds, size_t nfds)
{
	const uint32_t allowed = IN_ALL_EVENTS | IN_DONT_FOLLOW | IN_EXCL_UNLINK;
	struct aj_init_hdr r;
	char *strs[1];
	_cleanup_close_ int made = -1;
	int ifd = nfds ? fds[0] : -1, wd = -1, e = 0;

	if (aj_init_strings(payload, h->len, strs, 1) != 1)
		e = EPROTO;
	else if (ifd < 0 && (made = ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		e = errno;
	else if ((wd = inotify_add_watch(ifd, strs[0], (h->flags & allowed) | IN_ONLYDIR)) < 0)
		e = errno;
	memset(&r, 0, sizeof r);
	r.op = AJ_IOP_DONE;
	r.id = h->id;
	r.err = e;
	r.arg = e ? 0 : wd;
	if (aj_init_send(ctl, &r, NULL, e == 0 && made >= 0 ? &made : NULL,
			 e == 0 && made >= 0 ? 1 : 0) < 0 &&
	    errno == EPIPE)
		_exit(1);
}

/* The gvisor tier's by-value file operations (init_stream.c): the answer carries no
 * descriptor; the object is served over the socket the request brought. */
static void do_stream(int ctl, const struct aj_init_hdr *h, const int *fds, size_t nfds)
{
	struct aj_init_hdr r;
	char *strs[1];
	uint64_t instance = 0;
	int e, wd = -1;

	memset(&r, 0, sizeof r);
	if (aj_init_strings(payload, h->len, strs, 1) != 1 ||
	    nfds != (h->op == AJ_IOP_WATCH_STREAM && h->arg ? 0u : 1u))
		e = EPROTO;
	else if (h->op == AJ_IOP_STREAM)
		e = aj_init_stream_open(strs[0], (int)h->flags, (mode_t)h->arg, fds[0]);
	else
		e = aj_init_watch_stream(strs[0],
					 h->flags & (IN_ALL_EVENTS | IN_DONT_FOLLOW | IN_EXCL_UNLINK),
					 nfds ? fds[0] : -1, (uint64_t)(uint32_t)h->arg, &wd, &instance);
	r.op = AJ_IOP_DONE;
	r.id = h->id;
	r.err = e;
	r.arg = e ? 0 : wd;
	r.pid = e ? 0 : (int32_t)instance;
	if (aj_init_send(ctl, &r, NULL, NULL, 0) < 0 && errno == EPIPE)
		_exit(1);
}

/* What a request asks of init in the gvisor tier: the descriptor-handing operations are
 * refused (the Sentry hands none out; the supervisor asks for their by-value forms). */
static bool gvisor_refused(const struct aj_init_hdr *h)
{
	if (the_plan->tier != AJ_TIER_GVISOR)
		return h->op == AJ_IOP_STREAM || h->op == AJ_IOP_WATCH_STREAM ||
		       (h->op == AJ_IOP_EXEC && (h->flags & AJ_IEXEC_RELAY));
	return h->op == AJ_IOP_OPEN || h->op == AJ_IOP_WATCH ||
	       (h->op == AJ_IOP_EXEC && (h->flags & AJ_IEXEC_TTY) && !(h->flags & AJ_IEXEC_RELAY));
}

static void handle_request(int ctl)
{
	struct aj_init_hdr h;
	/* Closed on return: the command holds its own copies, init keeps no end of its stdio. */
	_cleanup_fdset_ struct aj_fdset fds = {.n = 0};

	if (aj_init_recv(ctl, &h, payload, sizeof payload, fds.v, &fds.n) < 0) {
		if (errno == EPIPE || errno == ECONNRESET)
			_exit(1); /* the supervisor is gone: the sandbox ends with it */
		return;
	}
	if (gvisor_refused(&h)) {
		if (h.op == AJ_IOP_EXEC) {
			struct aj_init_hdr r = {.op = AJ_IOP_STARTED, .id = h.id, .err = EOPNOTSUPP};
			aj_init_send(ctl, &r, NULL, NULL, 0);
		} else {
			reply(ctl, AJ_IOP_DONE, h.id, EOPNOTSUPP, NULL);
		}
	} else if (h.op == AJ_IOP_EXEC) {
		do_exec(ctl, &h, fds.v, fds.n);
	} else if (h.op == AJ_IOP_SIGNAL) {
		do_signal(&h);
	} else if (h.op == AJ_IOP_RESIZE) {
		aj_init_tty_resize(h.id, h.arg);
	} else if (h.op == AJ_IOP_WATCH) {
		do_watch(ctl, &h, fds.v, fds.n);
	} else if (h.op == AJ_IOP_STREAM || h.op == AJ_IOP_WATCH_STREAM) {
		do_stream(ctl, &h, fds.v, fds.n);
	} else {
		do_file(ctl, &h);
	}
}

static void reap(int ctl)
{
	struct rusage ru;
	int status;
	pid_t pid;

	while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0)
		for (size_t i = 0; i < n_execs; i++) {
			struct aj_init_hdr r;
			if (execs[i].pid != pid)
				continue;
			memset(&r, 0, sizeof r);
			r.op = AJ_IOP_EXITED;
			r.id = execs[i].id;
			r.pid = pid;
			r.status = status;
			r.ru = ru;
			execs[i] = execs[--n_execs];
			/* A relayed terminal's command: told once its output is on its way. */
			if (!aj_init_tty_exited(&r) && aj_init_send(ctl, &r, NULL, NULL, 0) < 0 &&
			    errno == EPIPE)
				_exit(1);
			break;
		}
}

void aj_init_serve(const struct aj_plan *plan, int ctl, int sig_fd)
{
	struct aj_sync_msg ready;

	the_plan = plan;
	/* An image root's init is uid 0; the files it reads and writes for the supervisor are
	 * the sandbox user's, checked and owned as if that user did it. */
	if (plan->init_root && plan->uid != 0) {
		if (aj_plan_maps_range(plan))
			setgroups(plan->n_groups, plan->groups);
		/* gVisor's Sentry has no setfsuid: there init takes the user's ids as its
		 * effective ones (real and saved stay 0, for the commands it starts as others). */
		if (plan->tier == AJ_TIER_GVISOR && (setegid(plan->gid) < 0 || seteuid(plan->uid) < 0))
			_exit(125);
		setfsgid(plan->gid);
		setfsuid(plan->uid);
	}
	memset(&ready, 0, sizeof ready);
	ready.type = AJ_SYNC_READY;
	if (chdir(plan->cwd) < 0) {
		ready.exec_errno = errno;
		snprintf(ready.exec_stage, sizeof ready.exec_stage, "chdir");
	}
	aj_sync_send(ctl, &ready);
	aj_init_detach_stdio();
	for (;;) {
		struct pollfd p[2 + AJ_INIT_STREAM_POLLFDS] = {{.fd = sig_fd, .events = POLLIN},
							       {.fd = ctl, .events = POLLIN}};
		struct signalfd_siginfo si;
		int timeout;
		size_t n = aj_init_streams_poll(p + 2, &timeout);

		if (poll(p, 2 + n, timeout) < 0) {
			if (errno != EINTR)
				_exit(1);
			continue;
		}
		/* The jobs first: a request may end one of them or start one in its place. */
		aj_init_streams_run(ctl, p + 2, n);
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			handle_request(ctl);
		/* Signals sent to init itself (SIGTERM from the host) do not stop a persistent
		 * sandbox: it is stopped through its supervisor. Only reaping matters here. */
		while (p[0].revents && read(sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
			;
		reap(ctl);
	}
}
