/* Shared by the manager's files; not for other modules. */
#ifndef AJ_MANAGER_INTERNAL_H
#define AJ_MANAGER_INTERNAL_H

#include "manager/manager.h"

/* flock on the sandbox's lock file; -1 with err on failure. Close the fd to release. */
int aj_mgr_lock(struct aj_mgr *m, const char *id, bool wait, struct aj_err *err);
/* Marks a sandbox whose supervisor is gone as stopped (in the store and in *rec). */
void aj_mgr_refresh(struct aj_mgr *m, struct aj_sandbox_rec *rec);
/* Starts a supervisor for rec and waits until it reports the sandbox up (or why not). */
int aj_mgr_spawn(struct aj_mgr *m, const struct aj_sandbox_rec *rec, struct aj_err *err);
/* Writes rec back in one transaction. */
int aj_mgr_save(struct aj_mgr *m, const struct aj_sandbox_rec *rec, struct aj_err *err);
/* A fresh id: 16 hex characters. */
int aj_mgr_new_id(char *buf, struct aj_err *err);
/* Errors that name a sandbox by what the caller typed. */
int aj_mgr_wrong_state(struct aj_err *err, const struct aj_sandbox_rec *rec, const char *want);
/* Removes layers no stack references any more (and .tmp leftovers). */
int aj_mgr_drop_unused_layers(struct aj_mgr *m, unsigned *n, struct aj_err *err);

#endif
