/* Client requests on the control socket, and the answers of the sandbox's init. Requests that
 * need init (exec, file operations) are forwarded with an id and answered when init answers;
 * the loop never blocks on init. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/exitcode.h"
#include "common/util.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/fdpass.h"
#include "control/fsops.h"
#include "control/proto.h"
#include "policy/policy.h"
#include "policy/users.h"
#include "ports/publish.h"
#include "sandbox/initproto.h"
#include "supervisor/persist.h"
#include "supervisor/procs.h"

/* Answers carry the id of the request they answer (c->cur_rid, set while that request or
 * init's answer to it is handled), so that a client never takes a late answer to one request
 * for the answer to the next. Events carry none. */
static void reply(struct conn *c, json_t *msg, const int *fds, size_t nfds)
{
	if (!c) {
		json_decref(msg);
		return;
	}
	if (c->cur_rid && !json_object_get(msg, "event"))
		json_object_set_new(msg, "rid", json_integer((json_int_t)c->cur_rid));
	aj_conn_send(c, msg, fds, nfds);
}

void aj_persist_reply(struct conn *c, json_t *msg, const int *fds, size_t nfds)
{
	reply(c, msg, fds, nfds);
}

static void reply_err(struct conn *c, enum aj_layer layer, int e, const char *msg)
{
	struct aj_err err;

	aj_err_set(&err, layer, e, "%s", msg);
	reply(c, aj_ctl_error(&err), NULL, 0);
}

static struct pending *add_pending(struct persist *p, struct conn *c, enum aj_init_op op,
				    enum pending_kind kind)
{
	struct pending *q = aj_xcalloc(1, sizeof *q);

	q->id = p->next_id++;
	q->op = op;
	q->kind = kind;
	q->owner = c;
	q->rid = c ? c->cur_rid : 0;
	q->keep_fd = -1;
	q->next = p->pendings;
	p->pendings = q;
	return q;
}

static struct pending *take_pending(struct persist *p, uint64_t id)
{
	for (struct pending **pp = &p->pendings; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct pending *q = *pp;
			*pp = q->next;
			return q;
		}
	return NULL;
}

void aj_persist_reply_err(struct conn *c, enum aj_layer layer, int e, const char *msg)
{
	reply_err(c, layer, e, msg);
}

static void free_pending(struct pending *q)
{
	if (q->io)
		aj_procs_io_free(q->io);
	aj_close_fd(&q->keep_fd);
	json_decref(q->ctx);
	free(q);
}

/* ---- exec ---------------------------------------------------------------------------- */

/* Payload for init: cwd, argv..., env... and the user, if any, as NUL-terminated strings. env is the sandbox's
 * environment with the request's variables on top. */
static int build_exec_payload(struct persist *p, json_t *req, char **buf, size_t *len,
			      uint32_t *argc, uint32_t *envc, struct aj_err *err)
{
	json_t *argv = json_object_get(req, "argv"), *env = json_object_get(req, "env"), *v;
	const char *cwd = json_string_value(json_object_get(req, "cwd")), *k;
	const char *user = json_string_value(json_object_get(req, "user"));
	_cleanup_strv_ struct aj_strv e = AJ_STRV_INIT;
	size_t i, n = 0;
	char *out;

	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: argv must be a non-empty array");
	json_array_foreach(argv, i, v) if (!json_is_string(v)) return aj_err_set(
		err, AJ_LAYER_USAGE, EINVAL, "exec: argv[%zu] must be a string", i);
	aj_strv_copy(&e, &p->plan.env);
	json_object_foreach(env, k, v) {
		if (!aj_policy_env_name_ok(k) || !json_is_string(v))
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: env.%s: expected a "
								       "string variable",
					  k);
		aj_strv_setenv(&e, k, json_string_value(v));
	}
	if (cwd && cwd[0] != '/')
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: cwd must be absolute");
	if (user && !aj_user_spec_ok(user))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "user: expected USER[:GROUP], each a name or an id "
				  "0-65535, got \"%s\"",
				  user);
	n = strlen(cwd ? cwd : p->plan.cwd) + 1 + (user ? strlen(user) + 1 : 0);
	json_array_foreach(argv, i, v) n += strlen(json_string_value(v)) + 1;
	for (i = 0; i < e.n; i++)
		n += strlen(e.v[i]) + 1;
	if (n > AJ_INIT_MAX_PAYLOAD)
		return aj_err_set(err, AJ_LAYER_USAGE, E2BIG, "exec: arguments and environment too "
							      "large");
	out = aj_xmalloc(n);
	*len = 0;
	strcpy(out, cwd ? cwd : p->plan.cwd);
	*len += strlen(out) + 1;
	json_array_foreach(argv, i, v) {
		strcpy(out + *len, json_string_value(v));
		*len += strlen(out + *len) + 1;
	}
	for (i = 0; i < e.n; i++) {
		strcpy(out + *len, e.v[i]);
		*len += strlen(out + *len) + 1;
	}
	if (user) {
		strcpy(out + *len, user);
		*len += strlen(user) + 1;
	}
	*argc = (uint32_t)json_array_size(argv);
	*envc = (uint32_t)e.n;
	*buf = out;
	return 0;
}

