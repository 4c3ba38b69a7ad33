/* Persistent sandboxes: create, start, stop, pause, resume, rm, ls, inspect, and the hidden
 * __supervise that `create`/`start` launch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/policy_flags.h"
#include "common/util.h"
#include "common/warn.h"
#include "supervisor/persist.h"

/* ---- create ----------------------------------------------------------------------------- */

struct create_cli {
	struct aj_cli cli;
	struct aj_pflags pf;
	const char *name, *from, *idle_action;
	struct aj_strv labels;
	uint64_t idle_ms, lifetime_ms, retention_ms;
	bool stopped;
};

static int create_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct create_cli *c = vctx;
	char what[48];

	snprintf(what, sizeof what, "--%s", name);
	if (!strcmp(name, "name"))
		c->name = v;
	else if (!strcmp(name, "from"))
		c->from = v;
	else if (!strcmp(name, "stopped"))
		c->stopped = true;
	else if (!strcmp(name, "label")) {
		const char *eq = strchr(v, '=');
		if (!eq || v[0] == '=')
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "--label: expected KEY=VALUE, got \"%s\"",
					  v);
		for (size_t i = 0; i < c->labels.n; i++)
			if (!strncmp(c->labels.v[i], v, (size_t)(eq - v) + 1))
				return aj_err_set(err, AJ_LAYER_USAGE, 0,
						  "--label: key \"%.*s\" is given more than once",
						  (int)(eq - v), v);
		aj_strv_push(&c->labels, v);
	} else if (!strcmp(name, "idle-action")) {
		if (strcmp(v, "pause") && strcmp(v, "stop"))
			return aj_err_set(err, AJ_LAYER_USAGE, 0,
					  "--idle-action: expected pause or stop, got \"%s\"", v);
		c->idle_action = v;
	} else {
		uint64_t *out = !strcmp(name, "idle-timeout")   ? &c->idle_ms
			      : !strcmp(name, "max-lifetime") ? &c->lifetime_ms
							      : &c->retention_ms;
		return aj_policy_parse_duration(what, v, out, err);
	}
	return 0;
}

static const struct aj_option create_options[] = {
	{"name", 'n', "NAME", create_opt, "name of the sandbox (default: generated)"},
	{"label", 'l', "KEY=VALUE", create_opt, "metadata label (repeatable)"},
	{"from", 0, "SNAPSHOT", create_opt, "start from a snapshot's workspace"},
	{"stopped", 0, NULL, create_opt, "create without starting it"},
	{"idle-timeout", 0, "DURATION", create_opt, "pause or stop after this long idle"},
	{"idle-action", 0, "ACTION", create_opt, "pause (default) or stop when idle"},
	{"max-lifetime", 0, "DURATION", create_opt, "stop this long after each start"},
	{"retention", 0, "DURATION", create_opt, "delete this long after stopping (agentjail gc)"},
	AJ_POLICY_FLAG_OPTIONS,
	AJ_CLI_COMMON_OPTIONS,
	{NULL, 0, NULL, NULL, NULL},
};

int aj_cmd_create(int argc, char **argv)
{
	static struct create_cli c;
	struct aj_policy pol;
	struct aj_mgr m = {0};
	struct aj_sandbox_rec r;
	struct aj_err err;
	struct aj_create_opts o = {0};
	int pos = 1, rc;

	c.cli.pf = &c.pf;
	aj_policy_init(&pol);
	if (aj_args_parse(create_options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (c.cli.help) {
		aj_args_usage(stdout, "agentjail create [OPTIONS]",
			      "Create a persistent sandbox (started unless --stopped); prints its "
			      "name.",
			      create_options);
		return 0;
	}
	if (pos < argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "create: unexpected argument \"%s\"", argv[pos]);
		goto fail;
	}
	if (aj_pflags_load(&c.pf, &pol, &err) < 0 || aj_cli_open(&c.cli, &m, &err) < 0)
		goto fail;
	o.name = c.name;
	o.policy = &pol;
	o.labels = &c.labels;
	o.from_snapshot = c.from;
	o.start = !c.stopped;
	o.idle_timeout_ms = (int64_t)c.idle_ms;
	o.max_lifetime_ms = (int64_t)c.lifetime_ms;
	o.retention_ms = (int64_t)c.retention_ms;
	o.idle_action = c.idle_action;
	if (aj_mgr_create(&m, &o, &r, &err) < 0)
		goto fail;
	if (c.cli.json)
		aj_cli_print_json(aj_cli_sandbox_json(&r));
	else
		printf("%s\n", r.name);
	aj_sandbox_rec_free(&r);
	aj_mgr_close(&m);
	aj_policy_free(&pol);
	return 0;
fail:
	rc = aj_cli_fail(&c.cli, &err);
	aj_mgr_close(&m);
	aj_policy_free(&pol);
	return rc;
}

/* ---- verbs that take sandbox names ------------------------------------------------------ */

struct simple_cli {
	struct aj_cli cli;
	bool force;
};

static int simple_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct simple_cli *c = vctx;

	if (!strcmp(name, "force")) {
		c->force = true;
		return 0;
	}
	return aj_cli_set_common(vctx, name, v, err);
}

