#include "rules/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"

static bool label_char(char c)
{
	/* Underscores are not valid in host names, but real services use them (SRV-style
	 * names, some CDNs) and refusing them gains nothing. */
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* A DNS name: labels of 1-63 characters from [a-z0-9_-], not starting or ending with '-'. */
static bool dns_name_ok(const char *s)
{
	size_t label = 0, n = strlen(s);

	if (n == 0 || n > AJ_EGRESS_HOST_MAX)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-')
				return false;
			label = 0;
		} else if (!label_char(s[i])) {
			return false;
		} else {
			label++;
		}
	}
	return true;
}

bool aj_egress_host_is_literal(const char *host)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

bool aj_egress_host_normalize(const char *in, char *out, size_t out_len)
{
	char tmp[AJ_EGRESS_HOST_MAX + 3];
	unsigned char a6[16];
	size_t n = strlen(in);

	if (n == 0 || n >= sizeof tmp || out_len < AJ_EGRESS_HOST_MAX + 1)
		return false;
	if (in[0] == '[') {
		if (n < 3 || in[n - 1] != ']')
			return false;
		memcpy(tmp, in + 1, n - 2);
		tmp[n - 2] = '\0';
		if (inet_pton(AF_INET6, tmp, a6) != 1)
			return false;
		return inet_ntop(AF_INET6, a6, out, (socklen_t)out_len) != NULL;
	}
	if (inet_pton(AF_INET6, in, a6) == 1)
		return inet_ntop(AF_INET6, a6, out, (socklen_t)out_len) != NULL;
	for (size_t i = 0; i < n; i++)
		tmp[i] = (in[i] >= 'A' && in[i] <= 'Z') ? (char)(in[i] - 'A' + 'a') : in[i];
	tmp[n] = '\0';
	if (n > 1 && tmp[n - 1] == '.')
		tmp[--n] = '\0';
	/* Literals in their canonical text, whatever form they came in ("::0." is "::"). */
	if (inet_pton(AF_INET, tmp, a6) == 1)
		return inet_ntop(AF_INET, a6, out, (socklen_t)out_len) != NULL;
	if (inet_pton(AF_INET6, tmp, a6) == 1)
		return inet_ntop(AF_INET6, a6, out, (socklen_t)out_len) != NULL;
	/* inet_pton accepts only dotted quads. A name whose last label is all digits ("127.1",
	 * "0x7f.1", "2130706433") is no real name (no top-level domain is numeric) and some
	 * resolvers read it as an address: refused. */
	const char *last = strrchr(tmp, '.');
	last = last ? last + 1 : tmp;
	if (strspn(last, "0123456789") == strlen(last) || !dns_name_ok(tmp))
		return false;
	snprintf(out, out_len, "%s", tmp);
	return true;
}

static int parse_port(const char *s, int *port, char *why, size_t why_len)
{
	char *end;
	long v;

	if (strcmp(s, "*") == 0) {
		*port = AJ_RULE_PORTS_ANY;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 1 || v > 65535 || s[0] == '+' || s[0] == '-') {
		snprintf(why, why_len, "port \"%s\" is not a number from 1 to 65535 or \"*\"", s);
		return -1;
	}
	*port = (int)v;
	return 0;
}

/* Splits "host[:port]" / "[v6][:port]" into host and port text. */
static int split_host_port(const char *text, char *host, size_t host_len, const char **port,
			   char *why, size_t why_len)
{
	const char *colon;
	size_t n;

	*port = NULL;
	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		if (!close || (close[1] && close[1] != ':')) {
			snprintf(why, why_len, "an IPv6 literal is written [ADDRESS] or [ADDRESS]:PORT");
			return -1;
		}
		n = (size_t)(close - text) + 1;
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strchr(text, ':');
		if (colon && strchr(colon + 1, ':')) {
			snprintf(why, why_len, "an IPv6 literal must be in brackets: [ADDRESS]:PORT");
			return -1;
		}
		n = colon ? (size_t)(colon - text) : strlen(text);
	}
	if (n == 0 || n >= host_len) {
		snprintf(why, why_len, "the host is empty or longer than %d characters",
			 AJ_EGRESS_HOST_MAX);
		return -1;
	}
	memcpy(host, text, n);
	host[n] = '\0';
	if (colon)
		*port = colon + 1;
	return 0;
}