/* The gvisor tier hands the sandbox only pipes of agentjail's (runsc and the Sentry import
 * what they are given): a client's device stdin (/dev/null when it sends none) is replaced by
 * an empty pipe, *own_in, which the caller sends in its place. */
static int gvisor_stdin(const struct persist *p, const int *fds, size_t nfds, int *own_in)
{
	struct stat st;
	int w = -1;

	if (p->pol.tier != AJ_TIER_GVISOR || nfds != 3 || fstat(fds[0], &st) < 0 ||
	    !S_ISCHR(st.st_mode))
		return 0;
	if (aj_pipe(own_in, &w, O_CLOEXEC) < 0)
		return -1;
	close(w);
	return 0;
}

struct pending *aj_persist_send_exec(struct persist *p, struct conn *c, json_t *req,
				     const int *fds, size_t nfds, int keep_fd,
				     struct aj_err *err)
{
	struct aj_init_hdr h;
	struct pending *q;
	_cleanup_free_ char *payload = NULL;
	_cleanup_close_ int own_in = -1;
	int sent[3];
	size_t len = 0;

	memset(&h, 0, sizeof h);
	if (nfds == 3)
		memcpy(sent, fds, sizeof sent);
	if (build_exec_payload(p, req, &payload, &len, &h.argc, &h.envc, err) < 0)
		return NULL;
	q = add_pending(p, c, AJ_IOP_EXEC, K_EXEC);
	q->ctx = json_incref(req);
	q->keep_fd = keep_fd;
	q->timeout_ms = (uint64_t)json_integer_value(json_object_get(req, "timeout_ms"));
	if (!q->timeout_ms)
		q->timeout_ms = p->pol.limits.timeout_ms;
	h.op = AJ_IOP_EXEC;
	h.id = q->id;
	h.len = (uint32_t)len;
	h.flags = (nfds == 1 ? AJ_IEXEC_TTY : 0) |
		  (json_is_string(json_object_get(req, "user")) ? AJ_IEXEC_USER : 0);
	/* The gvisor tier's terminal is made inside by init, relayed over the socket sent. */
	if (nfds == 1 && p->pol.tier == AJ_TIER_GVISOR) {
		h.flags |= AJ_IEXEC_RELAY;
		h.arg = AJ_WINSIZE(json_integer_value(json_object_get(req, "rows")),
				   json_integer_value(json_object_get(req, "cols")));
	}
	if (gvisor_stdin(p, fds, nfds, &own_in) < 0) {
		free_pending(take_pending(p, q->id));
		return aj_err_sys(err, AJ_LAYER_IO, "pipe for the command's stdin"), NULL;
	}
	if (own_in >= 0)
		sent[0] = own_in;
	if (aj_init_send(p->sb.ctl_fd, &h, payload, own_in >= 0 ? sent : fds, nfds) < 0) {
		q->keep_fd = -1; /* the caller's still */
		free_pending(take_pending(p, q->id));
		aj_err_sys(err, AJ_LAYER_PROCESS, "hand the command to the sandbox's init");
		return NULL;
	}
	return q;
}

/* The gvisor tier's terminal: the Sentry cannot hand out a pty of its own, so init makes
 * one inside and relays its master over a stream socket (initproto.h AJ_IEXEC_RELAY); this
 * end of the socket stands for the master wherever the namespaces tier's master goes: to the
 * client of an exec, or held here for a spawned command (procs.c). */
static int relay_tty(struct persist *p, struct conn *c, json_t *req, struct aj_err *err)
{
	_cleanup_close_ int near = -1, far = -1;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "socket pair for the terminal");
	near = sv[0];
	far = sv[1];
	if (!strcmp(json_string_value(json_object_get(req, "op")) ?: "", "spawn")) {
		aj_procs_on_pty(p, c, req, aj_steal_fd(&near), far);
		return 0;
	}
	if (!aj_persist_send_exec(p, c, req, &far, 1, near, err))
		return -1;
	aj_steal_fd(&near); /* the pending exec's keep_fd, for the client */
	return 0;
}

/* A terminal for the command: the pty pair is made inside the sandbox (init opens its
 * /dev/ptmx), the master goes to the client, the peer to the command. */
int aj_persist_start_tty(struct persist *p, struct conn *c, json_t *req, struct aj_err *err)
{
	struct aj_init_hdr h;
	struct pending *q;
	const char path[] = "/dev/ptmx";

	if (p->pol.tier == AJ_TIER_GVISOR)
		return relay_tty(p, c, req, err);
	q = add_pending(p, c, AJ_IOP_OPEN, K_PTY);
	q->ctx = json_incref(req);
	memset(&h, 0, sizeof h);
	h.op = AJ_IOP_OPEN;
	h.id = q->id;
	h.flags = O_RDWR | O_NOCTTY;
	h.len = sizeof path;
	if (aj_init_send(p->sb.ctl_fd, &h, path, NULL, 0) < 0) {
		free_pending(take_pending(p, q->id));
		return aj_err_sys(err, AJ_LAYER_PROCESS, "open a terminal in the sandbox");
	}
	return 0;
}