/* Only rm takes --force: start, stop, pause and resume refuse it rather than ignore it. */
static const struct aj_option rm_options[] = {
	{"force", 'f', NULL, simple_opt, "stop a running sandbox first"},
	AJ_CLI_COMMON_OPTIONS,
	{NULL, 0, NULL, NULL, NULL},
};
static const struct aj_option simple_options[] = {
	AJ_CLI_COMMON_OPTIONS,
	{NULL, 0, NULL, NULL, NULL},
};

static int act(struct aj_mgr *m, const char *verb, const char *ref, bool force,
	       struct aj_err *err)
{
	if (!strcmp(verb, "start"))
		return aj_mgr_start(m, ref, err);
	if (!strcmp(verb, "stop"))
		return aj_mgr_stop(m, ref, err);
	if (!strcmp(verb, "pause") || !strcmp(verb, "resume"))
		return aj_mgr_pause(m, ref, !strcmp(verb, "pause"), err);
	return aj_mgr_remove(m, ref, force, err);
}

/* start|stop|pause|resume|rm NAME...: each name in turn; the first failure decides the code,
 * the others still run (as docker does). */
static int cmd_simple(const char *verb, int argc, char **argv)
{
	struct simple_cli c = {{0}, false};
	struct aj_mgr m = {0};
	struct aj_err err, first;
	int pos = 1, rc = 0;
	char usage[64];

	const struct aj_option *opts = strcmp(verb, "rm") ? simple_options : rm_options;

	aj_err_clear(&first);
	if (aj_args_parse(opts, &c, argc, argv, &pos, &err) < 0)
		return aj_cli_fail(&c.cli, &err);
	if (c.cli.help) {
		snprintf(usage, sizeof usage, "agentjail %s [OPTIONS] NAME...", verb);
		aj_args_usage(stdout, usage, "Act on persistent sandboxes by name or id.", opts);
		return 0;
	}
	if (pos >= argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "%s: missing the sandbox name", verb);
		return aj_cli_fail(&c.cli, &err);
	}
	if (aj_cli_open(&c.cli, &m, &err) < 0)
		return aj_cli_fail(&c.cli, &err);
	for (; pos < argc; pos++) {
		if (act(&m, verb, argv[pos], c.force, &err) < 0) {
			int code = aj_cli_fail(&c.cli, &err);
			rc = rc ? rc : code;
		} else if (!c.cli.json) {
			printf("%s\n", argv[pos]);
		}
	}
	if (c.cli.json && rc == 0)
		aj_cli_print_json(json_pack("{s:b}", "ok", 1));
	aj_mgr_close(&m);
	return rc;
}

int aj_cmd_start(int argc, char **argv) { return cmd_simple("start", argc, argv); }
int aj_cmd_stop(int argc, char **argv) { return cmd_simple("stop", argc, argv); }
int aj_cmd_pause(int argc, char **argv) { return cmd_simple("pause", argc, argv); }
int aj_cmd_resume(int argc, char **argv) { return cmd_simple("resume", argc, argv); }
int aj_cmd_rm(int argc, char **argv) { return cmd_simple("rm", argc, argv); }

/* ---- ls, inspect --------------------------------------------------------------------------- */

struct ls_cli {
	struct aj_cli cli;
	struct aj_strv labels;
};

