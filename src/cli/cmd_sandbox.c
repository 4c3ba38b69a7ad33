/* Persistent sandboxes: create, start, stop, pause, resume, rm, ls, inspect, and the hidden
 * __supervise that `create`/`start` launch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/policy_flags.h"
#include "common/util.h"
#include "common/warn.h"
#include "sandbox/launch.h"
#include "supervisor/persist.h"

/* ---- create ----------------------------------------------------------------------------- */

enum idle_action { IDLE_DEFAULT = 0, IDLE_PAUSE, IDLE_STOP };
static const struct aj_opt_choice idle_actions[] = {
	{"pause", IDLE_PAUSE}, {"stop", IDLE_STOP}, {NULL, 0}};

struct create_cli {
	struct aj_pflags pf; /* first: the policy rows are recorded there */
	const char *name, *from;
	enum idle_action idle_action;
	struct aj_strv labels;
	uint64_t idle_ms, lifetime_ms, retention_ms;
	bool stopped;
};

/* --label KEY=VALUE, a key at most once. */
static int add_label(void *vctx, const struct aj_option *o, const char *v, struct aj_err *err)
{
	struct aj_strv *labels = (struct aj_strv *)((char *)vctx + o->off);
	const char *eq = strchr(v, '=');

	if (!eq || v[0] == '=')
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--label: expected KEY=VALUE, got \"%s\"", v);
	for (size_t i = 0; i < labels->n; i++)
		if (!strncmp(labels->v[i], v, (size_t)(eq - v) + 1))
			return aj_err_set(err, AJ_LAYER_USAGE, 0,
					  "--label: key \"%.*s\" is given more than once", (int)(eq - v),
					  v);
	aj_strv_push(labels, v);
	return 0;
}

#define CR(field) .off = offsetof(struct create_cli, field)
static const struct aj_option create_options[] = {
	{AJ_OPT("name", 'n', AJ_OPT_STRING), CR(name), .metavar = "NAME",
	 .help = "name of the sandbox (default: generated)"},
	{AJ_OPT("label", 'l', AJ_OPT_FUNC), CR(labels), .metavar = "KEY=VALUE", .parse = add_label,
	 .help = "metadata label (repeatable)"},
	{AJ_OPT("from", 0, AJ_OPT_STRING), CR(from), .metavar = "SNAPSHOT",
	 .complete = AJ_COMP_SNAPSHOT, .help = "start from a snapshot's workspace"},
	{AJ_OPT("stopped", 0, AJ_OPT_SWITCH), CR(stopped), .help = "create without starting it"},
	{AJ_OPT("idle-timeout", 0, AJ_OPT_DURATION), CR(idle_ms), .metavar = "DURATION",
	 .help = "pause or stop after this long idle"},
	{AJ_OPT("idle-action", 0, AJ_OPT_CHOICE), CR(idle_action), .metavar = "ACTION",
	 .choices = idle_actions, .help = "pause (default) or stop when idle"},
	{AJ_OPT("max-lifetime", 0, AJ_OPT_DURATION), CR(lifetime_ms), .metavar = "DURATION",
	 .help = "stop this long after each start"},
	{AJ_OPT("retention", 0, AJ_OPT_DURATION), CR(retention_ms), .metavar = "DURATION",
	 .help = "delete this long after stopping (agentjail gc)"},
	AJ_POLICY_FLAG_OPTIONS,
	AJ_OPT_END,
};
#undef CR