static void on_pty(struct persist *p, struct pending *q, const struct aj_init_hdr *h, int master)
{
	struct aj_err err;
	struct winsize ws = {0};
	int unlock = 0;
	/* master: what init opened, taken over here; the peer goes to the command (a copy). */
	_cleanup_close_ int m = master, slave = -1;

	if (h->err || m < 0) {
		reply_err(q->owner, AJ_LAYER_EXEC, h->err ? h->err : EIO, "open a terminal in the sandbox");
		return;
	}
	ws.ws_row = (unsigned short)json_integer_value(json_object_get(q->ctx, "rows"));
	ws.ws_col = (unsigned short)json_integer_value(json_object_get(q->ctx, "cols"));
	if (ws.ws_row && ws.ws_col)
		ioctl(m, TIOCSWINSZ, &ws);
	if (ioctl(m, TIOCSPTLCK, &unlock) < 0 ||
	    (slave = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		reply_err(q->owner, AJ_LAYER_EXEC, errno, "set up the terminal");
		return;
	}
	if (!strcmp(json_string_value(json_object_get(q->ctx, "op")) ?: "", "spawn")) {
		aj_procs_on_pty(p, q->owner, q->ctx, aj_steal_fd(&m), slave);
		return;
	}
	if (!aj_persist_send_exec(p, q->owner, q->ctx, &slave, 1, m, &err)) {
		reply(q->owner, aj_ctl_error(&err), NULL, 0);
		return;
	}
	aj_steal_fd(&m); /* the pending exec's keep_fd, for the client */
}

static struct exec_rec *find_exec(struct persist *p, uint64_t id)
{
	for (struct exec_rec *e = p->execs; e; e = e->next)
		if (e->id == id)
			return e;
	return NULL;
}

void aj_persist_signal_exec(struct persist *p, uint64_t id, int sig)
{
	struct aj_init_hdr h;

	memset(&h, 0, sizeof h);
	h.op = AJ_IOP_SIGNAL;
	h.id = id;
	h.arg = sig;
	aj_init_send(p->sb.ctl_fd, &h, NULL, NULL, 0);
}

void aj_persist_resize_exec(struct persist *p, uint64_t id, unsigned rows, unsigned cols)
{
	struct aj_init_hdr h;

	memset(&h, 0, sizeof h);
	h.op = AJ_IOP_RESIZE;
	h.id = id;
	h.arg = AJ_WINSIZE(rows, cols);
	aj_init_send(p->sb.ctl_fd, &h, NULL, NULL, 0);
}

/* "resize" of a command started by exec (procs.c resizes the spawned ones): its terminal is
 * the client's, except the gvisor tier's, whose master is inside with init. false: not such
 * a command. */
static bool resize_exec(struct persist *p, struct conn *c, json_t *req)
{
	struct exec_rec *e = find_exec(p, (uint64_t)json_integer_value(json_object_get(req, "exec")));
	json_int_t rows = json_integer_value(json_object_get(req, "rows"));
	json_int_t cols = json_integer_value(json_object_get(req, "cols"));

	if (!e || e->io)
		return false;
	if (!e->relay)
		reply_err(c, AJ_LAYER_USAGE, ENOTTY,
			  "resize: the command's terminal is its client's (resize it there)");
	else if (rows <= 0 || cols <= 0 || rows > 65535 || cols > 65535)
		reply_err(c, AJ_LAYER_USAGE, EINVAL, "resize: rows and cols must be 1-65535");
	else {
		aj_persist_resize_exec(p, e->id, (unsigned)rows, (unsigned)cols);
		reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
	}
	return true;
}

static void on_exec_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct exec_rec *e = arg;

	(void)fd;
	(void)what;
	e->timed_out = true;
	aj_persist_signal_exec(e->p, e->id, SIGKILL);
}

