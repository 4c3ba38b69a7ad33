/* Outcomes of E2B requests in E2B's formats. The SDK reads more than the status: control-plane
 * and envd REST errors need a JSON body whose numeric "code" repeats the status (a 404 without
 * it is not a NotFoundError, docs/e2b-protocol.md 4.1); Connect errors need the code string in
 * the body (a bare 404 reads as "unimplemented", 6.1); a stream's errors travel in its
 * end-stream envelope with HTTP 200 (6.2). A sandbox that is not running answers 502 with the
 * body of E2B's proxy on every sandbox route, streams included (the SDK's "sandbox gone"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "e2b/internal.h"

static const struct {
	const char *code;
	int status;
} codes[] = {
	{"canceled", 499},	     {"unknown", 500},		{"invalid_argument", 400},
	{"deadline_exceeded", 504},  {"not_found", 404},	{"already_exists", 409},
	{"permission_denied", 403},  {"resource_exhausted", 429}, {"failed_precondition", 400},
	{"aborted", 409},	     {"out_of_range", 400},	{"unimplemented", 501},
	{"internal", 500},	     {"unavailable", 503},	{"data_loss", 500},
	{"unauthenticated", 401},
};

int e2b_rpc_status(const char *code)
{
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (!strcmp(codes[i].code, code))
			return codes[i].status;
	return 500;
}

/* The code a client would derive from a bare status (connect's codeFromHttpStatus), except
 * that 404 here always means "not found". */
static const char *code_of_status(int status)
{
	switch (status) {
	case 400: return "invalid_argument";
	case 401: return "unauthenticated";
	case 403: return "permission_denied";
	case 404: return "not_found";
	case 409: return "already_exists";
	case 413: return "resource_exhausted";
	case 429: return "resource_exhausted";
	case 501: return "unimplemented";
	case 502:
	case 503: return "unavailable";
	case 504: return "deadline_exceeded";
	default: return status < 500 ? "invalid_argument" : "internal";
	}
}

static int set(struct aj_srv_req *r, int status, const char *code, const char *fmt, va_list ap)
{
	r->failed = true;
	r->error.status = status;
	snprintf(r->error.code, sizeof r->error.code, "%s", code);
	vsnprintf(r->error.message, sizeof r->error.message, fmt, ap);
	return -1;
}

int e2b_fail(struct aj_srv_req *r, int status, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = set(r, status, "", fmt, ap);
	va_end(ap);
	return rc;
}

int e2b_rpc_fail(struct aj_srv_req *r, const char *code, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = set(r, e2b_rpc_status(code), code, fmt, ap);
	va_end(ap);
	return rc;
}

int e2b_fail_gone(struct aj_srv_req *r)
{
	e2b_fail(r, 502, "The sandbox was not found");
	snprintf(r->error.code, sizeof r->error.code, "gone");
	return -1;
}

const char *e2b_rpc_code(int errnum)
{
	switch (errnum) {
	case ENOENT:
	case ESRCH: return "not_found";
	case EEXIST: return "already_exists";
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case ELOOP:
	case ENOTTY:
	case ENAMETOOLONG: return "invalid_argument";
	case EACCES:
	case EPERM:
	case EROFS: return "permission_denied";
	case ENOSPC:
	case EDQUOT: return "resource_exhausted";
	case EFBIG:
	case ENOTEMPTY:
	case EXDEV:
	case EPIPE:
	case ENXIO: return "failed_precondition";
	case ETIMEDOUT: return "deadline_exceeded";
	case EAGAIN:
	case EBUSY: return "unavailable";
	case ENOTSUP: return "unimplemented";
	default: return "internal";
	}
}

static int api_status(int errnum)
{
	switch (errnum) {
	case ENOENT:
	case ESRCH: return 404;
	case EEXIST:
	case EBUSY:
	case EAGAIN:
	case EALREADY: return 409;
	case EACCES:
	case EPERM:
	case EROFS: return 403;
	case ENOSPC:
	case EDQUOT: return 507;
	case EFBIG: return 413;
	case ETIMEDOUT: return 504;
	case ENOTSUP: return 501;
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case ELOOP:
	case ENXIO:
	case ENAMETOOLONG: return 400;
	default: return 500;
	}
}

