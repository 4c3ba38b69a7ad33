/* Command-line flags that change the policy, shared by `run`, `create` and `mcp --create`
 * (the rows are in policy_flags.h): each is recorded while parsing and applied in order after
 * the policy file and preset, so flags override the file. The converters here are the ones
 * the generic types of args.h do not cover. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/config.h"
#include "cli/policy_flags.h"
#include "common/cleanup.h"
#include "rules/egress.h"
#include "rules/publish.h"

const struct aj_opt_choice aj_pflags_presets[] = {
	{"workspace-write", 0}, {"read-only", 1}, {NULL, 0}};
const struct aj_opt_choice aj_pflags_output_actions[] = {
	{"truncate", AJ_OUTPUT_TRUNCATE}, {"kill", AJ_OUTPUT_KILL}, {NULL, 0}};
const struct aj_opt_choice aj_pflags_networks[] = {
	{"none", AJ_NET_NONE}, {"host", AJ_NET_HOST}, {"proxy", AJ_NET_PROXY}, {NULL, 0}};
const struct aj_opt_choice aj_pflags_tiers[] = {
	{"namespaces", AJ_TIER_NAMESPACES}, {"landlock", AJ_TIER_LANDLOCK},
	{"gvisor", AJ_TIER_GVISOR}, {NULL, 0}};

/* --ro, --rw, --mask: absolute host paths, appended to the list at o->off. */
int aj_pflags_push_path(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_strv *sv = (struct aj_strv *)((char *)pol + o->off);

	if (v[0] != '/')
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--%s: expected an absolute path, got \"%s\"",
				  o->name, v);
	aj_strv_push(sv, v);
	return 0;
}

/* --volume SRC:PATH[:ro]: a volume's name, or a host directory (a source with a '/', made
 * absolute against the current directory). */
int aj_pflags_volume(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_strv *sv = (struct aj_strv *)((char *)pol + o->off);
	const char *colon = strchr(v, ':');
	_cleanup_free_ char *cwd = NULL;

	if (colon && memchr(v, '/', (size_t)(colon - v)) && v[0] != '/') {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return aj_err_sys(e, AJ_LAYER_USAGE, "--volume: the current directory");
		aj_strv_pushf(sv, "%s/%s", cwd, v[0] == '.' && v[1] == '/' ? v + 2 : v);
		return 0;
	}
	aj_strv_push(sv, v);
	return 0;
}

int aj_pflags_env(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_strv *sv = (struct aj_strv *)((char *)pol + o->off);

	if (!aj_policy_env_name_ok(v))
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--env: \"%s\" is not a variable name", v);
	aj_strv_push(sv, v);
	return 0;
}

int aj_pflags_setenv(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_strv *sv = (struct aj_strv *)((char *)pol + o->off);
	const char *eq = strchr(v, '=');
	char name[256];

	if (!eq || (size_t)(eq - v) >= sizeof name)
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--setenv: expected NAME=VALUE, got \"%s\"",
				  v);
	snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
	if (!aj_policy_env_name_ok(name))
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--setenv: \"%s\" is not a variable name",
				  name);
	aj_strv_setenv(sv, name, eq + 1);
	return 0;
}

/* An egress rule through the proxy; the first one switches the network to the proxy, so
 * that `--allow-host api.github.com` alone is enough. */
int aj_pflags_allow_host(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_policy *p = pol;
	struct aj_egress_rule r;
	char why[256];

	(void)o;
	if (aj_egress_rule_parse(v, AJ_RULE_PORTS_WEB, &r, why, sizeof why) < 0)
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--allow-host: %s (expected HOST[:PORT])",
				  why);
	aj_egress_rule_free(&r);
	if (p->net_mode == AJ_NET_HOST)
		return aj_err_set(e, AJ_LAYER_USAGE, 0,
				  "--allow-host: the network is the host's (network.mode host), "
				  "where nothing is filtered; use --network proxy");
	p->net_mode = AJ_NET_PROXY;
	aj_strv_push(&p->net_allow, v);
	return 0;
}

/* -p: docker's syntax (rules/publish.h), checked here so that the message names the flag. */
int aj_pflags_publish(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_policy *p = pol;
	struct aj_publish pub;
	char why[160];

	(void)o;
	if (aj_publish_parse(v, &pub, why, sizeof why) < 0)
		return aj_err_set(e, AJ_LAYER_USAGE, 0,
				  "--publish \"%s\": %s (expected [HOSTIP:][HOSTPORT:]PORT)", v, why);
	aj_strv_push(&p->net_publish, v);
	return 0;
}

/* --public-port, --host-port: a port appended to the struct aj_ports at o->off. */
int aj_pflags_port(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_ports *ports = (struct aj_ports *)((char *)pol + o->off);
	char *end;
	unsigned long port;

	errno = 0;
	port = strtoul(v, &end, 10);
	if (errno || *end || !*v || port < 1 || port > 65535)
		return aj_err_set(e, AJ_LAYER_USAGE, 0,
				  "--%s: expected a port number from 1 to 65535, got \"%s\"", o->name,
				  v);
	if (ports->n == AJ_PORTS_MAX)
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--%s: at most %d ports", o->name,
				  AJ_PORTS_MAX);
	ports->v[ports->n++] = (uint16_t)port;
	return 0;
}

int aj_pflags_workspace(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	char **ws = (char **)((char *)pol + o->off);

	free(*ws);
	*ws = realpath(v, NULL);
	if (!*ws)
		return aj_err_sys(e, AJ_LAYER_USAGE, "--workspace \"%s\"", v);
	return 0;
}


int aj_pflags_defer(void *vpf, const struct aj_option *o, const char *value, struct aj_err *err)
{
	struct aj_pflags *c = vpf;

	if (c->n_pending == sizeof c->pending / sizeof c->pending[0])
		return aj_err_set(err, AJ_LAYER_USAGE, E2BIG, "too many options");
	c->pending[c->n_pending].row = o;
	c->pending[c->n_pending++].value = value;
	return 0;
}

/* The configuration file's limits go under the policy file and the flags: applied to the
 * defaults before the file is read (presets do not touch limits). */
static int config_limits(struct aj_policy *p, struct aj_err *err)
{
	const struct aj_cli_config *cfg = aj_cli_config();
	json_t *wrap;
	int r;

	if (!cfg->limits)
		return 0;
	wrap = json_pack("{s:O}", "limits", cfg->limits);
	r = aj_policy_apply_json(p, wrap, err);
	json_decref(wrap);
	return r < 0 ? aj_err_prefix(err, "configuration file \"%s\"", cfg->path) : 0;
}

int aj_pflags_load(const struct aj_pflags *c, struct aj_policy *p, struct aj_err *err)
{
	const struct aj_cli_config *cfg = aj_cli_config();
	const char *file = c->policy_file ? c->policy_file : cfg->policy;
	const char *preset = c->preset ? c->preset : cfg->preset;

	if (config_limits(p, err) < 0 || aj_policy_load(p, file, preset, err) < 0)
		return -1;
	for (size_t i = 0; i < c->n_pending; i++)
		if (aj_args_apply(c->pending[i].row, p, c->pending[i].value, err) < 0)
			return -1;
	return 0;
}

/* --user: checked as the policy's process.user is (the same words in the message). */
int aj_pflags_user(void *pol, const struct aj_option *o, const char *v, struct aj_err *e)
{
	struct aj_policy *p = pol;
	_cleanup_json_ json_t *doc = json_pack("{s:{s:s}}", "process", "user", v);

	(void)o;
	if (aj_policy_apply_json(p, doc, e) < 0)
		return aj_err_prefix(e, "--user");
	return 0;
}
