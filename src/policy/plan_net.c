/* network.mode "proxy" in the plan: the variables that point tools at the proxy, the
 * credential placeholders, the files through which the sandbox trusts the per-sandbox CA,
 * and the egress layer's description. The proxy itself runs in the supervisor
 * (src/egress/); the plan only says where it listens and what the sandbox is told. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/units.h"
#include "common/util.h"
#include "policy/plan_internal.h"
#include "rules/egress.h"
#include "rules/publish.h"

/* Names tools read for their proxy, checked against each tool's documentation: curl and
 * git (through libcurl) read the lower-case http_proxy, https_proxy, all_proxy, no_proxy
 * (curl ignores upper-case HTTP_PROXY); Python, Go, Ruby and most others read either case;
 * npm reads its own npm_config_* settings; pip its PIP_PROXY; yarn 2+ YARN_HTTP(S)_PROXY;
 * Node 24+ honours HTTP(S)_PROXY for fetch only with NODE_USE_ENV_PROXY=1. ALL_PROXY is
 * SOCKS5 with names resolved by the proxy (socks5h), for tools that speak SOCKS only. */
enum { V_HTTP, V_SOCKS, V_NOPROXY, V_ONE };
static const struct {
	const char *name;
	int value;
} proxy_vars[] = {
	{"http_proxy", V_HTTP},	      {"HTTP_PROXY", V_HTTP},
	{"https_proxy", V_HTTP},      {"HTTPS_PROXY", V_HTTP},
	{"all_proxy", V_SOCKS},	      {"ALL_PROXY", V_SOCKS},
	{"no_proxy", V_NOPROXY},      {"NO_PROXY", V_NOPROXY},
	{"npm_config_proxy", V_HTTP}, {"npm_config_https_proxy", V_HTTP},
	{"npm_config_noproxy", V_NOPROXY}, {"PIP_PROXY", V_HTTP},
	{"YARN_HTTP_PROXY", V_HTTP},  {"YARN_HTTPS_PROXY", V_HTTP},
	{"NODE_USE_ENV_PROXY", V_ONE},
};

/* Where TLS clients look for trusted CAs when they do not use the system bundle: OpenSSL
 * (and Python's ssl, Ruby, Go), Python requests, curl, git, pip. Node adds
 * NODE_EXTRA_CA_CERTS to its own built-in list. */
static const char *const bundle_vars[] = {
	"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT",
};

static bool distro_bundle_exists(void)
{
	struct stat st;
	return stat(AJ_DISTRO_BUNDLE, &st) == 0 && S_ISREG(st.st_mode);
}

/* An https:// HTTP rule, allow or deny: the proxy terminates TLS to its host to see the
 * requests. */
static bool https_in(const struct aj_strv *rules)
{
	for (size_t i = 0; i < rules->n; i++) {
		struct aj_egress_rule r;
		char why[256];
		bool https;
		if (aj_egress_rule_parse(rules->v[i], AJ_RULE_PORTS_WEB, &r, why, sizeof why) < 0)
			continue;
		https = r.path && r.tls;
		aj_egress_rule_free(&r);
		if (https)
			return true;
	}
	return false;
}

static bool https_rules(const struct aj_policy *pol)
{
	return https_in(&pol->net_allow) || https_in(&pol->net_deny);
}

