/* Command-line flags that change the policy, shared by `run` and `create`: each is recorded
 * while parsing and applied in order after the policy file and preset, so flags override
 * the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common.h"
#include "cli/policy_flags.h"
#include "rules/egress.h"

/* ---- options that change the policy: applied in order, after the policy file ---------- */

typedef int (*policy_flag_fn)(struct aj_policy *p, const char *flag, const char *v,
			      struct aj_err *err);

static int parse_limit(const char *flag, const char *v, uint64_t *out,
		       int (*parse)(const char *, const char *, uint64_t *, struct aj_err *),
		       struct aj_err *err)
{
	char what[64];

	if (strcmp(v, "none") == 0 || strcmp(v, "0") == 0) {
		*out = 0;
		return 0;
	}
	snprintf(what, sizeof what, "--%s", flag);
	return parse(what, v, out, err);
}

static int flag_memory(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.memory, aj_policy_parse_size, e);
}
static int flag_pids(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.pids, aj_policy_parse_count, e);
}
static int flag_cpus(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.cpu_milli, aj_policy_parse_cpus, e);
}
static int flag_timeout(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.timeout_ms, aj_policy_parse_duration, e);
}
static int flag_file_size(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.file_size, aj_policy_parse_size, e);
}
static int flag_output(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.output_bytes, aj_policy_parse_size, e);
}
static int flag_open_files(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return aj_policy_parse_count("--open-files", v, &p->limits.open_files, e);
	(void)f;
}
static int flag_tmpfs(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	return aj_policy_parse_size("--tmpfs-size", v, &p->limits.tmpfs_size, e);
}

static int flag_output_action(struct aj_policy *p, const char *f, const char *v,
			      struct aj_err *e)
{
	(void)f;
	if (strcmp(v, "truncate") == 0)
		p->limits.output_action = AJ_OUTPUT_TRUNCATE;
	else if (strcmp(v, "kill") == 0)
		p->limits.output_action = AJ_OUTPUT_KILL;
	else
		return aj_err_set(e, AJ_LAYER_USAGE, 0,
				  "--output-action: expected truncate or kill, got \"%s\"", v);
	return 0;
}

static int push_path(struct aj_strv *sv, const char *flag, const char *v, struct aj_err *e)
{
	if (v[0] != '/')
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--%s: expected an absolute path, got \"%s\"",
				  flag, v);
	aj_strv_push(sv, v);
	return 0;
}
static int flag_ro(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return push_path(&p->read_only, f, v, e);
}
static int flag_rw(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return push_path(&p->read_write, f, v, e);
}
static int flag_mask(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return push_path(&p->mask, f, v, e);
}

static int flag_env(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	if (!aj_policy_env_name_ok(v))
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--env: \"%s\" is not a variable name", v);
	aj_strv_push(&p->env_allow, v);
	return 0;
}

static int flag_setenv(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	const char *eq = strchr(v, '=');
	char name[256];

	(void)f;
	if (!eq || (size_t)(eq - v) >= sizeof name)
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--setenv: expected NAME=VALUE, got \"%s\"",
				  v);
	snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
	if (!aj_policy_env_name_ok(name))
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--setenv: \"%s\" is not a variable name",
				  name);
	aj_strv_setenv(&p->env_set, name, eq + 1);
	return 0;
}

static int flag_workspace(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	free(p->workspace);
	p->workspace = realpath(v, NULL);
	if (!p->workspace)
		return aj_err_sys(e, AJ_LAYER_USAGE, "--workspace \"%s\"", v);
	return 0;
}

static int flag_cwd(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	free(p->cwd);
	p->cwd = strdup(v);
	return p->cwd ? 0 : aj_err_sys(e, AJ_LAYER_USAGE, "--cwd");
}

static int flag_degraded(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	aj_strv_push(&p->allow_degraded, v);
	return 0;
}

static int flag_syscall(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	aj_strv_push(&p->syscalls_allow, v);
	return 0;
}

static int flag_network(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	if (strcmp(v, "none") == 0)
		p->net_mode = AJ_NET_NONE;
	else if (strcmp(v, "host") == 0)
		p->net_mode = AJ_NET_HOST;
	else if (strcmp(v, "proxy") == 0)
		p->net_mode = AJ_NET_PROXY;
	else
		return aj_err_set(e, AJ_LAYER_USAGE, 0,
				  "--network: expected none, host or proxy, got \"%s\"", v);
	return 0;
}

/* An egress rule through the proxy; the first one switches the network to the proxy, so
 * that `--allow-host api.github.com` alone is enough. */
static int flag_allow_host(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	struct aj_egress_rule r;
	char why[256];

	(void)f;
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

static int flag_tier(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	if (strcmp(v, "namespaces") == 0)
		p->tier = AJ_TIER_NAMESPACES;
	else if (strcmp(v, "landlock") == 0)
		p->tier = AJ_TIER_LANDLOCK;
	else
		return aj_err_set(e, AJ_LAYER_USAGE, 0,
				  "--tier: expected namespaces or landlock, got \"%s\"", v);
	return 0;
}

static int flag_hostname(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	free(p->hostname);
	p->hostname = strdup(v);
	return p->hostname ? 0 : aj_err_sys(e, AJ_LAYER_USAGE, "--hostname");
}

static const struct {
	const char *name;
	policy_flag_fn fn;
} policy_flags[] = {
	{"workspace", flag_workspace}, {"memory", flag_memory},       {"pids", flag_pids},
	{"cpus", flag_cpus},           {"timeout", flag_timeout},     {"file-size", flag_file_size},
	{"open-files", flag_open_files}, {"output-limit", flag_output},
	{"output-action", flag_output_action}, {"tmpfs-size", flag_tmpfs}, {"ro", flag_ro},
	{"rw", flag_rw},               {"mask", flag_mask},           {"env", flag_env},
	{"setenv", flag_setenv},       {"cwd", flag_cwd},             {"hostname", flag_hostname},
	{"allow-degraded", flag_degraded}, {"network", flag_network}, {"allow-syscalls", flag_syscall},
	{"allow-host", flag_allow_host},
	{"tier", flag_tier},
};

int aj_pflags_defer(void *vctx, const char *name, const char *value, struct aj_err *err)
{
	struct aj_pflags *c = ((struct aj_cli *)vctx)->pf;

	if (!strcmp(name, "policy")) {
		c->policy_file = value;
		return 0;
	}
	if (!strcmp(name, "preset")) {
		c->preset = value;
		return 0;
	}
	if (c->n_pending == sizeof c->pending / sizeof c->pending[0])
		return aj_err_set(err, AJ_LAYER_USAGE, E2BIG, "too many options");
	c->pending[c->n_pending].name = name;
	c->pending[c->n_pending++].value = value;
	return 0;
}

int aj_pflags_load(const struct aj_pflags *c, struct aj_policy *p, struct aj_err *err)
{
	if (aj_policy_load(p, c->policy_file, c->preset, err) < 0)
		return -1;
	for (size_t i = 0; i < c->n_pending; i++)
		for (size_t j = 0; j < sizeof policy_flags / sizeof policy_flags[0]; j++)
			if (strcmp(policy_flags[j].name, c->pending[i].name) == 0 &&
			    policy_flags[j].fn(p, c->pending[i].name, c->pending[i].value, err) < 0)
				return -1;
	return 0;
}

