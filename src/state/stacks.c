/* The layers table and the stacks that order layers under sandboxes, snapshots and restores
 * in progress: a layer's state, who uses it, which are unused, and the restore intents. */
#include "state/store.h"

#include <stdio.h>

#include "common/util.h"
#include "state/internal.h"

/* ---- stacks --------------------------------------------------------------------------- */

static int clear_stack(struct aj_store *s, const char *kind, const char *id, const char *what,
		       struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "DELETE FROM stacks WHERE kind = ?1 AND owner_id = ?2", err);


	if (!st)
		return -1;
	state_bind_text(st, 1, kind);
	state_bind_text(st, 2, id);
	return state_run(s, st, what, err);
}

static int stack_row(struct aj_store *s, const char *kind, const char *id, size_t position,
		     const char *layer, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "INSERT INTO stacks (kind, owner_id, position, layer_id) VALUES "
			      "(?1, ?2, ?3, ?4)", err);

	if (!st)
		return -1;
	state_bind_text(st, 1, kind);
	state_bind_text(st, 2, id);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)position);
	state_bind_text(st, 4, layer);
	return state_run(s, st, "save a layer stack", err);
}

int state_stack_save(struct aj_store *s, const char *kind, const char *id,
		     const struct aj_strv *layers, struct aj_err *err)
{
	if (clear_stack(s, kind, id, "clear a layer stack", err) < 0)
		return -1;
	for (size_t i = 0; i < layers->n; i++)
		if (stack_row(s, kind, id, i, layers->v[i], err) < 0)
			return -1;
	return 0;
}

int state_stack_load(struct aj_store *s, const char *kind, const char *id,
		     struct aj_strv *layers, struct aj_err *err)
{
	return state_load_strv(s, "SELECT layer_id FROM stacks WHERE owner_id = ?1 AND kind = ?2 "
				  "ORDER BY position",
			       id, kind, layers, err);
}

int state_stack_delete(struct aj_store *s, const char *kind, const char *id,
		       struct aj_err *err)
{
	char what[64];

	snprintf(what, sizeof what, "delete the %s's stack", kind);
	return clear_stack(s, kind, id, what, err);
}

/* ---- layers --------------------------------------------------------------------------- */

int aj_store_layer_insert(struct aj_store *s, const char *id, enum aj_store_state state,
			  struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "INSERT INTO layers (id, state, created_ms) VALUES (?1, ?2, ?3)",
			   err);

	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	state_bind_text(st, 2, aj_store_state_name(state));
	sqlite3_bind_int64(st, 3, (sqlite3_int64)aj_now_realtime_ms());
	return state_run(s, st, "add a layer", err);
}

int aj_store_layer_set_state(struct aj_store *s, const char *id, enum aj_store_state state,
			     struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "UPDATE layers SET state = ?2 WHERE id = ?1", err);


	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	state_bind_text(st, 2, aj_store_state_name(state));
	return state_run(s, st, "update a layer", err);
}

int aj_store_layers_unused(struct aj_store *s, struct aj_strv *ids, struct aj_err *err)
{
	/* Layers still "creating" belong to an operation in progress or to crash recovery. */
	return state_load_strv(s, "SELECT id FROM layers WHERE state = 'ready' AND id NOT IN "
			          "(SELECT layer_id FROM stacks) ORDER BY id",
			       NULL, NULL, ids, err);
}

int aj_store_layers_in_state(struct aj_store *s, enum aj_store_state state, struct aj_strv *ids,
			     struct aj_err *err)
{
	return state_load_strv(s, "SELECT id FROM layers WHERE state = ?1 ORDER BY id",
			       aj_store_state_name(state), NULL, ids, err);
}

int aj_store_layer_sandboxes(struct aj_store *s, const char *layer, struct aj_strv *ids,
			     struct aj_err *err)
{
	return state_load_strv(s, "SELECT DISTINCT owner_id FROM stacks WHERE kind = 'sandbox' "
			          "AND layer_id = ?1 ORDER BY owner_id",
			       layer, NULL, ids, err);
}

int aj_store_sandbox_drop_layer(struct aj_store *s, const char *sandbox, const char *layer,
				struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "DELETE FROM stacks WHERE kind = 'sandbox' AND owner_id = ?1 AND "
			      "layer_id = ?2", err);

	if (!st)
		return -1;
	state_bind_text(st, 1, sandbox);
	state_bind_text(st, 2, layer);
	return state_run(s, st, "drop a layer from a stack", err);
}

int aj_store_layer_get(struct aj_store *s, const char *id, enum aj_store_state *state,
		       struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "SELECT state FROM layers WHERE id = ?1", err);

	int rc;

	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && state_col_state(st, 0, "a layer", state, err) < 0)
		return aj_err_prefix(err, "layer \"%s\"", id);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return state_db_error(s, err, "read a layer");
	return rc == SQLITE_ROW;
}

int aj_store_layer_snapshots(struct aj_store *s, const char *layer, struct aj_strv *ids,
			     struct aj_err *err)
{
	return state_load_strv(s, "SELECT DISTINCT owner_id FROM stacks WHERE kind = 'snapshot' "
			          "AND layer_id = ?1 ORDER BY owner_id",
			       layer, NULL, ids, err);
}

int aj_store_layer_delete_unused(struct aj_store *s, const char *id, bool *deleted,
				 struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "DELETE FROM layers WHERE id = ?1 AND state = 'ready' AND id NOT "
			      "IN (SELECT layer_id FROM stacks)", err);

	*deleted = false;
	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	if (state_run(s, st, "delete a layer", err) < 0)
		return -1;
	*deleted = sqlite3_changes(s->db) > 0;
	return 0;
}

int aj_store_layer_delete(struct aj_store *s, const char *id, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(s, "DELETE FROM layers WHERE id = ?1", err);

	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	return state_run(s, st, "delete a layer", err);
}

/* ---- restore intents ------------------------------------------------------------------- */

/* Kept in the stacks table under their own kind: a layer an intent names is then "used"
 * (aj_store_layers_unused) and cannot be removed under a restore that needs it. */
int aj_store_restore_intent_set(struct aj_store *s, const char *sandbox_id,
				const struct aj_strv *layers, struct aj_err *err)
{
	return state_stack_save(s, "restore", sandbox_id, layers, err);
}

int aj_store_restore_intent_get(struct aj_store *s, const char *sandbox_id,
				struct aj_strv *layers, struct aj_err *err)
{
	return state_stack_load(s, "restore", sandbox_id, layers, err);
}

int aj_store_restore_intents(struct aj_store *s, struct aj_strv *sandbox_ids,
			     struct aj_err *err)
{
	return state_load_strv(s, "SELECT DISTINCT owner_id FROM stacks WHERE kind = 'restore' "
			          "ORDER BY owner_id",
			       NULL, NULL, sandbox_ids, err);
}
