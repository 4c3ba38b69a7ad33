/* Commands in a running sandbox, the exec half: POST /v1/sandboxes/{ref}/exec runs one
 * command and streams its output as JSON lines, the command killed if the client goes away;
 * and what background processes (api_processes.c) share with it through procs_internal.h:
 * the spawn request built from a body, the calls to the sandbox's supervisor, and the stream
 * that follows a command's output.
 *
 * A stream reads the supervisor's connection on the loop thread and stops reading while the
 * HTTP client is behind; the supervisor then holds the command back, so a slow client slows
 * the command instead of filling memory. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/exitcode.h"
#include "common/util.h"
#include "control/client.h"
#include "control/proto.h"
#include "server/procs_internal.h"

#define MAX_STDIN (1u << 20) /* what one request may write to a command's stdin */

void aj_srv_pdata_free(void *p)
{
	struct aj_srv_pdata *d = p;

	if (d->ev)
		event_free(d->ev);
	if (d->ctl >= 0)
		close(d->ctl);
	json_decref(d->spawn);
	json_decref(d->stdin_text);
	json_decref(d->attach);
	free(d);
}

struct aj_srv_pdata *aj_srv_pdata_new(struct aj_srv_req *r)
{
	struct aj_srv_pdata *d = aj_xcalloc(1, sizeof *d);

	d->ctl = -1;
	r->data = d;
	r->data_free = aj_srv_pdata_free;
	return d;
}

/* ---- output as JSON lines ---------------------------------------------------------------- */

/* Length of the longest prefix of s that is whole UTF-8, and whether the rest is only the
 * start of a sequence that the next chunk may complete. */
static size_t utf8_prefix(const unsigned char *s, size_t n, bool *valid)
{
	size_t i = 0;

	*valid = true;
	while (i < n) {
		unsigned char c = s[i];
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		if (!len) {
			*valid = false;
			return i;
		}
		if (i + len > n) {
			for (size_t k = i + 1; k < n; k++)
				*valid = *valid && (s[k] & 0xC0) == 0x80;
			return i; /* an incomplete sequence at the end */
		}
		for (size_t k = 1; k < len; k++)
			if ((s[i + k] & 0xC0) != 0x80) {
				*valid = false;
				return i;
			}
		i += len;
	}
	return i;
}

static int stream_index(const char *name)
{
	return !strcmp(name, "stdout") ? 0 : !strcmp(name, "stderr") ? 1 : 2;
}

json_t *aj_srv_output_line(struct aj_srv_textconv *tc, json_t *ev)
{
	const char *name = json_string_value(json_object_get(ev, "stream"));
	const char *b64 = json_string_value(json_object_get(ev, "data"));
	int si = stream_index(name ? name : "");
	size_t blen = b64 ? strlen(b64) : 0, n, ok;
	_cleanup_free_ unsigned char *buf = aj_xmalloc(tc->nhold[si] + blen / 4 * 3 + 4);
	json_t *line;
	long got;
	bool valid;

	memcpy(buf, tc->hold[si], tc->nhold[si]);
	got = aj_base64_decode(b64 ? b64 : "", blen, buf + tc->nhold[si]);
	n = tc->nhold[si] + (size_t)(got > 0 ? got : 0);
	tc->nhold[si] = 0;
	ok = utf8_prefix(buf, n, &valid);
	line = json_pack("{s:s, s:I}", "type", name ? name : "stdout", "offset",
			 json_integer_value(json_object_get(ev, "offset")));
	if (valid && n - ok <= 3) {
		memcpy(tc->hold[si], buf + ok, n - ok);
		tc->nhold[si] = n - ok;
		json_object_set_new(line, "data", json_stringn((const char *)buf, ok));
	} else {
		_cleanup_free_ char *enc = aj_xmalloc(aj_base64_len(n) + 1);
		aj_base64_encode(buf, n, enc);
		json_object_set_new(line, "data_base64", json_string(enc));
	}
	return line;
}

