/* Shared by the manager's files; not for other modules. Sandbox locks are descriptors
 * (aj_mgr_lock), held in _cleanup_close_ variables; records in _cleanup_sandbox_rec_ and
 * _cleanup_snapshot_rec_ ones (state/store.h). */
#ifndef AJ_MANAGER_INTERNAL_H
#define AJ_MANAGER_INTERNAL_H

#include "common/alloc.h"
#include "common/cleanup.h"
#include "manager/manager.h"

/* flock on the sandbox's lock file; -1 with err on failure. Close the fd to release. */
int aj_mgr_lock(struct aj_mgr *m, const char *id, bool wait, struct aj_err *err);
/* Marks a sandbox whose supervisor is gone as stopped (in the store and in *rec). */
void aj_mgr_refresh(struct aj_mgr *m, struct aj_sandbox_rec *rec);
/* Starts a supervisor for rec and waits until it reports the sandbox up (or why not). */
int aj_mgr_spawn(struct aj_mgr *m, const struct aj_sandbox_rec *rec, struct aj_err *err);
/* Reads r again by its id, with its lock now held: another snapshot, fork or update may have
 * changed it while we waited, and writing back a stale record would lose that. */
int aj_mgr_reread(struct aj_mgr *m, struct aj_sandbox_rec *r, struct aj_err *err);
/* Writes rec back in one transaction. */
int aj_mgr_save(struct aj_mgr *m, const struct aj_sandbox_rec *rec, struct aj_err *err);
/* A fresh id: 16 hex characters. */
int aj_mgr_new_id(char *buf, struct aj_err *err);
/* Errors that name a sandbox by what the caller typed. */
int aj_mgr_wrong_state(struct aj_err *err, const struct aj_sandbox_rec *rec, const char *want);
/* Removes layers no stack references any more, each under its layer lock (a fork holds a
 * new layer's until its sandboxes reference it). */
int aj_mgr_drop_unused_layers(struct aj_mgr *m, unsigned *n, struct aj_err *err);
/* The first step of making a sandbox (create, each of a fork's): takes the lock of the new
 * id r->id, then inserts r ("creating"). Returns the lock's descriptor; the caller holds it
 * until the record says stopped, or discards the sandbox. Nothing is left on failure. */
/* disk: limits.disk, the quota of the sandbox's directory (workspace/layers.h). */
int aj_mgr_begin_creating(struct aj_mgr *m, const struct aj_sandbox_rec *r, uint64_t disk,
			  struct aj_err *err);
/* Removes a sandbox that never became complete (record, then directory); lock held. */
int aj_mgr_discard_creating(struct aj_mgr *m, const char *id, struct aj_err *err);
/* Crash recovery (recover.c; the steps are at the top of snapshot.c). settle_layer finishes a
 * "creating" layer whose directory exists or undoes one whose directory does not, with its
 * lock and those of the sandboxes on it held by the caller. recover_layers does that for the
 * ones whose lock is free; recover_creating removes "creating" sandboxes whose lock is free. */
int aj_mgr_settle_layer(struct aj_mgr *m, const char *layer, struct aj_err *err);
int aj_mgr_recover_layers(struct aj_mgr *m, unsigned *recovered, struct aj_err *err);
int aj_mgr_recover_creating(struct aj_mgr *m, unsigned *recovered, struct aj_err *err);

/* How many layers at the bottom of r's stack are its base (what diff compares with). */
size_t aj_mgr_base_depth(struct aj_mgr *m, const struct aj_sandbox_rec *r);
/* Whether snapshot s can be the base of a sandbox with this policy (JSON): the same root,
 * the host's or one image's; else an error naming both. */
int aj_mgr_snapshot_fits(const struct aj_snapshot_rec *s, const char *policy, struct aj_err *err);
/* Merges the base layers, and the own layers, of a stack deeper than AJ_MAX_LAYERS (squash.c);
 * r is updated and saved. The sandbox's lock is held by the caller. */
int aj_mgr_squash(struct aj_mgr *m, struct aj_sandbox_rec *r, struct aj_err *err);

#endif