static void on_started(struct persist *p, struct pending *q, const struct aj_init_hdr *h)
{
	struct exec_rec *e;
	json_t *argv = json_object_get(q->ctx, "argv");

	if (h->err && h->arg == AJ_ISTAGE_USER) {
		const char *user = json_string_value(json_object_get(q->ctx, "user"));
		char msg[300];
		if (h->err == EPERM && !p->plan.init_root)
			snprintf(msg, sizeof msg,
				 "user \"%s\": this sandbox has one user, %s (uid %u)%s", user,
				 p->plan.user_name, p->plan.uid,
				 p->plan.image ? " (rootless: one id is mapped)"
					       : "; a sandbox on an image (--image) has the image's");
		else if (h->err == EPERM)
			snprintf(msg, sizeof msg, "user \"%s\": rootless, only uid 0 is mapped", user);
		else
			snprintf(msg, sizeof msg, "user \"%s\" is not in the sandbox's /etc/passwd%s",
				 user, h->err == ERANGE ? " within ids 0-65535" : " and /etc/group");
		reply(q->owner,
		      json_pack("{s:b, s:{s:s, s:s, s:i, s:s}, s:i}", "ok", 0, "error", "layer",
				"exec", "message", msg, "errno", h->err, "field", "user",
				"exit_code", AJ_EXIT_ERROR),
		      NULL, 0);
		return;
	}
	if (h->err) {
		bool chdir_failed = h->arg == AJ_ISTAGE_CHDIR, missing = h->err == ENOENT;
		reply(q->owner,
		      json_pack("{s:b, s:{s:s, s:s, s:i}, s:i}", "ok", 0, "error", "layer", "exec",
				"message",
				chdir_failed ? "cannot use the working directory inside the sandbox"
				: missing    ? "command not found inside the sandbox"
					     : "cannot execute the command inside the sandbox",
				"errno", h->err, "exit_code",
				missing && !chdir_failed ? AJ_EXIT_NOTFOUND : AJ_EXIT_NOEXEC),
		      NULL, 0);
		return;
	}
	e = aj_xcalloc(1, sizeof *e);
	e->p = p;
	e->id = q->id;
	e->pid = h->pid;
	e->owner = q->owner;
	e->relay = p->pol.tier == AJ_TIER_GVISOR && json_is_true(json_object_get(q->ctx, "tty"));
	e->started_us = aj_now_monotonic_us();
	snprintf(e->argv0, sizeof e->argv0, "%s",
		 json_string_value(json_array_get(argv, 0)) ?: "");
	if (q->timeout_ms) {
		struct timeval tv = {(time_t)(q->timeout_ms / 1000),
				     (suseconds_t)(q->timeout_ms % 1000) * 1000};
		e->timer = evtimer_new(p->base, on_exec_timeout, e);
		if (e->timer)
			evtimer_add(e->timer, &tv);
	}
	e->next = p->execs;
	p->execs = e;
	if (q->io) {
		e->io = q->io;
		q->io = NULL;
		aj_procs_started(p, e, q);
		return;
	}
	/* The policy's output cap, which the client applies to the pipes it reads. */
	reply(q->owner,
	      json_pack("{s:b, s:I, s:i, s:I}", "ok", 1, "exec", (json_int_t)e->id, "pid", e->pid,
			"output_cap", (json_int_t)p->pol.limits.output_bytes),
	      q->keep_fd >= 0 ? &q->keep_fd : NULL, q->keep_fd >= 0 ? 1 : 0);
	aj_persist_event(p, "exec", json_pack("{s:I, s:O}", "exec", (json_int_t)e->id, "argv",
					      argv ? argv : json_null()));
}

static json_t *status_json(int status)
{
	if (WIFEXITED(status))
		return json_pack("{s:s, s:i}", "kind", "exited", "code", WEXITSTATUS(status));
	return json_pack("{s:s, s:i}", "kind", "signaled", "signal", WTERMSIG(status));
}

static void on_exited(struct persist *p, const struct aj_init_hdr *h)
{
	struct exec_rec **pe, *e = NULL;
	int code;
	uint64_t cpu_us = (uint64_t)(h->ru.ru_utime.tv_sec + h->ru.ru_stime.tv_sec) * 1000000u +
			  (uint64_t)(h->ru.ru_utime.tv_usec + h->ru.ru_stime.tv_usec);
	json_t *ev;

	for (pe = &p->execs; *pe; pe = &(*pe)->next)
		if ((*pe)->id == h->id) {
			e = *pe;
			*pe = e->next;
			break;
		}
	if (!e)
		return;
	code = WIFEXITED(h->status) ? WEXITSTATUS(h->status) : 128 + WTERMSIG(h->status);
	if (e->timed_out)
		code = AJ_EXIT_TIMEOUT;
	ev = json_pack("{s:s, s:I, s:i, s:o, s:s?, s:f, s:f}", "event", "exit", "exec",
		       (json_int_t)e->id, "exit_code", code, "status", status_json(h->status),
		       "limit", e->timed_out ? "timeout" : NULL, "wall_ms",
		       (double)(aj_now_monotonic_us() - e->started_us) / 1000.0, "cpu_ms",
		       (double)cpu_us / 1000.0);
	if (e->timer)
		event_free(e->timer);
	e->timer = NULL;
	if (e->io) {
		/* Recorded once the output still in its pipes is read: the event log, in time
		 * order, has the command's last lines before its exit. */
		json_t *stored = json_deep_copy(ev);

		aj_procs_exited(p, e, ev);
		aj_persist_event(p, "exit", stored);
		aj_persist_touch(p);
		return;
	}
	aj_persist_event(p, "exit", json_deep_copy(ev));
	if (e->owner)
		reply(e->owner, ev, NULL, 0);
	else
		json_decref(ev);
	free(e);
	aj_persist_touch(p);
}

/* ---- file operations, performed by init as the sandbox user ---------------------------- */

/* Sends a request to init; the gvisor tier's by-value ones (AJ_IOP_STREAM, a new
 * AJ_IOP_WATCH_STREAM) with one end of a new SOCK_SEQPACKET pair, whose other end the pending
 * keeps for the client's answer. 0, or -1 with errno. */
