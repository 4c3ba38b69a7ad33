/* process.Process/Start and Connect: a command's events as a Connect stream
 * (docs/e2b-protocol.md 7.1, 7.2).
 *
 * The worker spawns the command (Start) or attaches to it (Connect) on a connection of its
 * own to the sandbox's supervisor; the loop thread then reads that connection and writes the
 * events out: start (the pid) first, data as the command writes, end when it exits, then the
 * end-stream envelope. While the HTTP client is behind, the connection is not read; the
 * supervisor then holds the command's output back (procs.c), so a slow client slows the
 * command instead of filling memory. A client that goes away leaves the command running.
 *
 * Connect-Timeout-Ms: a Start's command gets it as its timeout (the supervisor kills it, and
 * the stream ends with deadline_exceeded); a Connect's stream just ends. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "control/client.h"
#include "control/proto.h"
#include "e2b/internal.h"

#define KEEPALIVE "{\"event\":{\"keepalive\":{}}}"

struct follow_req {
	json_t *spawn; /* Start: the supervisor request, completed by the worker */
	uint64_t exec;
	bool start;
};

static void follow_req_free(void *p)
{
	struct follow_req *f = p;

	json_decref(f->spawn);
	free(f);
}

static struct follow_req *follow_req(struct aj_srv_req *r, bool start)
{
	struct follow_req *f = aj_xcalloc(1, sizeof *f);

	f->start = start;
	e2b_of(r)->x = f;
	e2b_of(r)->x_free = follow_req_free;
	return f;
}

/* ---- Start ------------------------------------------------------------------------------------- */

/* StartRequest as rows of common/jfields.h; fields envd has and agentjail does not read are
 * left alone, as protobuf JSON readers do. */
static const struct aj_jf_field env_value = {.name = "", .type = AJ_JF_STRING};

static const struct aj_jf_field start_process_fields[] = {
	{.name = "cmd", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED, .min = 1, .max = INT64_MAX},
	{.name = "args", .type = AJ_JF_ARRAY},
	{.name = "envs", .type = AJ_JF_MAP, .sub = &env_value},
	{.name = "cwd", .type = AJ_JF_STRING},
	{.name = NULL},
};

static int pty_size(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	unsigned rows, cols;

	if (e2b_pty_size(v, &rows, &cols))
		return 0;
	return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "pty.size: expected rows and cols of 0-65535");
}

static const struct aj_jf_field start_pty_fields[] = {
	{.name = "size", .type = AJ_JF_ANY, .parse = pty_size},
	{.name = NULL},
};

static const struct aj_jf_field start_fields[] = {
	{.name = "process", .type = AJ_JF_OBJECT, .flags = AJ_JF_REQUIRED,
	 .sub = start_process_fields},
	{.name = "tag", .type = AJ_JF_STRING},
	{.name = "stdin", .type = AJ_JF_BOOL},
	{.name = "pty", .type = AJ_JF_OBJECT, .sub = start_pty_fields},
	{.name = NULL},
};

/* envd's words: the command first, then one message for any other field of the wrong type,
 * then the terminal's size. */
static int check_start(struct aj_srv_req *r, json_t *p)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_API, .flags = AJ_JF_IGNORE_UNKNOWN};
	struct aj_jf_error e;

	if (!json_is_string(json_object_get(p, "cmd")) || !json_string_length(json_object_get(p, "cmd")))
		return e2b_rpc_fail(r, "invalid_argument", "process.cmd is required");
	if (aj_jf_read(start_fields, e2b_of(r)->msg, NULL, &o, &e) == 0)
		return 0;
	if (e.problem == AJ_JF_VALUE && !strcmp(e.path, "pty.size"))
		return e2b_rpc_fail(r, "invalid_argument", "%s", e.err.msg);
	return e2b_rpc_fail(r, "invalid_argument",
			    "expected process {cmd, args: [string], envs: {string}, cwd}, "
			    "tag, stdin: bool, pty: {size}");
}

/* The supervisor's spawn request, all but the cwd (resolved against the user's home). */
static json_t *spawn_request(struct aj_srv_req *r, json_t *p, json_t *pty)
{
	struct e2b_req *x = e2b_of(r);
	json_t *argv = json_pack("[O]", json_object_get(p, "cmd"));
	json_t *envs = json_object_get(p, "envs"), *tag = json_object_get(x->msg, "tag");
	json_t *meta = json_pack("{s:o}", "envs", envs ? json_incref(envs) : json_object());
	json_t *in = json_object_get(x->msg, "stdin");
	unsigned rows, cols;
	json_t *s;

	if (json_object_get(p, "args"))
		json_array_extend(argv, json_object_get(p, "args"));
	if (json_object_get(p, "cwd"))
		json_object_set(meta, "cwd", json_object_get(p, "cwd"));
	/* No timeout_ms would be the policy's: E2B's is the header's, none without it. */
	s = json_pack("{s:s, s:o, s:b, s:I, s:o, s:b}", "op", "spawn", "argv", argv, "attach", 1,
		      "timeout_ms", (json_int_t)x->timeout_ms, "meta", meta, "stdin",
		      !json_is_false(in));
	if (envs)
		json_object_set(s, "env", envs);
	if (tag)
		json_object_set(s, "tag", tag);
	if (pty) {
		e2b_pty_size(json_object_get(pty, "size"), &rows, &cols); /* checked by check_start */
		json_object_set_new(s, "tty", json_true());
		json_object_set_new(s, "rows", json_integer(rows));
		json_object_set_new(s, "cols", json_integer(cols));
	}
	return s;
}