void aj_plan_egress_files(struct aj_plan *p)
{
	unsigned over = p->image ? AJ_OPF_OVER : 0;

	p->egress.bundle_op = p->egress.ca_op = SIZE_MAX;
	if (p->policy->net_mode != AJ_NET_PROXY || (p->policy->n_creds == 0 && !https_rules(p->policy)))
		return;
	/* Contents come from the supervisor at launch (the CA does not exist yet). In an image
	 * root they are bound over the image's files, which stay as they were. */
	aj_plan_add_op(p, AJ_OP_FILE, AJ_EGRESS_BUNDLE, NULL, over, 0,
		       "trusted CAs: the host's plus the sandbox's egress CA (credentials, https:// "
		       "rules)")
		->mode = 0644;
	p->egress.bundle_op = p->n_ops - 1;
	aj_plan_add_op(p, AJ_OP_FILE, AJ_EGRESS_CA_FILE, NULL, over, 0,
		       "the sandbox's egress CA certificate (its key stays outside)")
		->mode = 0644;
	p->egress.ca_op = p->n_ops - 1;
	if (p->image) {
		/* Over the image's bundle at the Debian path, when it has one. */
		aj_plan_add_op(p, AJ_OP_BIND, AJ_DISTRO_BUNDLE, AJ_EGRESS_BUNDLE,
			       AJ_OPF_SELF | AJ_OPF_OPTIONAL, 0,
			       "the distribution's CA bundle path shows the sandbox's bundle");
		return;
	}
	/* Tools that read the distribution's bundle path directly (and ignore the variables)
	 * see the same file there. Only over an existing file: /etc/ssl is the host's, bound
	 * in, and nothing may be created in it. */
	if (distro_bundle_exists())
		aj_plan_add_op(p, AJ_OP_BIND, AJ_DISTRO_BUNDLE, AJ_EGRESS_BUNDLE,
			       AJ_OPF_SELF | AJ_OPF_RO | AJ_OPF_SEALED, 0,
			       "the distribution's CA bundle path shows the sandbox's bundle");
}

/* Secrets the host holds must never reach the sandbox under their own names either: a
 * broad environment.allow ("*") would otherwise pass the very variable a credential reads. */
static void drop_secret_sources(struct aj_plan *p)
{
	for (size_t i = 0; i < p->policy->n_creds; i++) {
		const char *src = p->policy->creds[i].from_env;
		long at = src ? aj_strv_find_env(&p->env, src, strlen(src)) : -1;
		if (at < 0)
			continue;
		free(p->env.v[at]);
		memmove(&p->env.v[at], &p->env.v[at + 1], (p->env.n - (size_t)at) * sizeof(char *));
		p->env.n--;
	}
}

static bool set_by_policy(const struct aj_policy *pol, const char *name)
{
	return aj_strv_find_env(&pol->env_set, name, strlen(name)) >= 0;
}

static void proxy_environment(struct aj_plan *p)
{
	char http[64], socks[64];
	const char *vals[] = {[V_HTTP] = http, [V_SOCKS] = socks,
			      [V_NOPROXY] = "localhost,127.0.0.1,::1", [V_ONE] = "1"};
	const char *bundle = p->egress.bundle_op != SIZE_MAX && distro_bundle_exists()
				     ? AJ_DISTRO_BUNDLE
				     : AJ_EGRESS_BUNDLE;

	snprintf(http, sizeof http, "http://127.0.0.1:%u", p->egress.port);
	snprintf(socks, sizeof socks, "socks5h://127.0.0.1:%u", p->egress.port);
	/* environment.set wins: a policy may extend NO_PROXY or point one tool elsewhere. */
	for (size_t i = 0; i < sizeof proxy_vars / sizeof proxy_vars[0]; i++)
		if (!set_by_policy(p->policy, proxy_vars[i].name))
			aj_strv_setenv(&p->env, proxy_vars[i].name, vals[proxy_vars[i].value]);
	if (p->egress.bundle_op == SIZE_MAX)
		return;
	for (size_t i = 0; i < sizeof bundle_vars / sizeof bundle_vars[0]; i++)
		if (!set_by_policy(p->policy, bundle_vars[i]))
			aj_strv_setenv(&p->env, bundle_vars[i], bundle);
	if (!set_by_policy(p->policy, "NODE_EXTRA_CA_CERTS"))
		aj_strv_setenv(&p->env, "NODE_EXTRA_CA_CERTS", AJ_EGRESS_CA_FILE);
}

/* One random placeholder per credential and sandbox: it identifies the secret to the proxy
 * and is worthless anywhere else. It always wins over every other source of the variable. */
static int placeholders(struct aj_plan *p)
{
	char hex[41], value[64];

	for (size_t i = 0; i < p->policy->n_creds; i++) {
		const char *name = p->policy->creds[i].name;
		if (aj_random_hex(hex, 20) < 0)
			return -1;
		snprintf(value, sizeof value, "ajph_%s", hex);
		aj_strv_setenv(&p->env, name, value);
		aj_strv_setenv(&p->egress.placeholders, name, value);
	}
	return 0;
}

