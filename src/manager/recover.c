/* Settling layers and sandboxes whose making stopped halfway (the steps are at the top of
 * snapshot.c): layers left "creating" by a snapshot or fork, sandboxes left "creating" by
 * create or fork. Only what nobody is at work on is touched: a layer's creator holds the
 * layer's lock, a sandbox's maker the sandbox's lock, from before their records exist until
 * they are complete or undone, and the kernel releases both if the holder dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tree.h"
#include "manager/internal.h"
#include "workspace/layers.h"

/* Forward: layers/L exists. A sandbox whose upper became L gets a new empty one (and work),
 * then L and its snapshot are marked ready. Left "creating" if that fails: the next recovery
 * tries again, and start says what is missing meanwhile. */
/* layer_forward()'s records, inside its transaction. */
static int mark_ready(struct aj_mgr *m, const char *layer, const struct aj_strv *snaps,
		      uint64_t bytes, struct aj_err *err)
{
	if (aj_store_layer_set_state(m->store, layer, AJ_SS_READY, err) < 0)
		return -1;
	for (size_t i = 0; i < snaps->n; i++)
		if (aj_store_snapshot_set_state(m->store, snaps->v[i], AJ_SS_READY, (int64_t)bytes,
						err) < 0)
			return -1;
	return 0;
}

static int layer_forward(struct aj_mgr *m, const char *layer, const char *dir,
			 const struct aj_strv *users, const struct aj_strv *snaps,
			 struct aj_err *err)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < users->n; i++)
		if (aj_ws_sandbox_repair(m->state, users->v[i], dir, err) < 0)
			return -1;
	if (snaps->n) {
		_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			aj_tree_size(fd, &bytes, NULL);
	}
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (mark_ready(m, layer, snaps, bytes, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_store_commit(m->store, err);
}

/* layer_back()'s records, inside its transaction. */
static int drop_records(struct aj_mgr *m, const char *layer, const struct aj_strv *users,
			const struct aj_strv *snaps, struct aj_err *err)
{
	for (size_t i = 0; i < snaps->n; i++)
		if (aj_store_snapshot_delete(m->store, snaps->v[i], err) < 0)
			return -1;
	for (size_t i = 0; i < users->n; i++)
		if (aj_store_sandbox_drop_layer(m->store, users->v[i], layer, err) < 0)
			return -1;
	return aj_store_layer_delete(m->store, layer, err);
}

/* Back: the files never became the layer. Its snapshot and the layer go, a stopped source's
 * stack drops it again (its upper was not moved), then what a copy left in .tmp-L. */
static int layer_back(struct aj_mgr *m, const char *layer, const struct aj_strv *users,
		      const struct aj_strv *snaps, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (drop_records(m, layer, users, snaps, err) < 0 || aj_store_commit(m->store, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_ws_layer_discard(m->state, layer, err);
}

int aj_mgr_settle_layer(struct aj_mgr *m, const char *layer, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv users = AJ_STRV_INIT, snaps = AJ_STRV_INIT;
	char dir[4200];

	aj_ws_path(dir, sizeof dir, m->state, "layers", layer, NULL);
	if (aj_store_layer_sandboxes(m->store, layer, &users, err) < 0 ||
	    aj_store_layer_snapshots(m->store, layer, &snaps, err) < 0)
		return -1;
	return access(dir, F_OK) == 0 ? layer_forward(m, layer, dir, &users, &snaps, err)
				      : layer_back(m, layer, &users, &snaps, err);
}

/* Locks every sandbox in ids without waiting: an array of descriptors, or NULL (nothing
 * held) if one is busy. */
static int *lock_all(struct aj_mgr *m, const struct aj_strv *ids)
{
	int *locks = aj_xcalloc(ids->n + 1, sizeof *locks);

	for (size_t i = 0; i < ids->n; i++) {
		if ((locks[i] = aj_mgr_lock(m, ids->v[i], false, NULL)) >= 0)
			continue;
		while (i-- > 0)
			close(locks[i]);
		free(locks);
		return NULL;
	}
	return locks;
}

static void unlock_all(int *locks, size_t n)
{
	for (size_t i = 0; locks && i < n; i++)
		close(locks[i]);
	free(locks);
}

/* One "creating" layer, if its creator is gone. 1 if it was settled. */
static int recover_layer(struct aj_mgr *m, const char *layer)
{
	_cleanup_strv_ struct aj_strv users = AJ_STRV_INIT;
	enum aj_store_state st;
	int lock, *locks = NULL, rc = 0;

	if ((lock = aj_ws_layer_lock(m->state, layer, false, NULL)) < 0)
		return 0; /* its creator is at work */
	/* Again with the lock held: the creator may have finished since the list was read. The
	 * sandboxes whose stack holds it are locked too, as any change to their stack is. */
	if (aj_store_layer_get(m->store, layer, &st, NULL) == 1 && st == AJ_SS_CREATING &&
	    aj_store_layer_sandboxes(m->store, layer, &users, NULL) == 0 &&
	    (locks = lock_all(m, &users)))
		rc = aj_mgr_settle_layer(m, layer, NULL) == 0;
	unlock_all(locks, users.n);
	aj_ws_layer_unlock(m->state, layer, lock);
	return rc;
}

int aj_mgr_recover_layers(struct aj_mgr *m, unsigned *recovered, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv layers = AJ_STRV_INIT;

	if (aj_store_layers_in_state(m->store, AJ_SS_CREATING, &layers, err) < 0)
		return -1;
	for (size_t i = 0; i < layers.n; i++)
		*recovered += (unsigned)recover_layer(m, layers.v[i]);
	return 0;
}

/* A "creating" sandbox holds no user data: its maker had not finished making its empty
 * upper (or its fork's). Removed whole, record first. */
int aj_mgr_recover_creating(struct aj_mgr *m, unsigned *recovered, struct aj_err *err)
{
	struct aj_sandbox_rec *v = NULL;
	size_t n = 0;

	if (aj_store_sandbox_list(m->store, NULL, NULL, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
		_cleanup_close_ int lock = -1;
		if (v[i].state != AJ_ST_CREATING ||
		    (lock = aj_mgr_lock(m, v[i].id, false, NULL)) < 0)
			continue; /* complete, or its maker is at work */
		if (aj_store_sandbox_get(m->store, v[i].id, NULL, &r, NULL) == 0 &&
		    r.state == AJ_ST_CREATING && aj_mgr_discard_creating(m, r.id, NULL) == 0) {
			aj_store_event_add(m->store, r.id, "remove",
					   "{\"reason\":\"its creation was interrupted\"}", NULL);
			(*recovered)++;
		}
	}
	aj_sandbox_recs_free(v, n);
	return 0;
}
