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
#include "cli/config.h"
#include "cli/policy_flags.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "common/units.h"
#include "common/util.h"
#include "common/warn.h"
#include "host/features.h"
#include "image/root.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "state/secrets.h"
#include "state/store.h"
#include "storage/backing.h"
#include "storage/volumes.h"
#include "supervisor/run.h"
#include "workspace/changes.h"

enum overlay_mode { OV_NONE = 0, OV_REVIEW, OV_APPLY, OV_DISCARD };

struct run_cli {
	struct aj_pflags pf; /* first: the policy rows are recorded there */
	const char *report;
	const char *events;
	const char *cgroup_parent;
	enum overlay_mode overlay;
	bool dry_run;
	bool report_refused; /* --report names a place agentjail will not write */
	struct aj_image_root img; /* --image: the image and this run's system layer */
	bool have_img;
	int *vol_fds; /* the volumes' locks, held until the run ends */
	size_t n_vol_fds;
};

static const struct aj_opt_choice overlay_modes[] = {
	{"review", OV_REVIEW}, {"apply", OV_APPLY}, {"discard", OV_DISCARD}, {NULL, 0}};

#define RUN(field) .off = offsetof(struct run_cli, field)
static const struct aj_option run_options[] = {
	AJ_WORKSPACE_OPTION,
	AJ_POLICY_FLAG_OPTIONS,
	{AJ_OPT("overlay", 0, AJ_OPT_CHOICE), RUN(overlay), .metavar = "MODE",
	 .choices = overlay_modes,
	 .help = "run on an overlay of the workspace, then review (keep the changes for `agentjail "
		 "changes`), apply (if the command succeeded) or discard them"},
	AJ_OPTION_STATE_DIR("where change sets are kept (default: see docs/cli.md)"),
	{AJ_OPT("cgroup-parent", 0, AJ_OPT_STRING), RUN(cgroup_parent), .metavar = "PATH",
	 .help = "cgroup under which the sandbox's cgroup goes"},
	{AJ_OPT("report", 0, AJ_OPT_STRING), RUN(report), .metavar = "FILE",
	 .complete = AJ_COMP_FILE, .help = "write the JSON result record to FILE"},
	{AJ_OPT("events", 0, AJ_OPT_STRING), RUN(events), .metavar = "FILE",
	 .complete = AJ_COMP_FILE, .help = "append JSON-lines events to FILE"},
	{AJ_OPT("dry-run", 0, AJ_OPT_SWITCH), RUN(dry_run),
	 .help = "print the plan and exit without running"},
	AJ_OPTION_JSON("with --dry-run: print the plan as JSON"),
	{AJ_OPT("verbose", 'v', AJ_OPT_SWITCH), AJ_G(verbose),
	 .help = "print what is enforced before running"},
	AJ_OPT_END,
};
#undef RUN

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

