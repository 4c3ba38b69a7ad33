/* Request input: body size and Content-Type per route, JSON syntax, field tables (read by
 * the engine of common/jfields.h; unknown fields are errors naming the field, as in policy
 * files), and query parameters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "server/internal.h"

/* "application/json" or "application/json; charset=utf-8", case-insensitively. */
static bool media_type_is(const char *ct, const char *want)
{
	size_t n = strlen(want);

	if (!ct)
		return false;
	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static int read_json(struct aj_srv_req *r, struct evbuffer *in, size_t len, const char *ct)
{
	json_error_t jerr;
	const char *data;

	if (len > r->srv->cfg->max_body)
		return aj_srv_fail(r, 413, "body_too_large", NULL,
				   "the request body (%zu bytes) is larger than the limit of %zu bytes",
				   len, r->srv->cfg->max_body);
	if (!media_type_is(ct, "application/json"))
		return aj_srv_fail(r, 415, "unsupported_media_type", NULL,
				   "a JSON body needs Content-Type: application/json (got %s)",
				   ct ? ct : "none");
	data = (const char *)evbuffer_pullup(in, -1);
	if (!data)
		return aj_srv_fail(r, 500, "internal", NULL, "out of memory");
	r->body = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!r->body)
		return aj_srv_fail(r, 400, "invalid_json", NULL,
				   "the body is not valid JSON: line %d, column %d: %s", jerr.line,
				   jerr.column, jerr.text);
	if (!json_is_object(r->body))
		return aj_srv_fail(r, 400, "invalid_json", NULL,
				   "the body must be a JSON object");
	return 0;
}

int aj_srv_read_body(struct aj_srv_req *r)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
	size_t len = evbuffer_get_length(in);
	const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r->req),
					    "Content-Type");

	switch (r->route->body) {
	case AJ_SRV_BODY_NONE:
		if (len)
			return aj_srv_fail(r, 400, "unexpected_body", NULL,
					   "this endpoint takes no request body");
		return 0;
	case AJ_SRV_BODY_JSON:
		return len ? read_json(r, in, len, ct) : 0;
	case AJ_SRV_BODY_RAW:
		if (len > r->srv->cfg->max_upload)
			return aj_srv_fail(r, 413, "body_too_large", NULL,
					   "the upload (%zu bytes) is larger than the limit of %zu "
					   "bytes",
					   len, r->srv->cfg->max_upload);
		if (ct && !media_type_is(ct, "application/octet-stream"))
			return aj_srv_fail(r, 415, "unsupported_media_type", NULL,
					   "file content needs Content-Type: "
					   "application/octet-stream (got %s)",
					   ct);
		/* Contiguous once, read by a worker; libevent leaves the input buffer alone
		 * until the request is answered. */
		r->raw = len ? (const char *)evbuffer_pullup(in, -1) : "";
		r->raw_len = len;
		if (!r->raw)
			return aj_srv_fail(r, 500, "internal", NULL, "out of memory");
		return 0;
	}
	return 0;
}

/* ---- field tables: rows of common/jfields.h with the API's types ------------------------ */

static bool label_key_ok(const char *k)
{
	size_t n = strlen(k);

	return n > 0 && n <= 63 && !strchr(k, '=') && strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFG"
							      "HIJKLMNOPQRSTUVWXYZ0123456789_.-/") == n;
}

int aj_srv_label_key_check(const char *path, const char *key, struct aj_err *err)
{
	if (label_key_ok(key))
		return 0;
	return aj_err_set(err, AJ_LAYER_API, EINVAL, "%s: a label key is 1-63 of A-Za-z0-9_.-/",
			  path);
}

const struct aj_jf_field aj_srv_label_value = {
	.name = "", .type = AJ_JF_STRING, .min = 0, .max = 255,
	.expect = "a string of at most 255 bytes"};