/* The supervisor's exit event as the API's final line. */
json_t *aj_srv_exit_line(json_t *ev)
{
	json_t *line = json_deep_copy(ev);

	json_object_del(line, "event");
	json_object_del(line, "exec");
	json_object_set_new(line, "type", json_string("exit"));
	return line;
}

/* ---- a stream following one command ---------------------------------------------------------- */

struct pstream {
	struct aj_srv *srv;
	struct aj_srv_stream *st;
	int ctl;
	uint64_t exec;
	bool kill_on_close, closing, ended;
	bool exited;                /* the command's exit was read: nothing more can come */
	struct aj_srv_sockkey key;  /* exec: where ctl is parked at the end (exec_direct.c) */
	char socket[sizeof ((struct aj_srv_pdata *)0)->socket]; /* ctl's; "": not parked */
	struct event *ev, *keepalive, *closer;
	struct aj_srv_textconv tc;
};

static void pstream_free(struct pstream *ps)
{
	if (ps->ev)
		event_free(ps->ev);
	if (ps->keepalive)
		event_free(ps->keepalive);
	if (ps->closer)
		event_free(ps->closer);
	if (ps->ctl >= 0 && ps->exited && ps->socket[0])
		aj_srv_socks_park(&ps->key, ps->socket, aj_steal_fd(&ps->ctl));
	if (ps->ctl >= 0)
		close(ps->ctl);
	aj_srv_stream_end(ps->st);
	free(ps);
}

static void finish(struct pstream *ps, json_t *last)
{
	if (last)
		aj_srv_stream_line(ps->st, last);
	ps->ended = true;
	event_del(ps->ev);
	event_active(ps->closer, EV_TIMEOUT, 0);
}

/* One message from the supervisor; false once the stream has ended. */
static bool take(struct pstream *ps, json_t *m)
{
	const char *ev = json_string_value(json_object_get(m, "event"));

	if (!ev || (uint64_t)json_integer_value(json_object_get(m, "exec")) != ps->exec)
		return true; /* an answer to our kill, or someone else's */
	if (!strcmp(ev, "output")) {
		json_t *line = aj_srv_output_line(&ps->tc, m);
		if (line)
			aj_srv_stream_line(ps->st, line);
		return true;
	}
	if (!strcmp(ev, "exit")) {
		ps->exited = true;
		finish(ps, aj_srv_exit_line(m));
		return false;
	}
	return true;
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
	struct pstream *ps = arg;

	(void)fd;
	(void)what;
	for (int i = 0; i < 64 && !ps->ended && !ps->closing; i++) {
		json_t *m = NULL;
		bool go_on;

		if (!aj_srv_stream_writable(ps->st)) {
			event_del(ps->ev); /* on_drain reads on */
			return;
		}
		/* No descriptors wanted: any that come are closed. */
		if (aj_ctl_recv(ps->ctl, &m, NULL, NULL, 0) < 0) {
			if (errno == EAGAIN || errno == ETIMEDOUT || errno == EPROTO)
				return;
			finish(ps, json_pack("{s:s, s:s}", "type", "error", "message",
					     "the connection to the sandbox's supervisor was lost (the "
					     "sandbox stopped?)"));
			return;
		}
		go_on = take(ps, m);
		json_decref(m);
		if (!go_on)
			return;
	}
	if (!ps->ended && !ps->closing)
		event_active(ps->ev, EV_READ, 0); /* more may be waiting: after others' turn */
}

static void on_drain(void *arg)
{
	struct pstream *ps = arg;

	if (!ps->ended && !ps->closing) {
		event_add(ps->ev, NULL);
		event_active(ps->ev, EV_READ, 0);
	}
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
	struct pstream *ps = arg;

	(void)fd;
	(void)what;
	if (!ps->ended && !ps->closing && aj_srv_stream_writable(ps->st))
		aj_srv_stream_line(ps->st, json_pack("{s:s}", "type", "keepalive"));
}

static void on_closer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pstream_free(arg);
}