/* The credentials "from_secret" are the local owner's secrets of the state directory. */
static int set_secret_dir(struct aj_plan *plan, struct aj_err *err)
{
	char state[4096], dir[4200];

	if (!aj_policy_uses_secret_store(plan->policy))
		return 0;
	if (aj_cli_state_path(state, sizeof state) < 0)
		return 0; /* no store: a from_secret is refused by the proxy, naming it */
	if (aj_secret_dir(state, "", dir, sizeof dir) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the secret store's path");
	plan->egress.secret_dir = aj_xstrdup(dir);
	return 0;
}

static int open_changeset(const struct aj_policy *pol, struct aj_changeset *cs,
			  struct aj_err *err)
{
	char state[4096];
	bool attached;

	if (aj_cli_state_path(state, sizeof state) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--overlay needs a state directory"),
		       aj_err_hint(err, "set HOME or pass --state-dir");
	if (aj_backing_attach(state, &attached, err) < 0)
		return -1;
	if (pol->workspace_mode == AJ_WS_RO)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "--overlay with a read-only workspace would keep no changes");
	if (aj_path_within(state, pol->workspace) || aj_path_within(pol->workspace, state))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "--overlay: the state directory \"%s\" and the workspace \"%s\" "
				  "overlap; pass --state-dir elsewhere",
				  state, pol->workspace);
	return aj_changes_create(state, pol->workspace, pol->limits.disk, cs, err);
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
	bool apply = c->overlay == OV_APPLY && res->exit_code == 0 && !res->failed;
	const char *sd = aj_cli.state_dir;

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
	if (c->overlay == OV_DISCARD ||
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
		cs->id, c->overlay == OV_APPLY ? " (the command failed)" : "", cs->id,
		sd ? " --state-dir " : "", sd ? sd : "", cs->id, sd ? " --state-dir " : "",
		sd ? sd : "");
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

/* --image (rootfs.image): the image, and a system layer for this run, made under the image
 * store's lock so that no `image rm` takes the image away in between (docs/images.md). */
static int open_image(struct run_cli *c, const struct aj_policy *pol, struct aj_err *err)
{
	struct aj_mgr m;
	struct aj_images im;
	int r;

	if (aj_cli_open(&m, err) < 0)
		return -1;
	r = aj_images_open(m.state, m.store, &im, err);
	if (r == 0)
		r = aj_images_lock(&im, err);
	c->have_img = r == 0;
	if (r == 0)
		r = aj_image_root_open(&im, "", pol->rootfs_image, &c->img, err);
	if (r == 0)
		r = aj_image_root_run_layer(&c->img, &im, pol->limits.disk, err);
	aj_images_close(&im);
	aj_mgr_close(&m);
	aj_trace("image opened");
	return r;
}

static void close_image(struct run_cli *c)
{
	if (c->have_img)
		aj_image_root_close(&c->img);
	c->have_img = false;
}

/* --volume: the local owner's volumes of the state directory, held for the run. */
static int attach_volumes(struct run_cli *c, const struct aj_policy *pol, struct aj_strv *dirs,
			  struct aj_err *err)
{
	char state[4096];
	bool attached;

	if (aj_cli_state_path(state, sizeof state) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--volume needs a state directory"),
		       aj_err_hint(err, "set HOME or pass --state-dir");
	if (aj_backing_attach(state, &attached, err) < 0)
		return -1;
	return aj_volumes_attach(state, "", &pol->volumes, dirs, &c->vol_fds, &c->n_vol_fds, err);
}

static int prepare(struct run_cli *c, struct aj_policy *pol, struct aj_features *feat,
		   struct aj_plan *plan, char **cmd, struct aj_changeset *cs, struct aj_err *err)
{
	struct aj_strv lowers = {0};
	char rw[4200];
	struct aj_workspace_spec ws = {0};
	_cleanup_strv_ struct aj_strv vdirs = AJ_STRV_INIT;
	int r;

	if (aj_pflags_load(&c->pf, pol, err) < 0 || aj_policy_validate(pol, err) < 0)
		return -1;
	/* With an image, its Entrypoint and Cmd may be the command. */
	if (!cmd[0] && !pol->rootfs_image) {
		aj_err_set(err, AJ_LAYER_USAGE, 0, "run: missing the command to run");
		return aj_err_hint(err, "agentjail run [OPTIONS] -- CMD [ARGS...]");
	}
	if (outside_sandbox("--report", c->report, pol, err) < 0) {
		c->report_refused = true;
		return -1;
	}
	if (outside_sandbox("--events", c->events, pol, err) < 0)
		return -1;
	aj_trace("policy ready");
	aj_features_probe(feat, c->cgroup_parent);
	aj_trace("features probed");
	if (pol->rootfs_image) {
		if (open_image(c, pol, err) < 0)
			return -1;
		ws.root = &c->img.spec;
	}
	if (c->overlay) {
		if (open_changeset(pol, cs, err) < 0)
			return -1;
		aj_strv_push(&lowers, pol->workspace);
		snprintf(rw, sizeof rw, "%s", cs->dir);
		ws.lowers = &lowers;
		ws.rw_dir = rw;
	}
	if (pol->volumes.n && attach_volumes(c, pol, &vdirs, err) < 0) {
		if (c->overlay)
			aj_changes_discard(cs, NULL);
		aj_strv_free(&lowers);
		return -1;
	}
	ws.volume_dirs = pol->volumes.n ? &vdirs : NULL;
	r = aj_plan_build_ex(plan, pol, feat, cmd, c->overlay || ws.root || pol->volumes.n ? &ws : NULL,
			     err);
	aj_strv_free(&lowers);
	if (r == 0 && set_secret_dir(plan, err) < 0)
		r = -1;
	if (r < 0) {
		if (c->overlay)
			aj_changes_discard(cs, NULL);
		return -1;
	}
	aj_trace("plan built");
	return 0;
}

/* A run that did not start: the error said and reported (unless the report itself was
 * refused), what was made released. */
static int refused(struct run_cli *c, struct aj_plan *plan, struct aj_policy *pol,
		   const struct aj_err *err)
{
	struct aj_run_result res;

	memset(&res, 0, sizeof res);
	aj_err_print(err, stderr);
	res.failed = true;
	res.err = *err;
	res.exit_code = AJ_EXIT_ERROR;
	if (!c->report_refused)
		write_report(c->report, NULL, &res);
	if (plan)
		aj_plan_free(plan);
	close_image(c);
	aj_policy_free(pol);
	return AJ_EXIT_ERROR;
}

static int cmd_run(const struct aj_verb *v, int argc, char **argv)
{
	static struct run_cli c; /* large; one per process */
	struct aj_policy pol;
	struct aj_features feat;
	struct aj_plan plan;
	struct aj_run_result res;
	struct aj_changeset cs;
	struct aj_err err;
	char **cmd;
	int ncmd, r;
	bool verbose;

	memset(&res, 0, sizeof res);
	aj_err_clear(&err);
	aj_policy_init(&pol);
	if ((r = aj_verb_parse(v, &c, argc, argv, &cmd, &ncmd, &err)) < 0)
		return refused(&c, NULL, &pol, &err);
	if (r > 0) {
		aj_policy_free(&pol);
		return 0;
	}
	if (prepare(&c, &pol, &feat, &plan, cmd, &cs, &err) < 0)
		return refused(&c, NULL, &pol, &err);
	if (c.dry_run && c.overlay)
		aj_changes_discard(&cs, NULL);
	if (c.dry_run) {
		if (aj_cli.json) {
			json_t *j = aj_plan_to_json(&plan);
			json_dumpf(j, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(j);
		} else {
			aj_plan_print(&plan, stdout);
		}
		aj_plan_free(&plan);
		close_image(&c);
		aj_policy_free(&pol);
		return 0;
	}
	verbose = aj_cli_level() >= AJ_LOG_INFO;
	if (verbose)
		aj_plan_print(&plan, stderr);
	if (plan.tier == AJ_TIER_LANDLOCK && hide_command_line(&c, &err) < 0)
		return refused(&c, &plan, &pol, &err);
	aj_run(&plan,
	       &(struct aj_run_opts){
		       .events_path = c.events, .verbose = verbose, .warn = &aj_warn_stderr},
	       &res);
	if (res.failed)
		aj_err_print(&res.err, stderr);
	if (verbose)
		print_summary(&res);
	if (c.overlay)
		finish_overlay(&c, &cs, &res);
	write_report(c.report, &plan, &res);
	close_image(&c);
	/* Said and undone; the rest is memory. */
	aj_exit_done(res.exit_code);
	aj_plan_free(&plan);
	aj_policy_free(&pol);
	return res.exit_code;
}

static const struct aj_arg run_args[] = {
	AJ_ARG("CMD", AJ_COMP_COMMAND),
	AJ_ARG_REST("ARGS", AJ_COMP_FILE),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_run = {
	.name = "run",
	.fn = cmd_run,
	.summary = "run a command in a new sandbox",
	.synopsis = "run [OPTIONS] [--] CMD [ARGS...]",
	.help = "Run CMD in a new sandbox; exit with its status (docs/cli.md).",
	.options = run_options,
	.args = run_args,
	.flags = AJ_VERB_OPTS_FIRST,
};
