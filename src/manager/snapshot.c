/* Snapshots, forks, restores, diffs, and recovery of the ones a crash interrupted (with
 * recover.c).
 *
 * A snapshot freezes a sandbox's writable layer into a new immutable layer L. Each step is
 * recorded before it is done, so that a crash at any point is either rolled back (the layer
 * never became a directory) or forward (it did):
 *   0. under the sandbox's lock, the creator takes L's lock (layers/.lock-L) and holds it to
 *      the end: recovery and gc touch a layer only with its lock, so never one being made;
 *   1. one transaction: layer L "creating", snapshot "creating" (stack: lowers + L) and, when
 *      the sandbox is stopped, the sandbox's own stack already lowers + L;
 *   2. the files: a stopped sandbox's upper is renamed into layers/L (constant time) and a new
 *      empty upper made; a running one's is copied, frozen meanwhile, through layers/.tmp-L and
 *      a rename;
 *   3. one transaction: L and the snapshot "ready"; then L's lock file goes.
 * A step 2 that fails is settled at once by its creator, one a crash interrupted by
 * aj_mgr_recover() once L's lock is free, the same way (aj_mgr_settle_layer): forward when
 * layers/L exists (making the upper and work directories of a sandbox whose upper was moved,
 * if missing), else back (the records go, then layers/.tmp-L).
 *
 * A fork is such a layer without a snapshot, and sandboxes on it. Their names are checked
 * (valid, free) before step 1. Each is then made as create makes one: its lock, its record
 * "creating", its directories, "stopped" (a crash in between leaves a "creating" record whose
 * lock is free, which recovery removes). Their stack is lowers + L, all of it their base. L's
 * lock is held until all of them reference L, so that gc cannot take a running source's L for
 * unused meanwhile. If making one fails, the ones made go again and a layer nothing references
 * then goes too (a stopped source keeps L on its stack: the same files).
 *
 * A restore gives a stopped sandbox a snapshot's stack with an empty writable layer, the same
 * way:
 *   1. one transaction: the restore intent (the stack to take), after checking the snapshot;
 *   2. the files: the upper is renamed to upper.old (the commit point) and a fresh one made;
 *   3. one transaction: the sandbox's stack becomes the intent's, the intent goes; then
 *      upper.old and the layers nothing uses any more are removed.
 * Recovery goes forward when upper.old exists, else back (drops the intent).
 *
 * A sandbox's base, what diff compares with, is the bottom base_depth layers of its stack: the
 * stack it was made with (none for create, the snapshot's for --from, the source's at a fork)
 * or last restored to. It is written in the same transaction as the stack it describes; a
 * snapshot or fork of the sandbox while stopped only adds layers above it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/util.h"
#include "control/client.h"
#include "image/root.h"
#include "manager/internal.h"
#include "workspace/diff.h"
#include "workspace/layers.h"

static const char *owner_of(const struct aj_mgr *m)
{
	return m->any_owner ? NULL : m->owner;
}

static bool running(const struct aj_sandbox_rec *r)
{
	return r->state == AJ_ST_RUNNING || r->state == AJ_ST_PAUSED;
}

/* record_intent()'s records, inside its transaction. */
static int intent_records(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *layer,
			  struct aj_snapshot_rec *snap, bool move, struct aj_err *err)
{
	if (aj_store_layer_insert(m->store, layer, AJ_SS_CREATING, err) < 0 ||
	    (snap && aj_store_snapshot_insert(m->store, snap, err) < 0))
		return -1;
	if (!move)
		return 0;
	aj_strv_push(&r->layers, layer);
	return aj_store_sandbox_update(m->store, r, err);
}

