/* Change sets: what a transactional run (`agentjail run --overlay`) wrote on top of a host
 * directory, kept apart from it until applied or discarded.
 *
 * Layout: <state>/changes/<id>/{upper,work,meta.json}. meta.json names the host directory.
 * Applying merges upper onto that directory as overlayfs would have shown it (whiteouts
 * delete, opaque directories replace); nothing under the host directory is followed.
 */
#ifndef AJ_WORKSPACE_CHANGES_H
#define AJ_WORKSPACE_CHANGES_H

#include <stdint.h>

#include "common/err.h"
#include "common/warn.h"

struct aj_changeset {
	char id[17];
	char dir[4096];       /* <state>/changes/<id> */
	char workspace[4096]; /* the host directory underneath */
	int64_t created_ms;
	int exit_code;        /* of the run that made it, -1 if unknown */
};

struct aj_change_counts {
	unsigned added, modified, deleted;
};

/* disk > 0: the change set is a quota directory of that many bytes where the filesystem can
 * (storage/quota.h). */
int aj_changes_create(const char *state, const char *workspace, uint64_t disk,
		      struct aj_changeset *cs, struct aj_err *err);
int aj_changes_open(const char *state, const char *id, struct aj_changeset *cs,
		    struct aj_err *err);
int aj_changes_set_exit(struct aj_changeset *cs, int exit_code, struct aj_err *err);
/* fn(kind 'A'/'M'/'D', path relative to the workspace). counts may be NULL. */
int aj_changes_diff(const struct aj_changeset *cs,
		    int (*fn)(void *arg, char kind, const char *path), void *arg,
		    struct aj_change_counts *counts, struct aj_err *err);
/* A .git/commondir the sandbox made is not applied; `warn` is told (common/warn.h). */
int aj_changes_apply(const struct aj_changeset *cs, const struct aj_warn *warn,
		     struct aj_err *err);
int aj_changes_discard(const struct aj_changeset *cs, struct aj_err *err);
int aj_changes_list(const char *state, int (*fn)(void *arg, const struct aj_changeset *cs),
		    void *arg, struct aj_err *err);

#endif
