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
	struct aj_cli cli;
	const char *name;
	uint64_t retention_ms, count;
	bool have_count, stopped, follow;
};

static int snap_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct snap_cli *c = vctx;

	if (!strcmp(name, "name"))
		c->name = v;
	else if (!strcmp(name, "retention"))
		return aj_policy_parse_duration("--retention", v, &c->retention_ms, err);
	else if (!strcmp(name, "count")) {
		c->have_count = true; /* --count 0 is an error, not the default */
		return aj_policy_parse_count("--count", v, &c->count, err);
	}
	else if (!strcmp(name, "stopped"))
		c->stopped = true;
	else if (!strcmp(name, "follow"))
		c->follow = true;
	else
		return aj_cli_set_common(vctx, name, v, err);
	return 0;
}

/* Each verb lists only the options it reads, so that --help is exact and an option another
 * verb takes is refused as unknown rather than ignored. */
#define END {NULL, 0, NULL, NULL, NULL}
static const struct aj_option snapshot_options[] = {
	{"name", 'n', "NAME", snap_opt, "name of the snapshot (default: generated)"},
	{"retention", 0, "DURATION", snap_opt, "delete it this long after it was made (gc)"},
	AJ_CLI_COMMON_OPTIONS,
	END,
};
static const struct aj_option fork_options[] = {
	{"name", 'n', "PREFIX", snap_opt, "prefix of the new names"},
	{"count", 0, "N", snap_opt, "how many sandboxes (default 1)"},
	{"stopped", 0, NULL, snap_opt, "do not start the new sandboxes"},
	AJ_CLI_COMMON_OPTIONS,
	END,
};
static const struct aj_option events_options[] = {
	{"follow", 'f', NULL, snap_opt, "keep printing new events"},
	AJ_CLI_COMMON_OPTIONS,
	END,
};
static const struct aj_option common_options[] = {
	AJ_CLI_COMMON_OPTIONS,
	END,
};
#undef END

/* Parses options and up to `max` positional arguments. */
static int parse(struct snap_cli *c, const struct aj_option *opts, int argc, char **argv,
		 const char **pos_out, int max, int min, const char *usage, const char *summary,
		 struct aj_err *err)
{
	int pos = 1, n = 0;

	while (pos < argc) {
		if (aj_args_parse(opts, c, argc, argv, &pos, err) < 0)
			return -1;
		if (pos >= argc)
			break;
		if (n == max)
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "unexpected argument \"%s\"",
					  argv[pos]);
		pos_out[n++] = argv[pos++];
	}
	if (c->cli.help) {
		aj_args_usage(stdout, usage, summary, opts);
		return 1;
	}
	if (n < min)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "usage: %s", usage);
	return 0;
}

static json_t *snapshot_json(const struct aj_snapshot_rec *s)
{
	char ts[40];
	json_t *layers = json_array();

	aj_format_time_ms((uint64_t)s->created_ms, ts, sizeof ts);
	for (size_t i = 0; i < s->layers.n; i++)
		json_array_append_new(layers, json_string(s->layers.v[i]));
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o}", "id", s->id, "name", s->name,
			 "source", s->source, "state", aj_store_state_name(s->state), "created", ts,
			 "size_bytes", (json_int_t)s->size_bytes, "retention_ms",
			 (json_int_t)s->retention_ms, "layers", layers);
}