static int cmd_create(const struct aj_verb *v, int argc, char **argv)
{
	static struct create_cli c;
	_cleanup_policy_ struct aj_policy pol;
	_cleanup_mgr_ struct aj_mgr m = {0};
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = {0};
	struct aj_err err;
	struct aj_create_opts o = {0};
	char **args;
	int nargs, rc;

	aj_policy_init(&pol);
	if ((rc = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs > 0) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "create: unexpected argument \"%s\"", args[0]);
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_pflags_load(&c.pf, &pol, &err) < 0 || aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	o.name = c.name;
	o.policy = &pol;
	o.labels = &c.labels;
	o.from_snapshot = c.from;
	o.start = !c.stopped;
	o.idle_timeout_ms = (int64_t)c.idle_ms;
	o.max_lifetime_ms = (int64_t)c.lifetime_ms;
	o.retention_ms = (int64_t)c.retention_ms;
	o.idle_action = aj_args_choice_name(idle_actions, (int)c.idle_action);
	if (aj_mgr_create(&m, &o, &r, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(aj_cli_sandbox_json(&r));
	else
		printf("%s\n", r.name);
	return 0;
}

const struct aj_verb aj_verb_create = {
	.name = "create",
	.fn = cmd_create,
	.summary = "create (and start) a persistent sandbox",
	.synopsis = "create [OPTIONS]",
	.help = "Create a persistent sandbox (started unless --stopped); prints its name.",
	.options = create_options,
};

/* ---- verbs that take sandbox names ------------------------------------------------------ */

struct simple_cli {
	bool force;
};

/* Only rm takes --force: start, stop, pause and resume refuse it rather than ignore it. */
static const struct aj_option rm_options[] = {
	{AJ_OPT("force", 'f', AJ_OPT_SWITCH), .off = offsetof(struct simple_cli, force),
	 .help = "stop a running sandbox first"},
	AJ_OPT_END,
};
static const struct aj_option simple_options[] = {
	AJ_OPT_END,
};

typedef int (*act_fn)(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err);

static int act_start(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err)
{
	(void)force;
	return aj_mgr_start(m, ref, err);
}
static int act_stop(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err)
{
	(void)force;
	return aj_mgr_stop(m, ref, err);
}
static int act_pause(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err)
{
	(void)force;
	return aj_mgr_pause(m, ref, true, err);
}
static int act_resume(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err)
{
	(void)force;
	return aj_mgr_pause(m, ref, false, err);
}
static int act_rm(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err)
{
	return aj_mgr_remove(m, ref, force, err);
}

/* start|stop|pause|resume|rm NAME...: each name in turn; the first failure decides the code,
 * the others still run (as docker does). */
static int cmd_simple(const struct aj_verb *v, int argc, char **argv)
{
	struct simple_cli c = {false};
	struct aj_mgr m = {0};
	struct aj_err err;
	act_fn act = *(const act_fn *)v->data;
	char **names;
	int n, rc;

	if ((rc = aj_verb_parse(v, &c, argc, argv, &names, &n, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (n == 0) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "%s: missing the sandbox name", v->name);
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	for (int i = 0; i < n; i++) {
		if (act(&m, names[i], c.force, &err) < 0) {
			int code = aj_cli_fail(aj_cli.json, &err);
			rc = rc ? rc : code;
		} else if (!aj_cli.json) {
			printf("%s\n", names[i]);
		}
	}
	if (aj_cli.json && rc == 0)
		aj_cli_print_json(json_pack("{s:b}", "ok", 1));
	aj_mgr_close(&m);
	return rc;
}

static const act_fn do_start = act_start, do_stop = act_stop, do_pause = act_pause,
		    do_resume = act_resume, do_rm = act_rm;
static const struct aj_arg names_args[] = {
	AJ_ARG_REST("NAME", AJ_COMP_SANDBOX),
	AJ_ARG_END,
};
#define SIMPLE(verb, what, opts)                                                              \
	{.name = #verb, .fn = cmd_simple, .summary = (what), .synopsis = #verb " [OPTIONS] NAME...", \
	 .help = "Act on persistent sandboxes by name or id.", .options = (opts),                 \
	 .args = names_args, .data = &do_##verb}
const struct aj_verb aj_verb_start =
	SIMPLE(start, "start a stopped sandbox (a new compute generation)", simple_options);
const struct aj_verb aj_verb_stop =
	SIMPLE(stop, "stop a sandbox's compute; its workspace stays", simple_options);
const struct aj_verb aj_verb_pause =
	SIMPLE(pause, "freeze a sandbox (processes and memory kept)", simple_options);
const struct aj_verb aj_verb_resume = SIMPLE(resume, "thaw a paused sandbox", simple_options);
const struct aj_verb aj_verb_rm = SIMPLE(rm, "delete a sandbox", rm_options);
#undef SIMPLE

/* ---- ls, inspect --------------------------------------------------------------------------- */

struct ls_cli {
	struct aj_strv labels;
	bool all, quiet;
};

static int ls_label(void *vctx, const struct aj_option *o, const char *v, struct aj_err *err)
{
	struct aj_strv *labels = (struct aj_strv *)((char *)vctx + o->off);

	if (!strchr(v, '='))
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--label: expected KEY=VALUE, got \"%s\"", v);
	aj_strv_push(labels, v);
	return 0;
}

static const struct aj_option ls_options[] = {
	{AJ_OPT("label", 'l', AJ_OPT_FUNC), .off = offsetof(struct ls_cli, labels),
	 .metavar = "KEY=VALUE", .parse = ls_label,
	 .help = "only sandboxes with this label (repeatable)"},
	{AJ_OPT("all", 'a', AJ_OPT_SWITCH), .off = offsetof(struct ls_cli, all),
	 .help = "ps: stopped sandboxes too (ls always lists them)"},
	{AJ_OPT("quiet", 'q', AJ_OPT_SWITCH), .off = offsetof(struct ls_cli, quiet),
	 .help = "only the names, one per line"},
	AJ_OPT_END,
};

/* What ls prints of each sandbox; ps (docker's habit) leaves out stopped ones without -a. */
static bool listed(const struct aj_verb *verb, const struct ls_cli *c,
		   const struct aj_sandbox_rec *r)
{
	return c->all || !verb->alias_of || r->state != AJ_ST_STOPPED;
}

static void ls_cli_free(struct ls_cli *c)
{
	aj_strv_free(&c->labels);
}

static int cmd_ls(const struct aj_verb *verb, int argc, char **argv)
{
	__attribute__((cleanup(ls_cli_free))) struct ls_cli c = {{0}, false, false};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_sandbox_rec *v = NULL;
	size_t n = 0;
	struct aj_err err;
	char **args;
	int nargs, rc;

	if ((rc = aj_verb_parse(verb, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs > 0) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "%s: unexpected argument \"%s\"", verb->name,
			   args[0]);
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_cli_open(&m, &err) < 0 || aj_mgr_list(&m, &c.labels, &v, &n, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			if (listed(verb, &c, &v[i]))
				json_array_append_new(a, aj_cli_sandbox_json(&v[i]));
		aj_cli_print_json(a);
	} else if (c.quiet) {
		for (size_t i = 0; i < n; i++)
			if (listed(verb, &c, &v[i]))
				printf("%s\n", v[i].name);
	} else {
		printf("%-24s %-16s %-9s %4s  %-24s %s\n", "NAME", "ID", "STATE", "GEN", "CREATED",
		       "LABELS");
		for (size_t i = 0; i < n; i++) {
			char ts[40];
			if (!listed(verb, &c, &v[i]))
				continue;
			aj_format_time_ms((uint64_t)v[i].created_ms, ts, sizeof ts);
			printf("%-24s %-16s %-9s %4lld  %-24s", v[i].name, v[i].id,
			       aj_sandbox_state_name(v[i].state), (long long)v[i].generation, ts);
			for (size_t k = 0; k < v[i].labels.n; k++)
				printf("%s%s", k ? "," : " ", v[i].labels.v[k]);
			printf("\n");
		}
	}
	aj_sandbox_recs_free(v, n);
	return 0;
}

const struct aj_verb aj_verb_ls = {
	.name = "ls",
	.fn = cmd_ls,
	.summary = "list persistent sandboxes",
	.synopsis = "ls [OPTIONS]",
	.help = "List persistent sandboxes.",
	.options = ls_options,
};

const struct aj_verb aj_verb_ps = {
	.name = "ps",
	.fn = cmd_ls,
	.summary = "list running and paused sandboxes (-a: all), as ls",
	.synopsis = "ps [OPTIONS]",
	.help = "List persistent sandboxes that are not stopped (with -a, all of them): ls with "
		"docker's default.",
	.options = ls_options,
	.alias_of = "ls",
};

static const struct aj_option common_options[] = {AJ_OPT_END};

static int cmd_inspect(const struct aj_verb *v, int argc, char **argv)
{
	struct aj_mgr m = {0};
	struct aj_sandbox_rec r;
	struct aj_err err;
	char **args;
	int nargs, rc;

	if ((rc = aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs == 0) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "inspect: missing the sandbox name");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_cli_open(&m, &err) < 0 || aj_mgr_get(&m, args[0], &r, &err) < 0) {
		rc = aj_cli_fail(aj_cli.json, &err);
	} else {
		aj_cli_print_json(aj_cli_sandbox_json(&r));
		aj_sandbox_rec_free(&r);
	}
	aj_mgr_close(&m);
	return rc;
}

static const struct aj_arg name_arg[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_inspect = {
	.name = "inspect",
	.fn = cmd_inspect,
	.summary = "show a sandbox as JSON",
	.synopsis = "inspect [OPTIONS] NAME",
	.help = "Everything known about a sandbox, as JSON.",
	.options = common_options,
	.args = name_arg,
};

/* ---- __supervise ------------------------------------------------------------------------- */

struct supervise_cli {
	const char *state_dir;
	int ready_fd;
};

static const struct aj_option supervise_options[] = {
	{AJ_OPT("state-dir", 0, AJ_OPT_STRING), .off = offsetof(struct supervise_cli, state_dir),
	 .metavar = "DIR", .help = "the sandbox's state directory"},
	{AJ_OPT("ready-fd", 0, AJ_OPT_COUNT), .off = offsetof(struct supervise_cli, ready_fd),
	 .metavar = "FD", .store = AJ_STORE_INT, .help = "closed once the sandbox is up"},
	AJ_OPT_END,
};

static int cmd_supervise(const struct aj_verb *v, int argc, char **argv)
{
	struct supervise_cli c = {NULL, -1};
	struct aj_err err;
	char **args;
	int nargs;

	if (aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err) != 0 || !c.state_dir ||
	    nargs != 1) {
		fprintf(stderr, "agentjail: __supervise is started by agentjail itself\n");
		return 125;
	}
	if (c.ready_fd >= 0)
		aj_fd_set_cloexec(c.ready_fd, true);
	return aj_supervise(c.state_dir, args[0], c.ready_fd, &aj_warn_stderr);
}

/* ---- __gvinit ---------------------------------------------------------------------------- */

static int cmd_gvinit(const struct aj_verb *v, int argc, char **argv)
{
	if (argc > 2 || getpid() != 1) {
		fprintf(stderr, "agentjail: __gvinit is started by runsc in the gvisor tier\n");
		return 125;
	}
	return aj_gvisor_guest_init(argc == 2 ? argv[1] : NULL);
}

const struct aj_verb aj_verb_gvinit = {
	.name = "__gvinit",
	.fn = cmd_gvinit,
	.summary = "the gvisor tier's init inside the Sentry (started by runsc)",
	.synopsis = "__gvinit [UID:GID[:GROUPS]]",
	.flags = AJ_VERB_HIDDEN | AJ_VERB_NO_CONFIG,
};

const struct aj_verb aj_verb_supervise = {
	.name = "__supervise",
	.fn = cmd_supervise,
	.summary = "the supervisor of a persistent sandbox (started by agentjail itself)",
	.synopsis = "__supervise --state-dir DIR [--ready-fd FD] ID",
	.options = supervise_options,
	.flags = AJ_VERB_HIDDEN | AJ_VERB_NO_CONFIG,
};