static bool path_plain(const char *path, size_t n, char *out, size_t out_len);

static bool method_ok(const char *s, size_t n)
{
	if (n == 1 && s[0] == '*')
		return true;
	if (n == 0 || n > 16)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 'A' || s[i] > 'Z')
			return false;
	return true;
}

/* "[METHOD ]http[s]://AUTHORITY/PREFIX": the method and path into r, the authority (with
 * r->port set to the scheme's default) into auth. */
static int parse_http(const char *text, struct aj_egress_rule *r, char *auth, size_t auth_len,
		      char *why, size_t why_len)
{
	const char *sp = strchr(text, ' '), *url = sp ? sp + 1 : text, *slash;
	size_t an;

	if (sp && memmem(text, (size_t)(sp - text), "://", 3)) {
		snprintf(why, why_len, "the rule's URL may not hold spaces");
		return -1;
	}
	if (sp && !method_ok(text, (size_t)(sp - text))) {
		snprintf(why, why_len, "\"%.*s\" is not an HTTP method (upper case, or \"*\")",
			 (int)(sp - text) > 32 ? 32 : (int)(sp - text), text);
		return -1;
	}
	if (!strncmp(url, "https://", 8)) {
		r->tls = true;
		url += 8;
	} else if (!strncmp(url, "http://", 7)) {
		url += 7;
	} else {
		snprintf(why, why_len, "an HTTP rule is [METHOD ]http://HOST/PATH or https://...");
		return -1;
	}
	slash = strchr(url, '/');
	an = slash ? (size_t)(slash - url) : strlen(url);
	if (an == 0 || an >= auth_len) {
		snprintf(why, why_len, "the rule's URL has no host");
		return -1;
	}
	memcpy(auth, url, an);
	auth[an] = '\0';
	r->path = aj_xstrdup(slash ? slash : "/");
	for (const char *p = r->path; *p; p++)
		if (*p <= ' ' || *p > '~' || *p == '?' || *p == '#' || *p == '\\') {
			snprintf(why, why_len, "the path prefix may not hold spaces, '?', '#' or "
					       "'\\' (the query is not compared)");
			return -1;
		}
	{
		char plain[1024];
		if (strchr(r->path, '%') || !path_plain(r->path, strlen(r->path), plain, sizeof plain)) {
			snprintf(why, why_len, "the path prefix must be written plain: no escapes, "
					       "';', dot or empty segments");
			return -1;
		}
	}
	if (sp && !(sp - text == 1 && text[0] == '*'))
		r->method = aj_xstrndup(text, (size_t)(sp - text));
	r->port = r->tls ? 443 : 80;
	return 0;
}

int aj_egress_rule_parse(const char *text, int no_port, struct aj_egress_rule *r, char *why,
			 size_t why_len)
{
	char host[AJ_EGRESS_HOST_MAX + 3], auth[AJ_EGRESS_HOST_MAX + 16];
	const char *port, *orig_text = text;

	memset(r, 0, sizeof *r);
	r->port = no_port;
	if (strstr(text, "://")) {
		if (no_port != AJ_RULE_PORTS_WEB) {
			snprintf(why, why_len, "a host[:port] is expected here, not a URL");
			return -1;
		}
		if (parse_http(text, r, auth, sizeof auth, why, why_len) < 0) {
			aj_egress_rule_free(r);
			return -1;
		}
		text = auth;
	}
	if (split_host_port(text, host, sizeof host, &port, why, why_len) < 0) {
		aj_egress_rule_free(r);
		return -1;
	}
	if (port && parse_port(port, &r->port, why, why_len) < 0) {
		aj_egress_rule_free(r);
		return -1;
	}
	if (strcmp(host, "*") == 0) {
		r->any_host = true;
	} else if (strncmp(host, "*.", 2) == 0) {
		r->suffix = true;
		if (!aj_egress_host_normalize(host + 2, r->host, sizeof r->host) ||
		    aj_egress_host_is_literal(r->host)) {
			snprintf(why, why_len, "\"%s\" is not a name pattern (*.NAME)", host);
			aj_egress_rule_free(r);
			return -1;
		}
	} else if (strchr(host, '*')) {
		snprintf(why, why_len, "'*' may only stand alone or start a pattern as \"*.\"");
		aj_egress_rule_free(r);
		return -1;
	} else if (!aj_egress_host_normalize(host, r->host, sizeof r->host)) {
		snprintf(why, why_len, "\"%s\" is neither a host name nor an IP address", host);
		aj_egress_rule_free(r);
		return -1;
	}
	r->text = aj_xstrdup(r->path ? orig_text : text);
	return 0;
}

