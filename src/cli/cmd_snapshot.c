/* snapshot, snapshots, restore, fork, diff, events, gc. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/util.h"

struct snap_cli {
	const char *name;
	uint64_t retention_ms, count;
	bool stopped, follow;
};

/* Each verb lists only the options it reads, so that --help is exact and an option another
 * verb takes is refused as unknown rather than ignored. */
#define SN(field) .off = offsetof(struct snap_cli, field)
static const struct aj_option snapshot_options[] = {
	{AJ_OPT("name", 'n', AJ_OPT_STRING), SN(name), .metavar = "NAME",
	 .help = "name of the snapshot (default: generated)"},
	{AJ_OPT("retention", 0, AJ_OPT_DURATION), SN(retention_ms), .metavar = "DURATION",
	 .help = "delete it this long after it was made (gc)"},
	AJ_OPT_END,
};
static const struct aj_option fork_options[] = {
	{AJ_OPT("name", 'n', AJ_OPT_STRING), SN(name), .metavar = "NAME",
	 .help = "the new sandbox's name; with --count N, the prefix of NAME-1 ... NAME-N"},
	/* Checked by the manager (1 to 1000): --count 0 is an error, not the default. */
	{AJ_OPT("count", 0, AJ_OPT_COUNT), SN(count), .metavar = "N",
	 .help = "how many sandboxes (default 1)"},
	{AJ_OPT("stopped", 0, AJ_OPT_SWITCH), SN(stopped), .help = "do not start the new sandboxes"},
	AJ_OPT_END,
};
static const struct aj_option events_options[] = {
	{AJ_OPT("follow", 'f', AJ_OPT_SWITCH), SN(follow), .help = "keep printing new events"},
	AJ_OPT_END,
};
static const struct aj_option common_options[] = {
	AJ_OPT_END,
};
#undef SN

/* Parses options and min to max positional arguments. */
static int parse(const struct aj_verb *v, struct snap_cli *c, int argc, char **argv,
		 const char **pos_out, int max, int min, struct aj_err *err)
{
	char **args;
	int n, r = aj_verb_parse_n(v, c, argc, argv, &args, &n, min, max, err);

	if (r)
		return r;
	for (int i = 0; i < n; i++)
		pos_out[i] = args[i];
	return 0;
}

static json_t *snapshot_json(const struct aj_snapshot_rec *s)
{
	char ts[40];
	json_t *layers = json_array();

	aj_format_time_ms((uint64_t)s->created_ms, ts, sizeof ts);
	for (size_t i = 0; i < s->layers.n; i++)
		json_array_append_new(layers, json_string(s->layers.v[i]));
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:s?}", "id", s->id, "name",
			 s->name, "source", s->source, "state", aj_store_state_name(s->state),
			 "created", ts, "size_bytes", (json_int_t)s->size_bytes, "retention_ms",
			 (json_int_t)s->retention_ms, "layers", layers, "image",
			 s->image[0] ? s->image : NULL);
}

static int cmd_snapshot(const struct aj_verb *v, int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_snapshot_rec s;
	struct aj_err err;
	int r = parse(v, &c, argc, argv, args, 1, 1, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 ||
	    aj_mgr_snapshot(&m, args[0], c.name, (int64_t)c.retention_ms, &s, &err) < 0) {
		r = aj_cli_fail(aj_cli.json, &err);
	} else {
		if (aj_cli.json)
			aj_cli_print_json(snapshot_json(&s));
		else
			printf("%s\n", s.name);
		aj_snapshot_rec_free(&s);
	}
	aj_mgr_close(&m);
	return r;
}

static int cmd_snapshots(const struct aj_verb *verb, int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[16] = {NULL};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_snapshot_rec *v = NULL;
	size_t n = 0;
	struct aj_err err;
	int r = parse(verb, &c, argc, argv, args, 16, 0, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (args[0] && !strcmp(args[0], "rm")) {
		for (int i = 1; i < 16 && args[i]; i++)
			if (aj_mgr_snapshot_remove(&m, args[i], &err) < 0)
				return aj_cli_fail(aj_cli.json, &err);
			else if (!aj_cli.json)
				printf("%s\n", args[i]);
		return 0;
	}
	if (args[0] && strcmp(args[0], "ls")) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "snapshots: expected ls or rm, got \"%s\"",
			   args[0]);
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_store_snapshot_list(m.store, NULL, &v, &n, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, snapshot_json(&v[i]));
		aj_cli_print_json(a);
	} else {
		printf("%-32s %-16s %-8s %10s  %s\n", "NAME", "ID", "STATE", "SIZE", "LAYERS");
		for (size_t i = 0; i < n; i++)
			printf("%-32s %-16s %-8s %10lld  %zu\n", v[i].name, v[i].id,
			       aj_store_state_name(v[i].state), (long long)v[i].size_bytes,
			       v[i].layers.n);
	}
	aj_snapshot_recs_free(v, n);
	return 0;
}

