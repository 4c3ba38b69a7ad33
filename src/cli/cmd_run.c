/* agentjail run [OPTIONS] -- CMD [ARGS...] */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/trace.h"
#include "common/units.h"
#include "common/util.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "sandbox/features.h"
#include "state/store.h"
#include "supervisor/run.h"
#include "workspace/changes.h"

struct pending {
	const char *name;
	const char *value;
};

struct run_cli {
	const char *policy_file;
	const char *preset;
	const char *report;
	const char *events;
	const char *cgroup_parent;
	const char *state_dir;
	const char *overlay; /* review, apply or discard; NULL: no overlay */
	bool verbose, dry_run, json, help;
	struct pending pending[256];
	size_t n_pending;
};

/* ---- options that change the policy: applied in order, after the policy file ---------- */

typedef int (*policy_flag_fn)(struct aj_policy *p, const char *flag, const char *v,
			      struct aj_err *err);

static int parse_limit(const char *flag, const char *v, uint64_t *out,
		       int (*parse)(const char *, const char *, uint64_t *, struct aj_err *),
		       struct aj_err *err)
{
	char what[64];

	if (strcmp(v, "none") == 0 || strcmp(v, "0") == 0) {
		*out = 0;
		return 0;
	}
	snprintf(what, sizeof what, "--%s", flag);
	return parse(what, v, out, err);
}

static int flag_memory(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.memory, aj_policy_parse_size, e);
}
static int flag_pids(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.pids, aj_policy_parse_count, e);
}
static int flag_cpus(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.cpu_milli, aj_policy_parse_cpus, e);
}
static int flag_timeout(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.timeout_ms, aj_policy_parse_duration, e);
}
static int flag_file_size(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.file_size, aj_policy_parse_size, e);
}
static int flag_output(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return parse_limit(f, v, &p->limits.output_bytes, aj_policy_parse_size, e);
}
static int flag_open_files(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return aj_policy_parse_count("--open-files", v, &p->limits.open_files, e);
	(void)f;
}
static int flag_tmpfs(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	return aj_policy_parse_size("--tmpfs-size", v, &p->limits.tmpfs_size, e);
}

static int flag_output_action(struct aj_policy *p, const char *f, const char *v,
			      struct aj_err *e)
{
	(void)f;
	if (strcmp(v, "truncate") == 0)
		p->limits.output_action = AJ_OUTPUT_TRUNCATE;
	else if (strcmp(v, "kill") == 0)
		p->limits.output_action = AJ_OUTPUT_KILL;
	else
		return aj_err_set(e, AJ_LAYER_USAGE, 0,
				  "--output-action: expected truncate or kill, got \"%s\"", v);
	return 0;
}

static int push_path(struct aj_strv *sv, const char *flag, const char *v, struct aj_err *e)
{
	if (v[0] != '/')
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--%s: expected an absolute path, got \"%s\"",
				  flag, v);
	return aj_strv_push(sv, v) < 0 ? aj_err_sys(e, AJ_LAYER_USAGE, "--%s", flag) : 0;
}
static int flag_ro(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return push_path(&p->read_only, f, v, e);
}
static int flag_rw(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return push_path(&p->read_write, f, v, e);
}
static int flag_mask(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	return push_path(&p->mask, f, v, e);
}

static int flag_env(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	if (!aj_policy_env_name_ok(v))
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--env: \"%s\" is not a variable name", v);
	return aj_strv_push(&p->env_allow, v) < 0 ? aj_err_sys(e, AJ_LAYER_USAGE, "--env") : 0;
}

static int flag_setenv(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	const char *eq = strchr(v, '=');
	char name[256];

	(void)f;
	if (!eq || (size_t)(eq - v) >= sizeof name)
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--setenv: expected NAME=VALUE, got \"%s\"",
				  v);
	snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
	if (!aj_policy_env_name_ok(name))
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--setenv: \"%s\" is not a variable name",
				  name);
	return aj_strv_setenv(&p->env_set, name, eq + 1) < 0
		       ? aj_err_sys(e, AJ_LAYER_USAGE, "--setenv")
		       : 0;
}

static int flag_workspace(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	free(p->workspace);
	p->workspace = realpath(v, NULL);
	if (!p->workspace)
		return aj_err_sys(e, AJ_LAYER_USAGE, "--workspace \"%s\"", v);
	return 0;
}

static int flag_cwd(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	free(p->cwd);
	p->cwd = strdup(v);
	return p->cwd ? 0 : aj_err_sys(e, AJ_LAYER_USAGE, "--cwd");
}

static int flag_degraded(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	return aj_strv_push(&p->allow_degraded, v) < 0
		       ? aj_err_sys(e, AJ_LAYER_USAGE, "--allow-degraded")
		       : 0;
}

static int flag_syscall(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	return aj_strv_push(&p->syscalls_allow, v) < 0
		       ? aj_err_sys(e, AJ_LAYER_USAGE, "--allow-syscalls")
		       : 0;
}

static int flag_network(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	if (strcmp(v, "none") == 0)
		p->net_mode = AJ_NET_NONE;
	else if (strcmp(v, "host") == 0)
		p->net_mode = AJ_NET_HOST;
	else
		return aj_err_set(e, AJ_LAYER_USAGE, 0, "--network: expected none or host, got \"%s\"",
				  v);
	return 0;
}

