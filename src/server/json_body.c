/* Request input: body size and Content-Type per route, JSON syntax, field tables (unknown
 * fields are errors naming the field, as in policy files), and query parameters. */
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

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static const char *const expect[] = {
	[AJ_JT_STRING] = "a string",
	[AJ_JT_BOOL] = "true or false",
	[AJ_JT_UINT] = "a non-negative integer",
	[AJ_JT_OBJECT] = "an object",
	[AJ_JT_DURATION] = "a duration (seconds, or a string such as \"30s\")",
	[AJ_JT_LABELS] = "an object of string values",
	[AJ_JT_STRINGS] = "a non-empty array of strings",
};

static bool label_key_ok(const char *k)
{
	size_t n = strlen(k);

	return n > 0 && n <= 63 && !strchr(k, '=') && strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFG"
							      "HIJKLMNOPQRSTUVWXYZ0123456789_.-/") == n;
}

static int check_labels(struct aj_srv_req *r, const char *name, json_t *v)
{
	const char *k;
	json_t *val;
	char field[192];

	json_object_foreach(v, k, val) {
		snprintf(field, sizeof field, "%s.%s", name, k);
		if (!label_key_ok(k))
			return aj_srv_fail(r, 400, "invalid_value", field,
					   "%s: a label key is 1-63 of A-Za-z0-9_.-/", field);
		if (!json_is_string(val) || strlen(json_string_value(val)) > 255)
			return aj_srv_fail(r, 400, "invalid_type", field,
					   "%s: expected a string of at most 255 bytes, got %s", field,
					   type_name(val));
	}
	return 0;
}

static bool strings_ok(json_t *v)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return false;
	json_array_foreach(v, i, e) if (!json_is_string(e)) return false;
	return true;
}

static bool type_ok(enum aj_srv_jtype t, json_t *v)
{
	switch (t) {
	case AJ_JT_STRING: return json_is_string(v);
	case AJ_JT_BOOL: return json_is_boolean(v);
	case AJ_JT_UINT: return json_is_integer(v) && json_integer_value(v) >= 0;
	case AJ_JT_OBJECT:
	case AJ_JT_LABELS: return json_is_object(v);
	case AJ_JT_STRINGS: return strings_ok(v);
	case AJ_JT_DURATION:
		return json_is_string(v) || (json_is_number(v) && json_number_value(v) >= 0);
	}
	return false;
}

int aj_srv_check_fields(struct aj_srv_req *r, const struct aj_srv_field *spec)
{
	const char *key;
	json_t *v;

	json_object_foreach(r->body, key, v) {
		const struct aj_srv_field *f = spec;
		while (f->name && strcmp(f->name, key))
			f++;
		if (!f->name)
			return aj_srv_fail(r, 400, "unknown_field", key, "%s: unknown field", key);
		if (!type_ok(f->type, v))
			return aj_srv_fail(r, 400, "invalid_type", key, "%s: expected %s, got %s",
					   key, expect[f->type], type_name(v));
		if (f->type == AJ_JT_LABELS && check_labels(r, key, v) < 0)
			return -1;
	}
	for (const struct aj_srv_field *f = spec; f->name; f++)
		if (f->required && !json_object_get(r->body, f->name))
			return aj_srv_fail(r, 400, "missing_field", f->name, "%s: required", f->name);
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
