/* libFuzzer: egress rules (HTTP rules included), host names, address ranges, the credential
 * rewriting the proxy applies to header values (Basic credentials included), and requests
 * decided by HTTP rules on a fuzzed path: a path with a dot or empty segment, outside the
 * allowed prefix or inside the denied one (a prefix ends at a segment's end) is never
 * allowed. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/creds.h"
#include "rules/addr.h"
#include "rules/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rewrite(const char *value)
{
	struct aj_egress_rule r;
	struct aj_egress_cred c;
	struct aj_http_head h;
	char why[200];
	bool used;

	memset(&c, 0, sizeof c);
	memset(&h, 0, sizeof h);
	if (aj_egress_rule_parse("api.example", AJ_RULE_PORTS_TLS, &r, why, sizeof why) < 0)
		abort();
	strcpy(c.placeholder, "ajph_0123456789abcdef");
	c.secret = strdup("s3cret");
	c.secret_len = 6;
	c.hosts = &r;
	c.n_hosts = 1;
	c.header = "X-Key";
	c.format = "k {}";
	aj_http_head_add(&h, "Authorization", value);
	(void)aj_egress_creds_apply(&c, 1, "api.example", 443, &h, &used);
	aj_http_head_free(&h);
	free(c.secret);
	aj_egress_rule_free(&r);
}

static void request(const char *path)
{
	struct aj_strv allow = AJ_STRV_INIT, deny = AJ_STRV_INIT;
	struct aj_egress_rules rs;
	struct aj_egress_verdict c, v;
	struct aj_err err;
	char p[600]; /* what is compared: the path up to its query */

	snprintf(p, sizeof p, "%.*s", (int)strcspn(path, "?#"), path);
	aj_strv_push(&allow, "GET https://api.example/repos/acme/");
	aj_strv_push(&deny, "https://api.example/repos/acme/secret");
	if (aj_egress_rules_build(&rs, &allow, &deny, &err) < 0)
		abort();
	aj_egress_rules_decide(&rs, "api.example", 443, &c);
	aj_egress_rules_decide_request(&rs, "api.example", 443, true, "GET", path, &c, &v);
	if (v.allowed && (strncmp(p, "/repos/acme/", 12) || strstr(p, "/../") ||
			  strstr(p, "/./") || strstr(p, "//") ||
			  (!strncmp(p, "/repos/acme/secret", 18) && (!p[18] || p[18] == '/'))))
		abort();
	aj_egress_rules_free(&rs);
	aj_strv_free(&allow);
	aj_strv_free(&deny);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aj_egress_rule r;
	struct aj_cidr c;
	char s[600], why[256], host[AJ_EGRESS_HOST_MAX + 1], again[AJ_EGRESS_HOST_MAX + 1];

	if (size >= sizeof s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (aj_egress_rule_parse(s, AJ_RULE_PORTS_WEB, &r, why, sizeof why) == 0) {
		(void)aj_egress_rule_match(&r, "api.example", 443);
		aj_egress_rule_free(&r);
	}
	if (aj_egress_host_normalize(s, host, sizeof host) &&
	    (!aj_egress_host_normalize(host, again, sizeof again) || strcmp(host, again) != 0))
		abort(); /* normalizing is idempotent */
	(void)aj_egress_cidr_parse(s, &c, why, sizeof why);
	rewrite(s);
	request(s);
	return 0;
}