static int ls_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct ls_cli *c = vctx;

	if (strcmp(name, "label"))
		return aj_cli_set_common(vctx, name, v, err);
	if (!strchr(v, '='))
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--label: expected KEY=VALUE, got \"%s\"", v);
	aj_strv_push(&c->labels, v);
	return 0;
}

static const struct aj_option ls_options[] = {
	{"label", 'l', "KEY=VALUE", ls_opt, "only sandboxes with this label (repeatable)"},
	AJ_CLI_COMMON_OPTIONS,
	{NULL, 0, NULL, NULL, NULL},
};

int aj_cmd_ls(int argc, char **argv)
{
	struct ls_cli c = {{0}, {0}};
	struct aj_mgr m = {0};
	struct aj_sandbox_rec *v = NULL;
	size_t n = 0;
	struct aj_err err;
	int pos = 1, rc = 0;

	if (aj_args_parse(ls_options, &c, argc, argv, &pos, &err) < 0)
		return aj_cli_fail(&c.cli, &err);
	if (c.cli.help) {
		aj_args_usage(stdout, "agentjail ls [OPTIONS]", "List persistent sandboxes.",
			      ls_options);
		return 0;
	}
	if (aj_cli_open(&c.cli, &m, &err) < 0 || aj_mgr_list(&m, &c.labels, &v, &n, &err) < 0) {
		rc = aj_cli_fail(&c.cli, &err);
		goto out;
	}
	if (c.cli.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, aj_cli_sandbox_json(&v[i]));
		aj_cli_print_json(a);
	} else {
		printf("%-24s %-16s %-9s %4s  %-24s %s\n", "NAME", "ID", "STATE", "GEN", "CREATED",
		       "LABELS");
		for (size_t i = 0; i < n; i++) {
			char ts[40];
			aj_format_time_ms((uint64_t)v[i].created_ms, ts, sizeof ts);
			printf("%-24s %-16s %-9s %4lld  %-24s", v[i].name, v[i].id,
			       aj_sandbox_state_name(v[i].state), (long long)v[i].generation, ts);
			for (size_t k = 0; k < v[i].labels.n; k++)
				printf("%s%s", k ? "," : " ", v[i].labels.v[k]);
			printf("\n");
		}
	}
out:
	aj_sandbox_recs_free(v, n);
	aj_strv_free(&c.labels);
	aj_mgr_close(&m);
	return rc;
}

int aj_cmd_inspect(int argc, char **argv)
{
	struct aj_cli c = {0};
	static const struct aj_option options[] = {AJ_CLI_COMMON_OPTIONS, {NULL, 0, NULL, NULL, NULL}};
	struct aj_mgr m = {0};
	struct aj_sandbox_rec r;
	struct aj_err err;
	int pos = 1, rc = 0;

	if (aj_args_parse(options, &c, argc, argv, &pos, &err) < 0)
		return aj_cli_fail(&c, &err);
	if (c.help) {
		aj_args_usage(stdout, "agentjail inspect NAME",
			      "Everything known about a sandbox, as JSON.", options);
		return 0;
	}
	if (pos >= argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "inspect: missing the sandbox name");
		return aj_cli_fail(&c, &err);
	}
	if (aj_cli_open(&c, &m, &err) < 0 || aj_mgr_get(&m, argv[pos], &r, &err) < 0) {
		rc = aj_cli_fail(&c, &err);
	} else {
		aj_cli_print_json(aj_cli_sandbox_json(&r));
		aj_sandbox_rec_free(&r);
	}
	aj_mgr_close(&m);
	return rc;
}

/* ---- __supervise ------------------------------------------------------------------------- */

int aj_cmd_supervise(int argc, char **argv)
{
	const char *state = NULL, *id = NULL;
	int ready = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--state-dir") && i + 1 < argc)
			state = argv[++i];
		else if (!strcmp(argv[i], "--ready-fd") && i + 1 < argc)
			ready = atoi(argv[++i]);
		else
			id = argv[i];
	}
	if (!state || !id) {
		fprintf(stderr, "agentjail: __supervise is started by agentjail itself\n");
		return 125;
	}
	if (ready >= 0)
		aj_fd_set_cloexec(ready, true);
	return aj_supervise(state, id, ready, &aj_warn_stderr);
}