/* Step 1: the intent, in one transaction. */
static int record_intent(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *layer,
			 struct aj_snapshot_rec *snap, bool move, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (intent_records(m, r, layer, snap, move, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_store_commit(m->store, err);
}

/* Step 3. */
static int record_done(struct aj_mgr *m, const char *layer, const char *snapshot_id,
		       uint64_t bytes, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_layer_set_state(m->store, layer, AJ_SS_READY, err) < 0 ||
	    (snapshot_id &&
	     aj_store_snapshot_set_state(m->store, snapshot_id, AJ_SS_READY, (int64_t)bytes,
					 err) < 0)) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_store_commit(m->store, err);
}

/* Step 2 for a running sandbox: its processes are frozen while the upper is copied, so the
 * layer is a consistent picture of one moment. */
static int copy_live(struct aj_mgr *m, const struct aj_sandbox_rec *r, const char *layer,
		     uid_t uid, gid_t gid, uint64_t *bytes, struct aj_err *err)
{
	bool was_paused = r->state == AJ_ST_PAUSED;
	_cleanup_close_ int ctl = -1;
	int rc;

	/* The pause is leased to this connection: if we are killed while copying, the
	 * supervisor sees the connection close and resumes the sandbox itself. */
	if (!was_paused &&
	    ((ctl = aj_ctl_connect(r->socket, err)) < 0 ||
	     aj_ctl_call(ctl, json_pack("{s:s, s:b}", "op", "pause", "lease", 1), NULL, 0, NULL,
			 NULL, NULL, 30000, err) < 0))
		return -1;
	rc = aj_ws_layer_from_upper(m->state, r->id, layer, false, uid, gid, bytes, err);
	if (!was_paused)
		aj_ctl_call(ctl, json_pack("{s:s}", "op", "resume"), NULL, 0, NULL, NULL, NULL,
			    30000, rc < 0 ? NULL : err);
	return rc;
}

/* Makes the sandbox's current state a new layer (steps 1-3); the caller holds the sandbox's
 * lock and L's. A failed step 2 is settled here, not left to recovery, which skips locked
 * layers: a "creating" snapshot would keep its name taken until the next gc. */
static int freeze_layer(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *layer,
			struct aj_snapshot_rec *snap, uint64_t *bytes, struct aj_err *err)
{
	bool move = !running(r);
	uid_t uid;
	gid_t gid;
	struct stat st;
	char upper[4200];

	aj_ws_path(upper, sizeof upper, m->state, "sandboxes", r->id, "upper");
	if (stat(upper, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "upper layer of \"%s\"", r->name);
	uid = st.st_uid;
	gid = st.st_gid;
	if (snap) {
		aj_strv_copy(&snap->layers, &r->layers);
		aj_strv_push(&snap->layers, layer);
	}
	if (record_intent(m, r, layer, snap, move, err) < 0)
		return -1;
	if ((move ? aj_ws_layer_from_upper(m->state, r->id, layer, true, uid, gid, bytes, err)
		  : copy_live(m, r, layer, uid, gid, bytes, err)) < 0) {
		aj_mgr_settle_layer(m, layer, NULL);
		return -1;
	}
	return record_done(m, layer, snap ? snap->id : NULL, bytes ? *bytes : 0, err);
}

/* The image the source runs on (its policy names it by digest), "" for the host's root. */
static void snapshot_image(struct aj_snapshot_rec *s, const char *policy)
{
	_cleanup_free_ char *image = aj_policy_text_image(policy);

	snprintf(s->image, sizeof s->image, "%s", image ? image : "");
}

int aj_mgr_snapshot_fits(const struct aj_snapshot_rec *s, const char *policy, struct aj_err *err)
{
	_cleanup_free_ char *image = aj_policy_text_image(policy);

	if (strcmp(s->image, image ? image : "") == 0)
		return 0;
	if (!s->image[0])
		aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
			   "snapshot \"%s\" holds a workspace (its source ran on the host's root), "
			   "and this sandbox's root is image %s",
			   s->name, image);
	else if (!image)
		aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
			   "snapshot \"%s\" holds the system changes of a sandbox on image %s, and "
			   "this sandbox runs on the host's root",
			   s->name, s->image);
	else
		aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
			   "snapshot \"%s\" holds the system changes of a sandbox on image %s, not "
			   "on %s",
			   s->name, s->image, image);
	return aj_err_hint(err, "a snapshot goes with the root its layers were made on");
}