/* The client went away, or the daemon is stopping. */
static void on_close(void *arg)
{
	struct pstream *ps = arg;

	if (ps->closing)
		return;
	ps->closing = true;
	/* exec's command lives only as long as its request; a followed process runs on. The
	 * supervisor kills it when this connection closes (its spawn asked for kill_on_close):
	 * closed at once after this kill, with the command's output still flowing, the
	 * supervisor may find the connection broken before it reads the kill. The kill stays for
	 * a supervisor started by an older daemon. */
	if (ps->kill_on_close && !ps->ended) {
		json_t *k = json_pack("{s:s, s:I, s:i}", "op", "signal", "exec",
				      (json_int_t)ps->exec, "signal", SIGKILL);
		aj_ctl_send(ps->ctl, k, NULL, 0);
		json_decref(k);
	}
	event_active(ps->closer, EV_TIMEOUT, 0);
}

/* Takes the request over as a stream following exec id `exec` on connection d->ctl. */
void aj_srv_proc_stream(struct aj_srv_req *r, struct aj_srv_pdata *d, bool kill_on_close,
			   json_t *first, bool only)
{
	_cleanup_json_ json_t *line = first;
	_cleanup_free_ struct pstream *nps = aj_xcalloc(1, sizeof *nps);
	_cleanup_event_ struct event *ev =
		event_new(r->srv->base, d->ctl, EV_READ | EV_PERSIST, on_ctl, nps);
	_cleanup_event_ struct event *keepalive =
		event_new(r->srv->base, -1, EV_PERSIST, on_keepalive, nps);
	_cleanup_event_ struct event *closer = event_new(r->srv->base, -1, 0, on_closer, nps);
	struct aj_srv_stream_cbs cbs = {on_drain, on_close, nps};
	struct timeval ka = {r->srv->cfg->keepalive_s, 0};
	struct pstream *ps;

	if (!ev || !keepalive || !closer) { /* libevent's allocations */
		aj_srv_fail(r, 500, "internal", NULL, "out of memory");
		aj_srv_req_finish(r);
		return;
	}
	ps = aj_steal_ptr(&nps); /* pstream_free's, when the stream ends */
	ps->srv = r->srv;
	ps->ctl = aj_steal_fd(&d->ctl);
	ps->exec = d->exec;
	ps->kill_on_close = kill_on_close;
	if (kill_on_close && d->socket[0]) { /* exec's: its connection serves the next exec */
		aj_srv_socks_key(r, &ps->key);
		snprintf(ps->socket, sizeof ps->socket, "%s", d->socket);
	}
	ps->ev = aj_steal_ptr(&ev);
	ps->keepalive = aj_steal_ptr(&keepalive);
	ps->closer = aj_steal_ptr(&closer);
	ps->st = aj_srv_stream_start(r, 200, &cbs);
	aj_srv_stream_line(ps->st, aj_steal_ptr(&line));
	if (only) { /* the first line was the last */
		finish(ps, NULL);
		return;
	}
	event_add(ps->ev, NULL);
	event_add(ps->keepalive, &ka);
	if (r->srv->stopping || aj_srv_stream_gone(ps->st))
		on_close(ps);
}

/* ---- building the spawn request ------------------------------------------------------------- */

static const struct aj_jf_field exec_fields[] = {
	AJ_SRV_STRINGS("argv", 0),
	AJ_SRV_STRING("command", 0),
	AJ_SRV_LABELS("env", 0),
	AJ_SRV_STRING("cwd", 0),
	AJ_SRV_STRING("user", 0),
	AJ_SRV_DURATION("timeout", 0),
	AJ_SRV_BOOL("tty", 0),
	AJ_SRV_UINT("rows", 0),
	AJ_SRV_UINT("cols", 0),
	AJ_SRV_STRING("stdin", 0),
	AJ_SRV_STRING("stdin_base64", 0),
	AJ_SRV_FIELDS_END,
};

static json_t *command_argv(struct aj_srv_req *r)
{
	json_t *argv = json_object_get(r->body, "argv");
	const char *command = aj_srv_str(r, "command");

	if (!!argv == !!command) {
		aj_srv_fail(r, 400, argv ? "invalid_value" : "missing_field", "argv",
			    "argv: give either \"argv\" (an array) or \"command\" (a shell command "
			    "line, run with /bin/sh -c)");
		return NULL;
	}
	return argv ? json_incref(argv) : json_pack("[s, s, s]", "/bin/sh", "-c", command);
}

