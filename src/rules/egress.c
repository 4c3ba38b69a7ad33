#include "rules/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int aj_egress_rule_parse(const char *text, int no_port, struct aj_egress_rule *r, char *why,
			 size_t why_len)
{
	char host[AJ_EGRESS_HOST_MAX + 3];
	const char *port;

	memset(r, 0, sizeof *r);
	r->port = no_port;
	if (split_host_port(text, host, sizeof host, &port, why, why_len) < 0)
		return -1;
	if (port && parse_port(port, &r->port, why, why_len) < 0)
		return -1;
	if (strcmp(host, "*") == 0) {
		r->any_host = true;
	} else if (strncmp(host, "*.", 2) == 0) {
		r->suffix = true;
		if (!aj_egress_host_normalize(host + 2, r->host, sizeof r->host) ||
		    aj_egress_host_is_literal(r->host)) {
			snprintf(why, why_len, "\"%s\" is not a name pattern (*.NAME)", host);
			return -1;
		}
	} else if (strchr(host, '*')) {
		snprintf(why, why_len, "'*' may only stand alone or start a pattern as \"*.\"");
		return -1;
	} else if (!aj_egress_host_normalize(host, r->host, sizeof r->host)) {
		snprintf(why, why_len, "\"%s\" is neither a host name nor an IP address", host);
		return -1;
	}
	r->text = aj_xstrdup(text);
	return 0;
}

void aj_egress_rule_free(struct aj_egress_rule *r)
{
	free(r->text);
	r->text = NULL;
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

void aj_egress_rules_decide(const struct aj_egress_rules *rs, const char *host, uint16_t port,
			    struct aj_egress_verdict *v)
{
	bool v6 = strchr(host, ':') != NULL;

	memset(v, 0, sizeof *v);
	for (size_t i = 0; i < rs->n_deny; i++)
		if (aj_egress_rule_match(&rs->deny[i], host, port)) {
			v->rule = &rs->deny[i];
			snprintf(v->why, sizeof v->why, "%s%s%s:%u is denied by %s \"%s\"",
				 v6 ? "[" : "", host, v6 ? "]" : "", port, rs->deny[i].field,
				 rs->deny[i].text);
			return;
		}
	for (size_t i = 0; i < rs->n_allow; i++)
		if (aj_egress_rule_match(&rs->allow[i], host, port)) {
			v->allowed = true;
			v->rule = &rs->allow[i];
			snprintf(v->why, sizeof v->why, "%s%s%s:%u is allowed by %s \"%s\"",
				 v6 ? "[" : "", host, v6 ? "]" : "", port, rs->allow[i].field,
				 rs->allow[i].text);
			return;
		}
	snprintf(v->why, sizeof v->why,
		 "%s%s%s:%u is not allowed: no rule in network.allow matches it (%zu rule%s; a "
		 "rule without a port means 80 and 443)",
		 v6 ? "[" : "", host, v6 ? "]" : "", port, rs->n_allow, rs->n_allow == 1 ? "" : "s");
}
