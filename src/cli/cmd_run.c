/* agentjail run [OPTIONS] -- CMD [ARGS...] */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/policy_flags.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "common/units.h"
#include "common/util.h"
#include "common/warn.h"
#include "host/features.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "state/store.h"
#include "supervisor/run.h"
#include "workspace/changes.h"

struct run_cli {
	struct aj_cli cli; /* first: the shared option callbacks expect it */
	struct aj_pflags pf;
	const char *report;
	const char *events;
	const char *cgroup_parent;
	const char *state_dir;
	const char *overlay; /* review, apply or discard; NULL: no overlay */
	bool verbose, dry_run, json, help;
	bool report_refused; /* --report names a place agentjail will not write */
};

/* ---- options about the run itself ----------------------------------------------------- */

static int set_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct run_cli *c = vctx;

	if (strcmp(name, "report") == 0)
		c->report = v;
	else if (strcmp(name, "events") == 0)
		c->events = v;
	else if (strcmp(name, "cgroup-parent") == 0)
		c->cgroup_parent = v;
	else if (strcmp(name, "state-dir") == 0)
		c->state_dir = v;
	else if (strcmp(name, "overlay") == 0) {
		if (strcmp(v, "review") && strcmp(v, "apply") && strcmp(v, "discard"))
			return aj_err_set(err, AJ_LAYER_USAGE, 0,
					  "--overlay: expected review, apply or discard, got \"%s\"",
					  v);
		c->overlay = v;
	}
	else if (strcmp(name, "verbose") == 0)
		c->verbose = true;
	else if (strcmp(name, "dry-run") == 0)
		c->dry_run = true;
	else if (strcmp(name, "json") == 0)
		c->json = true;
	else if (strcmp(name, "help") == 0)
		c->help = true;
	return 0;
}

static const struct aj_option run_options[] = {
	{"workspace", 'w', "DIR", aj_pflags_defer, "the workspace (default: the current directory)"},
	AJ_POLICY_FLAG_OPTIONS,
	{"overlay", 0, "MODE", set_opt,
	 "run on an overlay of the workspace, then review (keep the changes for `agentjail "
	 "changes`), apply (if the command succeeded) or discard them"},
	{"state-dir", 0, "DIR", set_opt, "where change sets are kept (default: see docs/cli.md)"},
	{"cgroup-parent", 0, "PATH", set_opt, "cgroup under which the sandbox's cgroup goes"},
	{"report", 0, "FILE", set_opt, "write the JSON result record to FILE"},
	{"events", 0, "FILE", set_opt, "append JSON-lines events to FILE"},
	{"dry-run", 0, NULL, set_opt, "print the plan and exit without running"},
	{"json", 0, NULL, set_opt, "with --dry-run: print the plan as JSON"},
	{"verbose", 'v', NULL, set_opt, "print what is enforced before running"},
	{"help", 'h', NULL, set_opt, "show this help"},
	{NULL, 0, NULL, NULL, NULL},
};

static void write_report(const char *path, const struct aj_plan *plan,
			 const struct aj_run_result *res)
{
	json_t *r;
	int fd;

	if (!path)
		return;
	r = aj_run_report(plan, res);
	/* Never through a symlink: the report is written after the sandbox ran. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0 || json_dumpfd(r, fd, JSON_INDENT(2)) < 0 || write(fd, "\n", 1) != 1)
		fprintf(stderr, "agentjail: [io] cannot write the report to \"%s\": %s\n", path,
			strerror(errno));
	if (fd >= 0)
		close(fd);
	json_decref(r);
}

/* Files agentjail writes on the caller's behalf must not lie where the sandbox writes: it
 * could leave a symlink there that redirects the write (as root) anywhere. */
static int outside_sandbox(const char *flag, const char *path, const struct aj_policy *pol,
			   struct aj_err *err)
{
	char parent[4096], *slash, *real;
	bool inside = false;

	if (!path)
		return 0;
	snprintf(parent, sizeof parent, "%s", path);
	slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	real = realpath(slash ? (parent[0] ? parent : "/") : ".", NULL);
	if (!real)
		return aj_err_sys(err, AJ_LAYER_USAGE, "%s \"%s\"", flag, path);
	if (pol->workspace_mode == AJ_WS_RW && pol->workspace && aj_path_within(real, pol->workspace))
		inside = true;
	for (size_t i = 0; i < pol->read_write.n; i++)
		inside = inside || aj_path_within(real, pol->read_write.v[i]);
	free(real);
	if (inside)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "%s \"%s\" lies inside what the sandbox may write; write it "
				  "elsewhere",
				  flag, path);
	return 0;
}

