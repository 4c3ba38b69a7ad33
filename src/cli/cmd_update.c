/* agentjail update: a sandbox's network rules, limits and lifetimes changed, live when it runs
 * (docs/sandboxes.md "Changing a running sandbox"), like `docker update`. --allow-host and
 * --deny-host add to the sandbox's lists (a host moves from one to the other); --no-hosts
 * empties both first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/policy_flags.h"
#include "common/cleanup.h"
#include "manager/manager.h"
#include "policy/policy.h"

#define UNSET UINT64_MAX

struct update_cli {
	struct aj_strv allow, deny;
	bool no_hosts;
	int network;
	uint64_t memory, pids, cpus, idle_ms, lifetime_ms;
};

#define UC(f) .off = offsetof(struct update_cli, f)
static const struct aj_option update_options[] = {
	{AJ_OPT("allow-host", 0, AJ_OPT_LIST), UC(allow), .metavar = "HOST[:PORT]",
	 .help = "let the proxy reach this host (repeatable; taken out of the denied ones)"},
	{AJ_OPT("deny-host", 0, AJ_OPT_LIST), UC(deny), .metavar = "HOST[:PORT]",
	 .help = "deny this host, open connections to it closed (repeatable)"},
	{AJ_OPT("no-hosts", 0, AJ_OPT_SWITCH), UC(no_hosts),
	 .help = "empty the allowed and denied hosts first"},
	{AJ_OPT("network", 0, AJ_OPT_CHOICE), UC(network), .metavar = "MODE",
	 .choices = aj_pflags_networks, .help = "none or proxy (a stopped sandbox only)"},
	{AJ_OPT("memory", 'm', AJ_OPT_SIZE), UC(memory), .metavar = "SIZE",
	 .flags = AJ_OPTF_NONE_OK, .help = "memory limit, e.g. 1GiB, or none"},
	{AJ_OPT("pids", 0, AJ_OPT_COUNT), UC(pids), .metavar = "N", .flags = AJ_OPTF_NONE_OK,
	 .help = "limit on tasks, or none"},
	{AJ_OPT("cpus", 0, AJ_OPT_CPUS), UC(cpus), .metavar = "N", .flags = AJ_OPTF_NONE_OK,
	 .help = "CPU quota in CPUs, e.g. 1.5, or none"},
	{AJ_OPT("idle-timeout", 0, AJ_OPT_DURATION), UC(idle_ms), .metavar = "DURATION",
	 .flags = AJ_OPTF_NONE_OK, .help = "pause or stop after this long idle, or none"},
	{AJ_OPT("max-lifetime", 0, AJ_OPT_DURATION), UC(lifetime_ms), .metavar = "DURATION",
	 .flags = AJ_OPTF_NONE_OK, .help = "stop this long after its start, or none"},
	AJ_OPT_END,
};
#undef UC

static void drop(struct aj_strv *v, const char *s)
{
	for (size_t i = 0; i < v->n;) {
		if (strcmp(v->v[i], s)) {
			i++;
			continue;
		}
		free(v->v[i]);
		memmove(&v->v[i], &v->v[i + 1], (v->n - i) * sizeof *v->v); /* the NULL too */
		v->n--;
	}
}

/* The sandbox's lists with the flags applied, in the order they were given. */
static int new_lists(struct aj_mgr *m, const char *ref, const struct update_cli *c,
		     struct aj_strv *allow, struct aj_strv *deny, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_policy_ struct aj_policy p;

	aj_policy_init(&p);
	if (aj_mgr_get(m, ref, &r, err) < 0 || aj_policy_load_text(&p, r.policy, err) < 0)
		return -1;
	for (size_t i = 0; !c->no_hosts && i < p.net_allow.n; i++)
		aj_strv_push(allow, p.net_allow.v[i]);
	for (size_t i = 0; !c->no_hosts && i < p.net_deny.n; i++)
		aj_strv_push(deny, p.net_deny.v[i]);
	for (size_t i = 0; i < c->allow.n; i++) {
		drop(deny, c->allow.v[i]);
		drop(allow, c->allow.v[i]);
		aj_strv_push(allow, c->allow.v[i]);
	}
	for (size_t i = 0; i < c->deny.n; i++) {
		drop(allow, c->deny.v[i]);
		drop(deny, c->deny.v[i]);
		aj_strv_push(deny, c->deny.v[i]);
	}
	return 0;
}