/* The supervisor's spawn request for the body; -1 with the request failed. */
int aj_srv_build_spawn(struct aj_srv_req *r, struct aj_srv_pdata *d, bool attach)
{
	const char *cwd = aj_srv_str(r, "cwd");
	json_t *argv, *v;
	int64_t timeout = 0;

	if (aj_srv_duration_ms(r, "timeout", &timeout) < 0 || !(argv = command_argv(r)))
		return -1;
	if (cwd && cwd[0] != '/') {
		json_decref(argv);
		return aj_srv_fail(r, 400, "invalid_value", "cwd", "cwd: must be an absolute path "
								   "inside the sandbox");
	}
	/* attach: the connection follows the command, and its closing kills it (the supervisor
	 * does, so no kill the daemon sends last can be lost). */
	d->spawn = json_pack("{s:s, s:o, s:b, s:b}", "op", "spawn", "argv", argv, "attach", attach,
			     "kill_on_close", attach);
	if ((v = json_object_get(r->body, "env")))
		json_object_set(d->spawn, "env", v);
	if (cwd)
		json_object_set_new(d->spawn, "cwd", json_string(cwd));
	if (json_object_get(r->body, "timeout"))
		json_object_set_new(d->spawn, "timeout_ms", json_integer(timeout));
	for (const char *const *k = (const char *const[]){"tty", "rows", "cols", "tag", "user", NULL};
	     *k; k++)
		if ((v = json_object_get(r->body, *k)))
			json_object_set(d->spawn, *k, v);
	return 0;
}

/* exec's stdin: text, or base64 bytes; kept as base64 for the supervisor. */
int aj_srv_spawn_stdin(struct aj_srv_req *r, struct aj_srv_pdata *d)
{
	const char *text = aj_srv_str(r, "stdin"), *b64 = aj_srv_str(r, "stdin_base64");

	if (text && b64)
		return aj_srv_fail(r, 400, "invalid_value", "stdin",
				   "stdin: give \"stdin\" or \"stdin_base64\", not both");
	if (b64) {
		_cleanup_free_ unsigned char *tmp = aj_xmalloc(strlen(b64) / 4 * 3 + 4);
		if (aj_base64_decode(b64, strlen(b64), tmp) < 0)
			return aj_srv_fail(r, 400, "invalid_value", "stdin_base64",
					   "stdin_base64: not base64");
		d->stdin_text = json_string(b64);
	} else if (text) {
		_cleanup_free_ char *enc = NULL;
		if (strlen(text) > MAX_STDIN)
			return aj_srv_fail(r, 413, "too_large", "stdin", "stdin: more than %u bytes",
					   MAX_STDIN);
		enc = aj_xmalloc(aj_base64_len(strlen(text)) + 1);
		aj_base64_encode(text, strlen(text), enc);
		d->stdin_text = json_string(enc);
	}
	if (d->stdin_text) { /* written by the supervisor before the command can print */
		json_object_set_new(d->spawn, "stdin", json_true());
		json_object_set(d->spawn, "input", d->stdin_text);
		json_object_set_new(d->spawn, "input_eof", json_true());
	}
	return 0;
}

/* ---- talking to the supervisor (worker threads) ----------------------------------------------- */

int aj_srv_proc_connect(struct aj_srv_req *r, struct aj_mgr *m, struct aj_srv_pdata *d)
{
	struct aj_sandbox_rec rec;
	struct aj_err err;

	d->ctl = aj_mgr_connect(m, r->ref, &rec, &err);
	if (d->ctl < 0)
		return aj_srv_fail_err(r, &err, NULL);
	snprintf(d->socket, sizeof d->socket, "%s", rec.socket);
	aj_sandbox_rec_free(&rec);
	return 0;
}

/* The request failed with the supervisor's error err: a command that could not start, a
 * sandbox gone or paused, or anything else. Returns -1. */
