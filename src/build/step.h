/* A RUN step of a build in its sandbox (docs/build.md, "RUN"): a process forked for it builds
 * the plan (the image so far as the root, the step's system layer at `dir`, no workspace)
 * from the build policy and runs it as `agentjail run` would, its output the builder's. The
 * builder learns the command's exit code, or agentjail's error.
 */
#ifndef AJ_BUILD_STEP_H
#define AJ_BUILD_STEP_H

#include <stdio.h>

#include "common/err.h"
#include "common/strv.h"
#include "image/store.h"
#include "policy/policy.h"

struct aj_build_step {
	const char *state_dir;
	const char *owner;          /* whose secrets the policy's credentials name ("": local) */
	const char *image;          /* the root: an image of the store (digest); NULL: the host's
				     * system directories, with `scratch` as the workspace and
				     * working directory (ADD's downloads) */
	const char *dir;            /* the system layer (upper/, work/ made there) */
	const char *scratch;        /* an empty directory, the policy's unused workspace */
	const char *user;           /* USER, "root" by default */
	const char *cwd;            /* WORKDIR, "/" by default */
	const struct aj_strv *argv; /* the command (SHELL + line, or the exec form) */
	const struct aj_strv *env;  /* "NAME=VALUE": the ARGs in force */
	struct aj_policy *policy;
	const char *events_path;    /* the sandbox's events appended there; NULL: none */
	FILE *tty;                  /* a terminal: the output in build/display.h's window;
				     * NULL: the step's stdout and stderr are the builder's */
};

/* Runs the step; its exit code into *code (0: the layer is in dir/upper). -1: agentjail's
 * own error, in err. */
int aj_build_step_run(const struct aj_build_step *s, int *code, struct aj_err *err);

/* The step's system layer (dir/upper) as a layer blob of the store (build/layer.h), read in
 * a user namespace with the store's subordinate ids when it has them: its files are then
 * the caller's to read and show their ids as the image has them. */
int aj_build_upper_blob(struct aj_images *im, const char *dir, char blob[AJ_DIGEST_SIZE],
			struct aj_err *err);

#endif