int e2b_fail_err(struct aj_srv_req *r, const struct aj_err *e)
{
	char msg[sizeof e->msg + 256];

	aj_err_format(e, msg, sizeof msg);
	if (e2b_of(r)->style == E2B_API)
		return e2b_fail(r, api_status(e->errnum), "%s", msg);
	return e2b_rpc_fail(r, e2b_rpc_code(e->errnum), "%s", msg);
}

/* ---- sending ---------------------------------------------------------------------------- */

static void send_json(struct aj_srv *s, struct evhttp_request *req, int status, json_t *j)
{
	_cleanup_evbuffer_ struct evbuffer *buf = evbuffer_new();
	_cleanup_free_ char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));

	json_decref(j);
	if (buf && text)
		evbuffer_add(buf, text, strlen(text));
	else
		status = 500;
	aj_srv_send(s, req, status, "application/json", buf);
}

/* A stream that failed before it began: one end-stream envelope, HTTP 200. */
static void send_end_stream(struct aj_srv *s, struct evhttp_request *req, const char *code,
			    const char *message)
{
	_cleanup_json_ json_t *j =
		json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", message);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	_cleanup_evbuffer_ struct evbuffer *buf = evbuffer_new();
	unsigned char hdr[5] = {2, 0, 0, 0, 0};
	size_t n = text ? strlen(text) : 0;

	hdr[1] = (unsigned char)(n >> 24);
	hdr[2] = (unsigned char)(n >> 16);
	hdr[3] = (unsigned char)(n >> 8);
	hdr[4] = (unsigned char)n;
	if (buf && text) {
		evbuffer_add(buf, hdr, sizeof hdr);
		evbuffer_add(buf, text, n);
	}
	aj_srv_send(s, req, buf && n ? 200 : 500, "application/connect+json", buf);
}

static void send_error(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	const struct aj_srv_error *e = &r->error;
	const char *code = e->code[0] ? e->code : code_of_status(e->status);

	if (!strcmp(e->code, "gone"))
		send_json(r->srv, r->req, 502,
			  json_pack("{s:s, s:s, s:i}", "sandboxId", x ? x->id : "", "message",
				    e->message, "code", 502));
	else if (!x || x->style == E2B_API)
		send_json(r->srv, r->req, e->status,
			  json_pack("{s:i, s:s}", "code", e->status, "message", e->message));
	else if (x->style == E2B_UNARY)
		send_json(r->srv, r->req, e2b_rpc_status(code),
			  json_pack("{s:s, s:s}", "code", code, "message", e->message));
	else
		send_end_stream(r->srv, r->req, code, e->message);
}

static void send_file(struct aj_srv_req *r)
{
	_cleanup_evbuffer_ struct evbuffer *buf = evbuffer_new();
	_cleanup_close_ int fd = aj_steal_fd(&r->file_fd);

	/* libevent sends it with sendfile and closes the descriptor once done; it refuses an empty
	 * range, and the SDK wants an empty file as Content-Length: 0. */
	if (buf && r->file_len == 0) {
		aj_srv_send(r->srv, r->req, 200, "application/octet-stream", buf);
		return;
	}
	if (!buf || evbuffer_add_file(buf, fd, 0, (ev_off_t)r->file_len) < 0) {
		send_json(r->srv, r->req, 500,
			  json_pack("{s:i, s:s}", "code", 500, "message", "could not queue the file"));
		return;
	}
	aj_steal_fd(&fd); /* libevent's */
	aj_srv_send(r->srv, r->req, 200, "application/octet-stream", buf);
}

void e2b_finish(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);

	if (x && x->next_token[0])
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "X-Next-Token",
				  x->next_token);
	if (r->failed)
		send_error(r);
	else if (r->file_fd >= 0)
		send_file(r);
	else if (r->result)
		send_json(r->srv, r->req, r->status ? r->status : 200, json_incref(r->result));
	else
		aj_srv_send(r->srv, r->req, r->status ? r->status : 204, NULL, NULL);
	r->req = NULL;
	aj_srv_req_free(r);
}

void e2b_reply_early(struct aj_srv *s, struct evhttp_request *req, int status, const char *msg)
{
	send_json(s, req, status, json_pack("{s:i, s:s}", "code", status, "message", msg));
}