int aj_srv_proc_fail(struct aj_srv_req *r, struct aj_srv_pdata *d, const struct aj_err *err)
{
	if (err->cls == AJ_ERRC_NO_COMMAND || err->cls == AJ_ERRC_NO_EXEC) {
		d->start_failed = err->cls == AJ_ERRC_NO_COMMAND ? AJ_EXIT_NOTFOUND : AJ_EXIT_NOEXEC;
		return aj_srv_fail(r, 400, d->start_failed == AJ_EXIT_NOTFOUND ? "command_not_found"
										 : "cannot_execute",
				   "argv", "%s", err->msg);
	}
	if (err->errnum == ESRCH)
		return aj_srv_fail(r, 404, "not_found", NULL, "%s", err->msg);
	if (err->errnum == EAGAIN && err->layer == AJ_LAYER_STATE)
		return aj_srv_fail(r, 409, "wrong_state", NULL, "%s", err->msg);
	return aj_srv_fail_err(r, err, NULL);
}

/* A call on d->ctl; the answer in *reply if wanted. -1 with the request failed. */
int aj_srv_proc_call(struct aj_srv_req *r, struct aj_srv_pdata *d, json_t *req, json_t **reply)
{
	struct aj_err err;

	if (aj_ctl_call(d->ctl, req, NULL, 0, reply, NULL, NULL, AJ_SRV_CALL_MS, &err) < 0)
		return aj_srv_proc_fail(r, d, &err);
	return 0;
}

int aj_srv_proc_spawn(struct aj_srv_req *r, struct aj_mgr *m, struct aj_srv_pdata *d)
{
	json_t *reply = NULL;

	if (aj_srv_proc_connect(r, m, d) < 0 || aj_srv_proc_call(r, d, json_incref(d->spawn), &reply) < 0)
		return -1;
	d->exec = (uint64_t)json_integer_value(json_object_get(reply, "exec"));
	d->pid = (int)json_integer_value(json_object_get(reply, "pid"));
	json_decref(reply);
	return 0;
}

/* ---- POST /v1/sandboxes/{ref}/exec ------------------------------------------------------------ */

static int exec_prepare(struct aj_srv_req *r)
{
	struct aj_srv_pdata *d = aj_srv_pdata_new(r);

	if (!r->body)
		return aj_srv_fail(r, 400, "missing_field", "argv", "a JSON body is required");
	if (aj_srv_check_fields(r, exec_fields) < 0 || aj_srv_build_spawn(r, d, true) < 0 ||
	    aj_srv_spawn_stdin(r, d) < 0)
		return -1;
	/* A sandbox this daemon ran a command in before is asked straight from the loop
	 * (exec_direct.c); otherwise, or if that way is closed, a worker looks it up. */
	return aj_srv_exec_direct(r, d) == 0 ? 1 : 0;
}

static void exec_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_srv_pdata *d = r->data;

	if (aj_srv_proc_spawn(r, m, d) == 0)
		aj_fd_set_nonblock(d->ctl, true);
	else if (d->start_failed) /* answered by aj_srv_exec_started as the command's end */
		r->failed = false;
}

void aj_srv_exec_started(struct aj_srv_req *r)
{
	struct aj_srv_pdata *d = r->data;

	/* A command that cannot be started ends as it would in a shell: 127 or 126, said in the
	 * stream's one line, not as an HTTP error about the request. */
	if (d->start_failed) {
		json_t *line = json_pack("{s:s, s:i, s:s, s:n}", "type", "exit", "exit_code",
					 d->start_failed, "error", r->error.message, "limit");
		aj_srv_proc_stream(r, d, false, line, true);
		return;
	}
	if (r->failed) {
		aj_srv_req_finish(r);
		return;
	}
	if (d->socket[0])
		aj_srv_socks_put(r, d->socket);
	aj_srv_proc_stream(r, d, true,
		       json_pack("{s:s, s:I, s:i}", "type", "start", "process",
				 (json_int_t)d->exec, "pid", d->pid),
		       false);
}

const struct aj_srv_route aj_api_exec_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/exec", AJ_SRV_BODY_JSON, NULL, exec_prepare,
		     exec_work, aj_srv_exec_started),
	AJ_SRV_ROUTES_END,
};
