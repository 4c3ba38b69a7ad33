/* Egress rules (src/egress/rules.c): the syntax the policy accepts, host normalization, and
 * matching, with deny rules winning and the default ports of rules without one. */
#include <stdlib.h>
#include <string.h>

#include "rules/egress.h"
#include "unit.h"

static bool parses(const char *text)
{
	struct aj_egress_rule r;
	char why[256];
	int ok = aj_egress_rule_parse(text, AJ_RULE_PORTS_WEB, &r, why, sizeof why) == 0;

	if (ok)
		aj_egress_rule_free(&r);
	return ok;
}

static bool match(const char *rule, int no_port, const char *host, uint16_t port)
{
	struct aj_egress_rule r;
	char why[256], norm[AJ_EGRESS_HOST_MAX + 1];
	bool m;

	if (aj_egress_rule_parse(rule, no_port, &r, why, sizeof why) < 0) {
		printf("# test bug: %s: %s\n", rule, why);
		return false;
	}
	m = aj_egress_host_normalize(host, norm, sizeof norm) &&
	    aj_egress_rule_match(&r, norm, port);
	aj_egress_rule_free(&r);
	return m;
}

static void syntax(void)
{
	static const char *const good[] = {
		"api.github.com", "api.github.com:443", "*.npmjs.org", "*.npmjs.org:8443", "*",
		"*:22", "host:*", "10.1.2.3", "10.1.2.3:5432", "[2001:db8::1]", "[::1]:8080",
		"UPPER.Example.COM", "a_b.example", "xn--bcher-kva.example",
	};
	static const char *const bad[] = {
		"", ":443", "host:", "host:0", "host:65536", "host:-1", "host:+80", "host:80x",
		"a*.example.com", "*example.com", "*.", "*.*.example", "2001:db8::1", "[2001:db8::1",
		"[zz::1]", "-bad.example", "bad-.example", "a..b", "has space.example",
		"x.example:80:90", "1.2.3", "123", "0x7f.1", "user@host.example", "*.0.0.1",
		"host.123",
	};

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		CHECK(parses(good[i]), "rule \"%s\" parses", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(!parses(bad[i]), "rule \"%s\" is refused", bad[i]);
}

static void normalization(void)
{
	char out[AJ_EGRESS_HOST_MAX + 1];

	CHECK(aj_egress_host_normalize("API.GitHub.COM.", out, sizeof out) &&
		      strcmp(out, "api.github.com") == 0,
	      "names are lower-cased, one trailing dot dropped");
	CHECK(aj_egress_host_normalize("[::FFFF:127.0.0.1]", out, sizeof out) &&
		      strcmp(out, "::ffff:127.0.0.1") == 0,
	      "IPv6 literals lose their brackets and take the canonical form");
	CHECK(aj_egress_host_normalize("0:0:0:0:0:0:0:1", out, sizeof out) &&
		      strcmp(out, "::1") == 0,
	      "IPv6 literals are canonical (::1)");
	CHECK(aj_egress_host_normalize("::0.", out, sizeof out) && strcmp(out, "::") == 0,
	      "a literal with a trailing dot still takes the canonical form (found by fuzzing)");
	CHECK(!aj_egress_host_normalize("a:b.example", out, sizeof out),
	      "a colon in a name that is not an IPv6 literal is refused");
	CHECK(!aj_egress_host_normalize("2130706433", out, sizeof out),
	      "a decimal number is not a host (no resolver may read it as 127.0.0.1)");
	CHECK(!aj_egress_host_normalize("127.1", out, sizeof out),
	      "a short dotted form is not a host");
	CHECK(!aj_egress_host_normalize("evil.com\r\nX: y", out, sizeof out),
	      "control characters are refused");
	CHECK(!aj_egress_host_normalize("a.example..", out, sizeof out), "two trailing dots");
}

static void matching(void)
{
	CHECK(match("api.github.com", AJ_RULE_PORTS_WEB, "api.github.com", 443), "exact, 443");
	CHECK(match("api.github.com", AJ_RULE_PORTS_WEB, "API.github.com.", 80), "exact, 80");
	CHECK(!match("api.github.com", AJ_RULE_PORTS_WEB, "api.github.com", 22),
	      "no port means 80 and 443 only");
	CHECK(!match("api.github.com", AJ_RULE_PORTS_WEB, "github.com", 443), "not the parent");
	CHECK(!match("api.github.com", AJ_RULE_PORTS_WEB, "x.api.github.com", 443),
	      "an exact rule is not a suffix rule");
	CHECK(match("*.npmjs.org", AJ_RULE_PORTS_WEB, "registry.npmjs.org", 443), "suffix");
	CHECK(match("*.npmjs.org", AJ_RULE_PORTS_WEB, "a.b.npmjs.org", 443), "suffix, deeper");
	CHECK(!match("*.npmjs.org", AJ_RULE_PORTS_WEB, "npmjs.org", 443),
	      "a suffix rule does not match the bare domain");
	CHECK(!match("*.npmjs.org", AJ_RULE_PORTS_WEB, "evilnpmjs.org", 443),
	      "a suffix rule matches at a label boundary only");
	CHECK(!match("*.example", AJ_RULE_PORTS_WEB, "1.2.3.4", 80),
	      "a suffix rule never matches an IP literal");
	CHECK(match("host.example:8443", AJ_RULE_PORTS_WEB, "host.example", 8443), "port");
	CHECK(!match("host.example:8443", AJ_RULE_PORTS_WEB, "host.example", 443), "port only");
	CHECK(match("host.example:*", AJ_RULE_PORTS_WEB, "host.example", 22), "any port");
	CHECK(match("*", AJ_RULE_PORTS_WEB, "anything.example", 443), "any host, web ports");
	CHECK(!match("*", AJ_RULE_PORTS_WEB, "anything.example", 25), "any host, not port 25");
	CHECK(match("[::1]:8080", AJ_RULE_PORTS_WEB, "[0::1]", 8080), "IPv6 literal rule");
	CHECK(match("api.example", AJ_RULE_PORTS_TLS, "api.example", 443),
	      "credential binding: 443 by default");
	CHECK(!match("api.example", AJ_RULE_PORTS_TLS, "api.example", 80),
	      "credential binding: never plain port 80 by default");
}

static void decisions(void)
{
	struct aj_strv allow = {0}, deny = {0};
	struct aj_egress_rules rs;
	struct aj_egress_verdict v;
	struct aj_err err;

	aj_strv_push(&allow, "*.example.com");
	aj_strv_push(&allow, "pypi.org");
	aj_strv_push(&deny, "evil.example.com");
	CHECK(aj_egress_rules_build(&rs, &allow, &deny, &err) == 0, "ruleset builds");
	aj_egress_rules_decide(&rs, "api.example.com", 443, &v);
	CHECK(v.allowed && v.rule == &rs.allow[0], "allowed by the suffix rule");
	CHECK_CONTAINS(v.why, "network.allow[0] \"*.example.com\"", "the reason names the rule");
	aj_egress_rules_decide(&rs, "evil.example.com", 443, &v);
	CHECK(!v.allowed && v.rule == &rs.deny[0], "deny wins over a matching allow rule");
	CHECK_CONTAINS(v.why, "denied by network.deny[0] \"evil.example.com\"",
		       "the denial names the deny rule");
	aj_egress_rules_decide(&rs, "github.com", 443, &v);
	CHECK(!v.allowed && !v.rule, "no rule: denied");
	CHECK_CONTAINS(v.why, "no rule in network.allow matches", "and says so");
	aj_egress_rules_decide(&rs, "pypi.org", 8080, &v);
	CHECK(!v.allowed, "an allowed host on another port is denied");
	aj_egress_rules_free(&rs);
	aj_strv_free(&allow);
	aj_strv_free(&deny);
}

/* HTTP rules: the syntax, a connection allowed only for requests, and requests decided by
 * method, scheme and path prefix, deny rules first, odd paths refused. */
static void http_rules(void)
{
	static const char *const good[] = {
		"GET https://api.github.com/repos/acme/", "https://api.github.com/", "* http://h.example",
		"POST http://svc.example:8080/upload", "GET https://*.example.com/x",
	};
	static const char *const bad[] = {
		"get https://a.example/", "GET ftp://a.example/", "GET https:///x",
		"GET https://a.example/x?y", "GET https://a.example/a b", "GET  https://a.example/",
		"GET https://a.example:0/", "GET https://a.example/%61", "GET https://a.example/a/../b",
		"GET https://a.example//a", "GET https://a.example/a;b", "GET https://a.example/a b",
	};
	struct aj_strv allow = {0}, deny = {0};
	struct aj_egress_rules rs;
	struct aj_egress_verdict c, v;
	struct aj_egress_rule r;
	struct aj_err err;
	char why[256];

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		CHECK(parses(good[i]), "HTTP rule \"%s\" parses", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(!parses(bad[i]), "HTTP rule \"%s\" is refused", bad[i]);
	CHECK(aj_egress_rule_parse("GET https://a.example/x", AJ_RULE_PORTS_TLS, &r, why,
				   sizeof why) < 0,
	      "a credential's host cannot be a URL");
	CHECK_CONTAINS(why, "not a URL", "saying so");

	aj_strv_push(&allow, "GET https://api.github.com/repos/acme/");
	aj_strv_push(&allow, "pypi.org");
	aj_strv_push(&allow, "POST http://svc.example:8080/upload");
	aj_strv_push(&deny, "https://pypi.org/admin/");
	CHECK(aj_egress_rules_build(&rs, &allow, &deny, &err) == 0, "HTTP ruleset builds");
	CHECK(aj_egress_rules_have_https(&rs), "an https:// rule is seen");
	aj_egress_rules_decide(&rs, "api.github.com", 443, &c);
	CHECK(c.allowed && c.by_request && c.rule == &rs.allow[0],
	      "a host only an HTTP rule names: allowed by request");
	aj_egress_rules_decide(&rs, "api.github.com", 80, &v);
	CHECK(!v.allowed, "not on the other scheme's port");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET",
				       "/repos/acme/tool/pulls?page=2", &c, &v);
	CHECK(v.allowed && v.rule == &rs.allow[0], "GET under the prefix: allowed");
	CHECK_CONTAINS(v.why, "network.allow[0]", "naming the rule");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "POST",
				       "/repos/acme/tool/pulls", &c, &v);
	CHECK(!v.allowed, "another method: denied");
	CHECK_CONTAINS(v.why, "POST /repos/acme/tool/pulls on api.github.com:443 is not allowed",
		       "the denial names method, path and host");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET", "/repos/other/",
				       &c, &v);
	CHECK(!v.allowed, "another prefix: denied");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, false, "GET", "/repos/acme/",
				       &c, &v);
	CHECK(!v.allowed, "plain HTTP for an https:// rule: denied");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET",
				       "/repos/acme/../other/", &c, &v);
	CHECK(!v.allowed, "dot segments: denied");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET",
				       "/repos/acme/%2e%2e/other", &c, &v);
	CHECK(!v.allowed, "encoded dots: denied");
	CHECK_CONTAINS(v.why, "dot or empty segments", "saying why");
	aj_egress_rules_decide(&rs, "pypi.org", 443, &c);
	CHECK(c.allowed && !c.by_request, "a host rule: allowed, not by request");
	aj_egress_rules_decide_request(&rs, "pypi.org", 443, true, "GET", "/simple/", &c, &v);
	CHECK(v.allowed, "a host rule allows every request");
	aj_egress_rules_decide_request(&rs, "pypi.org", 443, true, "GET", "/admin/users", &c, &v);
	CHECK(!v.allowed && v.rule == &rs.deny[0], "an HTTP deny rule wins over the host rule");
	CHECK_CONTAINS(v.why, "denied by network.deny[0]", "naming it");
	aj_egress_rules_decide(&rs, "pypi.org", 443, &c);
	CHECK(c.inspect && c.inspect_tls, "a host rule's host with an https:// deny rule: inspected");
	{
		static const char *const bypass[] = {"//admin/x", "/%61dmin/x", "/admin;x/",
						     "/a/../admin/", "/%2fadmin/"};
		for (size_t i = 0; i < sizeof bypass / sizeof bypass[0]; i++) {
			aj_egress_rules_decide_request(&rs, "pypi.org", 443, true, "GET", bypass[i],
						       &c, &v);
			CHECK(!v.allowed, "the deny rule is not bypassed by \"%s\"", bypass[i]);
		}
	}
	aj_egress_rules_decide_request(&rs, "pypi.org", 443, true, "get", "/simple/", &c, &v);
	CHECK(!v.allowed, "a lower-case method where HTTP rules name the host: denied");
	aj_egress_rules_decide(&rs, "api.github.com", 443, &c);
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET",
				       "/repos/acme/%74ool", &c, &v);
	CHECK(v.allowed, "an escaped unreserved character is read as itself");
	aj_egress_rules_decide(&rs, "svc.example", 8080, &c);
	aj_egress_rules_decide_request(&rs, "svc.example", 8080, false, "POST", "/upload/a", &c,
				       &v);
	CHECK(v.allowed, "an http:// rule with a port: plain HTTP allowed");
	aj_egress_rules_free(&rs);
	aj_strv_free(&allow);
	aj_strv_free(&deny);

	aj_strv_push(&allow, "GET https://api.github.com/repos/acme");
	CHECK(aj_egress_rules_build(&rs, &allow, &deny, &err) == 0, "a prefix without '/' builds");
	aj_egress_rules_decide(&rs, "api.github.com", 443, &c);
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET", "/repos/acme",
				       &c, &v);
	CHECK(v.allowed, "the prefix itself");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET",
				       "/repos/acme/tool?x=1", &c, &v);
	CHECK(v.allowed, "below it");
	aj_egress_rules_decide_request(&rs, "api.github.com", 443, true, "GET",
				       "/repos/acmeX/secret", &c, &v);
	CHECK(!v.allowed, "a prefix ends at a segment's end: /repos/acmeX is not /repos/acme");
	aj_egress_rules_free(&rs);
	aj_strv_free(&allow);
}

int main(void)
{
	syntax();
	normalization();
	matching();
	decisions();
	http_rules();
	UNIT_EXIT();
}
