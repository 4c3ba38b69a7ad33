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
	const struct aj_egress_rule *rule; /* the rule that decided, NULL: none matched */
	char why[400];                     /* for the 403 body and the event */
};

/* Deny rules win; then the first allow rule that matches; otherwise denied. */
void aj_egress_rules_decide(const struct aj_egress_rules *rs, const char *host, uint16_t port,
			    struct aj_egress_verdict *v);

#endif