int e2b_start_prepare(struct aj_srv_req *r)
{
	json_t *p = json_object_get(e2b_of(r)->msg, "process");
	json_t *pty = json_object_get(e2b_of(r)->msg, "pty");
	struct follow_req *f = follow_req(r, true);

	if (check_start(r, p) < 0)
		return -1;
	f->spawn = spawn_request(r, p, pty);
	return 0;
}

/* A command that cannot start fails the stream as envd's does: a missing working directory is
 * the caller's argument. */
static int start_failed(struct aj_srv_req *r, const struct aj_err *err, const char *cwd)
{
	if (strstr(err->msg, "working directory"))
		return e2b_rpc_fail(r, "invalid_argument", "cwd '%s' does not exist", cwd);
	if (err->layer == AJ_LAYER_EXEC)
		return e2b_rpc_fail(r, "invalid_argument", "cannot start the command: %s: %s",
				    err->msg, strerror(err->errnum));
	return e2b_fail_err(r, err);
}

void e2b_start_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	struct follow_req *f = x->x;
	const char *given = json_string_value(json_object_get(json_object_get(x->msg, "process"),
							      "cwd"));
	char cwd[E2B_PATH_MAX + 1];
	struct e2b_user u;
	struct aj_err err;
	json_t *reply = NULL;

	if (e2b_sandbox_open(r, m) < 0 || e2b_user_resolve(r, &u) < 0 ||
	    e2b_path(r, &u, given ? given : u.home, cwd, sizeof cwd) < 0)
		return;
	json_object_set_new(f->spawn, "cwd", json_string(cwd));
	if (u.root)
		json_object_set_new(f->spawn, "user", json_string("root"));
	if (aj_ctl_call(x->ctl, json_incref(f->spawn), NULL, 0, &reply, NULL, NULL, 30000, &err) < 0) {
		start_failed(r, &err, cwd);
		return;
	}
	f->exec = (uint64_t)json_integer_value(json_object_get(reply, "exec"));
	json_decref(reply);
	aj_fd_set_nonblock(x->ctl, true);
}

/* ---- Connect ---------------------------------------------------------------------------------- */

struct connect_msg {
	struct e2b_selector sel;
};

static const struct aj_jf_field connect_fields[] = {
	E2B_SELECTOR_ROW(struct connect_msg, sel),
	{.name = NULL},
};

void e2b_connect_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	struct follow_req *f = follow_req(r, false);
	struct connect_msg msg = {{false, 0, NULL}};
	json_t *p, *reply = NULL;

	if (e2b_read_msg(r, connect_fields, &msg) < 0 || e2b_sandbox_open(r, m) < 0 ||
	    !(p = e2b_proc_find(r, &msg.sel)))
		return;
	f->exec = (uint64_t)json_integer_value(json_object_get(p, "exec"));
	json_decref(p);
	/* Only what comes from now on, as envd's Connect (no replay in this protocol). */
	if (e2b_proc_call(r, json_pack("{s:s, s:I}", "op", "attach", "exec", (json_int_t)f->exec),
			  &reply) < 0)
		return;
	if (!json_is_true(json_object_get(reply, "running")))
		e2b_rpc_fail(r, "not_found", "process with pid %llu not found",
			     (unsigned long long)f->exec);
	json_decref(reply);
	aj_fd_set_nonblock(x->ctl, true);
}

/* ---- following a command on the loop thread ---------------------------------------------------- */

struct follower {
	struct e2b_stream *st;
	int ctl;
	uint64_t exec;
	bool start, ended, closing;
	struct event *ev, *closer;
	const char *code; /* of the end-stream; NULL: success */
	char message[200];
};

static void follower_free(struct follower *fo)
{
	if (fo->ev)
		event_free(fo->ev);
	if (fo->closer)
		event_free(fo->closer);
	if (fo->ctl >= 0)
		close(fo->ctl);
	free(fo);
}

static void follower_freep(struct follower **fo)
{
	if (*fo)
		follower_free(*fo);
}

static void end(struct follower *fo, const char *code, const char *message)
{
	if (fo->ended)
		return;
	fo->ended = true;
	fo->code = code;
	snprintf(fo->message, sizeof fo->message, "%s", message ? message : "");
	event_del(fo->ev);
	event_active(fo->closer, EV_TIMEOUT, 0);
}