static int flag_hostname(struct aj_policy *p, const char *f, const char *v, struct aj_err *e)
{
	(void)f;
	free(p->hostname);
	p->hostname = strdup(v);
	return p->hostname ? 0 : aj_err_sys(e, AJ_LAYER_USAGE, "--hostname");
}

static const struct {
	const char *name;
	policy_flag_fn fn;
} policy_flags[] = {
	{"workspace", flag_workspace}, {"memory", flag_memory},       {"pids", flag_pids},
	{"cpus", flag_cpus},           {"timeout", flag_timeout},     {"file-size", flag_file_size},
	{"open-files", flag_open_files}, {"output-limit", flag_output},
	{"output-action", flag_output_action}, {"tmpfs-size", flag_tmpfs}, {"ro", flag_ro},
	{"rw", flag_rw},               {"mask", flag_mask},           {"env", flag_env},
	{"setenv", flag_setenv},       {"cwd", flag_cwd},             {"hostname", flag_hostname},
	{"allow-degraded", flag_degraded}, {"network", flag_network}, {"allow-syscalls", flag_syscall},
};

static int defer(void *vctx, const char *name, const char *value, struct aj_err *err)
{
	struct run_cli *c = vctx;

	if (c->n_pending == sizeof c->pending / sizeof c->pending[0])
		return aj_err_set(err, AJ_LAYER_USAGE, E2BIG, "too many options");
	c->pending[c->n_pending].name = name;
	c->pending[c->n_pending++].value = value;
	return 0;
}

static int apply_pending(struct run_cli *c, struct aj_policy *p, struct aj_err *err)
{
	for (size_t i = 0; i < c->n_pending; i++)
		for (size_t j = 0; j < sizeof policy_flags / sizeof policy_flags[0]; j++)
			if (strcmp(policy_flags[j].name, c->pending[i].name) == 0 &&
			    policy_flags[j].fn(p, c->pending[i].name, c->pending[i].value, err) < 0)
				return -1;
	return 0;
}

/* ---- options about the run itself ----------------------------------------------------- */

static int set_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct run_cli *c = vctx;

	if (strcmp(name, "policy") == 0)
		c->policy_file = v;
	else if (strcmp(name, "preset") == 0)
		c->preset = v;
	else if (strcmp(name, "report") == 0)
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
	{"policy", 0, "FILE", set_opt, "policy file (docs/policy.md)"},
	{"preset", 0, "NAME", set_opt, "workspace-write (default) or read-only"},
	{"workspace", 'w', "DIR", defer, "the workspace (default: the current directory)"},
	{"cwd", 0, "PATH", defer, "working directory inside (default: the workspace)"},
	{"memory", 'm', "SIZE", defer, "memory limit, e.g. 512MiB, or none"},
	{"pids", 0, "N", defer, "limit on tasks (processes and threads), or none"},
	{"cpus", 0, "N", defer, "CPU quota in CPUs, e.g. 0.5, or none"},
	{"timeout", 't', "DURATION", defer, "wall-clock limit, e.g. 30s, 5m, or none"},
	{"file-size", 0, "SIZE", defer, "largest file the sandbox may write, or none"},
	{"open-files", 0, "N", defer, "open descriptors per process"},
	{"output-limit", 0, "SIZE", defer, "stdout+stderr bytes passed on, or none"},
	{"output-action", 0, "ACTION", defer, "past the output limit: truncate or kill"},
	{"tmpfs-size", 0, "SIZE", defer, "size of /tmp, /dev/shm and the home"},
	{"ro", 0, "PATH", defer, "make a host path visible read-only (repeatable)"},
	{"rw", 0, "PATH", defer, "make a host path visible read-write (repeatable)"},
	{"mask", 0, "PATH", defer, "hide a path inside the sandbox (repeatable)"},
	{"env", 'e', "NAME", defer, "pass a host environment variable in (repeatable)"},
	{"setenv", 0, "NAME=VALUE", defer, "set a variable inside (repeatable)"},
	{"hostname", 0, "NAME", defer, "hostname inside"},
	{"network", 0, "MODE", defer, "none (default: loopback only) or host (shared, uncontrolled)"},
	{"allow-degraded", 0, "LAYER", defer, "accept running without LAYER (repeatable)"},
	{"allow-syscalls", 0, "GROUP", defer, "lift a relaxable seccomp group, e.g. ptrace"},
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
	struct aj_change_counts n;
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
		res->changes.action = aj_changes_apply(cs, &err) < 0 ? "failed" : "applied";
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

static int prepare(struct run_cli *c, struct aj_policy *pol, struct aj_features *feat,
		   struct aj_plan *plan, char **cmd, struct aj_changeset *cs, struct aj_err *err)
{
	struct aj_strv lowers = {0};
	char rw[4200];
	struct aj_workspace_spec ws = {0};
	int r;

	if (aj_policy_load(pol, c->policy_file, c->preset, err) < 0 ||
	    apply_pending(c, pol, err) < 0 || aj_policy_validate(pol, err) < 0 ||
	    outside_sandbox("--report", c->report, pol, err) < 0 ||
	    outside_sandbox("--events", c->events, pol, err) < 0)
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
	aj_run(&plan, &(struct aj_run_opts){.events_path = c.events, .verbose = c.verbose}, &res);
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
	write_report(c.report, NULL, &res);
	if (have_plan)
		aj_plan_free(&plan);
	aj_policy_free(&pol);
	return AJ_EXIT_ERROR;
}
