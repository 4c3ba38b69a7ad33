/* agentjail changes [ls | show ID | apply ID | discard ID] [--json] [--state-dir DIR]:
 * the change sets kept by `agentjail run --overlay review`. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/config.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "common/warn.h"
#include "state/store.h"
#include "workspace/changes.h"

static const struct aj_option options[] = {
	AJ_OPT_END,
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

static int do_ls(const char *state, const char *id, json_t *out, struct aj_err *err)
{
	(void)id;
	return aj_changes_list(state, list_one, out, err);
}

static int do_show(const char *state, const char *id, json_t *out, struct aj_err *err)
{
	struct aj_changeset cs;

	if (aj_changes_open(state, id, &cs, err) < 0)
		return -1;
	return aj_changes_diff(&cs, show_one, out, NULL, err);
}

static int do_apply(const char *state, const char *id, json_t *out, struct aj_err *err)
{
	struct aj_changeset cs;

	if (aj_changes_open(state, id, &cs, err) < 0 || aj_changes_apply(&cs, &aj_warn_stderr, err) < 0)
		return -1;
	if (!out)
		printf("applied %s to %s\n", cs.id, cs.workspace);
	return 0;
}

static int do_discard(const char *state, const char *id, json_t *out, struct aj_err *err)
{
	struct aj_changeset cs;

	if (aj_changes_open(state, id, &cs, err) < 0 || aj_changes_discard(&cs, err) < 0)
		return -1;
	if (!out)
		printf("discarded %s\n", cs.id);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(const char *state, const char *id, json_t *out, struct aj_err *err);
	bool needs_id;
} actions[] = {
	{"ls", do_ls, false},
	{"show", do_show, true},
	{"apply", do_apply, true},
	{"discard", do_discard, true},
};

static int run_verb(const char *state, const char *verb, const char *id, struct aj_err *err)
{
	json_t *out = aj_cli.json ? json_array() : NULL;
	int r = -1;

	for (size_t i = 0; i < AJ_ARRAY_SIZE(actions); i++) {
		if (strcmp(verb, actions[i].name))
			continue;
		if (actions[i].needs_id && !id)
			r = aj_err_set(err, AJ_LAYER_USAGE, 0, "changes %s: missing the change set id",
				       verb);
		else
			r = actions[i].fn(state, id, out, err);
		if (out && r == 0) {
			json_dumpf(out, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
		}
		json_decref(out);
		return r;
	}
	json_decref(out);
	return aj_err_set(err, AJ_LAYER_USAGE, 0,
			  "changes: unknown action \"%s\" (expected ls, show, apply or discard)", verb);
}

static int cmd_changes(const struct aj_verb *v, int argc, char **argv)
{
	struct aj_err err;
	char state[4096], **args;
	int nargs, r;

	aj_err_clear(&err);
	if ((r = aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err)) > 0)
		return 0;
	if (r == 0 && nargs > 2)
		r = aj_err_set(&err, AJ_LAYER_USAGE, 0, "changes: unexpected argument \"%s\"",
			       args[2]);
	if (r == 0 && aj_cli_state_dir(NULL))
		snprintf(state, sizeof state, "%s", aj_cli_state_dir(NULL));
	else if (r == 0 && aj_state_dir_default(state, sizeof state) < 0)
		r = aj_err_set(&err, AJ_LAYER_USAGE, 0,
			       "no state directory: set HOME or --state-dir");
	if (r == 0 &&
	    run_verb(state, nargs > 0 ? args[0] : "ls", nargs > 1 ? args[1] : NULL, &err) == 0)
		return 0;
	aj_err_print(&err, stderr);
	/* 1 only for an unknown change set: a failed apply can carry ENOENT too. */
	return err.cls == AJ_ERRC_NOT_FOUND ? 1 : 125;
}

static const char *const changes_words[] = {"ls", "show", "apply", "discard", NULL};
static const struct aj_arg changes_args[] = {
	AJ_ARG_WORDS("ACTION", changes_words),
	AJ_ARG("ID", AJ_COMP_NONE),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_changes = {
	.name = "changes",
	.fn = cmd_changes,
	.summary = "review, apply or discard what an --overlay run changed",
	.synopsis = "changes [OPTIONS] [ls | show ID | apply ID | discard ID]",
	.help = "Change sets kept by `agentjail run --overlay review`.",
	.options = options,
	.args = changes_args,
};
