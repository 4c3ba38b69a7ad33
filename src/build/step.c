#include "build/step.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build/display.h"
#include "build/layer.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/exitcode.h"
#include "common/util.h"
#include "host/features.h"
#include "host/subids.h"
#include "image/root.h"
#include "policy/plan.h"
#include "state/secrets.h"
#include "state/store.h"
#include "supervisor/run.h"

/* What the step's process sends back when agentjail itself failed. */
struct step_reply {
	int failed;
	struct aj_err err;
};

/* The policy of this step: the build's, with its root, user, directory and variables. */
static int step_policy(const struct aj_build_step *s, struct aj_policy *p, struct aj_err *err)
{
	free(p->rootfs_image);
	p->rootfs_image = s->image ? aj_xstrdup(s->image) : NULL;
	free(p->process_user);
	p->process_user = s->image ? aj_xstrdup(s->user) : NULL;
	free(p->cwd);
	p->cwd = s->image ? aj_xstrdup(s->cwd) : NULL;
	/* a download: no file past 4 GiB, whatever the server says about its size */
	if (!s->image && (!p->limits.file_size || p->limits.file_size > (4ULL << 30)))
		p->limits.file_size = 4ULL << 30;
	free(p->workspace);
	p->workspace = aj_xstrdup(s->scratch);
	for (size_t i = 0; s->env && i < s->env->n; i++)
		aj_strv_push(&p->env_set, s->env->v[i]);
	return aj_policy_validate(p, err);
}

/* The credentials "from_secret" are the build owner's secrets. */
static int set_secret_dir(struct aj_plan *plan, const struct aj_build_step *s,
			  struct aj_err *err)
{
	char dir[4200];

