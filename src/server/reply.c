/* Outcomes of requests: results, errors (always {"error": {"code", "message", "field"}}), and
 * handing them to libevent. Manager and file errors are mapped to HTTP statuses here, in one
 * table, so every route answers the same condition with the same status and code. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "server/internal.h"

void aj_srv_ok(struct aj_srv_req *r, int status, json_t *result)
{
	r->status = status;
	json_decref(r->result);
	r->result = result;
}

static void set_error(struct aj_srv_error *e, int status, const char *code, const char *field,
		      const char *fmt, va_list ap)
{
	e->status = status;
	snprintf(e->code, sizeof e->code, "%s", code);
	snprintf(e->field, sizeof e->field, "%s", field ? field : "");
	vsnprintf(e->message, sizeof e->message, fmt, ap);
}

int aj_srv_fail(struct aj_srv_req *r, int status, const char *code, const char *field,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(&r->error, status, code, field, fmt, ap);
	va_end(ap);
	r->failed = true;
	return -1;
}

/* Policy errors start with the field path they are about ("limits.memory: expected ..."). */
static void policy_field(const char *msg, char *out, size_t len)
{
	size_t n = strspn(msg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.[]");

	if (n && !strncmp(msg + n, ": ", 2) && strncmp(msg, "policy", n) != 0)
		snprintf(out, len, "policy.%.*s", (int)n, msg);
	else
		snprintf(out, len, "policy");
}

struct errno_map {
	int errnum;
	int status;
	const char *code;
};

/* Errors of agentjail's own layers that are no class (see aj_err_class): an ENOENT or EEXIST
 * from a file of the state directory is a failure of ours (500), not a missing sandbox. */
static const struct errno_map state_map[] = {
	{EALREADY, 409, "wrong_state"}, {EAGAIN, 409, "wrong_state"},
	{EINVAL, 400, "invalid_value"}, {ETIMEDOUT, 504, "timeout"},
	{EOPNOTSUPP, 501, "not_supported"}, {0, 0, NULL},
};

/* What the manager decided about the object a request named. */
static const struct errno_map class_map[] = {
	{AJ_ERRC_NOT_FOUND, 404, "not_found"},
	{AJ_ERRC_WRONG_STATE, 409, "wrong_state"},
	{AJ_ERRC_EXISTS, 409, "already_exists"},
	{0, 0, NULL},
};

/* Errors from inside a sandbox (file operations), by the errno there. */
static const struct errno_map file_map[] = {
	{ENOENT, 404, "not_found"},	       {EACCES, 403, "permission_denied"},
	{EPERM, 403, "permission_denied"},     {EROFS, 403, "read_only"},
	{EISDIR, 400, "is_a_directory"},       {ENOTDIR, 400, "not_a_directory"},
	{EEXIST, 409, "already_exists"},       {ENOTEMPTY, 409, "not_empty"},
	{EFBIG, 413, "too_large"},	       {ELOOP, 400, "symlink_loop"},
	{ENAMETOOLONG, 400, "invalid_value"},  {EINVAL, 400, "invalid_value"},
	{EXDEV, 409, "cross_device"},	       {ENOSPC, 507, "insufficient_storage"},
	{EDQUOT, 507, "insufficient_storage"}, {EAGAIN, 409, "wrong_state"},
	{EBUSY, 409, "wrong_state"},	       {ETIMEDOUT, 504, "timeout"},
	{ENXIO, 400, "not_a_regular_file"},    {0, 0, NULL},
};

static const struct errno_map *lookup(const struct errno_map *m, int errnum)
{
	for (; m->code; m++)
		if (m->errnum == errnum)
			return m;
	return NULL;
}

int aj_srv_fail_err(struct aj_srv_req *r, const struct aj_err *e, const char *field_hint)
{
	char msg[sizeof e->msg + 256], field[192];
	const struct errno_map *m;

	/* "no sandbox \"x\"" says it all; "No such file or directory" after it would not help. */
	if (!e->cls &&
	    (e->layer == AJ_LAYER_IO || e->layer == AJ_LAYER_EXEC || !lookup(state_map, e->errnum)))
		aj_err_format(e, msg, sizeof msg);
	else
		snprintf(msg, sizeof msg, "%s", e->msg);
	if (e->hint[0])
		snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (hint: %s)", e->hint);
	if (e->layer == AJ_LAYER_POLICY) {
		policy_field(e->msg, field, sizeof field);
		return aj_srv_fail(r, 400, strstr(e->msg, "unknown field") ? "unknown_field"
									   : "invalid_value",
				   field, "%s", msg);
	}
	if (e->cls && (m = lookup(class_map, e->cls)))
		return aj_srv_fail(r, m->status, m->code, field_hint, "%s", msg);
	if (e->layer == AJ_LAYER_USAGE)
		return aj_srv_fail(r, e->errnum == ENOENT ? 404 : 400,
				   e->errnum == ENOENT ? "not_found" : "invalid_value", field_hint,
				   "%s", msg);
	m = lookup(e->layer == AJ_LAYER_IO || e->layer == AJ_LAYER_EXEC ? file_map : state_map,
		   e->errnum);
	if (!m)
		return aj_srv_fail(r, 500, "internal", NULL, "%s", msg);
	return aj_srv_fail(r, m->status, m->code, m->status < 500 ? field_hint : NULL, "%s", msg);
}

json_t *aj_srv_error_json(const struct aj_srv_error *e)
{
	return json_pack("{s:{s:s, s:s, s:s?}}", "error", "code", e->code, "message", e->message,
			 "field", e->field[0] ? e->field : NULL);
}

static void on_complete(struct evhttp_request *req, void *arg)
{
	struct aj_srv *s = arg;

	(void)req;
	s->flushing--;
}

void aj_srv_send(struct aj_srv *s, struct evhttp_request *req, int status, const char *ctype,
		 struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	if (ctype)
		evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "Cache-Control", "no-store");
	if (s->stopping)
		evhttp_add_header(h, "Connection", "close");
	if (evhttp_request_get_connection(req)) {
		s->flushing++;
		evhttp_request_set_on_complete_cb(req, on_complete, s);
	}
	evhttp_send_reply(req, status, NULL, body);
}