static int cmd_restore(const struct aj_verb *v, int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[2];
	struct aj_mgr m = {0};
	struct aj_err err;
	int r = parse(v, &c, argc, argv, args, 2, 2, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 || aj_mgr_restore(&m, args[0], args[1], &err) < 0)
		r = aj_cli_fail(aj_cli.json, &err);
	else if (aj_cli.json)
		aj_cli_print_json(json_pack("{s:b}", "ok", 1));
	else
		printf("%s\n", args[0]);
	aj_mgr_close(&m);
	return r;
}

static int cmd_fork(const struct aj_verb *v, int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_strv names = {0};
	struct aj_err err;
	unsigned count;
	int r;

	c.count = 1; /* the default; --count 0 stays 0, which the manager refuses */
	r = parse(v, &c, argc, argv, args, 1, 1, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	/* Past the manager's range stays past it: no wrap-around to a small count. */
	count = c.count > UINT_MAX ? UINT_MAX : (unsigned)c.count;
	/* --name N with one fork is that sandbox's name, not a prefix of N-1. */
	if (aj_cli_open(&m, &err) < 0 ||
	    (c.name && count == 1
		     ? aj_mgr_fork_named(&m, args[0], c.name, !c.stopped, &names, &err)
		     : aj_mgr_fork(&m, args[0], count, c.name, !c.stopped, &names, &err)) < 0) {
		r = aj_cli_fail(aj_cli.json, &err);
	} else if (aj_cli.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < names.n; i++)
			json_array_append_new(a, json_string(names.v[i]));
		aj_cli_print_json(a);
	} else {
		for (size_t i = 0; i < names.n; i++)
			printf("%s\n", names.v[i]);
	}
	aj_strv_free(&names);
	aj_mgr_close(&m);
	return r;
}

static int print_diff(void *arg, char kind, const char *path)
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

static int cmd_diff(const struct aj_verb *v, int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_err err;
	json_t *out = NULL;
	int r = parse(v, &c, argc, argv, args, 1, 1, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	out = aj_cli.json ? json_array() : NULL;
	if (aj_cli_open(&m, &err) < 0 || aj_mgr_diff(&m, args[0], print_diff, out, &err) < 0)
		r = aj_cli_fail(aj_cli.json, &err);
	else if (out)
		aj_cli_print_json(json_incref(out));
	json_decref(out);
	aj_mgr_close(&m);
	return r;
}

struct events_arg {
	bool json;
	int64_t last;
};

static int print_event(void *varg, int64_t seq, int64_t time_ms, const char *sandbox,
		       const char *type, const char *data)
{
	struct events_arg *a = varg;
	char ts[40];

	a->last = seq;
	aj_format_time_ms((uint64_t)time_ms, ts, sizeof ts);
	if (a->json)
		printf("{\"seq\":%lld,\"time\":\"%s\",\"sandbox\":\"%s\",\"event\":\"%s\",\"data\":%s}\n",
		       (long long)seq, ts, sandbox, type, data);
	else
		printf("%s  %-16s %-10s %s\n", ts, sandbox, type, data);
	fflush(stdout);
	return 0;
}

static int cmd_events(const struct aj_verb *v, int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1] = {NULL};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_sandbox_rec rec;
	struct aj_err err;
	struct events_arg a = {false, 0};
	char id[33] = "";
	int r = parse(v, &c, argc, argv, args, 1, 0, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	a.json = aj_cli.json;
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (args[0]) {
		/* A deleted sandbox's events remain; its id is accepted as is. */
		if (aj_mgr_get(&m, args[0], &rec, &err) == 0) {
			snprintf(id, sizeof id, "%s", rec.id);
			aj_sandbox_rec_free(&rec);
		} else if (strlen(args[0]) == 16) {
			snprintf(id, sizeof id, "%s", args[0]);
		} else {
			return aj_cli_fail(aj_cli.json, &err);
		}
	}
	do {
		struct timespec ts = {0, 200 * 1000 * 1000};
		if (aj_store_events(m.store, id[0] ? id : NULL, a.last, print_event, &a, &err) < 0)
			return aj_cli_fail(aj_cli.json, &err);
		if (c.follow)
			nanosleep(&ts, NULL);
	} while (c.follow);
	return 0;
}

static int cmd_gc(const struct aj_verb *v, int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_gc_report rep;
	struct aj_err err;
	int r = parse(v, &c, argc, argv, args, 0, 0, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 || aj_mgr_gc(&m, &rep, &err) < 0) {
		r = aj_cli_fail(aj_cli.json, &err);
	} else if (aj_cli.json) {
		aj_cli_print_json(json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "sandboxes_deleted",
					    rep.sandboxes_deleted, "snapshots_deleted",
					    rep.snapshots_deleted, "layers_deleted", rep.layers_deleted,
					    "marked_stopped", rep.marked_stopped, "recovered",
					    rep.recovered, "builds_deleted", rep.builds_deleted));
	} else {
		printf("sandboxes deleted %u, snapshots deleted %u, layers deleted %u, marked "
		       "stopped %u, recovered %u, builds deleted %u\n",
		       rep.sandboxes_deleted, rep.snapshots_deleted, rep.layers_deleted,
		       rep.marked_stopped, rep.recovered, rep.builds_deleted);
	}
	aj_mgr_close(&m);
	return r;
}