void aj_egress_rule_free(struct aj_egress_rule *r)
{
	free(r->text);
	free(r->path);
	free(r->method);
	r->text = r->path = r->method = NULL;
}

static bool port_match(int rule_port, uint16_t port)
{
	switch (rule_port) {
	case AJ_RULE_PORTS_ANY: return true;
	case AJ_RULE_PORTS_WEB: return port == 80 || port == 443;
	case AJ_RULE_PORTS_TLS: return port == 443;
	default: return rule_port == port;
	}
}

bool aj_egress_rule_match(const struct aj_egress_rule *r, const char *host, uint16_t port)
{
	size_t hl, sl;

	if (!port_match(r->port, port))
		return false;
	if (r->any_host)
		return true;
	if (!r->suffix)
		return strcmp(r->host, host) == 0;
	/* "*.example.com" matches "a.example.com" and "a.b.example.com", never
	 * "example.com" nor "badexample.com", and never an IP literal. */
	hl = strlen(host);
	sl = strlen(r->host);
	return hl > sl + 1 && host[hl - sl - 1] == '.' && strcmp(host + hl - sl, r->host) == 0 &&
	       !aj_egress_host_is_literal(host);
}

static int build_list(struct aj_egress_rule **out, size_t *n, const struct aj_strv *sv,
		      const char *field, struct aj_err *err)
{
	char why[256];

	*n = 0;
	*out = aj_xcalloc(sv->n ? sv->n : 1, sizeof **out);
	for (size_t i = 0; i < sv->n; i++) {
		if (aj_egress_rule_parse(sv->v[i], AJ_RULE_PORTS_WEB, &(*out)[i], why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s[%zu]: %s", field, i, why);
		snprintf((*out)[i].field, sizeof (*out)[i].field, "%s[%zu]", field, i);
		(*n)++;
	}
	return 0;
}

int aj_egress_rules_build(struct aj_egress_rules *rs, const struct aj_strv *allow,
			  const struct aj_strv *deny, struct aj_err *err)
{
	memset(rs, 0, sizeof *rs);
	if (build_list(&rs->allow, &rs->n_allow, allow, "network.allow", err) < 0 ||
	    build_list(&rs->deny, &rs->n_deny, deny, "network.deny", err) < 0) {
		aj_egress_rules_free(rs);
		return -1;
	}
	return 0;
}

void aj_egress_rules_free(struct aj_egress_rules *rs)
{
	for (size_t i = 0; i < rs->n_allow; i++)
		aj_egress_rule_free(&rs->allow[i]);
	for (size_t i = 0; i < rs->n_deny; i++)
		aj_egress_rule_free(&rs->deny[i]);
	free(rs->allow);
	free(rs->deny);
	memset(rs, 0, sizeof *rs);
}

/* HTTP deny rules of host:port: its requests must be seen for them to be enforced. */
static void inspect_for_deny(const struct aj_egress_rules *rs, const char *host, uint16_t port,
			     struct aj_egress_verdict *v)
{
	for (size_t i = 0; i < rs->n_deny; i++)
		if (rs->deny[i].path && aj_egress_rule_match(&rs->deny[i], host, port)) {
			v->inspect = true;
			v->inspect_tls = v->inspect_tls || rs->deny[i].tls;
		}
}

void aj_egress_rules_decide(const struct aj_egress_rules *rs, const char *host, uint16_t port,
			    struct aj_egress_verdict *v)
{
	bool v6 = strchr(host, ':') != NULL;
	const struct aj_egress_rule *http = NULL;

	memset(v, 0, sizeof *v);
	for (size_t i = 0; i < rs->n_deny; i++)
		if (!rs->deny[i].path && aj_egress_rule_match(&rs->deny[i], host, port)) {
			v->rule = &rs->deny[i];
			snprintf(v->why, sizeof v->why, "%s%s%s:%u is denied by %s \"%s\"",
				 v6 ? "[" : "", host, v6 ? "]" : "", port, rs->deny[i].field,
				 rs->deny[i].text);
			return;
		}
	for (size_t i = 0; i < rs->n_allow; i++) {
		if (rs->allow[i].path) { /* the first, an https:// one if any: it says TLS */
			if ((!http || (!http->tls && rs->allow[i].tls)) &&
			    aj_egress_rule_match(&rs->allow[i], host, port))
				http = &rs->allow[i];
			continue;
		}
		if (aj_egress_rule_match(&rs->allow[i], host, port)) {
			v->allowed = true;
			inspect_for_deny(rs, host, port, v);
			v->rule = &rs->allow[i];
			snprintf(v->why, sizeof v->why, "%s%s%s:%u is allowed by %s \"%s\"",
				 v6 ? "[" : "", host, v6 ? "]" : "", port, rs->allow[i].field,
				 rs->allow[i].text);
			return;
		}
	}
	if (http) {
		v->allowed = v->by_request = v->inspect = true;
		v->inspect_tls = http->tls;
		v->rule = http;
		snprintf(v->why, sizeof v->why, "%s%s%s:%u is allowed for the requests of %s \"%s\"",
			 v6 ? "[" : "", host, v6 ? "]" : "", port, http->field, http->text);
		return;
	}
	snprintf(v->why, sizeof v->why,
		 "%s%s%s:%u is not allowed: no rule in network.allow matches it (%zu rule%s; a "
		 "rule without a port means 80 and 443)",
		 v6 ? "[" : "", host, v6 ? "]" : "", port, rs->n_allow, rs->n_allow == 1 ? "" : "s");
}

bool aj_egress_rules_have_https(const struct aj_egress_rules *rs)
{
	for (size_t i = 0; i < rs->n_allow; i++)
		if (rs->allow[i].path && rs->allow[i].tls)
			return true;
	for (size_t i = 0; i < rs->n_deny; i++)
		if (rs->deny[i].path && rs->deny[i].tls)
			return true;
	return false;
}

/* What a path rule compares: the target up to its query, escapes of unreserved characters
 * decoded (an upper-case hex escape kept otherwise), into out; false if it is not in a form a
 * server reads one way only: no dot segment, no empty segment, no ';', no backslash, no
 * escaped '/', '\\' or '.' . */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool path_plain(const char *path, size_t n, char *out, size_t out_len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t w = 0;

	if (n == 0 || path[0] != '/' || out_len < 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = path[i];
		if (c == '\\' || c == ';')
			return false;
		if (c == '%') {
			int hi = i + 2 < n ? hexval(path[i + 1]) : -1;
			int lo = i + 2 < n ? hexval(path[i + 2]) : -1;
			if (hi < 0 || lo < 0)
				return false;
			c = (char)(hi * 16 + lo);
			i += 2;
			if (c == '/' || c == '\\' || c == '.' || c == ';')
				return false;
			if (!(isalnum((unsigned char)c) || c == '-' || c == '_' || c == '~')) {
				/* not unreserved: kept as an escape, in upper case */
				if (w + 3 >= out_len)
					return false;
				out[w++] = '%';
				out[w++] = hex[hi];
				out[w++] = hex[lo];
				continue;
			}
		}
		if (w + 1 >= out_len)
			return false;
		out[w++] = c;
	}
	out[w] = '\0';
	for (size_t i = 0; i < w; i++) /* dot and empty segments */
		if (out[i] == '/') {
			size_t k = i + 1;
			if (out[k] == '/')
				return false;
			if (out[k] == '.') {
				k++;
				if (out[k] == '.')
					k++;
				if (out[k] == '/' || out[k] == '\0')
					return false;
			}
		}
	return true;
}

static bool method_plain(const char *m)
{
	for (; *m; m++)
		if (*m < 'A' || *m > 'Z')
			return false;
	return true;
}

/* The prefix of a rule at the start of path: a prefix without a trailing '/' ends where a
 * segment does. */
static bool prefix_match(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n))
		return false;
	return n == 0 || prefix[n - 1] == '/' || path[n] == '\0' || path[n] == '/';
}

