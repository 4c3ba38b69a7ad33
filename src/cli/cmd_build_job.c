/* __build-job: the process of one build the API asked for (build/job.h), started by the
 * daemon, detached from it. It holds the build's lock while it runs, unpacks the uploads the
 * template copies (each a hostile tar, by the confined unpacker), builds the template with the
 * builder as `agentjail build` builds a Dockerfile, every RUN in a sandbox under the policy
 * the daemon wrote into the request, and writes each line of the build's output to the log
 * and its end to the status. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build/builder.h"
#include "build/job.h"
#include "build/template.h"
#include "cli/commands.h"
#include "cli/config.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/tree.h"
#include "image/store.h"
#include "image/unpack.h"
#include "manager/manager.h"

/* What one upload may unpack to, and how much log a build keeps. */
#define UPLOAD_MAX_BYTES (4ULL << 30)
#define LOG_MAX_BYTES (16u << 20)

struct job {
	const char *state, *id;
	char dir[4200];
	int log_fd;
	struct aj_template t;
	size_t at; /* the instruction running */
	const char *from_template; /* the template's fromTemplate, if any */
};

/* ---- the build's output as log entries ---------------------------------------------------- */

/* The builder's lines and the RUN steps' own output (their stdout and stderr are the
 * process's, as for `agentjail build`) go through one pipe to a process of this one's that
 * makes each line a log entry; it ends at the pipe's end. */
static void log_lines(int in, int log_fd)
{
	char line[8192], buf[4096];
	size_t len = 0, total = 0;
	ssize_t n;
	bool cut = false;

	while ((n = read(in, buf, sizeof buf)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n' || len == sizeof line) {
				total += len + 64;
				if (total <= LOG_MAX_BYTES) {
					aj_job_log(log_fd, "info", line, len);
				} else if (!cut) {
					static const char m[] = "(the build's output passed 16 MiB: the "
								"rest is not kept)";
					aj_job_log(log_fd, "warn", m, sizeof m - 1);
					cut = true;
				}
				len = 0;
				if (buf[i] == '\n')
					continue;
			}
			line[len++] = buf[i];
		}
	}
	if (len && !cut)
		aj_job_log(log_fd, "info", line, len);
}

static pid_t start_logger(int log_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		log_lines(p[0], log_fd);
		_exit(0);
	}
	close(p[0]);
	if (pid < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0) {
		close(p[1]);
		return -1;
	}
	close(p[1]);
	return pid;
}