/* The snapshot of r, whose lock the caller holds, under its new layer's lock. */
static int snapshot_locked(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *name,
			   int64_t retention_ms, struct aj_snapshot_rec *out, struct aj_err *err)
{
	_cleanup_snapshot_rec_ struct aj_snapshot_rec s = AJ_REC_INIT;
	char layer[33];
	uint64_t bytes = 0;
	int llock, rc = -1;

	if (aj_mgr_new_id(s.id, err) < 0 || aj_mgr_new_id(layer, err) < 0 ||
	    (llock = aj_ws_layer_lock(m->state, layer, true, err)) < 0)
		return -1;
	snprintf(s.name, sizeof s.name, "%s", name ? name : "");
	if (!name)
		snprintf(s.name, sizeof s.name, "%s-%.8s", r->name, s.id);
	snprintf(s.owner, sizeof s.owner, "%s", r->owner);
	snprintf(s.source, sizeof s.source, "%s", r->id);
	snapshot_image(&s, r->policy);
	s.state = AJ_SS_CREATING;
	s.created_ms = (int64_t)aj_now_realtime_ms();
	s.retention_ms = retention_ms;
	if (freeze_layer(m, r, layer, &s, &bytes, err) == 0) {
		aj_store_event_add(m->store, r->id, "snapshot", NULL, NULL);
		rc = out ? aj_store_snapshot_get(m->store, s.id, NULL, out, err) : 0;
	}
	aj_ws_layer_unlock(m->state, layer, llock);
	return rc;
}

int aj_mgr_snapshot(struct aj_mgr *m, const char *ref, const char *name, int64_t retention_ms,
		    struct aj_snapshot_rec *out, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_close_ int lock = -1;

	if (name && !aj_mgr_name_ok(name))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "snapshot name \"%s\" is not valid",
				  name);
	if (aj_mgr_get(m, ref, &r, err) < 0 || (lock = aj_mgr_lock(m, r.id, true, err)) < 0 ||
	    aj_mgr_reread(m, &r, err) < 0)
		return -1;
	return snapshot_locked(m, &r, name, retention_ms, out, err);
}

