/* network.mode "proxy" in the plan (src/policy/plan_net.c and the Landlock section of
 * plan.c): fail closed without Landlock TCP rules unless accepted as degraded; the proxy's
 * variables, placeholders and CA files; a credential's source variable never reaching the
 * sandbox. Builds plans only (nothing runs). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/plan.h"
#include "host/features.h"
#include "rules/landlock.h"
#include "unit.h"

static char ws[64];

static int build(const char *text, int abi, struct aj_policy *pol, struct aj_plan *plan,
		 struct aj_err *err)
{
	static struct aj_features feat;
	char *argv[] = {"true", NULL};
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	int r;

	aj_features_probe(&feat, NULL);
	feat.landlock_abi = abi;
	aj_policy_init(pol);
	free(pol->workspace);
	pol->workspace = strdup(ws);
	pol->limits.memory = 0; /* no cgroup needed to plan */
	r = j ? aj_policy_apply_json(pol, j, err) : -1;
	json_decref(j);
	if (r == 0)
		r = aj_policy_validate(pol, err);
	if (r == 0)
		r = aj_plan_build(plan, pol, &feat, argv, err);
	return r;
}

static const char *env_of(const struct aj_plan *p, const char *name)
{
	long i = aj_strv_find_env(&p->env, name, strlen(name));
	return i < 0 ? NULL : strchr(p->env.v[i], '=') + 1;
}

/* The network namespace is the boundary in this tier: the proxy needs no Landlock TCP rules,
 * so an old Landlock ABI does not refuse it, and no rule keeps servers off the sandbox's own
 * loopback. */
static void no_tcp_rules(void)
{
	struct aj_policy pol;
	struct aj_plan plan;
	struct aj_err err;
	const char *doc = "{\"network\": {\"mode\": \"proxy\", \"allow\": [\"a.example\"]}}";

	for (int abi = 3; abi <= 7; abi += 4) {
		CHECK(build(doc, abi, &pol, &plan, &err) == 0,
		      "Landlock ABI %d and the proxy: accepted (%s)", abi, err.msg);
		CHECK(plan.ll_net == 0, "ABI %d: no TCP rules", abi);
		CHECK(plan.layers[AJ_PL_LANDLOCK_NET].state == AJ_LS_OFF, "ABI %d: landlock-net off",
		      abi);
		CHECK_CONTAINS(plan.layers[AJ_PL_LANDLOCK_NET].detail, "the network namespace",
			       "ABI %d: the detail names what holds the boundary", abi);
		aj_plan_free(&plan);
		aj_policy_free(&pol);
	}
	CHECK(build("{\"network\": {\"mode\": \"none\", \"listen\": [8080]}}", 7, &pol, &plan,
		    &err) == 0 && plan.ll_net == 0,
	      "network.listen in this tier: nothing to lift, no TCP rules");
	aj_plan_free(&plan);
	aj_policy_free(&pol);
}

static void proxy_plan(void)
{
	struct aj_policy pol;
	struct aj_plan plan;
	struct aj_err err;
	const char *ph;

	setenv("EGRESS_UNIT_SECRET", "the-real-secret", 1);
	CHECK(build("{\"network\": {\"mode\": \"proxy\", \"allow\": [\"api.example\"]}, "
		    "\"environment\": {\"allow\": [\"*\"]}, \"credentials\": {\"TOKEN\": "
		    "{\"from_env\": \"EGRESS_UNIT_SECRET\", \"hosts\": [\"api.example\"]}}}",
		    7, &pol, &plan, &err) == 0,
	      "a proxy plan with a credential builds (%s)", err.msg);
	CHECK(plan.egress.on && plan.egress.port == AJ_EGRESS_PORT, "egress on, its port");
	CHECK(plan.layers[AJ_PL_EGRESS].state == AJ_LS_ENFORCED, "the egress layer is enforced");
	CHECK_STR(env_of(&plan, "HTTPS_PROXY"), "http://127.0.0.1:3128", "HTTPS_PROXY");
	CHECK_STR(env_of(&plan, "ALL_PROXY"), "socks5h://127.0.0.1:3128", "ALL_PROXY is socks5h");
	CHECK_STR(env_of(&plan, "no_proxy"), "localhost,127.0.0.1,::1", "no_proxy");
	ph = env_of(&plan, "TOKEN");
	CHECK(ph && strncmp(ph, "ajph_", 5) == 0 && strlen(ph) == 45, "TOKEN is a placeholder");
	CHECK(env_of(&plan, "EGRESS_UNIT_SECRET") == NULL,
	      "the secret's source variable is dropped although environment.allow is \"*\"");
	for (size_t i = 0; i < plan.env.n; i++)
		CHECK(!strstr(plan.env.v[i], "the-real-secret"), "no variable holds the secret (%zu)",
		      i);
	CHECK(plan.egress.bundle_op != SIZE_MAX && plan.egress.ca_op != SIZE_MAX,
	      "CA files reserved in the root filesystem");
	CHECK_STR(plan.ops[plan.egress.bundle_op].dst, AJ_EGRESS_BUNDLE, "bundle path");
	CHECK(env_of(&plan, "SSL_CERT_FILE") && env_of(&plan, "NODE_EXTRA_CA_CERTS") &&
		      env_of(&plan, "REQUESTS_CA_BUNDLE") && env_of(&plan, "CURL_CA_BUNDLE") &&
		      env_of(&plan, "GIT_SSL_CAINFO"),
	      "TLS clients are pointed at the bundle");
	aj_plan_free(&plan);
	aj_policy_free(&pol);

	CHECK(build("{\"network\": {\"mode\": \"proxy\"}}", 7, &pol, &plan, &err) == 0,
	      "a proxy plan without credentials");
	CHECK(plan.egress.bundle_op == SIZE_MAX && !env_of(&plan, "SSL_CERT_FILE"),
	      "no CA and no CA variables without credentials");
	aj_plan_free(&plan);
	aj_policy_free(&pol);

	CHECK(build("{\"network\": {\"mode\": \"none\"}}", 7, &pol, &plan, &err) == 0 &&
		      !plan.egress.on && !env_of(&plan, "HTTP_PROXY") &&
		      plan.layers[AJ_PL_EGRESS].state == AJ_LS_OFF,
	      "mode none: no proxy, no variables, the layer off");
	aj_plan_free(&plan);
	aj_policy_free(&pol);
}

int main(void)
{
	snprintf(ws, sizeof ws, "/tmp/aj-egress-plan.XXXXXX");
	if (!mkdtemp(ws)) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	no_tcp_rules();
	proxy_plan();
	rmdir(ws);
	UNIT_EXIT();
}