static void print_summary(const struct aj_run_result *res)
{
	char peak[32] = "?";

	if (res->have_peak)
		aj_format_size(res->peak_memory, peak, sizeof peak);
	fprintf(stderr, "agentjail: exit %d%s%s after %.1f ms (cpu %.1f ms, peak memory %s)\n",
		res->exit_code, res->decided_by ? ", limit hit: " : "",
		res->decided_by ? res->decided_by : "", (double)res->wall_us / 1000.0,
		(double)res->cpu_us / 1000.0, peak);
}

static int open_changeset(struct run_cli *c, const struct aj_policy *pol,
			  struct aj_changeset *cs, struct aj_err *err)
{
	char state[4096];

	if (c->state_dir)
		snprintf(state, sizeof state, "%s", c->state_dir);
	else if (aj_state_dir_default(state, sizeof state) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--overlay needs a state directory"),
		       aj_err_hint(err, "set HOME or pass --state-dir");
	if (pol->workspace_mode == AJ_WS_RO)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "--overlay with a read-only workspace would keep no changes");
	if (aj_path_within(state, pol->workspace) || aj_path_within(pol->workspace, state))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "--overlay: the state directory \"%s\" and the workspace \"%s\" "
				  "overlap; pass --state-dir elsewhere",
				  state, pol->workspace);
	return aj_changes_create(state, pol->workspace, cs, err);
}

static int print_change(void *arg, char kind, const char *path)
{
	(void)arg;
	fprintf(stderr, "  %c %s\n", kind, path);
	return 0;
}

/* After a transactional run: show what changed, then keep, apply or discard it. */
static void finish_overlay(struct run_cli *c, struct aj_changeset *cs,
			   struct aj_run_result *res)
{
	struct aj_change_counts n = {0};
	struct aj_err err;
	bool apply = strcmp(c->overlay, "apply") == 0 && res->exit_code == 0 && !res->failed;

	aj_changes_set_exit(cs, res->exit_code, NULL);
	fprintf(stderr, "agentjail: changes to %s:\n", cs->workspace);
	if (aj_changes_diff(cs, print_change, NULL, &n, &err) < 0) {
		aj_err_print(&err, stderr);
		return;
	}
	fprintf(stderr, "agentjail: %u added, %u modified, %u deleted\n", n.added, n.modified,
		n.deleted);
	res->changes.id = cs->id;
	res->changes.added = n.added;
	res->changes.modified = n.modified;
	res->changes.deleted = n.deleted;
	if (strcmp(c->overlay, "discard") == 0 ||
	    (apply && n.added + n.modified + n.deleted == 0)) {
		res->changes.action = "discarded";
		if (aj_changes_discard(cs, &err) < 0)
			aj_err_print(&err, stderr);
		return;
	}
	if (apply) {
		res->changes.action =
			aj_changes_apply(cs, &aj_warn_stderr, &err) < 0 ? "failed" : "applied";
		if (strcmp(res->changes.action, "failed") == 0)
			aj_err_print(&err, stderr);
		else
			fprintf(stderr, "agentjail: applied to %s\n", cs->workspace);
		return;
	}
	res->changes.action = "kept";
	fprintf(stderr, "agentjail: kept as change set %s%s; apply: agentjail changes apply %s%s%s; "
			"discard: agentjail changes discard %s%s%s\n",
		cs->id, strcmp(c->overlay, "apply") == 0 ? " (the command failed)" : "", cs->id,
		c->state_dir ? " --state-dir " : "", c->state_dir ? c->state_dir : "", cs->id,
		c->state_dir ? " --state-dir " : "", c->state_dir ? c->state_dir : "");
}

/* Landlock tier: the sandbox sees every host process's command line, this one's included,
 * and flags such as --setenv may carry secrets. What is still needed is copied out of the
 * argument area before it is overwritten. */