int aj_mgr_snapshot_remove(struct aj_mgr *m, const char *ref, struct aj_err *err)
{
	_cleanup_snapshot_rec_ struct aj_snapshot_rec s = AJ_REC_INIT;
	_cleanup_strv_ struct aj_strv users = AJ_STRV_INIT;

	if (aj_store_snapshot_get(m->store, ref, owner_of(m), &s, err) < 0 ||
	    aj_store_snapshot_users(m->store, s.id, &users, err) < 0)
		return -1;
	if (users.n) {
		aj_err_set(err, AJ_LAYER_STATE, EBUSY,
			   "snapshot \"%s\" is in use by sandbox \"%s\"%s (made from it)", s.name,
			   users.v[0], users.n > 1 ? " and others" : "");
		aj_err_class(err, AJ_ERRC_WRONG_STATE);
		return aj_err_hint(err,
				   "remove the sandboxes made from it first (agentjail rm -f %s)",
				   users.v[0]);
	}
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_snapshot_delete(m->store, s.id, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	if (aj_store_commit(m->store, err) < 0)
		return -1;
	return aj_mgr_drop_unused_layers(m, NULL, err);
}

/* ---- restore ----------------------------------------------------------------------------- */

/* Restore step 1. The snapshot is read inside the transaction: a concurrent `snapshots rm`
 * either finds the intent's layers in use or has removed the snapshot, which we then see. */
static int restore_intent(struct aj_mgr *m, const char *snapshot, const char *sandbox_id,
			  struct aj_snapshot_rec *s, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_snapshot_get(m->store, snapshot, owner_of(m), s, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	if (s->state != AJ_SS_READY) {
		aj_err_set(err, AJ_LAYER_STATE, EBUSY, "snapshot \"%s\" is not complete", snapshot);
		aj_err_class(err, AJ_ERRC_WRONG_STATE);
	} else if (aj_store_restore_intent_set(m->store, sandbox_id, &s->layers, err) == 0 &&
		 aj_store_commit(m->store, err) == 0)
		return 0;
	aj_store_rollback(m->store);
	aj_snapshot_rec_free(s);
	return -1;
}

/* Restore step 3 (and the end of a recovered one). */
static int restore_finish(struct aj_mgr *m, struct aj_sandbox_rec *r, const struct aj_strv *stack,
			  const char *snapshot_id, struct aj_err *err)
{
	const struct aj_strv none = AJ_STRV_INIT;

	aj_strv_clear(&r->layers);
	aj_strv_copy(&r->layers, stack);
	if (snapshot_id)
		snprintf(r->base_snapshot, sizeof r->base_snapshot, "%s", snapshot_id);
	r->base_depth = (int64_t)stack->n; /* diff compares with the snapshot from now on */
	r->updated_ms = (int64_t)aj_now_realtime_ms();
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_sandbox_update(m->store, r, err) < 0 ||
	    aj_store_restore_intent_set(m->store, r->id, &none, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	if (aj_store_commit(m->store, err) < 0)
		return -1;
	/* Committed: what is left is garbage, which gc would find as well. */
	aj_ws_upper_drop_aside(m->state, r->id, NULL);
	aj_mgr_drop_unused_layers(m, NULL, NULL);
	return 0;
}

/* Finishes or undoes an interrupted restore of sandbox `id`, whose lock the caller holds.
 * Returns 1 if there was one, 0 if not, -1 on error. */
static int recover_restore(struct aj_mgr *m, const char *id, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv stack = AJ_STRV_INIT;
	const struct aj_strv none = AJ_STRV_INIT;
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;

	if (aj_store_restore_intent_get(m->store, id, &stack, err) < 0)
		return -1;
	if (!stack.n) { /* none; an upper.old is a finished restore's leftover */
		if (aj_ws_upper_aside_exists(m->state, id))
			aj_ws_upper_drop_aside(m->state, id, NULL);
		return 0;
	}
	if (aj_ws_upper_aside_exists(m->state, id) &&
	    aj_store_sandbox_get(m->store, id, NULL, &r, NULL) == 0) /* forward */
		return aj_ws_upper_set_aside(m->state, id, err) == 0 &&
				       restore_finish(m, &r, &stack, NULL, err) == 0
			       ? 1
			       : -1;
	/* Back: the files never changed (or the sandbox is gone). */
	if (aj_store_begin(m->store, err) < 0 ||
	    aj_store_restore_intent_set(m->store, id, &none, err) < 0 ||
	    aj_store_commit(m->store, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	return 1;
}

/* Steps 1-3 on a stopped sandbox whose lock the caller holds. */
static int restore_stopped(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *snapshot,
			   struct aj_err *err)
{
	_cleanup_snapshot_rec_ struct aj_snapshot_rec s = AJ_REC_INIT;

	if (recover_restore(m, r->id, err) < 0)
		return aj_err_prefix(err, "an earlier restore of \"%s\"", r->name);
	if (restore_intent(m, snapshot, r->id, &s, err) < 0)
		return -1;
	if (aj_ws_upper_set_aside(m->state, r->id, err) < 0) {
		recover_restore(m, r->id, NULL); /* back, or forward if the rename happened */
		return -1;
	}
	return restore_finish(m, r, &s.layers, s.id, err);
}

int aj_mgr_restore(struct aj_mgr *m, const char *ref, const char *snapshot, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_snapshot_rec_ struct aj_snapshot_rec s = AJ_REC_INIT;
	_cleanup_close_ int lock = -1;
	char id[sizeof r.id];
	bool was_running;

	/* Checked before anything stops; checked again under the lock (restore_intent). */
	if (aj_store_snapshot_get(m->store, snapshot, owner_of(m), &s, err) < 0 ||
	    aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (aj_mgr_snapshot_fits(&s, r.policy, err) < 0)
		return -1;
	was_running = running(&r);
	snprintf(id, sizeof id, "%s", r.id);
	aj_sandbox_rec_free(&r);
	/* Stopped outside the lock, as rm -f does: the supervisor records its own end. */
	if (was_running && aj_mgr_stop(m, id, err) < 0)
		return -1;
	if ((lock = aj_mgr_lock(m, id, true, err)) < 0 || aj_mgr_get(m, id, &r, err) < 0)
		return -1;
	if (r.state != AJ_ST_STOPPED)
		return aj_mgr_wrong_state(err, &r, "stopped (it was started again meanwhile)");
	if (restore_stopped(m, &r, snapshot, err) < 0)
		return -1;
	aj_store_event_add(m->store, r.id, "restore", NULL, NULL);
	if (was_running && aj_mgr_spawn(m, &r, err) < 0)
		return aj_err_prefix(err, "the workspace was restored, but");
	return 0;
}

/* One of a fork's new sandboxes (see the top of this file), made and, if `start`, started.
 * Its id goes to `made` once it exists complete, even if it then fails to start. */
static int make_fork(struct aj_mgr *m, const struct aj_sandbox_rec *src, const char *name,
		     bool start, char *made, struct aj_err *err)
{
	/* The copy's pointers are replaced before anything can fail: it frees its own. */
	_cleanup_sandbox_rec_ struct aj_sandbox_rec f = *src;
	_cleanup_close_ int lock = -1;
	char upper[4200];
	struct stat st;

	/* Same policy, labels, TTLs and layers; its own id, name, upper and compute. */
	memset(&f.labels, 0, sizeof f.labels);
	memset(&f.layers, 0, sizeof f.layers);
	f.policy = NULL;
	snprintf(f.name, sizeof f.name, "%s", name);
	f.state = AJ_ST_CREATING;
	f.generation = 0;
	f.created_ms = f.updated_ms = (int64_t)aj_now_realtime_ms();
	f.started_ms = f.stopped_ms = f.supervisor_pid = f.supervisor_start = 0;
	f.socket[0] = f.error[0] = '\0';
	aj_ws_path(upper, sizeof upper, m->state, "sandboxes", src->id, "upper");
	if (aj_mgr_new_id(f.id, err) < 0)
		return -1;
	f.policy = aj_xstrdup(src->policy);
	aj_strv_copy(&f.labels, &src->labels);
	aj_strv_copy(&f.layers, &src->layers);
	f.base_depth = (int64_t)f.layers.n; /* the source's state at the fork is its base */
	if (stat(upper, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "stat \"%s\"", upper);
	if ((lock = aj_mgr_begin_creating(m, &f, aj_ws_sandbox_disk(m->state, src->id), err)) < 0)
		return -1;
	if (aj_ws_sandbox_create(m->state, f.id, st.st_uid, st.st_gid, err) < 0 ||
	    (aj_ws_sandbox_disk(m->state, src->id) && !aj_ws_sandbox_disk(m->state, f.id) &&
	     aj_err_set(err, AJ_LAYER_STATE, 0, "fork %s: its disk quota could not be made",
			src->name) < 0)) {
		aj_mgr_discard_creating(m, f.id, NULL);
		return -1;
	}
	f.state = AJ_ST_STOPPED;
	if (aj_mgr_save(m, &f, err) < 0) {
		aj_mgr_discard_creating(m, f.id, NULL);
		return -1;
	}
	snprintf(made, sizeof f.id, "%s", f.id);
	aj_store_event_add(m->store, f.id, "create", NULL, NULL);
	return start ? aj_mgr_spawn(m, &f, err) : 0;
}

/* The new sandboxes' names (prefix-1.., the one name `exact`, or the source's name, "fork",
 * part of the layer's id and a number), each a valid name nobody has: checked before anything
 * changes. */
static int fork_names(struct aj_mgr *m, const struct aj_sandbox_rec *src, const char *layer,
		      unsigned count, const char *prefix, bool exact, struct aj_strv *out,
		      struct aj_err *err)
{
	for (unsigned i = 1; i <= count; i++) {
		_cleanup_sandbox_rec_ struct aj_sandbox_rec other = AJ_REC_INIT;
		struct aj_err e;
		char name[256];

		if (exact)
			snprintf(name, sizeof name, "%.200s", prefix);
		else if (prefix)
			snprintf(name, sizeof name, "%.200s-%u", prefix, i);
		else
			snprintf(name, sizeof name, "%.40s-fork-%.6s-%u", src->name, layer, i);
		if (!aj_mgr_name_ok(name))
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
					  "--name: \"%s\" would not be a valid sandbox name (1-63 of "
					  "A-Za-z0-9_.-, not a 16-digit hex id)",
					  name);
		if (aj_store_sandbox_get(m->store, name, NULL, &other, &e) == 0) {
			aj_err_set(err, AJ_LAYER_STATE, EEXIST, "a sandbox named \"%s\" already exists",
				   name);
			return aj_err_class(err, AJ_ERRC_EXISTS);
		}
		if (e.cls != AJ_ERRC_NOT_FOUND) {
			if (err)
				*err = e;
			return -1;
		}
		aj_strv_push(out, name);
	}
	return 0;
}

/* The sandboxes of a fork that failed go again (stopped first if started). */
static void unmake_forks(struct aj_mgr *m, const struct aj_strv *ids)
{
	for (size_t i = 0; i < ids->n; i++)
		aj_mgr_remove(m, ids->v[i], true, NULL);
}

/* The forks named in want of r, whose lock the caller holds, on r's state frozen into
 * `layer`, under that layer's lock (*llock, released by the caller). */
static int fork_locked(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *layer,
		       const struct aj_strv *want, bool start, struct aj_strv *names, int *llock,
		       struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv made = AJ_STRV_INIT;

	/* The source's state becomes a shared layer once; every fork starts on it with an
	 * empty upper of its own: constant work per fork, whatever the workspace's size. */
	if ((*llock = aj_ws_layer_lock(m->state, layer, true, err)) < 0 ||
	    freeze_layer(m, r, layer, NULL, NULL, err) < 0)
		return -1;
	if (running(r)) /* the stack a running source's forks share */
		aj_strv_push(&r->layers, layer);
	for (size_t i = 0; i < want->n; i++) {
		char id[33] = "";
		int k = make_fork(m, r, want->v[i], start, id, err);
		if (id[0])
			aj_strv_push(&made, id);
		if (k < 0) {
			unmake_forks(m, &made);
			return -1;
		}
	}
	aj_store_event_add(m->store, r->id, "fork", NULL, NULL);
	for (size_t i = 0; names && i < want->n; i++)
		aj_strv_push(names, want->v[i]);
	return 0;
}

static int fork_sandboxes(struct aj_mgr *m, const char *ref, unsigned count, const char *prefix,
			  bool exact, bool start, struct aj_strv *names, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_strv_ struct aj_strv want = AJ_STRV_INIT;
	_cleanup_close_ int lock = -1;
	char layer[33];
	int llock = -1, rc;

	if (count == 0 || count > 1000)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "fork: --count must be 1 to 1000");
	if (aj_mgr_get(m, ref, &r, err) < 0 || (lock = aj_mgr_lock(m, r.id, true, err)) < 0 ||
	    aj_mgr_reread(m, &r, err) < 0 || aj_mgr_new_id(layer, err) < 0 ||
	    fork_names(m, &r, layer, count, prefix, exact, &want, err) < 0)
		return -1;
	rc = fork_locked(m, &r, layer, &want, start, names, &llock, err);
	aj_ws_layer_unlock(m->state, layer, llock);
	if (rc < 0 && llock >= 0) /* a running source's layer, if nothing references it now */
		aj_mgr_drop_unused_layers(m, NULL, NULL);
	return rc;
}

int aj_mgr_fork(struct aj_mgr *m, const char *ref, unsigned count, const char *prefix,
		bool start, struct aj_strv *names, struct aj_err *err)
{
	return fork_sandboxes(m, ref, count, prefix, false, start, names, err);
}

int aj_mgr_fork_named(struct aj_mgr *m, const char *ref, const char *name, bool start,
		      struct aj_strv *names, struct aj_err *err)
{
	return fork_sandboxes(m, ref, 1, name, true, start, names, err);
}

/* How many layers at the bottom of r's stack are its base. Records made before the base was
 * stored have base_depth -1: their base snapshot's stack, or none. */
size_t aj_mgr_base_depth(struct aj_mgr *m, const struct aj_sandbox_rec *r)
{
	_cleanup_snapshot_rec_ struct aj_snapshot_rec s = AJ_REC_INIT;
	size_t d = 0;

	if (r->base_depth >= 0)
		d = (size_t)r->base_depth;
	else if (r->base_snapshot[0] &&
		 aj_store_snapshot_get(m->store, r->base_snapshot, NULL, &s, NULL) == 0)
		d = s.layers.n;
	return d < r->layers.n ? d : r->layers.n;
}

/* An image sandbox's base starts with the image: its layers and the init layer, bottom
 * first, as its root stacks them. */
static int image_base(struct aj_mgr *m, const struct aj_sandbox_rec *r, struct aj_strv *base,
		      struct aj_err *err)
{
	_cleanup_free_ char *image = aj_policy_text_image(r->policy);
	struct aj_images im;
	struct aj_image_root root;
	int rc;

	if (!image)
		return 0;
	rc = aj_images_open(m->state, m->store, &im, err);
	if (rc == 0) {
		rc = aj_image_root_open(&im, r->owner, image, &root, err);
		if (rc == 0)
			for (size_t i = 0; i < root.lowers.n; i++)
				aj_strv_push(base, root.lowers.v[i]);
		aj_image_root_close(&root);
	}
	aj_images_close(&im);
	return rc;
}

/* What the sandbox changed since its base: its own layers (snapshots and forks of it while
 * stopped moved its upper into them) and its upper, against the base's stack. */
int aj_mgr_diff(struct aj_mgr *m, const char *ref,
		int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_strv_ struct aj_strv base = AJ_STRV_INIT, own = AJ_STRV_INIT;
	char path[4200];
	size_t depth;
	int rc;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (image_base(m, &r, &base, err) < 0)
		return -1;
	depth = aj_mgr_base_depth(m, &r);
	for (size_t i = 0; i < r.layers.n; i++) {
		aj_ws_path(path, sizeof path, m->state, "layers", r.layers.v[i], NULL);
		aj_strv_push(i < depth ? &base : &own, path);
	}
	aj_ws_path(path, sizeof path, m->state, "sandboxes", r.id, "upper");
	rc = aj_ws_diff_stack(&base, &own, path, fn, arg, err);
	if (rc < 0)
		aj_err_prefix(err, "diff of \"%s\"", r.name);
	return rc;
}

/* Restores a crash interrupted, for the sandboxes whose lock is free. */
static int recover_restores(struct aj_mgr *m, unsigned *recovered, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv ids = AJ_STRV_INIT;

	if (aj_store_restore_intents(m->store, &ids, err) < 0)
		return -1;
	for (size_t i = 0; i < ids.n; i++) {
		_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
		_cleanup_close_ int lock = -1;
		struct aj_err e;
		/* A deleted sandbox's intent is dropped without making its directory for a lock. */
		if (aj_store_sandbox_get(m->store, ids.v[i], NULL, &r, &e) == 0) {
			if ((lock = aj_mgr_lock(m, ids.v[i], false, NULL)) < 0)
				continue; /* in progress right now */
		} else if (e.cls != AJ_ERRC_NOT_FOUND) {
			continue;
		}
		if (recover_restore(m, ids.v[i], NULL) > 0)
			(*recovered)++;
	}
	return 0;
}

/* Finishes or undoes the snapshots, forks, restores and creates a crash interrupted (see the
 * top of this file), those nobody is at work on. */
int aj_mgr_recover(struct aj_mgr *m, unsigned *recovered, struct aj_err *err)
{
	*recovered = 0;
	if (recover_restores(m, recovered, err) < 0 || aj_mgr_recover_layers(m, recovered, err) < 0)
		return -1;
	return aj_mgr_recover_creating(m, recovered, err);
}