/* stdout back to /dev/null and stderr to runner.log; the logger drains what is left. */
static void stop_logger(pid_t pid, int err_fd)
{
	int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	fflush(NULL);
	if (null_fd >= 0)
		dup2(null_fd, 1);
	dup2(err_fd, 2);
	if (null_fd >= 0)
		close(null_fd);
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static void on_step(void *arg, size_t index)
{
	((struct job *)arg)->at = index;
}

/* ---- the parts ------------------------------------------------------------------------------ */

static int unpack_uploads(struct job *j, const char *owner, const char *ctx, struct aj_err *err)
{
	if (mkdir(ctx, 0755) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", ctx);
	for (size_t i = 0; i < j->t.files.n; i++) {
		const char *hash = j->t.files.v[i];
		char path[4400], dir[4400], what[120];
		struct aj_unpack_opts o = {.what = what, .max_bytes = UPLOAD_MAX_BYTES};
		struct aj_unpack_result res;
		_cleanup_close_ int fd = -1;

		/* a failure here is the first COPY's that takes these files */
		for (j->at = 0; j->at < j->t.df.n; j->at++)
			if (j->t.df.v[j->at].kind == AJ_DF_COPY &&
			    !strncmp(j->t.df.v[j->at].args.v[0], hash, strlen(hash)))
				break;
		aj_job_file_path(j->state, owner, hash, path, sizeof path);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0)
			futimens(fd, NULL); /* in use: gc keeps it (build/job.h) */
		if (fd < 0)
			return aj_err_set(err, AJ_LAYER_USAGE, ENOENT,
					  "the files of a COPY (hash %s) were not uploaded", hash);
		snprintf(dir, sizeof dir, "%s/%s", ctx, hash);
		snprintf(what, sizeof what, "the upload %.16s", hash);
		if (mkdir(dir, 0755) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", dir);
		if (aj_image_unpack(fd, dir, &o, &res, err) < 0)
			return -1;
	}
	return 0;
}

/* The request's policy, its limits lowered to what the request asks (never raised). */
static int job_policy(json_t *req, struct aj_policy *pol, struct aj_err *err)
{
	json_t *p = json_object_get(req, "policy");
	const char *preset = NULL;
	json_int_t mb = json_integer_value(json_object_get(req, "memory_mb"));
	json_int_t cpus = json_integer_value(json_object_get(req, "cpus"));

	if (aj_policy_json_preset(p, &preset, err) < 0 ||
	    aj_policy_apply_preset(pol, preset ? preset : "workspace-write", err) < 0 ||
	    aj_policy_apply_json(pol, p, err) < 0)
		return -1;
	if (mb > 0 && (!pol->limits.memory || (uint64_t)mb << 20 < pol->limits.memory))
		pol->limits.memory = (uint64_t)mb << 20;
	if (cpus > 0 && (!pol->limits.cpu_milli || (uint64_t)cpus * 1000 < pol->limits.cpu_milli))
		pol->limits.cpu_milli = (uint64_t)cpus * 1000;
	return 0;
}

static int job_build(struct job *j, json_t *req, FILE *out, struct aj_image_rec *rec,
		     struct aj_err *err)
{
	const char *owner = json_string_value(json_object_get(req, "owner"));
	const char *name = json_string_value(json_object_get(req, "name"));
	_cleanup_policy_ struct aj_policy pol;
	struct aj_images im = {.layers_dir = -1, .lock_fd = -1, .blobs = {.dir = -1}};
	char ctx[4300], events[4300];
	struct aj_mgr m;
	json_t *tag;
	size_t i;
	int r;

	aj_policy_init(&pol);
	snprintf(ctx, sizeof ctx, "%s/context", j->dir);
	snprintf(events, sizeof events, "%s/events.jsonl", j->dir);
	aj_strv_push_owned(&j->t.labels, aj_xasprintf("%s=%s", AJ_LABEL_BUILD, j->id));
	if (!owner || !name)
		return aj_err_set(err, AJ_LAYER_STATE, EINVAL, "the build's request.json is damaged");
	if (job_policy(req, &pol, err) < 0 || unpack_uploads(j, owner, ctx, err) < 0)
		return -1;
	if (aj_mgr_open(&m, j->state, NULL, err) < 0)
		return -1;
	r = aj_images_open(m.state, m.store, &im, err);
	if (r == 0 && j->from_template) {
		struct aj_image_rec base = {.layers = AJ_STRV_INIT, .names = AJ_STRV_INIT};
		/* an earlier template of the owner's: never a name to pull */
		r = aj_images_find(&im, owner, j->from_template, &base, NULL, err);
		if (r == 0 && !base.names.n)
			r = -1;
		aj_image_rec_free(&base);
		if (r < 0)
			aj_err_set(err, AJ_LAYER_USAGE, ENOENT,
				   "fromTemplate: you have no template \"%s\"", j->from_template);
	}
	if (r == 0) {
		struct aj_pull_opts po = {
			/* the host's registry credentials are not an API client's */
			.registry = {.mirror = aj_cli_config()->registry_mirror, .progress = out,
				     .anonymous = true},
			.owner = owner,
		};
		struct aj_build_opts o = {
			.context = ctx,
			.file = "template step",
			.tag = name,
			.no_cache = j->t.force,
			.policy = &pol,
			.pull = &po,
			.out = out,
			.events_path = events,
			.owner = owner,
			.dockerfile = &j->t.df,
			.labels = &j->t.labels,
			.on_step = on_step,
			.on_step_arg = j,
		};
		r = aj_build(&im, &o, rec, err);
	}
	json_array_foreach(json_object_get(req, "tags"), i, tag) {
		char full[700];
		const char *colon = strrchr(name, ':');
		int len = colon && !strchr(colon, '/') ? (int)(colon - name) : (int)strlen(name);

		if (r < 0 || !json_is_string(tag))
			break;
		snprintf(full, sizeof full, "%.*s:%s", len, name, json_string_value(tag));
		if (aj_images_lock(&im, err) < 0 || aj_images_tag(&im, owner, full, rec->digest, err) < 0)
			r = -1;
		aj_images_unlock(&im);
	}
	aj_images_close(&im);
	aj_mgr_close(&m);
	return r;
}

static int run_job(struct job *j)
{
	_cleanup_json_ json_t *req = aj_job_read(j->state, j->id, "request.json");
	_cleanup_json_ json_t *tpl = aj_job_read(j->state, j->id, "template.json");
	_cleanup_image_rec_ struct aj_image_rec rec = {0};
	struct aj_err err;
	_cleanup_close_ int err_fd = dup(2);
	pid_t logger;
	int r;

	_cleanup_json_ json_t *building = json_pack("{s:s}", "status", "building");

	aj_err_clear(&err);
	aj_job_set_status(j->state, j->id, building, &err);
	logger = err_fd < 0 ? -1 : start_logger(j->log_fd);
	if (logger < 0)
		return 125;
	setvbuf(stdout, NULL, _IOLBF, 0);
	r = !req || !tpl ? aj_err_set(&err, AJ_LAYER_STATE, EINVAL, "the build's request or "
				      "template is missing")
			 : aj_template_parse(tpl, &j->t, &err);
	j->from_template = json_string_value(json_object_get(tpl, "fromTemplate"));
	if (r == 0)
		r = job_build(j, req, stdout, &rec, &err);
	stop_logger(logger, err_fd);
	{
		char msg[sizeof err.msg + sizeof err.hint + 16];
		size_t step = r < 0 && j->t.step_of && j->at < j->t.df.n ? j->t.step_of[j->at] : 0;
		char stepname[24];
		json_t *st;

		snprintf(stepname, sizeof stepname, "%zu", step);
		aj_err_format(&err, msg, sizeof msg);
		if (r < 0) {
			if (err.hint[0])
				snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (%s)", err.hint);
			aj_job_log(j->log_fd, "error", msg, strlen(msg));
			st = json_pack("{s:s, s:s, s:s}", "status", "error", "message", msg, "step",
				       step ? stepname : "base");
		} else {
			st = json_pack("{s:s, s:s}", "status", "ready", "image", rec.digest);
		}
		if (aj_job_set_status(j->state, j->id, st, &err) < 0)
			r = -1;
		json_decref(st);
	}
	aj_template_free(&j->t);
	return r < 0 ? 1 : 0;
}

struct build_job_cli {
	const char *state_dir;
};

static const struct aj_option build_job_options[] = {
	{AJ_OPT("state-dir", 0, AJ_OPT_STRING), .off = offsetof(struct build_job_cli, state_dir),
	 .metavar = "DIR", .help = "the daemon's state directory"},
	AJ_OPT_END,
};

static int cmd_build_job(const struct aj_verb *v, int argc, char **argv)
{
	struct build_job_cli c = {NULL};
	struct job j = {.log_fd = -1};
	_cleanup_close_ int lock = -1;
	struct aj_err err;
	char path[4300], ctx[4300];
	char **args;
	int nargs, rc;

	if (aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err) != 0 || !c.state_dir ||
	    nargs != 1 || !aj_job_id_ok(args[0])) {
		fprintf(stderr, "agentjail: __build-job is started by agentjail itself\n");
		return 125;
	}
	j.state = c.state_dir;
	j.id = args[0];
	aj_job_dir(j.state, j.id, j.dir, sizeof j.dir);
	snprintf(path, sizeof path, "%s/lock", j.dir);
	lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	/* blocking: a status probe holds it shared for a moment (build/job.c); only one process
	 * is ever started per build (template.json is written once) */
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		fprintf(stderr, "agentjail: build %s: %s\n", j.id,
			lock < 0 ? strerror(errno) : "already running");
		return 125;
	}
	snprintf(path, sizeof path, "%s/log.jsonl", j.dir);
	j.log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (j.log_fd < 0) {
		fprintf(stderr, "agentjail: build %s: open the log: %s\n", j.id, strerror(errno));
		return 125;
	}
	rc = run_job(&j);
	snprintf(ctx, sizeof ctx, "%s/context", j.dir);
	aj_tree_remove_at(AT_FDCWD, ctx, NULL);
	close(j.log_fd);
	return rc;
}

const struct aj_verb aj_verb_build_job = {
	.name = "__build-job",
	.fn = cmd_build_job,
	.summary = "a build the API asked for (started by agentjail itself)",
	.synopsis = "__build-job --state-dir DIR ID",
	.options = build_job_options,
	.flags = AJ_VERB_HIDDEN,
};