static int send_with_stream(struct persist *p, struct pending *q, const struct aj_init_hdr *h,
			    const void *payload, const int *fds, size_t nfds)
{
	_cleanup_close_ int far = -1;
	int sv[2];

	if (h->op == AJ_IOP_STREAM || (h->op == AJ_IOP_WATCH_STREAM && h->arg == 0)) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			return -1;
		q->keep_fd = sv[0];
		far = sv[1];
		fds = &far;
		nfds = 1;
	}
	return aj_init_send(p->sb.ctl_fd, h, payload, fds, nfds);
}

/* ---- the gvisor tier's streamed watches --------------------------------------------- */

static struct watch_stream **find_wstream(struct persist *p, const struct stat *st,
					  uint64_t instance)
{
	struct watch_stream **w;

	for (w = &p->wstreams; *w; w = &(*w)->next)
		if (st ? (*w)->dev == st->st_dev && (*w)->ino == st->st_ino
		       : (*w)->instance == instance)
			return w;
	return NULL;
}

/* A new instance's socket, answered: remembered, so that the client can name it later. */
static void wstream_made(struct persist *p, int client_end, uint64_t instance)
{
	struct watch_stream *w;
	struct stat st;

	if (fstat(client_end, &st) < 0)
		return;
	w = aj_xcalloc(1, sizeof *w);
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	w->instance = instance;
	w->next = p->wstreams;
	p->wstreams = w;
}

/* init closed an instance (its reader left). */
static void wstream_gone(struct persist *p, uint64_t instance)
{
	struct watch_stream **w = find_wstream(p, NULL, instance), *dead;

	if (!w)
		return;
	dead = *w;
	*w = dead->next;
	free(dead);
}

/* The instance init keeps for the socket a client passed, 0 if it is none of this sandbox's. */
static uint64_t wstream_of(struct persist *p, int fd)
{
	struct watch_stream **w;
	struct stat st;

	if (fstat(fd, &st) < 0 || !(w = find_wstream(p, &st, 0)))
		return 0;
	return (*w)->instance;
}

/* The request's mode (control/fsops.h; "r" when absent) as open(2) flags, or -1. */
static int open_flags(const char *name)
{
	enum aj_fs_mode mode = AJ_FS_READ;

	if (name && aj_fs_mode_parse(name, &mode) < 0)
		return -1;
	switch (mode) {
	case AJ_FS_READ: return O_RDONLY;
	case AJ_FS_WRITE: return O_WRONLY | O_CREAT | O_TRUNC;
	case AJ_FS_CREATE: return O_WRONLY | O_CREAT | O_EXCL;
	case AJ_FS_APPEND: return O_WRONLY | O_CREAT | O_APPEND;
	case AJ_FS_DIR: return O_RDONLY | O_DIRECTORY;
	case AJ_FS_PATH: return O_PATH | O_NOFOLLOW;
	case AJ_FS_FOLLOW: return O_PATH;
	}
	return -1;
}

static void file_op(struct persist *p, struct conn *c, const char *op, json_t *req)
{
	const char *path = json_string_value(json_object_get(req, "path"));
	const char *to = json_string_value(json_object_get(req, "to"));
	struct aj_init_hdr h;
	struct pending *q;
	char payload[8300];
	size_t n;

	memset(&h, 0, sizeof h);
	if (!path || path[0] != '/' || strlen(path) > 4095 || (to && (to[0] != '/' || strlen(to) > 4095))) {
		char msg[96];
		snprintf(msg, sizeof msg, "%s: expected an absolute \"path\"", op);
		reply_err(c, AJ_LAYER_USAGE, EINVAL, msg);
		return;
	}
	if (!strcmp(op, "open")) {
		int fl = open_flags(json_string_value(json_object_get(req, "mode")));
		if (fl < 0) {
			reply_err(c, AJ_LAYER_USAGE, EINVAL,
				  "open: mode is r, w, wx, a, dir, path or follow");
			return;
		}
		h.op = AJ_IOP_OPEN;
		h.flags = (uint32_t)fl;
		h.arg = json_is_integer(json_object_get(req, "perm"))
				? (int32_t)json_integer_value(json_object_get(req, "perm"))
				: 0644;
	} else if (!strcmp(op, "mkdir")) {
		json_t *perm = json_object_get(req, "perm");
		h.op = AJ_IOP_MKDIR;
		h.arg = json_is_integer(perm) ? (int32_t)(json_integer_value(perm) & 07777) : 0755;
		h.flags = json_is_true(json_object_get(req, "parents")) ? AJ_IFILE_PARENTS : 0;
	} else if (!strcmp(op, "remove")) {
		h.op = AJ_IOP_REMOVE;
		h.flags = json_is_true(json_object_get(req, "recursive")) ? AJ_IFILE_RECURSIVE : 0;
	} else {
		if (!to) {
			reply_err(c, AJ_LAYER_USAGE, EINVAL, "rename: expected \"to\"");
			return;
		}
		h.op = AJ_IOP_RENAME;
	}
	n = (size_t)snprintf(payload, sizeof payload, "%s", path) + 1;
	if (to)
		n += (size_t)snprintf(payload + n, sizeof payload - n, "%s", to) + 1;
	/* The gvisor tier's init cannot hand its descriptor out: it serves the file over a
	 * socket instead, whose other end goes to the client (common/fsstream.h). */
	if (h.op == AJ_IOP_OPEN && p->pol.tier == AJ_TIER_GVISOR)
		h.op = AJ_IOP_STREAM;
	q = add_pending(p, c, (enum aj_init_op)h.op, K_FILE);
	h.id = q->id;
	h.len = (uint32_t)n;
	if (send_with_stream(p, q, &h, payload, NULL, 0) < 0) {
		free_pending(take_pending(p, q->id));
		reply_err(c, AJ_LAYER_PROCESS, errno, "forward to the sandbox's init");
	}
}