static bool request_match(const struct aj_egress_rule *r, const char *host, uint16_t port,
			  bool tls, const char *method, const char *path)
{
	return r->path && r->tls == tls && aj_egress_rule_match(r, host, port) &&
	       (!r->method || !strcmp(r->method, method)) && prefix_match(r->path, path);
}

static bool host_has_http_rules(const struct aj_egress_rules *rs, const char *host,
				uint16_t port)
{
	for (size_t i = 0; i < rs->n_allow; i++)
		if (rs->allow[i].path && aj_egress_rule_match(&rs->allow[i], host, port))
			return true;
	for (size_t i = 0; i < rs->n_deny; i++)
		if (rs->deny[i].path && aj_egress_rule_match(&rs->deny[i], host, port))
			return true;
	return false;
}

void aj_egress_rules_decide_request(const struct aj_egress_rules *rs, const char *host,
				    uint16_t port, bool tls, const char *method, const char *path,
				    const struct aj_egress_verdict *conn,
				    struct aj_egress_verdict *v)
{
	size_t n = strcspn(path, "?#");
	int shown = n > 120 ? 120 : (int)n;
	char plain[1024];

	*v = *conn;
	if (!conn->allowed || !host_has_http_rules(rs, host, port))
		return;
	if (!path_plain(path, n, plain, sizeof plain) || !method_plain(method)) {
		v->allowed = false;
		snprintf(v->why, sizeof v->why,
			 "%s %.*s on %s:%u is denied: HTTP rules name this host, and the request's "
			 "method is not upper case or its path has dot or empty segments, ';', "
			 "backslashes or encoded dots, slashes or backslashes",
			 method, shown, path, host, port);
		return;
	}
	for (size_t i = 0; i < rs->n_deny; i++)
		if (request_match(&rs->deny[i], host, port, tls, method, plain)) {
			v->allowed = false;
			v->rule = &rs->deny[i];
			snprintf(v->why, sizeof v->why, "%s %.*s on %s:%u is denied by %s \"%s\"",
				 method, shown, path, host, port, rs->deny[i].field, rs->deny[i].text);
			return;
		}
	if (!conn->by_request)
		return; /* a host rule allows every request */
	for (size_t i = 0; i < rs->n_allow; i++)
		if (request_match(&rs->allow[i], host, port, tls, method, plain)) {
			v->rule = &rs->allow[i];
			snprintf(v->why, sizeof v->why, "%s %.*s on %s:%u is allowed by %s \"%s\"",
				 method, shown, path, host, port, rs->allow[i].field,
				 rs->allow[i].text);
			return;
		}
	v->allowed = false;
	snprintf(v->why, sizeof v->why,
		 "%s %.*s on %s:%u is not allowed: no HTTP rule in network.allow matches it (%s "
		 "\"%s\" names this host)",
		 method, shown, path, host, port, conn->rule ? conn->rule->field : "a rule",
		 conn->rule ? conn->rule->text : "?");
}
