/* agentjail stats: what running sandboxes use, from their own cgroups and proxies (docs/
 * sandboxes.md "Metrics"), like `docker stats`: a table that redraws every two seconds on a
 * terminal until interrupted, one table with --no-stream (or when stdout is no terminal),
 * the figures as JSON with --json. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/units.h"
#include "manager/manager.h"

struct stats_cli {
	bool no_stream;
};

static const struct aj_option stats_options[] = {
	{AJ_OPT("no-stream", 0, AJ_OPT_SWITCH), .off = offsetof(struct stats_cli, no_stream),
	 .help = "print the figures once"},
	AJ_OPT_END,
};

static volatile sig_atomic_t interrupted;

static void on_int(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void size_or(json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		aj_format_size((uint64_t)json_integer_value(v), buf, len);
	else
		snprintf(buf, len, "-");
}

/* One row per sandbox, or its JSON object into all. */
static void one(struct aj_mgr *m, const struct aj_sandbox_rec *r, json_t *all)
{
	_cleanup_json_ json_t *reply = NULL;
	struct aj_err err;
	json_t *now;
	char mem[32], lim[32], up[32], down[32], cpu[16];

	if (aj_mgr_metrics(m, r->id, 0, 0, &reply, &err) < 0)
		return; /* stopped meanwhile */
	now = json_object_get(reply, "now");
	if (all) {
		json_t *o = json_deep_copy(now);
		json_object_set_new(o, "name", json_string(r->name));
		json_object_set_new(o, "id", json_string(r->id));
		json_array_append_new(all, o);
		return;
	}
	size_or(json_object_get(now, "memory"), mem, sizeof mem);
	if (json_integer_value(json_object_get(now, "memory_limit")))
		size_or(json_object_get(now, "memory_limit"), lim, sizeof lim);
	else
		snprintf(lim, sizeof lim, "none");
	size_or(json_object_get(now, "net_up"), up, sizeof up);
	size_or(json_object_get(now, "net_down"), down, sizeof down);
	if (json_is_number(json_object_get(now, "cpu_percent")))
		snprintf(cpu, sizeof cpu, "%.1f%%", json_number_value(json_object_get(now, "cpu_percent")));
	else
		snprintf(cpu, sizeof cpu, "-");
	{
		char mem_lim[72], net[72], pids[24];
		json_t *pv = json_object_get(now, "pids");

		snprintf(mem_lim, sizeof mem_lim, "%s / %s", mem, lim);
		snprintf(net, sizeof net, "%s / %s", up, down);
		if (json_is_integer(pv))
			snprintf(pids, sizeof pids, "%lld", (long long)json_integer_value(pv));
		else
			snprintf(pids, sizeof pids, "-");
		printf("%-24.24s %-16s %8s %23s %6s %23s\n", r->name, r->id, cpu, mem_lim, pids,
		       net);
	}
}

static int cmd_stats(const struct aj_verb *v, int argc, char **argv)
{
	struct stats_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_err err;
	char **args;
	int nargs, rc;
	bool stream;

	if ((rc = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	stream = !c.no_stream && !aj_cli.json && isatty(1);
	if (stream) { /* the first Ctrl-C ends the loop, a second one the process */
		struct sigaction sa = {.sa_handler = on_int, .sa_flags = SA_RESETHAND};
		sigaction(SIGINT, &sa, NULL);
	}
	do {
		struct aj_sandbox_rec *list = NULL;
		size_t n = 0;
		json_t *all = aj_cli.json ? json_array() : NULL;

		if (nargs) {
			list = aj_xcalloc((size_t)nargs, sizeof *list);
			for (int i = 0; i < nargs; i++, n++)
				if (aj_mgr_get(&m, args[i], &list[n], &err) < 0) {
					aj_sandbox_recs_free(list, n);
					json_decref(all);
					return aj_cli_fail(aj_cli.json, &err);
				}
		} else if (aj_mgr_list(&m, NULL, &list, &n, &err) < 0) {
			json_decref(all);
			return aj_cli_fail(aj_cli.json, &err);
		}
		if (stream)
			printf("\033[H\033[J");
		if (!all)
			printf("%-24s %-16s %8s %23s %6s %23s\n", "NAME", "ID", "CPU %",
			       "MEM USAGE / LIMIT", "PIDS", "NET OUT / IN");
		for (size_t i = 0; i < n && !interrupted; i++)
			if (list[i].state == AJ_ST_RUNNING || list[i].state == AJ_ST_PAUSED)
				one(&m, &list[i], all);
		aj_sandbox_recs_free(list, n);
		if (all)
			aj_cli_print_json(all);
		fflush(stdout);
		if (stream && !interrupted)
			sleep(2);
	} while (stream && !interrupted);
	return 0;
}

static const struct aj_arg stats_args[] = {AJ_ARG("NAME...", AJ_COMP_SANDBOX), AJ_ARG_END};
const struct aj_verb aj_verb_stats = {
	.name = "stats",
	.fn = cmd_stats,
	.summary = "what running sandboxes use: CPU, memory, tasks, network",
	.synopsis = "stats [--no-stream] [--json] [NAME...]",
	.help = "The CPU share, memory, tasks and egress of running sandboxes, from their own "
		"cgroups and proxies (docs/sandboxes.md): a table that redraws every 2 s on a "
		"terminal, once with --no-stream, JSON with --json.",
	.options = stats_options,
	.args = stats_args,
};
