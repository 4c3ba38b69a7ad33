/* The sandboxes table and its labels: a sandbox's record, looked up by id or name (the
 * generic lookup of store.c), listed by owner and labels, updated, deleted. Its layer stack
 * is kept in the stacks table (stacks.c). */
#include "state/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "state/internal.h"

#define SB_COLS                                                                           \
	"id, name, owner, policy, state, generation, created_ms, updated_ms, started_ms,"  \
	" stopped_ms, last_active_ms, idle_timeout_ms, idle_action, max_lifetime_ms,"     \
	" retention_ms, base_snapshot, supervisor_pid, supervisor_start, socket, error,"   \
	" base_depth, lifetime_action"

static const char *const state_names[] = {
	[AJ_ST_CREATING] = "creating", [AJ_ST_RUNNING] = "running", [AJ_ST_PAUSED] = "paused",
	[AJ_ST_STOPPED] = "stopped",   [AJ_ST_DELETING] = "deleting",
};

const char *aj_sandbox_state_name(enum aj_sandbox_state st)
{
	return (size_t)st < AJ_ARRAY_SIZE(state_names) ? state_names[st] : "?";
}

int aj_sandbox_state_parse(const char *name, enum aj_sandbox_state *st)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(state_names); i++)
		if (strcmp(name, state_names[i]) == 0) {
			*st = (enum aj_sandbox_state)i;
			return 0;
		}
	return -1;
}

static void bind_sandbox(sqlite3_stmt *st, const struct aj_sandbox_rec *r)
{
	state_bind_text(st, 1, r->id);
	state_bind_text(st, 2, r->name);
	state_bind_text(st, 3, r->owner);
	state_bind_text(st, 4, r->policy);
	state_bind_text(st, 5, aj_sandbox_state_name(r->state));
	sqlite3_bind_int64(st, 6, r->generation);
	sqlite3_bind_int64(st, 7, r->created_ms);
	sqlite3_bind_int64(st, 8, r->updated_ms);
	sqlite3_bind_int64(st, 9, r->started_ms);
	sqlite3_bind_int64(st, 10, r->stopped_ms);
	sqlite3_bind_int64(st, 11, r->last_active_ms);
	sqlite3_bind_int64(st, 12, r->idle_timeout_ms);
	state_bind_text(st, 13, r->idle_action[0] ? r->idle_action : "pause");
	sqlite3_bind_int64(st, 14, r->max_lifetime_ms);
	sqlite3_bind_int64(st, 15, r->retention_ms);
	state_bind_text(st, 16, r->base_snapshot);
	sqlite3_bind_int64(st, 17, r->supervisor_pid);
	sqlite3_bind_int64(st, 18, r->supervisor_start);
	state_bind_text(st, 19, r->socket);
	state_bind_text(st, 20, r->error);
	sqlite3_bind_int64(st, 21, r->base_depth);
	state_bind_text(st, 22, r->lifetime_action[0] ? r->lifetime_action : "stop");
}

static int read_sandbox(sqlite3_stmt *st, void *rec, struct aj_err *err)
{
	struct aj_sandbox_rec *r = rec;
	const unsigned char *policy = sqlite3_column_text(st, 3);
	const unsigned char *state = sqlite3_column_text(st, 4);

	memset(r, 0, sizeof *r);
	state_col_copy(st, 0, r->id, sizeof r->id);
	state_col_copy(st, 1, r->name, sizeof r->name);
	state_col_copy(st, 2, r->owner, sizeof r->owner);
	r->policy = aj_xstrdup(policy ? (const char *)policy : "{}");
	if (aj_sandbox_state_parse(state ? (const char *)state : "", &r->state) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, EPROTO,
				  "sandbox \"%s\" has a state agentjail does not know (\"%s\")",
				  r->id, state ? (const char *)state : "");
	r->generation = sqlite3_column_int64(st, 5);
	r->created_ms = sqlite3_column_int64(st, 6);
	r->updated_ms = sqlite3_column_int64(st, 7);
	r->started_ms = sqlite3_column_int64(st, 8);
	r->stopped_ms = sqlite3_column_int64(st, 9);
	r->last_active_ms = sqlite3_column_int64(st, 10);
	r->idle_timeout_ms = sqlite3_column_int64(st, 11);
	state_col_copy(st, 12, r->idle_action, sizeof r->idle_action);
	r->max_lifetime_ms = sqlite3_column_int64(st, 13);
	r->retention_ms = sqlite3_column_int64(st, 14);
	state_col_copy(st, 15, r->base_snapshot, sizeof r->base_snapshot);
	r->supervisor_pid = sqlite3_column_int64(st, 16);
	r->supervisor_start = sqlite3_column_int64(st, 17);
	state_col_copy(st, 18, r->socket, sizeof r->socket);
	state_col_copy(st, 19, r->error, sizeof r->error);
	r->base_depth = sqlite3_column_int64(st, 20);
	state_col_copy(st, 21, r->lifetime_action, sizeof r->lifetime_action);
	return 0;
}

/* Its labels and its layer stack. */
static int load_sandbox(struct aj_store *s, void *rec, struct aj_err *err)
{
	struct aj_sandbox_rec *r = rec;

	if (state_load_strv(s, "SELECT key || '=' || value FROM labels WHERE sandbox_id = ?1 "
			       "ORDER BY key",
			    r->id, NULL, &r->labels, err) < 0)
		return -1;
	return state_stack_load(s, "sandbox", r->id, &r->layers, err);
}

static void free_sandbox(void *rec)
{
	aj_sandbox_rec_free(rec);
}

