/* The network and credentials fields of a policy: every error names its field path, the
 * document round-trips through aj_policy_to_json(), and rules are refused with any mode but
 * "proxy". */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "unit.h"

static int apply(struct aj_policy *p, const char *text, struct aj_err *err)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	int r;

	aj_err_clear(err);
	if (!j) {
		printf("# test bug: %s: %s\n", text, je.text);
		return -2;
	}
	r = aj_policy_apply_json(p, j, err);
	json_decref(j);
	return r;
}

static void refused(const char *text, const char *path, const char *expect)
{
	struct aj_policy p;
	struct aj_err err;
	char prefix[160];
	int r;

	aj_policy_init(&p);
	r = apply(&p, text, &err);
	snprintf(prefix, sizeof prefix, "%s: ", path);
	CHECK(r == -1 && strncmp(err.msg, prefix, strlen(prefix)) == 0,
	      "refused naming %s: %s", path, text);
	if (r == -1)
		CHECK_CONTAINS(err.msg, expect, "%s: says \"%s\"", path, expect);
	aj_policy_free(&p);
}

static void errors(void)
{
	refused("{\"network\": {\"mode\": \"vpn\"}}", "network.mode", "none, host, proxy");
	refused("{\"network\": {\"allow\": [\"ok.example\", \"bad host\"]}}", "network.allow[1]",
		"neither a host name");
	refused("{\"network\": {\"allow\": [\"a.example:99999\"]}}", "network.allow[0]",
		"1 to 65535");
	refused("{\"network\": {\"deny\": [\"a*b.example\"]}}", "network.deny[0]", "'*'");
	refused("{\"network\": {\"allow_private\": [\"10.0.0.1/8\"]}}", "network.allow_private[0]",
		"bits set past");
	refused("{\"network\": {\"allow_private\": [\"intranet\"]}}", "network.allow_private[0]",
		"address range");
	refused("{\"network\": {\"max_connections\": \"many\"}}", "network.max_connections",
		"whole number");
	refused("{\"network\": {\"max_bytes\": -1}}", "network.max_bytes", "size");
	refused("{\"credentials\": []}", "credentials", "object mapping variable names");
	refused("{\"credentials\": {\"1BAD\": {}}}", "credentials.1BAD", "not a variable name");
	refused("{\"credentials\": {\"T\": {\"hosts\": [\"a.example\"]}}}", "credentials.T",
		"exactly one of from_env, from_file and from_secret");
	refused("{\"credentials\": {\"T\": {\"from_secret\": \"no spaces\", "
		"\"hosts\": [\"a.example\"]}}}",
		"credentials.T.from_secret", "not a secret name");
	refused("{\"credentials\": {\"T\": {\"from_secret\": \"s\", \"replace\": true, "
		"\"hosts\": [\"a.example\"]}}}",
		"credentials.T.replace", "needs header");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"from_file\": \"/x\", "
		"\"hosts\": [\"a.example\"]}}}",
		"credentials.T", "exactly one");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\"}}}", "credentials.T.hosts",
		"missing");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"hosts\": []}}}",
		"credentials.T.hosts", "non-empty");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"hosts\": [\"*\"]}}}",
		"credentials.T.hosts[0]", "not to \"*\"");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"hosts\": [\"10.0.0.1\"]}}}",
		"credentials.T.hosts[0]", "IP address");
	refused("{\"credentials\": {\"T\": {\"from_file\": \"rel/path\", \"hosts\": [\"a.b\"]}}}",
		"credentials.T.from_file", "absolute path");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"hosts\": [\"a.b\"], "
		"\"header\": \"Bad Header\"}}}",
		"credentials.T.header", "not an HTTP header name");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"hosts\": [\"a.b\"], "
		"\"header\": \"X-Key\", \"format\": \"no placeholder\"}}}",
		"credentials.T.format", "{}");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"hosts\": [\"a.b\"], "
		"\"header\": \"X-Key\", \"format\": \"a\\r\\nX: {}\"}}}",
		"credentials.T.format", "printable");
	refused("{\"credentials\": {\"T\": {\"from_env\": \"A\", \"hosts\": [\"a.b\"], "
		"\"secret\": \"inline\"}}}",
		"credentials.T.secret", "unknown field");
}

static void needs_proxy_mode(void)
{
	struct aj_policy p;
	struct aj_err err;

	aj_policy_init(&p);
	apply(&p, "{\"network\": {\"allow\": [\"a.example\"]}}", &err);
	CHECK(aj_policy_validate(&p, &err) == -1, "rules without mode proxy: refused");
	CHECK_CONTAINS(err.msg, "network.allow: takes effect only with network.mode \"proxy\"",
		       "the error names the field and the mode");
	aj_policy_free(&p);

	aj_policy_init(&p);
	apply(&p, "{\"network\": {\"mode\": \"host\"}, \"credentials\": {\"T\": {\"from_env\": "
		  "\"A\", \"hosts\": [\"a.b\"]}}}",
	      &err);
	CHECK(aj_policy_validate(&p, &err) == -1 && strstr(err.msg, "credentials: takes effect"),
	      "credentials with the host network: refused");
	aj_policy_free(&p);
}

static void round_trip(void)
{
	const char *doc = "{\"network\": {\"mode\": \"proxy\", \"allow\": [\"*.npmjs.org\", "
			  "\"api.github.com:443\"], \"deny\": [\"evil.npmjs.org\"], "
			  "\"allow_private\": [\"10.1.0.0/16\"], \"max_connections\": 64, "
			  "\"max_bytes\": \"1GiB\"}, \"credentials\": {\"GH\": {\"from_env\": "
			  "\"GH_SECRET\", \"hosts\": [\"api.github.com\"], \"header\": "
			  "\"Authorization\", \"format\": \"Bearer {}\"}, \"NPM\": {\"from_file\": "
			  "\"/run/secrets/npm\", \"hosts\": [\"*.npmjs.org\"]}}}";
	struct aj_policy p, q;
	struct aj_err err;
	char *a, *b;
	json_t *j;

	aj_policy_init(&p);
	CHECK(apply(&p, doc, &err) == 0, "a full network and credentials document parses");
	CHECK(p.net_mode == AJ_NET_PROXY && p.net_allow.n == 2 && p.net_deny.n == 1 &&
		      p.net_max_connections == 64 && p.net_max_bytes == (1ULL << 30) &&
		      p.n_creds == 2,
	      "fields land in the policy");
	CHECK(p.n_creds == 2 && strcmp(p.creds[0].format, "Bearer {}") == 0 &&
		      p.creds[1].header == NULL,
	      "credential fields");
	j = aj_policy_to_json(&p);
	a = json_dumps(j, JSON_SORT_KEYS);
	aj_policy_init(&q);
	CHECK(aj_policy_apply_json(&q, j, &err) == 0, "the printed policy parses again");
	json_decref(j);
	j = aj_policy_to_json(&q);
	b = json_dumps(j, JSON_SORT_KEYS);
	CHECK(a && b && strcmp(a, b) == 0, "and prints the same");
	CHECK(a && !strstr(a, "secret\""), "no secret value anywhere in the printed policy");
	free(a);
	free(b);
	json_decref(j);
	aj_policy_free(&p);
	aj_policy_free(&q);
}

int main(void)
{
	errors();
	needs_proxy_mode();
	round_trip();
	UNIT_EXIT();
}