/* Sends status and body (consumed; NULL: none). */
static void send_json(struct aj_srv *s, struct evhttp_request *req, int status, json_t *body,
		      const char *location)
{
	_cleanup_evbuffer_ struct evbuffer *buf = evbuffer_new();
	_cleanup_free_ char *text =
		body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;

	json_decref(body);
	if (text && buf)
		evbuffer_add_printf(buf, "%s\n", text);
	if (location && location[0])
		evhttp_add_header(evhttp_request_get_output_headers(req), "Location", location);
	aj_srv_send(s, req, status, text ? "application/json" : NULL, buf);
}

static void send_file(struct aj_srv_req *r)
{
	_cleanup_evbuffer_ struct evbuffer *buf = evbuffer_new();
	_cleanup_close_ int fd = aj_steal_fd(&r->file_fd);

	/* libevent sends it with sendfile and closes the descriptor once done. */
	if (!buf || evbuffer_add_file(buf, fd, 0, (ev_off_t)r->file_len) < 0) {
		struct aj_srv_error e = {500, "internal", "", "could not queue the file"};
		send_json(r->srv, r->req, 500, aj_srv_error_json(&e), NULL);
		return;
	}
	aj_steal_fd(&fd); /* libevent's */
	aj_srv_send(r->srv, r->req, 200, "application/octet-stream", buf);
}

void aj_srv_req_finish(struct aj_srv_req *r)
{
	if (r->failed) {
		if (r->allow[0])
			evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", r->allow);
		if (r->error.status == 401)
			evhttp_add_header(evhttp_request_get_output_headers(r->req),
					  "WWW-Authenticate", "Bearer realm=\"agentjail\"");
		send_json(r->srv, r->req, r->error.status, aj_srv_error_json(&r->error), NULL);
	} else if (r->file_fd >= 0) {
		send_file(r);
	} else {
		send_json(r->srv, r->req, r->status ? r->status : 200, json_incref(r->result),
			  r->location);
	}
	r->req = NULL;
	aj_srv_req_free(r);
}

void aj_srv_reply_early(struct aj_srv *s, struct evhttp_request *req, const struct aj_srv_error *e)
{
	send_json(s, req, e->status, aj_srv_error_json(e), NULL);
}

void aj_srv_req_free(struct aj_srv_req *r)
{
	if (!r)
		return;
	if (r->req) /* dropped without a reply: libevent still needs one to free it */
		evhttp_send_reply(r->req, 500, NULL, NULL);
	if (r->data_free)
		r->data_free(r->data);
	if (r->file_fd >= 0)
		close(r->file_fd);
	evhttp_clear_headers(&r->query);
	json_decref(r->body);
	json_decref(r->result);
	r->srv->inflight--;
	free(r);
}