/* The supervisor's exit event as envd's end event (Go's os.ProcessState, 7.1). */
static json_t *end_event(json_t *ev)
{
	json_t *st = json_object_get(ev, "status");
	bool sig = !strcmp(json_string_value(json_object_get(st, "kind")) ?: "", "signaled");
	int n = (int)json_integer_value(json_object_get(st, sig ? "signal" : "code"));
	char status[64];
	json_t *e;

	e2b_exit_status(sig, n, status, sizeof status);
	e = json_pack("{s:i, s:b, s:s}", "exitCode", sig ? -1 : n, "exited", !sig, "status", status);
	if (sig || n)
		json_object_set_new(e, "error", json_string(status));
	return json_pack("{s:{s:o}}", "event", "end", e);
}

/* One message from the supervisor. */
static void take(struct follower *fo, json_t *m)
{
	const char *ev = json_string_value(json_object_get(m, "event"));
	const char *limit = json_string_value(json_object_get(m, "limit"));

	if (!ev || (uint64_t)json_integer_value(json_object_get(m, "exec")) != fo->exec)
		return; /* an answer, or another command's */
	if (!strcmp(ev, "output")) {
		e2b_stream_send(fo->st, json_pack("{s:{s:{s:O}}}", "event", "data",
						  json_string_value(json_object_get(m, "stream")),
						  json_object_get(m, "data")));
	} else if (!strcmp(ev, "exit")) {
		if (limit && !strcmp(limit, "timeout")) {
			end(fo, "deadline_exceeded", "context deadline exceeded");
			return;
		}
		e2b_stream_send(fo->st, end_event(m));
		end(fo, NULL, NULL);
	}
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
	struct follower *fo = arg;

	(void)fd;
	(void)what;
	for (int i = 0; i < 64 && !fo->ended && !fo->closing; i++) {
		json_t *m = NULL;

		if (!e2b_stream_writable(fo->st)) {
			event_del(fo->ev); /* on_drain reads on */
			return;
		}
		/* No descriptors wanted: any that come are closed. */
		if (aj_ctl_recv(fo->ctl, &m, NULL, NULL, 0) < 0) {
			if (errno != EAGAIN && errno != ETIMEDOUT && errno != EPROTO)
				end(fo, "unavailable", "the sandbox stopped");
			return;
		}
		take(fo, m);
		json_decref(m);
	}
	if (!fo->ended && !fo->closing)
		event_active(fo->ev, EV_READ, 0); /* more may wait: after the others' turn */
}

static void on_drain(void *arg)
{
	struct follower *fo = arg;

	if (!fo->ended && !fo->closing) {
		event_add(fo->ev, NULL);
		event_active(fo->ev, EV_READ, 0);
	}
}

/* The client went away (or the daemon stops): the command runs on, the stream ends. */
static void on_close(void *arg)
{
	struct follower *fo = arg;

	if (fo->closing)
		return;
	fo->closing = true;
	event_del(fo->ev);
	event_active(fo->closer, EV_TIMEOUT, 0);
}

/* A Start's command dies at its deadline (the supervisor's timer is the same; this one holds
 * if that exit has not come yet); a Connect only stops watching. */
static void on_deadline(void *arg)
{
	struct follower *fo = arg;

	if (fo->start) {
		json_t *k = json_pack("{s:s, s:I, s:i}", "op", "signal", "exec",
				      (json_int_t)fo->exec, "signal", SIGKILL);
		aj_ctl_send(fo->ctl, k, NULL, 0);
		json_decref(k);
	}
	end(fo, "deadline_exceeded", "context deadline exceeded");
}

static void on_closer(evutil_socket_t fd, short what, void *arg)
{
	struct follower *fo = arg;

	(void)fd;
	(void)what;
	e2b_stream_finish(fo->st, fo->code, fo->message);
	follower_free(fo);
}

void e2b_follow_done(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	struct follow_req *f = x->x;
	__attribute__((cleanup(follower_freep))) struct follower *nfo =
		aj_xcalloc(1, sizeof *nfo);
	struct e2b_stream_cbs cbs = {on_drain, on_close, on_deadline, nfo};
	struct follower *fo;

	nfo->ctl = -1;
	nfo->exec = f->exec;
	nfo->start = f->start;
	nfo->ev = event_new(aj_srv_base(r->srv), x->ctl, EV_READ | EV_PERSIST, on_ctl, nfo);
	nfo->closer = event_new(aj_srv_base(r->srv), -1, 0, on_closer, nfo);
	if (!nfo->ev || !nfo->closer) { /* libevent's allocations */
		e2b_rpc_fail(r, "internal", "out of memory");
		e2b_finish(r);
		return;
	}
	nfo->ctl = aj_steal_fd(&x->ctl); /* the follower's now */
	if (!(nfo->st = e2b_stream_start(r, KEEPALIVE, &cbs)))
		return;
	fo = aj_steal_ptr(&nfo); /* follower_free's, from on_closer */
	e2b_stream_send(fo->st, json_pack("{s:{s:{s:I}}}", "event", "start", "pid",
					  (json_int_t)fo->exec));
	event_add(fo->ev, NULL);
	event_active(fo->ev, EV_READ, 0);
	if (aj_srv_stopping(r->srv) || e2b_stream_gone(fo->st))
		on_close(fo);
}