static int hide_command_line(struct run_cli *c, struct aj_err *err)
{
	if ((c->report && !(c->report = strdup(c->report))) ||
	    (c->events && !(c->events = strdup(c->events))))
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "copy the command line");
	aj_proctitle_set("agentjail run");
	return 0;
}

static int prepare(struct run_cli *c, struct aj_policy *pol, struct aj_features *feat,
		   struct aj_plan *plan, char **cmd, struct aj_changeset *cs, struct aj_err *err)
{
	struct aj_strv lowers = {0};
	char rw[4200];
	struct aj_workspace_spec ws = {0};
	int r;

	if (aj_pflags_load(&c->pf, pol, err) < 0 || aj_policy_validate(pol, err) < 0)
		return -1;
	if (outside_sandbox("--report", c->report, pol, err) < 0) {
		c->report_refused = true;
		return -1;
	}
	if (outside_sandbox("--events", c->events, pol, err) < 0)
		return -1;
	aj_trace("policy ready");
	aj_features_probe(feat, c->cgroup_parent);
	aj_trace("features probed");
	if (c->overlay) {
		if (open_changeset(c, pol, cs, err) < 0)
			return -1;
		aj_strv_push(&lowers, pol->workspace);
		snprintf(rw, sizeof rw, "%s", cs->dir);
		ws.lowers = &lowers;
		ws.rw_dir = rw;
	}
	r = aj_plan_build_ex(plan, pol, feat, cmd, c->overlay ? &ws : NULL, err);
	aj_strv_free(&lowers);
	if (r < 0) {
		if (c->overlay)
			aj_changes_discard(cs, NULL);
		return -1;
	}
	aj_trace("plan built");
	return 0;
}

int aj_cmd_run(int argc, char **argv)
{
	static struct run_cli c; /* large; one per process */
	c.cli.pf = &c.pf;
	struct aj_policy pol;
	struct aj_features feat;
	struct aj_plan plan;
	struct aj_run_result res;
	struct aj_changeset cs;
	struct aj_err err;
	int pos = 1;
	bool have_plan = false;

	memset(&res, 0, sizeof res);
	aj_err_clear(&err);
	aj_policy_init(&pol);
	if (aj_args_parse(run_options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (c.help) {
		aj_args_usage(stdout, "agentjail run [OPTIONS] [--] CMD [ARGS...]",
			      "Run CMD in a new sandbox; exit with its status (docs/cli.md).",
			      run_options);
		aj_policy_free(&pol);
		return 0;
	}
	if (pos >= argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "run: missing the command to run");
		aj_err_hint(&err, "agentjail run [OPTIONS] -- CMD [ARGS...]");
		goto fail;
	}
	if (prepare(&c, &pol, &feat, &plan, argv + pos, &cs, &err) < 0)
		goto fail;
	have_plan = true;
	if (c.dry_run && c.overlay)
		aj_changes_discard(&cs, NULL);
	if (c.dry_run) {
		if (c.json) {
			json_t *j = aj_plan_to_json(&plan);
			json_dumpf(j, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(j);
		} else {
			aj_plan_print(&plan, stdout);
		}
		aj_plan_free(&plan);
		aj_policy_free(&pol);
		return 0;
	}
	if (c.verbose)
		aj_plan_print(&plan, stderr);
	if (plan.tier == AJ_TIER_LANDLOCK && hide_command_line(&c, &err) < 0)
		goto fail;
	aj_run(&plan,
	       &(struct aj_run_opts){
		       .events_path = c.events, .verbose = c.verbose, .warn = &aj_warn_stderr},
	       &res);
	if (res.failed)
		aj_err_print(&res.err, stderr);
	if (c.verbose)
		print_summary(&res);
	if (c.overlay)
		finish_overlay(&c, &cs, &res);
	write_report(c.report, &plan, &res);
	aj_plan_free(&plan);
	aj_policy_free(&pol);
	return res.exit_code;
fail:
	aj_err_print(&err, stderr);
	res.failed = true;
	res.err = err;
	res.exit_code = AJ_EXIT_ERROR;
	if (!c.report_refused)
		write_report(c.report, NULL, &res);
	if (have_plan)
		aj_plan_free(&plan);
	aj_policy_free(&pol);
	return AJ_EXIT_ERROR;
}