	if (aj_secret_dir(s->state_dir, s->owner ? s->owner : "", dir, sizeof dir) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the secret store's path");
	plan->egress.secret_dir = aj_xstrdup(dir);
	return 0;
}

static int step_child(const struct aj_build_step *s, int *code, struct aj_err *err)
{
	struct aj_store *db = NULL;
	struct aj_images im;
	struct aj_image_root root;
	struct aj_features feat;
	struct aj_plan plan;
	struct aj_run_result res;
	struct aj_workspace_spec ws = {0};
	int r;

	if (!s->image) { /* a download: the host's tools, the scratch directory as workspace */
		if (step_policy(s, s->policy, err) < 0)
			return -1;
		aj_features_probe(&feat, NULL);
		if (aj_plan_build(&plan, s->policy, &feat, s->argv->v, err) < 0 ||
		    set_secret_dir(&plan, s, err) < 0)
			return -1;
		memset(&res, 0, sizeof res);
		aj_run(&plan, &(struct aj_run_opts){.warn = &aj_warn_stderr,
						    .events_path = s->events_path},
		       &res);
		if (res.failed) {
			*err = res.err;
			return -1;
		}
		*code = res.exit_code;
		return 0;
	}
	if (aj_store_open(s->state_dir, &db, err) < 0)
		return -1;
	r = aj_images_open(s->state_dir, db, &im, err);
	if (r == 0)
		r = aj_image_root_open(&im, "", s->image, &root, err);
	if (r == 0 && (r = aj_image_root_layer_at(&root, s->dir, err)) < 0)
		aj_image_root_close(&root);
	aj_images_close(&im);
	aj_store_close(db);
	if (r < 0 || step_policy(s, s->policy, err) < 0)
		return -1;
	aj_features_probe(&feat, NULL);
	ws.root = &root.spec;
	ws.no_workspace = true;
	if (aj_plan_build_ex(&plan, s->policy, &feat, s->argv->v, &ws, err) < 0 ||
	    set_secret_dir(&plan, s, err) < 0)
		return -1;
	memset(&res, 0, sizeof res);
	aj_run(&plan, &(struct aj_run_opts){.warn = &aj_warn_stderr, .events_path = s->events_path},
	       &res);
	if (res.failed) {
		*err = res.err;
		return -1;
	}
	*code = res.exit_code;
	return 0;
}

int aj_build_step_run(const struct aj_build_step *s, int *code, struct aj_err *err)
{
	struct step_reply *reply;
	struct aj_build_display *shown = NULL;
	_cleanup_close_ int out_r = -1, out_w = -1;
	pid_t pid;
	int status = 0, rc = 0;

	fflush(NULL);
	if (s->tty && aj_pipe(&out_r, &out_w, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "a pipe for the step's output");
	reply = mmap(NULL, sizeof *reply, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	if (reply == MAP_FAILED)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "map memory for a step");
	memset(reply, 0, sizeof *reply);
	pid = fork();
	if (pid < 0) {
		munmap(reply, sizeof *reply);
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork the step");
	}
	if (pid == 0) {
		int c = 0;

		if (out_w >= 0) {
			if (dup2(out_w, STDOUT_FILENO) < 0 || dup2(out_w, STDERR_FILENO) < 0)
				_exit(AJ_EXIT_ERROR);
			/* the builder is the pipe's only reader: if it dies, writes fail */
			aj_close_fd(&out_r);
			aj_close_fd(&out_w);
		}
		if (step_child(s, &c, &reply->err) < 0) {
			reply->failed = 1;
			c = AJ_EXIT_ERROR;
		}
		fflush(NULL);
		_exit(c & 0xff);
	}
	if (out_r >= 0) {
		aj_close_fd(&out_w);
		shown = aj_build_display(s->tty, out_r);
		if (!shown) { /* no memory for the window: the output is dropped, not blocked */
			char drain[4096];
			ssize_t n;
			while ((n = read(out_r, drain, sizeof drain)) > 0 || (n < 0 && errno == EINTR))
				;
		}
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			rc = aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the step");
			break;
		}
	aj_build_display_done(shown, rc < 0 || reply->failed || !WIFEXITED(status) ||
					     WEXITSTATUS(status) != 0);
	if (rc == 0 && reply->failed) {
		*err = reply->err;
		rc = -1;
	} else if (rc == 0) {
		*code = WIFEXITED(status)     ? WEXITSTATUS(status)
			: WIFSIGNALED(status) ? 128 + WTERMSIG(status)
					      : AJ_EXIT_ERROR;
	}
	munmap(reply, sizeof *reply);
	return rc;
}

/* ---- the step's layer --------------------------------------------------------------------- */

struct upper_job {
	const struct aj_blobs *blobs;
	int upper;
	uid_t self;
	char blob[AJ_DIGEST_SIZE];
};

static int upper_job_run(void *arg, struct aj_err *err)
{
	struct upper_job *j = arg;
	struct aj_layer_writer lw;
	struct aj_layer_tree t = {.dest = "", .overlay = true, .chmod = -1, .self = j->self};

	if (aj_layer_begin(&lw, j->blobs, err) < 0)
		return -1;
	if (aj_layer_tree(&lw, j->upper, NULL, &t) < 0) {
		aj_layer_abort(&lw);
		return -1;
	}
	return aj_layer_commit(&lw, j->blob);
}

int aj_build_upper_blob(struct aj_images *im, const char *dir, char blob[AJ_DIGEST_SIZE],
			struct aj_err *err)
{
	_cleanup_free_ char *path = aj_xasprintf("%s/upper", dir);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct upper_job *j;
	int r;

	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open the step's layer \"%s\"", path);
	j = mmap(NULL, sizeof *j, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (j == MAP_FAILED)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "map memory for a layer");
	memset(j, 0, sizeof *j);
	j->blobs = &im->blobs;
	j->upper = fd;
	/* Rootless single-id: the caller's files are the image's root's. */
	j->self = !im->set_owners && !im->subid_layers ? geteuid() : (uid_t)-1;
	r = im->subid_layers ? aj_subids_run(&im->subids, upper_job_run, j, err)
			     : upper_job_run(j, err);
	if (r == 0)
		memcpy(blob, j->blob, AJ_DIGEST_SIZE);
	munmap(j, sizeof *j);
	return r;
}