static const struct aj_arg name_arg[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG_END,
};
static const char *const snapshots_words[] = {"ls", "rm", NULL};
static const struct aj_arg snapshots_args[] = {
	AJ_ARG_WORDS("ls|rm", snapshots_words),
	AJ_ARG_REST("SNAPSHOT", AJ_COMP_SNAPSHOT),
	AJ_ARG_END,
};
static const struct aj_arg restore_args[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG("SNAPSHOT", AJ_COMP_SNAPSHOT),
	AJ_ARG_END,
};

const struct aj_verb aj_verb_snapshot = {
	.name = "snapshot",
	.fn = cmd_snapshot,
	.summary = "freeze a sandbox's workspace into a snapshot",
	.synopsis = "snapshot [OPTIONS] NAME",
	.help = "Freeze a sandbox's workspace into a snapshot (new sandboxes can start from it "
		"with create --from).",
	.options = snapshot_options,
	.args = name_arg,
};
const struct aj_verb aj_verb_snapshots = {
	.name = "snapshots",
	.fn = cmd_snapshots,
	.summary = "list or remove snapshots",
	.synopsis = "snapshots [OPTIONS] [ls]\nsnapshots [OPTIONS] rm SNAPSHOT...",
	.help = "List snapshots, or remove ones no sandbox uses.",
	.options = common_options,
	.args = snapshots_args,
};
const struct aj_verb aj_verb_restore = {
	.name = "restore",
	.fn = cmd_restore,
	.summary = "put a sandbox's workspace back to a snapshot",
	.synopsis = "restore [OPTIONS] NAME SNAPSHOT",
	.help = "Put a sandbox's workspace back to a snapshot; changes since are discarded. A "
		"running sandbox is restarted (its processes end).",
	.options = common_options,
	.args = restore_args,
};
const struct aj_verb aj_verb_fork = {
	.name = "fork",
	.fn = cmd_fork,
	.summary = "new sandboxes sharing a sandbox's workspace copy-on-write",
	.synopsis = "fork [OPTIONS] NAME",
	.help = "New sandboxes on a sandbox's current workspace, shared copy-on-write.",
	.options = fork_options,
	.args = name_arg,
};
const struct aj_verb aj_verb_diff = {
	.name = "diff",
	.fn = cmd_diff,
	.summary = "what a sandbox changed in its workspace",
	.synopsis = "diff [OPTIONS] NAME",
	.help = "Paths the sandbox added (A), modified (M) or deleted (D) in its workspace since "
		"its base.",
	.options = common_options,
	.args = name_arg,
};
const struct aj_verb aj_verb_events = {
	.name = "events",
	.fn = cmd_events,
	.summary = "show a sandbox's events",
	.synopsis = "events [OPTIONS] [NAME]",
	.help = "Lifecycle, exec and limit events, as text or JSON lines.",
	.options = events_options,
	.args = name_arg,
};
const struct aj_verb aj_verb_gc = {
	.name = "gc",
	.fn = cmd_gc,
	.summary = "apply retention, clean up after crashes",
	.synopsis = "gc [OPTIONS]",
	.help = "Delete stopped sandboxes and snapshots past their retention, unused layers, and "
		"what crashes left behind.",
	.options = common_options,
};
