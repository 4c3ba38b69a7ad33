/* Credential injection (src/egress/creds.c): placeholders in header values become the secret
 * for the hosts the credential is bound to, also inside Basic credentials; other hosts and
 * other credentials' placeholders are left alone; the configured header is added when
 * missing. */
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "egress/creds.h"
#include "unit.h"

#define PH "ajph_0123456789abcdef0123456789abcdef01234567"
#define PH2 "ajph_fedcba9876543210fedcba9876543210fedcba98"

static struct aj_egress_rule host_rule(const char *text)
{
	struct aj_egress_rule r;
	char why[200];

	if (aj_egress_rule_parse(text, AJ_RULE_PORTS_TLS, &r, why, sizeof why) < 0)
		printf("# test bug: %s: %s\n", text, why);
	return r;
}

static void make_cred(struct aj_egress_cred *c, const char *name, const char *ph,
		      const char *secret, struct aj_egress_rule *hosts, size_t n)
{
	memset(c, 0, sizeof *c);
	c->name = name;
	snprintf(c->placeholder, sizeof c->placeholder, "%s", ph);
	c->secret = strdup(secret);
	c->secret_len = strlen(secret);
	c->hosts = hosts;
	c->n_hosts = n;
}

static void head_of(struct aj_http_head *h, const char *text)
{
	char why[200];

	if (aj_http_head_parse(text, strlen(text), true, h, why, sizeof why) < 0)
		printf("# test bug: %s\n", why);
}

static char *basic(const char *user_pass)
{
	char *out = malloc(6 + aj_base64_len(strlen(user_pass)) + 1);

	memcpy(out, "Basic ", 6);
	aj_base64_encode(user_pass, strlen(user_pass), out + 6);
	return out;
}

static void rewriting(void)
{
	struct aj_egress_rule gh[2] = {host_rule("api.github.com"), host_rule("*.github.com")};
	struct aj_egress_rule other[1] = {host_rule("registry.example")};
	struct aj_egress_cred c[2];
	struct aj_http_head h;
	bool used[2];
	char text[600], *b;
	int n;

	make_cred(&c[0], "GH_TOKEN", PH, "ghp_realSECRET", gh, 2);
	make_cred(&c[1], "REG_TOKEN", PH2, "reg-secret", other, 1);

	head_of(&h, "GET / HTTP/1.1\r\nAuthorization: Bearer " PH "\r\nX-Other: " PH2
		    "\r\nX-Twice: " PH "," PH "\r\n\r\n");
	n = aj_egress_creds_apply(c, 2, "api.github.com", 443, &h, used);
	CHECK(n == 1 && used[0] && !used[1], "one credential used for its host");
	CHECK_STR(aj_http_head_get(&h, "Authorization"), "Bearer ghp_realSECRET",
		  "the placeholder became the secret");
	CHECK_STR(aj_http_head_get(&h, "X-Twice"), "ghp_realSECRET,ghp_realSECRET",
		  "every occurrence is replaced");
	CHECK_STR(aj_http_head_get(&h, "X-Other"), PH2,
		  "another credential's placeholder stays (not bound to this host)");
	aj_http_head_free(&h);

	/* git sends a token as the password of Basic credentials */
	b = basic("x-access-token:" PH);
	snprintf(text, sizeof text, "GET /repo.git/info/refs HTTP/1.1\r\nAuthorization: %s\r\n\r\n",
		 b);
	free(b);
	head_of(&h, text);
	n = aj_egress_creds_apply(c, 2, "codeload.github.com", 443, &h, used);
	b = basic("x-access-token:ghp_realSECRET");
	CHECK(n == 1, "Basic: used");
	CHECK_STR(aj_http_head_get(&h, "Authorization"), b,
		  "Basic credentials decoded, rewritten, encoded again");
	free(b);
	aj_http_head_free(&h);

	head_of(&h, "GET / HTTP/1.1\r\nAuthorization: Bearer " PH "\r\n\r\n");
	n = aj_egress_creds_apply(c, 2, "evil.example", 443, &h, used);
	CHECK(n == 0 && !used[0], "an unbound host gets nothing");
	CHECK_STR(aj_http_head_get(&h, "Authorization"), "Bearer " PH,
		  "and the placeholder arrives unchanged");
	aj_http_head_free(&h);

	head_of(&h, "GET / HTTP/1.1\r\nAuthorization: Bearer " PH "\r\n\r\n");
	n = aj_egress_creds_apply(c, 2, "api.github.com", 80, &h, used);
	CHECK(n == 0, "a bound host on another port (80) gets nothing");
	aj_http_head_free(&h);

	head_of(&h, "GET / HTTP/1.1\r\nAuthorization: Basic !!!notbase64\r\n\r\n");
	CHECK(aj_egress_creds_apply(c, 2, "api.github.com", 443, &h, used) == 0 &&
		      strcmp(aj_http_head_get(&h, "Authorization"), "Basic !!!notbase64") == 0,
	      "Basic credentials that are not base64 are left alone");
	aj_http_head_free(&h);

	for (int i = 0; i < 2; i++)
		free(c[i].secret);
	aj_egress_rule_free(&gh[0]);
	aj_egress_rule_free(&gh[1]);
	aj_egress_rule_free(&other[0]);
}

static void injection(void)
{
	struct aj_egress_rule hosts[1] = {host_rule("api.example:8443")};
	struct aj_egress_cred c;
	struct aj_http_head h;
	bool used[1];

	make_cred(&c, "API_KEY", PH, "s3cr3t", hosts, 1);
	c.header = "Authorization";
	c.format = "Token {}";
	head_of(&h, "GET / HTTP/1.1\r\nHost: api.example\r\n\r\n");
	CHECK(aj_egress_creds_apply(&c, 1, "api.example", 8443, &h, used) == 1 && used[0],
	      "the header is added when the request lacks it");
	CHECK_STR(aj_http_head_get(&h, "Authorization"), "Token s3cr3t", "in its format");
	aj_http_head_free(&h);

	head_of(&h, "GET / HTTP/1.1\r\nAuthorization: Bearer mine\r\n\r\n");
	CHECK(aj_egress_creds_apply(&c, 1, "api.example", 8443, &h, used) == 0,
	      "an Authorization the request brings itself is kept");
	CHECK_STR(aj_http_head_get(&h, "Authorization"), "Bearer mine", "unchanged");
	CHECK(aj_http_head_count(&h, "Authorization") == 1, "and not doubled");
	aj_http_head_free(&h);
	free(c.secret);
	aj_egress_rule_free(&hosts[0]);
}

static void replace_all(void)
{
	char *s = aj_egress_replace_all("aXbXc", "X", "--", 2);

	CHECK_STR(s, "a--b--c", "replace_all");
	free(s);
	/* An allocation failure ends the process (common/alloc.h): NULL means only this. */
	CHECK(aj_egress_replace_all("abc", "X", "--", 2) == NULL,
	      "nothing to replace: NULL, not an error");
}

int main(void)
{
	rewriting();
	injection();
	replace_all();
	UNIT_EXIT();
}