/* fd (init's answer's descriptor, or -1) is lent: the reply passes on a copy. A by-value
 * answer (the gvisor tier's) passes on the client's end of the stream instead. */
static void on_done(struct persist *p, struct pending *q, const struct aj_init_hdr *h, int fd)
{
	json_t *ok;

	if (h->err) {
		struct aj_err err;
		aj_err_set(&err, AJ_LAYER_IO, h->err, "inside the sandbox");
		reply(q->owner, aj_ctl_error(&err), NULL, 0);
		return;
	}
	ok = json_pack("{s:b}", "ok", 1);
	if (q->op == AJ_IOP_WATCH || q->op == AJ_IOP_WATCH_STREAM)
		json_object_set_new(ok, "wd", json_integer(h->arg));
	if (q->op == AJ_IOP_STREAM || q->op == AJ_IOP_WATCH_STREAM) {
		if (q->op == AJ_IOP_WATCH_STREAM && q->keep_fd >= 0)
			wstream_made(p, q->keep_fd, (uint64_t)(uint32_t)h->pid);
		json_object_set_new(ok, "stream", json_true());
		fd = q->keep_fd;
	}
	reply(q->owner, ok, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
}

/* An inotify watch on a directory inside, added by init as the sandbox user (initproto.h);
 * the client passes the instance to add to, or gets a new one. */
static void watch_op(struct persist *p, struct conn *c, json_t *req, int *fds, size_t nfds)
{
	const char *path = json_string_value(json_object_get(req, "path"));
	struct aj_init_hdr h;
	struct pending *q;

	if (p->paused || !path || path[0] != '/' || strlen(path) > 4095 || nfds > 1) {
		if (p->paused)
			reply_err(c, AJ_LAYER_STATE, EAGAIN, "the sandbox is paused");
		else
			reply_err(c, AJ_LAYER_USAGE, EINVAL,
				  "watch: expected an absolute \"path\" and at most one descriptor");
		return;
	}
	memset(&h, 0, sizeof h);
	h.op = AJ_IOP_WATCH;
	/* The gvisor tier's instances stay inside with init: a client's is named by its socket. */
	if (p->pol.tier == AJ_TIER_GVISOR) {
		h.op = AJ_IOP_WATCH_STREAM;
		if (nfds && !(h.arg = (int32_t)wstream_of(p, fds[0]))) {
			reply_err(c, AJ_LAYER_USAGE, EBADF,
				  "watch: the descriptor is no watch of this sandbox's");
			return;
		}
		nfds = 0;
	}
	q = add_pending(p, c, (enum aj_init_op)h.op, K_FILE);
	h.id = q->id;
	h.flags = (uint32_t)json_integer_value(json_object_get(req, "mask"));
	h.len = (uint32_t)strlen(path) + 1;
	if (send_with_stream(p, q, &h, path, fds, nfds) < 0) {
		free_pending(take_pending(p, q->id));
		reply_err(c, AJ_LAYER_PROCESS, errno, "forward to the sandbox's init");
	}
}

/* Written to the store at once: a supervisor killed after answering leaves the new lifetime
 * to the record (and so to the next start). */
static void lifetime_op(struct persist *p, struct conn *c, json_t *req)
{
	json_t *v = json_object_get(req, "max_lifetime_ms");
	int64_t old = p->rec.max_lifetime_ms;
	struct aj_err err;

	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		reply_err(c, AJ_LAYER_USAGE, EINVAL,
			  "lifetime: \"max_lifetime_ms\" must be a non-negative integer");
		return;
	}
	p->rec.max_lifetime_ms = json_integer_value(v);
	p->rec.updated_ms = (int64_t)aj_now_realtime_ms();
	if (aj_persist_save(p, &err) < 0) {
		p->rec.max_lifetime_ms = old;
		reply(c, aj_ctl_error(&err), NULL, 0);
		return;
	}
	aj_persist_event(p, "lifetime", json_pack("{s:I}", "max_lifetime_ms",
						  (json_int_t)p->rec.max_lifetime_ms));
	aj_persist_rearm(p);
	reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
}