static const struct state_table sandboxes = {
	.noun = "sandbox",
	.plural = "sandboxes",
	.by_ref = "SELECT " SB_COLS " FROM sandboxes WHERE (id = ?1 OR name = ?1) AND (?2 IS "
		  "NULL OR owner = ?2)",
	.by_owner = "SELECT " SB_COLS " FROM sandboxes WHERE ?1 IS NULL OR owner = ?1 ORDER BY "
		    "created_ms, id",
	.size = sizeof(struct aj_sandbox_rec),
	.read = read_sandbox,
	.load = load_sandbox,
	.free = free_sandbox,
};

static int insert_labels(struct aj_store *s, const struct aj_sandbox_rec *r, struct aj_err *err)
{
	for (size_t i = 0; i < r->labels.n; i++) {
		const char *kv = r->labels.v[i], *eq = strchr(kv, '=');
		_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "INSERT INTO labels (sandbox_id, key, value) VALUES (?1, ?2, ?3)",
			   err);
		if (!st)
			return -1;
		state_bind_text(st, 1, r->id);
		sqlite3_bind_text(st, 2, kv, eq ? (int)(eq - kv) : -1, SQLITE_TRANSIENT);
		state_bind_text(st, 3, eq ? eq + 1 : "");
		if (state_run(s, st, "add a label", err) < 0)
			return -1;
	}
	return 0;
}

int aj_store_sandbox_insert(struct aj_store *s, const struct aj_sandbox_rec *r,
			    struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "INSERT INTO sandboxes (" SB_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
			      "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
			      "?21, ?22)", err);

	if (!st)
		return -1;
	bind_sandbox(st, r);
	if (state_run(s, st, "add the sandbox", err) < 0) {
		/* The only constraint on a new row's columns is the unique name. */
		if (err && err->errnum == EEXIST)
			state_name_taken(err, "sandbox", r->name);
		return -1;
	}
	if (insert_labels(s, r, err) < 0)
		return -1;
	return state_stack_save(s, "sandbox", r->id, &r->layers, err);
}

int aj_store_sandbox_get(struct aj_store *s, const char *ref, const char *owner,
			 struct aj_sandbox_rec *out, struct aj_err *err)
{
	return state_get_by_ref(s, &sandboxes, ref, owner, out, err);
}

static bool has_labels(const struct aj_sandbox_rec *r, const struct aj_strv *want)
{
	for (size_t i = 0; want && i < want->n; i++)
		if (!aj_strv_contains(&r->labels, want->v[i]))
			return false;
	return true;
}

int aj_store_sandbox_list(struct aj_store *s, const char *owner, const struct aj_strv *labels,
			  struct aj_sandbox_rec **out, size_t *n, struct aj_err *err)
{
	void *all = NULL;
	struct aj_sandbox_rec *v;
	size_t cnt = 0, kept = 0;

	if (state_list(s, &sandboxes, owner, &all, &cnt, err) < 0)
		return -1;
	v = all;
	for (size_t i = 0; i < cnt; i++) {
		if (has_labels(&v[i], labels))
			v[kept++] = v[i];
		else
			aj_sandbox_rec_free(&v[i]);
	}
	*out = v;
	*n = kept;
	return 0;
}

int aj_store_sandbox_update(struct aj_store *s, const struct aj_sandbox_rec *r,
			    struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(
		s, "UPDATE sandboxes SET name = ?2, owner = ?3, policy = ?4, state = ?5, "
		   "generation = ?6, created_ms = ?7, updated_ms = ?8, started_ms = ?9, "
		   "stopped_ms = ?10, last_active_ms = ?11, idle_timeout_ms = ?12, idle_action "
		   "= ?13, max_lifetime_ms = ?14, retention_ms = ?15, base_snapshot = ?16, "
		   "supervisor_pid = ?17, supervisor_start = ?18, socket = ?19, error = ?20, "
		   "base_depth = ?21, lifetime_action = ?22 WHERE id = ?1",
		err);

	if (!st)
		return -1;
	bind_sandbox(st, r);
	if (state_run(s, st, "update the sandbox", err) < 0)
		return -1;
	if (sqlite3_changes(s->db) == 0) /* removed meanwhile */
		return state_not_found(err, "sandbox", r->name);
	return state_stack_save(s, "sandbox", r->id, &r->layers, err);
}

int aj_store_sandbox_set_labels(struct aj_store *s, const struct aj_sandbox_rec *r,
				struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "DELETE FROM labels WHERE sandbox_id = ?1", err);

	if (!st)
		return -1;
	state_bind_text(st, 1, r->id);
	if (state_run(s, st, "replace the labels", err) < 0)
		return -1;
	return insert_labels(s, r, err);
}

int aj_store_sandbox_touch(struct aj_store *s, const char *id, int64_t now_ms,
			   struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "UPDATE sandboxes SET last_active_ms = ?2 WHERE id = ?1", err);


	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	sqlite3_bind_int64(st, 2, now_ms);
	return state_run(s, st, "record activity", err);
}

int aj_store_sandbox_delete(struct aj_store *s, const char *id, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	/* Labels go with the row (ON DELETE CASCADE); the stack has no foreign key to it. */
	if (state_stack_delete(s, "sandbox", id, err) < 0)
		return -1;
	st = state_prep(s, "DELETE FROM sandboxes WHERE id = ?1", err);
	if (!st)
		return -1;
	state_bind_text(st, 1, id);
	return state_run(s, st, "delete the sandbox", err);
}

void aj_sandbox_rec_free(struct aj_sandbox_rec *r)
{
	free(r->policy);
	r->policy = NULL;
	aj_strv_free(&r->labels);
	aj_strv_free(&r->layers);
}

void aj_sandbox_recs_free(struct aj_sandbox_rec *r, size_t n)
{
	state_recs_free(&sandboxes, r, n);
}
