/* The snapshots table: a snapshot's record, looked up by id or name with the generic lookup
 * of store.c (as sandboxes are), listed by owner, settled, deleted, and the sandboxes that
 * use it. Its layer stack is kept in the stacks table (stacks.c). */
#include "state/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "state/internal.h"

#define SNAP_COLS "id, name, owner, source, state, created_ms, retention_ms, size_bytes, image"

static int read_snapshot(sqlite3_stmt *st, void *rec, struct aj_err *err)
{
	struct aj_snapshot_rec *r = rec;

	memset(r, 0, sizeof *r);
	state_col_copy(st, 0, r->id, sizeof r->id);
	state_col_copy(st, 1, r->name, sizeof r->name);
	state_col_copy(st, 2, r->owner, sizeof r->owner);
	state_col_copy(st, 3, r->source, sizeof r->source);
	if (state_col_state(st, 4, "a snapshot", &r->state, err) < 0)
		return aj_err_prefix(err, "snapshot \"%s\"", r->id);
	r->created_ms = sqlite3_column_int64(st, 5);
	r->retention_ms = sqlite3_column_int64(st, 6);
	r->size_bytes = sqlite3_column_int64(st, 7);
	state_col_copy(st, 8, r->image, sizeof r->image);
	return 0;
}

static int load_snapshot(struct aj_store *s, void *rec, struct aj_err *err)
{
	struct aj_snapshot_rec *r = rec;

	return state_stack_load(s, "snapshot", r->id, &r->layers, err);
}

static void free_snapshot(void *rec)
{
	aj_snapshot_rec_free(rec);
}

static const struct state_table snapshots = {
	.noun = "snapshot",
	.plural = "snapshots",
	.by_ref = "SELECT " SNAP_COLS " FROM snapshots WHERE (id = ?1 OR name = ?1) AND (?2 IS "
		  "NULL OR owner = ?2)",
	.by_owner = "SELECT " SNAP_COLS " FROM snapshots WHERE ?1 IS NULL OR owner = ?1 ORDER "
		    "BY created_ms, id",
	.size = sizeof(struct aj_snapshot_rec),
	.read = read_snapshot,
	.load = load_snapshot,
	.free = free_snapshot,
};

int aj_store_snapshot_insert(struct aj_store *s, const struct aj_snapshot_rec *r,
			     struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "INSERT INTO snapshots (" SNAP_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, "
			      "?6, ?7, ?8, ?9)", err);

	if (!st)
		return -1;
	state_bind_text(st, 1, r->id);
	state_bind_text(st, 2, r->name);
	state_bind_text(st, 3, r->owner);
	state_bind_text(st, 4, r->source);
	state_bind_text(st, 5, aj_store_state_name(r->state));
	sqlite3_bind_int64(st, 6, r->created_ms);
	sqlite3_bind_int64(st, 7, r->retention_ms);
	sqlite3_bind_int64(st, 8, r->size_bytes);
	state_bind_text(st, 9, r->image);
	if (state_run(s, st, "add the snapshot", err) < 0) {
		if (err && err->errnum == EEXIST)
			state_name_taken(err, "snapshot", r->name);
		return -1;
	}
	return state_stack_save(s, "snapshot", r->id, &r->layers, err);
}

int aj_store_snapshot_get(struct aj_store *s, const char *ref, const char *owner,
			  struct aj_snapshot_rec *out, struct aj_err *err)
{
	return state_get_by_ref(s, &snapshots, ref, owner, out, err);
}

int aj_store_snapshot_list(struct aj_store *s, const char *owner, struct aj_snapshot_rec **out,
			   size_t *n, struct aj_err *err)
{
	void *v = NULL;

	if (state_list(s, &snapshots, owner, &v, n, err) < 0)
		return -1;
	*out = v;
	return 0;
}

int aj_store_snapshot_set_state(struct aj_store *s, const char *id, enum aj_store_state state,
				int64_t size_bytes, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "UPDATE snapshots SET state = ?2, size_bytes = ?3 WHERE id = ?1",
			   err);

	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	state_bind_text(st, 2, aj_store_state_name(state));
	sqlite3_bind_int64(st, 3, size_bytes);
	return state_run(s, st, "update the snapshot", err);
}

int aj_store_snapshot_delete(struct aj_store *s, const char *id, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (state_stack_delete(s, "snapshot", id, err) < 0)
		return -1;
	st = state_prep(s, "DELETE FROM snapshots WHERE id = ?1", err);
	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	return state_run(s, st, "delete the snapshot", err);
}

int aj_store_snapshot_users(struct aj_store *s, const char *id, struct aj_strv *names,
			    struct aj_err *err)
{
	/* The snapshot's own source is no user: a snapshot of a stopped sandbox puts the layer on
	 * the source's stack too, and the stack keeps the layer when the snapshot goes. */
	return state_load_strv(s, "SELECT DISTINCT sb.name FROM sandboxes sb JOIN stacks st "
			          "ON st.kind = 'sandbox' AND st.owner_id = sb.id WHERE "
			          "st.layer_id = (SELECT layer_id FROM stacks WHERE kind = "
			          "'snapshot' AND owner_id = ?1 ORDER BY position DESC LIMIT 1) "
			          "AND sb.id NOT IN (SELECT source FROM snapshots WHERE id = ?1) "
			          "ORDER BY sb.name",
			       id, NULL, names, err);
}

void aj_snapshot_rec_free(struct aj_snapshot_rec *r)
{
	aj_strv_free(&r->layers);
}

void aj_snapshot_recs_free(struct aj_snapshot_rec *r, size_t n)
{
	state_recs_free(&snapshots, r, n);
}