int aj_cmd_snapshot(int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_snapshot_rec s;
	struct aj_err err;
	int r = parse(&c, snapshot_options, argc, argv, args, 1, 1,
		      "agentjail snapshot NAME [--name SNAPSHOT]",
		      "Freeze a sandbox's workspace into a snapshot (new sandboxes can start "
		      "from it with create --from).",
		      &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(&c.cli, &err);
	if (aj_cli_open(&c.cli, &m, &err) < 0 ||
	    aj_mgr_snapshot(&m, args[0], c.name, (int64_t)c.retention_ms, &s, &err) < 0) {
		r = aj_cli_fail(&c.cli, &err);
	} else {
		if (c.cli.json)
			aj_cli_print_json(snapshot_json(&s));
		else
			printf("%s\n", s.name);
		aj_snapshot_rec_free(&s);
	}
	aj_mgr_close(&m);
	return r;
}

int aj_cmd_snapshots(int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[16] = {NULL};
	struct aj_mgr m = {0};
	struct aj_snapshot_rec *v = NULL;
	size_t n = 0;
	struct aj_err err;
	int r = parse(&c, common_options, argc, argv, args, 16, 0,
		      "agentjail snapshots [ls | rm SNAPSHOT...]",
		      "List snapshots, or remove ones no sandbox uses.", &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(&c.cli, &err);
	if (aj_cli_open(&c.cli, &m, &err) < 0)
		goto fail;
	if (args[0] && !strcmp(args[0], "rm")) {
		for (int i = 1; i < 16 && args[i]; i++)
			if (aj_mgr_snapshot_remove(&m, args[i], &err) < 0)
				goto fail;
			else if (!c.cli.json)
				printf("%s\n", args[i]);
		aj_mgr_close(&m);
		return 0;
	}
	if (args[0] && strcmp(args[0], "ls")) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "snapshots: expected ls or rm, got \"%s\"",
			   args[0]);
		goto fail;
	}
	if (aj_store_snapshot_list(m.store, NULL, &v, &n, &err) < 0)
		goto fail;
	if (c.cli.json) {
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
	aj_mgr_close(&m);
	return 0;
fail:
	r = aj_cli_fail(&c.cli, &err);
	aj_mgr_close(&m);
	return r;
}

int aj_cmd_restore(int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[2];
	struct aj_mgr m = {0};
	struct aj_err err;
	int r = parse(&c, common_options, argc, argv, args, 2, 2,
		      "agentjail restore NAME SNAPSHOT",
		      "Put a sandbox's workspace back to a snapshot; changes since are discarded. "
		      "A running sandbox is restarted (its processes end).",
		      &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(&c.cli, &err);
	if (aj_cli_open(&c.cli, &m, &err) < 0 || aj_mgr_restore(&m, args[0], args[1], &err) < 0)
		r = aj_cli_fail(&c.cli, &err);
	else if (c.cli.json)
		aj_cli_print_json(json_pack("{s:b}", "ok", 1));
	else
		printf("%s\n", args[0]);
	aj_mgr_close(&m);
	return r;
}

int aj_cmd_fork(int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_strv names = {0};
	struct aj_err err;
	unsigned count;
	int r = parse(&c, fork_options, argc, argv, args, 1, 1,
		      "agentjail fork NAME [--count N] [--name PREFIX]",
		      "New sandboxes on a sandbox's current workspace, shared copy-on-write.",
		      &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(&c.cli, &err);
	/* Past the manager's range stays past it: no wrap-around to a small count. */
	count = !c.have_count ? 1 : c.count > UINT_MAX ? UINT_MAX : (unsigned)c.count;
	if (aj_cli_open(&c.cli, &m, &err) < 0 ||
	    aj_mgr_fork(&m, args[0], count, c.name, !c.stopped, &names, &err) < 0) {
		r = aj_cli_fail(&c.cli, &err);
	} else if (c.cli.json) {
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

int aj_cmd_diff(int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_err err;
	json_t *out = NULL;
	int r = parse(&c, common_options, argc, argv, args, 1, 1,
		      "agentjail diff NAME",
		      "Paths the sandbox added (A), modified (M) or deleted (D) in its workspace "
		      "since its base.",
		      &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(&c.cli, &err);
	out = c.cli.json ? json_array() : NULL;
	if (aj_cli_open(&c.cli, &m, &err) < 0 || aj_mgr_diff(&m, args[0], print_diff, out, &err) < 0)
		r = aj_cli_fail(&c.cli, &err);
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

int aj_cmd_events(int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1] = {NULL};
	struct aj_mgr m = {0};
	struct aj_sandbox_rec rec;
	struct aj_err err;
	struct events_arg a = {false, 0};
	char id[33] = "";
	int r = parse(&c, events_options, argc, argv, args, 1, 0,
		      "agentjail events [NAME] [--follow] [--json]",
		      "Lifecycle, exec and limit events, as text or JSON lines.", &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(&c.cli, &err);
	a.json = c.cli.json;
	if (aj_cli_open(&c.cli, &m, &err) < 0)
		goto fail;
	if (args[0]) {
		/* A deleted sandbox's events remain; its id is accepted as is. */
		if (aj_mgr_get(&m, args[0], &rec, &err) == 0) {
			snprintf(id, sizeof id, "%s", rec.id);
			aj_sandbox_rec_free(&rec);
		} else if (strlen(args[0]) == 16) {
			snprintf(id, sizeof id, "%s", args[0]);
		} else {
			goto fail;
		}
	}
	do {
		struct timespec ts = {0, 200 * 1000 * 1000};
		if (aj_store_events(m.store, id[0] ? id : NULL, a.last, print_event, &a, &err) < 0)
			goto fail;
		if (c.follow)
			nanosleep(&ts, NULL);
	} while (c.follow);
	aj_mgr_close(&m);
	return 0;
fail:
	r = aj_cli_fail(&c.cli, &err);
	aj_mgr_close(&m);
	return r;
}

int aj_cmd_gc(int argc, char **argv)
{
	struct snap_cli c = {0};
	const char *args[1];
	struct aj_mgr m = {0};
	struct aj_gc_report rep;
	struct aj_err err;
	int r = parse(&c, common_options, argc, argv, args, 0, 0,
		      "agentjail gc",
		      "Delete stopped sandboxes and snapshots past their retention, unused "
		      "layers, and what crashes left behind.",
		      &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(&c.cli, &err);
	if (aj_cli_open(&c.cli, &m, &err) < 0 || aj_mgr_gc(&m, &rep, &err) < 0) {
		r = aj_cli_fail(&c.cli, &err);
	} else if (c.cli.json) {
		aj_cli_print_json(json_pack("{s:i, s:i, s:i, s:i, s:i}", "sandboxes_deleted",
					    rep.sandboxes_deleted, "snapshots_deleted",
					    rep.snapshots_deleted, "layers_deleted", rep.layers_deleted,
					    "marked_stopped", rep.marked_stopped, "recovered",
					    rep.recovered));
	} else {
		printf("sandboxes deleted %u, snapshots deleted %u, layers deleted %u, marked "
		       "stopped %u, recovered %u\n",
		       rep.sandboxes_deleted, rep.snapshots_deleted, rep.layers_deleted,
		       rep.marked_stopped, rep.recovered);
	}
	aj_mgr_close(&m);
	return r;
}