int aj_srv_duration_check(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			  const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (json_is_string(v) || (json_is_number(v) && json_number_value(v) >= 0))
		return 0;
	return aj_jf_type_error(e, f, path, v);
}

int aj_srv_strings_check(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	size_t i;
	json_t *el;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return aj_jf_type_error(e, f, path, v);
	json_array_foreach(v, i, el) {
		if (!json_is_string(el))
			return aj_jf_type_error(e, f, path, v);
	}
	return 0;
}

/* The engine's problem as the API answers it: the code, the field, and the message. */
static int field_error(struct aj_srv_req *r, const struct aj_jf_error *e)
{
	switch (e->problem) {
	case AJ_JF_UNKNOWN:
		return aj_srv_fail(r, 400, "unknown_field", e->path, "%s: unknown field", e->path);
	case AJ_JF_MISSING:
		return aj_srv_fail(r, 400, "missing_field", e->path, "%s: required", e->path);
	case AJ_JF_TYPE:
	case AJ_JF_RANGE:
		return aj_srv_fail(r, 400, "invalid_type", e->path, "%s: expected %s, got %s",
				   e->path, aj_jf_expect(e->field), aj_jf_type_name(e->value));
	case AJ_JF_VALUE:
		return aj_srv_fail(r, 400, "invalid_value", e->path, "%s", e->err.msg);
	case AJ_JF_NOMEM:
	case AJ_JF_NONE:
		break;
	}
	return aj_srv_fail(r, 500, "internal", NULL, "out of memory");
}

int aj_srv_check_fields(struct aj_srv_req *r, const struct aj_jf_field *spec)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_API};
	struct aj_jf_error e;

	if (aj_jf_read(spec, r->body, NULL, &o, &e) < 0)
		return field_error(r, &e);
	return 0;
}

const char *aj_srv_str(const struct aj_srv_req *r, const char *field)
{
	return json_string_value(json_object_get(r->body, field));
}

int aj_srv_duration_ms(struct aj_srv_req *r, const char *field, int64_t *out)
{
	json_t *v = json_object_get(r->body, field);
	struct aj_err err;
	uint64_t ms = 0;
	char buf[64];

	*out = 0;
	if (!v)
		return 0;
	if (json_is_string(v))
		snprintf(buf, sizeof buf, "%s", json_string_value(v));
	else
		snprintf(buf, sizeof buf, "%.3f", json_number_value(v));
	if (aj_policy_parse_duration(field, buf, &ms, &err) < 0 || ms > INT64_MAX / 2)
		return aj_srv_fail(r, 400, "invalid_value", field,
				   "%s: expected a duration such as 30s, 5m or a number of seconds",
				   field);
	*out = (int64_t)ms;
	return 0;
}

const char *aj_srv_query(const struct aj_srv_req *r, const char *name)
{
	return evhttp_find_header(&r->query, name);
}

int aj_srv_query_bool(struct aj_srv_req *r, const char *name, bool *out)
{
	const char *v = aj_srv_query(r, name);

	if (!v)
		return 0;
	if (!strcmp(v, "true") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else
		return aj_srv_fail(r, 400, "invalid_value", name, "%s: expected true or false", name);
	return 0;
}

int aj_srv_force_prepare(struct aj_srv_req *r)
{
	bool force = false;

	if (aj_srv_query_bool(r, "force", &force) < 0)
		return -1;
	r->data = force ? (void *)1 : NULL;
	return 0;
}

bool aj_srv_forced(const struct aj_srv_req *r)
{
	return r->data != NULL;
}

int aj_srv_query_int(struct aj_srv_req *r, const char *name, int64_t min, int64_t max,
		     int64_t *out)
{
	const char *v = aj_srv_query(r, name);
	char *end;
	long long n;

	if (!v)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (!*v || *end || errno || n < min || n > max)
		return aj_srv_fail(r, 400, "invalid_value", name,
				   "%s: expected a whole number from %lld to %lld", name,
				   (long long)min, (long long)max);
	*out = n;
	return 0;
}