static int cmd_update(const struct aj_verb *v, int argc, char **argv)
{
	static struct update_cli c;
	_cleanup_mgr_ struct aj_mgr m = {0};
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_strv_ struct aj_strv allow = AJ_STRV_INIT, deny = AJ_STRV_INIT;
	struct aj_update u = AJ_UPDATE_INIT;
	struct aj_err err;
	char **args;
	int nargs, rc;

	memset(&c, 0, sizeof c);
	c.network = -1;
	c.memory = c.pids = c.cpus = c.idle_ms = c.lifetime_ms = UNSET;
	if ((rc = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs != 1) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "update: %s the sandbox's name",
			   nargs ? "one argument expected:" : "missing");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (c.network == AJ_NET_HOST) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "--network: none or proxy (host is given only "
			   "at create)");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (!c.allow.n && !c.deny.n && !c.no_hosts && c.network < 0 && c.memory == UNSET &&
	    c.pids == UNSET && c.cpus == UNSET && c.idle_ms == UNSET && c.lifetime_ms == UNSET) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "update: nothing to change");
		aj_err_hint(&err, "agentjail update NAME --deny-host HOST, --memory SIZE, ... "
			    "(agentjail help update)");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if ((c.allow.n || c.deny.n || c.no_hosts) &&
	    new_lists(&m, args[0], &c, &allow, &deny, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (c.allow.n || c.deny.n || c.no_hosts) {
		u.allow = &allow;
		u.deny = &deny;
	}
	u.net_mode = c.network;
	u.set_memory = c.memory != UNSET;
	u.memory = u.set_memory ? c.memory : 0;
	u.set_pids = c.pids != UNSET;
	u.pids = u.set_pids ? c.pids : 0;
	u.set_cpus = c.cpus != UNSET;
	u.cpu_milli = u.set_cpus ? c.cpus : 0;
	u.idle_timeout_ms = c.idle_ms != UNSET ? (int64_t)c.idle_ms : -1;
	u.max_lifetime_ms = c.lifetime_ms != UNSET ? (int64_t)c.lifetime_ms : -1;
	if (aj_mgr_update(&m, args[0], &u, &r, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(aj_cli_sandbox_json(&r));
	else
		printf("updated %s%s\n", r.name,
		       r.state == AJ_ST_RUNNING || r.state == AJ_ST_PAUSED ? " (live)"
									    : " (from its next start)");
	aj_strv_free(&c.allow);
	aj_strv_free(&c.deny);
	return 0;
}

static const struct aj_arg update_args[] = {AJ_ARG("NAME", AJ_COMP_SANDBOX), AJ_ARG_END};
const struct aj_verb aj_verb_update = {
	.name = "update",
	.fn = cmd_update,
	.summary = "change a sandbox's network rules, limits and lifetimes, live",
	.synopsis = "update [--allow-host HOST[:PORT]]... [--deny-host HOST[:PORT]]... [--no-hosts] "
		    "[--network none|proxy] [--memory SIZE] [--pids N] [--cpus N] "
		    "[--idle-timeout DURATION] [--max-lifetime DURATION] NAME",
	.help = "Change a sandbox's policy (docs/sandboxes.md): on a running sandbox the egress "
		"proxy's rules are replaced at once (connections to hosts no longer allowed are "
		"closed) and the cgroup's limits changed; memory below what the sandbox uses is "
		"refused. A stopped sandbox gets the change at its next start.",
	.options = update_options,
	.args = update_args,
};
