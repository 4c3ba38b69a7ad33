/* agentjail changes [ls | show ID | apply ID | discard ID] [--json] [--state-dir DIR]:
 * the change sets kept by `agentjail run --overlay review`. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/util.h"
#include "common/warn.h"
#include "state/store.h"
#include "workspace/changes.h"

struct changes_cli {
	bool json, help;
	const char *state_dir;
};

static int set_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct changes_cli *c = vctx;

	(void)err;
	if (strcmp(name, "json") == 0)
		c->json = true;
	else if (strcmp(name, "help") == 0)
		c->help = true;
	else
		c->state_dir = v;
	return 0;
}

static const struct aj_option options[] = {
	{"json", 0, NULL, set_opt, "machine-readable output"},
	{"state-dir", 0, "DIR", set_opt, "state directory (default: see docs/cli.md)"},
	{"help", 'h', NULL, set_opt, "show this help"},
	{NULL, 0, NULL, NULL, NULL},
};

static int list_one(void *arg, const struct aj_changeset *cs)
{
	json_t *a = arg;
	char ts[40];

	aj_format_time_ms((uint64_t)cs->created_ms, ts, sizeof ts);
	if (a)
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:i}", "id", cs->id, "workspace",
						   cs->workspace, "created", ts, "exit_code",
						   cs->exit_code));
	else
		printf("%-16s  %s  exit %-3d  %s\n", cs->id, ts, cs->exit_code, cs->workspace);
	return 0;
}

static int show_one(void *arg, char kind, const char *path)
{
	json_t *a = arg;

	if (a)
		json_array_append_new(a, json_pack("{s:s, s:s}", "change",
						   kind == 'A' ? "added" : kind == 'M' ? "modified"
										 : "deleted",
						   "path", path));
	else
		printf("%c %s\n", kind, path);
	return 0;
}

static int run_verb(struct changes_cli *c, const char *state, const char *verb, const char *id,
		    struct aj_err *err)
{
	struct aj_changeset cs;
	json_t *out = c->json ? json_array() : NULL;
	int r;

	if (strcmp(verb, "ls") && strcmp(verb, "show") && strcmp(verb, "apply") &&
	    strcmp(verb, "discard")) {
		json_decref(out);
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "changes: unknown action \"%s\" (expected ls, show, apply or discard)",
				  verb);
	}
	if (strcmp(verb, "ls") == 0) {
		r = aj_changes_list(state, list_one, out, err);
	} else if (!id) {
		json_decref(out);
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "changes %s: missing the change set id", verb);
	} else if (aj_changes_open(state, id, &cs, err) < 0) {
		r = -1;
	} else if (strcmp(verb, "show") == 0) {
		r = aj_changes_diff(&cs, show_one, out, NULL, err);
	} else if (strcmp(verb, "apply") == 0) {
		r = aj_changes_apply(&cs, &aj_warn_stderr, err);
		if (r == 0 && !c->json)
			printf("applied %s to %s\n", cs.id, cs.workspace);
	} else if (strcmp(verb, "discard") == 0) {
		r = aj_changes_discard(&cs, err);
		if (r == 0 && !c->json)
			printf("discarded %s\n", cs.id);
	} else {
		json_decref(out);
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "changes: unknown action \"%s\" (expected ls, show, apply or discard)",
				  verb);
	}
	if (out && r == 0) {
		json_dumpf(out, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	}
	json_decref(out);
	return r;
}

int aj_cmd_changes(int argc, char **argv)
{
	struct changes_cli c = {false, false, NULL};
	struct aj_err err;
	char state[4096];
	int pos = 1;
	const char *verb = "ls", *id = NULL;

	aj_err_clear(&err);
	if (aj_args_parse(options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (c.help) {
		aj_args_usage(stdout, "agentjail changes [ls | show ID | apply ID | discard ID]",
			      "Change sets kept by `agentjail run --overlay review`.", options);
		return 0;
	}
	if (pos < argc)
		verb = argv[pos++];
	if (aj_args_parse(options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (pos < argc)
		id = argv[pos++];
	if (aj_args_parse(options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (c.state_dir)
		snprintf(state, sizeof state, "%s", c.state_dir);
	else if (aj_state_dir_default(state, sizeof state) < 0) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "no state directory: set HOME or --state-dir");
		goto fail;
	}
	if (run_verb(&c, state, verb, id, &err) == 0)
		return 0;
fail:
	aj_err_print(&err, stderr);
	/* 1 only for an unknown change set: a failed apply can carry ENOENT too. */
	return err.cls == AJ_ERRC_NOT_FOUND ? 1 : 125;
}