static void describe(struct aj_plan *p)
{
	const struct aj_policy *pol = p->policy;
	char size[24], bytes[40] = "no byte limit", conns[24] = "no";

	if (pol->net_max_bytes) {
		aj_format_size(pol->net_max_bytes, size, sizeof size);
		snprintf(bytes, sizeof bytes, "%s in all", size);
	}
	if (pol->net_max_connections)
		snprintf(conns, sizeof conns, "%lu", (unsigned long)pol->net_max_connections);
	aj_plan_set_layer(p, AJ_PL_EGRESS, AJ_LS_ENFORCED,
			  "proxy at 127.0.0.1:%u (HTTP, CONNECT, SOCKS5); %zu allow, %zu deny "
			  "rules; private and metadata addresses refused (%zu ranges allowed); "
			  "limits: %s connections, %s; %zu credentials%s",
			  p->egress.port, pol->net_allow.n, pol->net_deny.n,
			  pol->net_allow_private.n, conns, bytes, pol->n_creds,
			  pol->n_creds ? " (TLS interception)" : "");
}

/* The network namespace's layer names what comes in: the host ports relayed to ports
 * inside (validated with the policy). */
static void published(struct aj_plan *p)
{
	struct aj_layer_status *l = &p->layers[AJ_PL_NETNS];
	size_t len = strlen(l->detail);
	struct aj_publish pub;
	char why[160];

	for (size_t i = 0; i < p->policy->net_host_ports.n && len < sizeof l->detail; i++)
		len += (size_t)snprintf(l->detail + len, sizeof l->detail - len, "%s%u",
					i ? ", " : "; out to the host only at 127.0.0.1:",
					(unsigned)p->policy->net_host_ports.v[i]);
	for (size_t i = 0; i < p->policy->net_publish.n && len < sizeof l->detail; i++) {
		if (aj_publish_parse(p->policy->net_publish.v[i], &pub, why, sizeof why) < 0)
			continue;
		char host[64];
		aj_publish_host(&pub, host, sizeof host);
		len += (size_t)snprintf(l->detail + len, sizeof l->detail - len, "%s%s->%u",
					i ? ", " : "; inbound only from published ports: ",
					pub.host_port ? host : pub.host_ip, (unsigned)pub.port);
	}
}

int aj_plan_network(struct aj_plan *p, struct aj_err *err)
{
	p->inbound = (p->clone_flags & CLONE_NEWNET) && (p->policy->net_publish.n || p->persistent);
	published(p);
	if (p->policy->net_mode != AJ_NET_PROXY) {
		aj_plan_set_layer(p, AJ_PL_EGRESS, AJ_LS_OFF,
				  p->policy->net_mode == AJ_NET_HOST
					  ? "network.mode=host: no proxy, no egress control"
					  : "network.mode=none: nothing leaves the sandbox");
		return 0;
	}
	p->egress.on = true;
	p->egress.port = AJ_EGRESS_PORT;
	drop_secret_sources(p);
	proxy_environment(p);
	if (placeholders(p) < 0)
		return aj_err_sys(err, AJ_LAYER_POLICY, "the egress proxy's environment");
	aj_plan_set_layer(p, AJ_PL_ENV, AJ_LS_ENFORCED,
			  "host environment dropped; %zu variables set from the allowlist, the "
			  "policy and the egress proxy (%zu credential placeholders)",
			  p->env.n, p->policy->n_creds);
	describe(p);
	return 0;
}

void aj_plan_egress_ca(struct aj_plan *p, char *bundle, size_t bundle_len, char *ca, size_t ca_len)
{
	struct aj_op *b = &p->ops[p->egress.bundle_op], *c = &p->ops[p->egress.ca_op];

	free(b->src);
	b->src = bundle;
	b->len = bundle_len;
	free(c->src);
	c->src = ca;
	c->len = ca_len;
}