void aj_persist_on_init(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;
	static char buf[64];
	struct aj_init_hdr h;
	struct pending *q;

	(void)fd;
	(void)what;
	for (;;) {
		/* An answer carries at most one descriptor, which its handler may take. */
		_cleanup_fdset_ struct aj_fdset fds = {.n = 0};

		if (aj_init_recv(p->sb.ctl_fd, &h, buf, sizeof buf, fds.v, &fds.n) < 0)
			break;
		if (fds.n == 0)
			fds.v[fds.n++] = -1;
		if (h.op == AJ_IOP_EXITED) {
			on_exited(p, &h);
			continue;
		}
		if (h.op == AJ_IOP_UNWATCHED) {
			wstream_gone(p, (uint64_t)(uint32_t)h.pid);
			continue;
		}
		if (!(q = take_pending(p, h.id)))
			continue;
		if (q->owner)
			q->owner->cur_rid = q->rid;
		if (q->kind == K_PTY)
			on_pty(p, q, &h, aj_steal_fd(&fds.v[0]));
		else if (h.op == AJ_IOP_STARTED)
			on_started(p, q, &h);
		else
			on_done(p, q, &h, fds.v[0]);
		if (q->owner)
			q->owner->cur_rid = 0;
		free_pending(q);
	}
	if (errno == EPIPE)
		aj_persist_stop(p, "the sandbox's init exited");
}

/* ---- requests ---------------------------------------------------------------------------- */

static json_t *info_json(struct persist *p)
{
	json_t *execs = json_array();

	for (struct exec_rec *e = p->execs; e; e = e->next)
		json_array_append_new(execs, json_pack("{s:I, s:i, s:s, s:b, s:b}", "exec",
						       (json_int_t)e->id, "pid", e->pid, "argv0",
						       e->argv0, "attached", e->owner != NULL,
						       "spawned", e->io != NULL));
	return json_pack("{s:b, s:s, s:s, s:s, s:s, s:I, s:i, s:I, s:o}", "ok", 1, "id", p->id,
			 "name", p->rec.name, "owner", p->rec.owner, "state",
			 aj_sandbox_state_name(p->paused ? AJ_ST_PAUSED : AJ_ST_RUNNING),
			 "generation", (json_int_t)p->rec.generation, "init_pid", (int)p->sb.pid,
			 "output_bytes", (json_int_t)p->pol.limits.output_bytes, "execs", execs);
}

/* "ports": the published ports as bound at this start. "socket": a new TCP socket in the
 * sandbox's network namespace, for the client to connect to a port on the sandbox's
 * loopback (port-forward; the daemon's port proxy): the control socket is its owner's. */
static void ports_op(struct persist *p, struct conn *c, const char *op, json_t *req)
{
	struct aj_err err;
	_cleanup_close_ int fd = -1;
	json_int_t fam = json_integer_value(json_object_get(req, "family"));

	if (!strcmp(op, "ports")) {
		reply(c, json_pack("{s:b, s:o}", "ok", 1, "ports", aj_ports_json(p->ports)), NULL,
		      0);
		return;
	}
	if (fam != 4 && fam != 6) {
		reply_err(c, AJ_LAYER_USAGE, EINVAL, "socket: \"family\" must be 4 or 6");
		return;
	}
	if (p->dialer.fd < 0 && !p->dialer.why && p->sb.net_fd >= 0 &&
	    aj_dialer_start(&p->dialer, p->sb.net_fd, &err) < 0)
		p->dialer.why = err.errnum ? err.errnum : EIO; /* said below, and to every later try */
	if (p->dialer.fd < 0) {
		if (p->dialer.why)
			reply_err(c, AJ_LAYER_NET, p->dialer.why,
				  "the supervisor could not join the sandbox's network namespace");
		else
			reply_err(c, AJ_LAYER_NET, ENOTSUP,
				  "the sandbox has no network namespace of its own (network.mode "
				  "\"host\" or the landlock tier): its ports are the host's");
		return;
	}
	fd = aj_dialer_socket(&p->dialer, fam == 6 ? AF_INET6 : AF_INET, &err);
	if (fd < 0) {
		reply(c, aj_ctl_error(&err), NULL, 0);
		return;
	}
	reply(c, json_pack("{s:b}", "ok", 1), &fd, 1);
}

static void do_exec_request(struct persist *p, struct conn *c, json_t *req, bool named,
			    int *fds, size_t nfds)
{
	struct aj_err err;
	const char *name = json_string_value(json_object_get(req, "name"));
	int r;

	/* "exec_named": a client that found this socket through the names index names the
	 * sandbox it meant, and a stale or forged link must not run its command here (the client
	 * then asks the state store). An operation of its own, not a member of "exec": a
	 * supervisor of an earlier build, which would ignore the member, refuses the operation. */
	if (named && (!name || strcmp(name, p->rec.name) != 0)) {
		reply_err(c, AJ_LAYER_STATE, ESTALE, "this is not the sandbox asked for");
		return;
	}
	if (p->paused) {
		reply_err(c, AJ_LAYER_STATE, EAGAIN, "the sandbox is paused; resume it first");
		return;
	}
	if (json_is_true(json_object_get(req, "tty")))
		r = aj_persist_start_tty(p, c, req, &err);
	else if (nfds != 3)
		r = aj_err_set(&err, AJ_LAYER_USAGE, EINVAL,
			       "exec: pass stdin, stdout and stderr, or ask for a tty");
	else
		r = aj_persist_send_exec(p, c, req, fds, 3, -1, &err) ? 0 : -1;
	if (r < 0)
		reply(c, aj_ctl_error(&err), NULL, 0);
}

