/* Egress rules: which host names and ports the proxy lets a sandbox reach (network.allow,
 * network.deny, and the hosts a credential is bound to). Pure: parsing and matching only, so
 * that the policy parser and the unit tests use exactly what the proxy uses.
 *
 * Syntax of one rule: HOST[:PORT] where HOST is an exact name ("api.github.com"), a suffix
 * pattern ("*.npmjs.org": any name below npmjs.org, not npmjs.org itself), "*" (any host), an
 * IPv4 literal or a bracketed IPv6 literal ("[2001:db8::1]"); PORT is a number or "*" (any).
 * Without a port a rule means the caller's default ports: 80 and 443 for network rules, 443
 * for credential bindings.
 *
 * An HTTP rule (network rules only) names requests: "[METHOD ]http[s]://HOST[:PORT]/PREFIX",
 * e.g. "GET https://api.github.com/repos/acme/": the method (or any without one, or "*"), the
 * scheme (http: 80, https: 443 unless a port is given) and a path prefix (no query). It lets
 * the host's port be reached only for requests the proxy sees and checks: plain HTTP, and TLS
 * it terminates (docs/policy.md); an HTTP deny rule is checked on those requests only, a
 * tunnel is decided by host and port.
 *
 * A ruleset owns copies of the texts it was built from; aj_egress_rules_free() releases them.
 */
#ifndef AJ_RULES_EGRESS_H
#define AJ_RULES_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strv.h"

#define AJ_EGRESS_HOST_MAX 253

enum aj_rule_ports {
	AJ_RULE_PORTS_WEB = 0,  /* no port given: 80 and 443 */
	AJ_RULE_PORTS_TLS = -2, /* no port given in a credential binding: 443 */
	AJ_RULE_PORTS_ANY = -1, /* ":*" */
};

struct aj_egress_rule {
	char host[AJ_EGRESS_HOST_MAX + 3]; /* normalized; for "*.x" the suffix "x"; "" for "*" */
	bool suffix;                       /* "*.x" */
	bool any_host;                     /* "*" */
	int port;                          /* 1-65535 or enum aj_rule_ports */
	char *text;                        /* as written */
	char field[64];                    /* "network.allow[3]": where it came from */
	/* HTTP rules */
	char *path;   /* the path prefix; NULL: a host rule */
	char *method; /* NULL: any */
	bool tls;     /* https:// */
};

struct aj_egress_rules {
	struct aj_egress_rule *allow, *deny;
	size_t n_allow, n_deny;
};

/* Parses one rule. no_port is AJ_RULE_PORTS_WEB or AJ_RULE_PORTS_TLS. On error, why says
 * what is wrong (without the field name). */
int aj_egress_rule_parse(const char *text, int no_port, struct aj_egress_rule *r, char *why,
			 size_t why_len);
void aj_egress_rule_free(struct aj_egress_rule *r);
bool aj_egress_rule_match(const struct aj_egress_rule *r, const char *host, uint16_t port);

/* Normalizes the host of a request into out (>= AJ_EGRESS_HOST_MAX + 1 bytes): lower case,
 * one trailing dot dropped, IPv6 literals without brackets in canonical form. False if it is
 * neither a valid DNS name nor an IP literal. */
bool aj_egress_host_normalize(const char *in, char *out, size_t out_len);
/* True if host (normalized) is an IPv4 or IPv6 literal. */
bool aj_egress_host_is_literal(const char *host);

/* Builds a ruleset from network.allow and network.deny (already syntax-checked, so errors
 * here are allocation failures). */
int aj_egress_rules_build(struct aj_egress_rules *rs, const struct aj_strv *allow,
			  const struct aj_strv *deny, struct aj_err *err);
void aj_egress_rules_free(struct aj_egress_rules *rs);

struct aj_egress_verdict {
	bool allowed;
	bool by_request; /* only HTTP rules allow the host: each request is checked */
	bool inspect;    /* HTTP rules (allow or deny) name host:port: requests must be seen */
	bool inspect_tls; /* one of them is https:// (the proxy may terminate TLS to see them) */
	const struct aj_egress_rule *rule; /* the rule that decided, NULL: none matched */
	char why[400];                     /* for the 403 body and the event */
};

/* A connection to host:port. Host deny rules win; then the first host allow rule; then, if an
 * HTTP allow rule names the host and port, allowed by_request (v->rule the first such rule,
 * an https:// one if there is one); otherwise denied. */
void aj_egress_rules_decide(const struct aj_egress_rules *rs, const char *host, uint16_t port,
			    struct aj_egress_verdict *v);
/* A request the proxy sees (plain HTTP, or inside TLS it terminated: tls) on a connection
 * decided as conn: HTTP deny rules matching it win; then a host allow rule (conn not
 * by_request); then the first matching HTTP allow rule; otherwise denied. path is the target
 * (origin form; its query is not compared), its escapes of unreserved characters decoded. A
 * prefix without a trailing '/' ends at a segment's end ("/repos/acme" is not
 * "/repos/acmeX"). Where an HTTP rule names the host, a request is denied whose path has "."
 * or ".." segments, an empty segment ("//"), ';', encoded '/', '\\' or '.', or a
 * backslash, or whose method is not upper case: the path or method it seems to have may not
 * be the one the server reads. */
void aj_egress_rules_decide_request(const struct aj_egress_rules *rs, const char *host,
				    uint16_t port, bool tls, const char *method, const char *path,
				    const struct aj_egress_verdict *conn,
				    struct aj_egress_verdict *v);
/* True if some rule is an https:// HTTP rule (the proxy then needs its CA). */
bool aj_egress_rules_have_https(const struct aj_egress_rules *rs);

#endif