static void dispatch_op(struct persist *p, struct conn *c, const char *op, json_t *req, int *fds,
			size_t nfds);

void aj_persist_dispatch(struct persist *p, struct conn *c, json_t *req, int *fds, size_t nfds)
{
	const char *op = json_string_value(json_object_get(req, "op"));

	/* Watching a sandbox (stats, a dashboard) is no use of it: it may still go idle. */
	if (!op || strcmp(op, "metrics"))
		aj_persist_touch(p);
	c->cur_rid = (uint64_t)json_integer_value(json_object_get(req, "rid"));
	dispatch_op(p, c, op, req, fds, nfds);
	c->cur_rid = 0;
}

static void dispatch_op(struct persist *p, struct conn *c, const char *op, json_t *req, int *fds,
			size_t nfds)
{
	struct aj_err err;

	if (op && (!strcmp(op, "exec") || !strcmp(op, "exec_named"))) {
		do_exec_request(p, c, req, !strcmp(op, "exec_named"), fds, nfds);
		return;
	}
	if (op && !strcmp(op, "watch")) {
		watch_op(p, c, req, fds, nfds);
		return;
	}
	if (op && !strcmp(op, "resize") && resize_exec(p, c, req))
		return;
	if (op && aj_procs_request(p, c, op, req))
		return;
	if (!op) {
		reply_err(c, AJ_LAYER_USAGE, EINVAL, "a request needs \"op\"");
	} else if (!strcmp(op, "info") || !strcmp(op, "ping")) {
		reply(c, info_json(p), NULL, 0);
	} else if (!strcmp(op, "signal")) {
		uint64_t id = (uint64_t)json_integer_value(json_object_get(req, "exec"));
		int sig = (int)json_integer_value(json_object_get(req, "signal"));
		if (!find_exec(p, id) || sig <= 0 || sig >= NSIG)
			reply_err(c, AJ_LAYER_USAGE, ESRCH, "signal: no such running command");
		else {
			aj_persist_signal_exec(p, id, sig);
			reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
		}
	} else if (!strcmp(op, "pause") || !strcmp(op, "resume")) {
		bool pause = !strcmp(op, "pause");
		if (pause == p->paused) {
			reply_err(c, AJ_LAYER_STATE, EALREADY,
				  pause ? "the sandbox is already paused" : "the sandbox is not paused");
		} else if (aj_persist_set_paused(p, pause, &err) < 0) {
			reply(c, aj_ctl_error(&err), NULL, 0);
		} else {
			/* A leased pause (a snapshot's copy) ends with its connection: a client
			 * killed mid-copy must not leave the sandbox frozen. */
			p->pause_lease = pause && json_is_true(json_object_get(req, "lease")) ? c : NULL;
			reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
		}
	} else if (!strcmp(op, "lifetime")) {
		lifetime_op(p, c, req);
	} else if (!strcmp(op, "claim")) {
		aj_persist_claim_op(p, c, req);
	} else if (!strcmp(op, "update")) {
		aj_persist_update_op(p, c, req);
	} else if (!strcmp(op, "metrics")) {
		struct aj_metric now;
		json_int_t start = json_integer_value(json_object_get(req, "start_ms"));
		json_int_t end = json_integer_value(json_object_get(req, "end_ms"));

		aj_metrics_sample(&p->metrics, p->have_cg ? &p->cg : NULL, p->egress,
				  p->plan.disk_dir, p->pol.limits.memory, p->pol.limits.pids, false,
				  &now);
		reply(c, json_pack("{s:b, s:o, s:o, s:i}", "ok", 1, "now", aj_metric_json(&now),
				   "samples", aj_metrics_json(&p->metrics, start, end), "every_s",
				   AJ_METRICS_EVERY_S),
		      NULL, 0);
	} else if (!strcmp(op, "ports") || !strcmp(op, "socket")) {
		ports_op(p, c, op, req);
	} else if (!strcmp(op, "stop")) {
		reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
		aj_persist_stop(p, "stop requested");
	} else if (!strcmp(op, "open") || !strcmp(op, "mkdir") || !strcmp(op, "remove") ||
		   !strcmp(op, "rename")) {
		if (p->paused)
			reply_err(c, AJ_LAYER_STATE, EAGAIN, "the sandbox is paused");
		else
			file_op(p, c, op, req);
	} else {
		char msg[160];
		snprintf(msg, sizeof msg, "unknown operation \"%.100s\"", op);
		reply_err(c, AJ_LAYER_USAGE, EINVAL, msg);
	}
}
