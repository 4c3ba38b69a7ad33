#include "state/store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

struct aj_store {
	sqlite3 *db;
	char dir[4096];
};

/* Schema migrations, applied in order; PRAGMA user_version records how many ran. Never edit
 * a released step: add a new one. */
static const char *const migrations[] = {
	"CREATE TABLE sandboxes ("
	" id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, owner TEXT NOT NULL DEFAULT '',"
	" policy TEXT NOT NULL, state TEXT NOT NULL, generation INTEGER NOT NULL DEFAULT 0,"
	" created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, started_ms INTEGER NOT NULL"
	" DEFAULT 0, stopped_ms INTEGER NOT NULL DEFAULT 0, last_active_ms INTEGER NOT NULL"
	" DEFAULT 0, idle_timeout_ms INTEGER NOT NULL DEFAULT 0, idle_action TEXT NOT NULL"
	" DEFAULT 'pause', max_lifetime_ms INTEGER NOT NULL DEFAULT 0, retention_ms INTEGER"
	" NOT NULL DEFAULT 0, base_snapshot TEXT NOT NULL DEFAULT '', supervisor_pid INTEGER"
	" NOT NULL DEFAULT 0, supervisor_start INTEGER NOT NULL DEFAULT 0, socket TEXT NOT NULL"
	" DEFAULT '', error TEXT NOT NULL DEFAULT '');"
	"CREATE TABLE labels (sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE"
	" CASCADE, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (sandbox_id, key));"
	"CREATE TABLE layers (id TEXT PRIMARY KEY, state TEXT NOT NULL, created_ms INTEGER NOT"
	" NULL);"
	"CREATE TABLE snapshots (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, owner TEXT NOT"
	" NULL DEFAULT '', source TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, created_ms"
	" INTEGER NOT NULL, retention_ms INTEGER NOT NULL DEFAULT 0, size_bytes INTEGER NOT"
	" NULL DEFAULT 0);"
	/* A stack is the ordered lower layers of a sandbox or a snapshot (bottom first). */
	"CREATE TABLE stacks (kind TEXT NOT NULL, owner_id TEXT NOT NULL, position INTEGER NOT"
	" NULL, layer_id TEXT NOT NULL REFERENCES layers(id), PRIMARY KEY (kind, owner_id,"
	" position));"
	"CREATE INDEX stacks_layer ON stacks(layer_id);"
	"CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, time_ms INTEGER NOT NULL,"
	" sandbox_id TEXT NOT NULL DEFAULT '', type TEXT NOT NULL, data TEXT NOT NULL);"
	"CREATE INDEX events_sandbox ON events(sandbox_id, seq);",
	/* 2: how many layers at the bottom of a sandbox's stack are its base (what diff compares
	 * with); -1 for sandboxes made before, derived from base_snapshot when needed. */
	"ALTER TABLE sandboxes ADD COLUMN base_depth INTEGER NOT NULL DEFAULT -1;",
	/* 3: what reaching max_lifetime does: "stop" (as before) or "pause" (E2B's autoPause). */
	"ALTER TABLE sandboxes ADD COLUMN lifetime_action TEXT NOT NULL DEFAULT 'stop';",
};

static int db_error(struct aj_store *s, struct aj_err *err, const char *what)
{
	int code = sqlite3_extended_errcode(s->db);
	int e = (code & 0xff) == SQLITE_CONSTRAINT ? EEXIST
	      : (code & 0xff) == SQLITE_BUSY	    ? EBUSY
						    : EIO;
	return aj_err_set(err, AJ_LAYER_STATE, e, "%s: %s", what, sqlite3_errmsg(s->db));
}

static int exec_sql(struct aj_store *s, const char *sql, struct aj_err *err)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_error(s, err, "state store");
	return 0;
}

static int migrate(struct aj_store *s, struct aj_err *err)
{
	sqlite3_stmt *st;
	int version = 0;
	const int latest = (int)(sizeof migrations / sizeof migrations[0]);

	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return db_error(s, err, "read the schema version");
	if (sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > latest)
		return aj_err_set(err, AJ_LAYER_STATE, EPROTO,
				  "state store schema version %d is newer than this agentjail "
				  "(%d)",
				  version, latest);
	for (int v = version; v < latest; v++) {
		char bump[64];
		if (exec_sql(s, "BEGIN IMMEDIATE", err) < 0)
			return -1;
		snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
		/* Another process may have migrated while we waited for the lock. */
		if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > v) {
			sqlite3_finalize(st);
			exec_sql(s, "COMMIT", err);
			continue;
		}
		sqlite3_finalize(st);
		if (exec_sql(s, migrations[v], err) < 0 || exec_sql(s, bump, err) < 0 ||
		    exec_sql(s, "COMMIT", err) < 0) {
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			return aj_err_prefix(err, "schema migration %d", v + 1);
		}
	}
	return 0;
}

int aj_store_open(const char *state_dir, struct aj_store **out, struct aj_err *err)
{
	struct aj_store *s = calloc(1, sizeof *s);
	char path[4200];

	if (!s)
		return aj_err_sys(err, AJ_LAYER_STATE, "open the state store");
	snprintf(s->dir, sizeof s->dir, "%s", state_dir);
	if (aj_mkdir_p(state_dir, 0700) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "create the state directory \"%s\"", state_dir);
		free(s);
		return -1;
	}
	snprintf(path, sizeof path, "%s/state.db", state_dir);
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
						   SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		aj_err_set(err, AJ_LAYER_STATE, EIO, "open \"%s\": %s", path,
			   s->db ? sqlite3_errmsg(s->db) : "out of memory");
		sqlite3_close(s->db);
		free(s);
		return -1;
	}
	sqlite3_busy_timeout(s->db, 10000);
	if (exec_sql(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
			"PRAGMA foreign_keys=ON",
		     err) < 0 ||
	    migrate(s, err) < 0) {
		aj_err_prefix(err, "state store \"%s\"", path);
		aj_store_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

void aj_store_close(struct aj_store *s)
{
	if (!s)
		return;
	sqlite3_close(s->db);
	free(s);
}

const char *aj_store_dir(const struct aj_store *s)
{
	return s->dir;
}

int aj_store_begin(struct aj_store *s, struct aj_err *err)
{
	return exec_sql(s, "BEGIN IMMEDIATE", err);
}

int aj_store_commit(struct aj_store *s, struct aj_err *err)
{
	if (exec_sql(s, "COMMIT", err) < 0) {
		aj_store_rollback(s);
		return -1;
	}
	return 0;
}

void aj_store_rollback(struct aj_store *s)
{
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- statement helpers ---------------------------------------------------------------- */

static sqlite3_stmt *prep(struct aj_store *s, const char *sql, struct aj_err *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "prepare");
		return NULL;
	}
	return st;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_TRANSIENT);
}

/* Runs a statement that returns no rows; finalizes it. */
static int run(struct aj_store *s, sqlite3_stmt *st, const char *what, struct aj_err *err)
{
	int rc = sqlite3_step(st);

	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(s, err, what);
	return 0;
}

static void col_copy(sqlite3_stmt *st, int i, char *dst, size_t len)
{
	const unsigned char *v = sqlite3_column_text(st, i);
	snprintf(dst, len, "%s", v ? (const char *)v : "");
}

static int load_strv(struct aj_store *s, const char *sql, const char *a, const char *b,
		     struct aj_strv *out, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, sql, err);
	int rc;

	if (!st)
		return -1;
	bind_text(st, 1, a);
	if (b)
		bind_text(st, 2, b);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		aj_strv_push(out, (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_error(s, err, "read");
}

static int save_stack(struct aj_store *s, const char *kind, const char *id,
		      const struct aj_strv *layers, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "DELETE FROM stacks WHERE kind = ?1 AND owner_id = ?2", err);

	if (!st)
		return -1;
	bind_text(st, 1, kind);
	bind_text(st, 2, id);
	if (run(s, st, "clear a layer stack", err) < 0)
		return -1;
	for (size_t i = 0; i < layers->n; i++) {
		st = prep(s, "INSERT INTO stacks (kind, owner_id, position, layer_id) VALUES "
			     "(?1, ?2, ?3, ?4)",
			  err);
		if (!st)
			return -1;
		bind_text(st, 1, kind);
		bind_text(st, 2, id);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)i);
		bind_text(st, 4, layers->v[i]);
		if (run(s, st, "save a layer stack", err) < 0)
			return -1;
	}
	return 0;
}

/* ---- sandboxes ------------------------------------------------------------------------ */

#define SB_COLS                                                                           \
	"id, name, owner, policy, state, generation, created_ms, updated_ms, started_ms,"  \
	" stopped_ms, last_active_ms, idle_timeout_ms, idle_action, max_lifetime_ms,"     \
	" retention_ms, base_snapshot, supervisor_pid, supervisor_start, socket, error,"   \
	" base_depth, lifetime_action"

static void bind_sandbox(sqlite3_stmt *st, const struct aj_sandbox_rec *r)
{
	bind_text(st, 1, r->id);
	bind_text(st, 2, r->name);
	bind_text(st, 3, r->owner);
	bind_text(st, 4, r->policy);
	bind_text(st, 5, r->state);
	sqlite3_bind_int64(st, 6, r->generation);
	sqlite3_bind_int64(st, 7, r->created_ms);
	sqlite3_bind_int64(st, 8, r->updated_ms);
	sqlite3_bind_int64(st, 9, r->started_ms);
	sqlite3_bind_int64(st, 10, r->stopped_ms);
	sqlite3_bind_int64(st, 11, r->last_active_ms);
	sqlite3_bind_int64(st, 12, r->idle_timeout_ms);
	bind_text(st, 13, r->idle_action[0] ? r->idle_action : "pause");
	sqlite3_bind_int64(st, 14, r->max_lifetime_ms);
	sqlite3_bind_int64(st, 15, r->retention_ms);
	bind_text(st, 16, r->base_snapshot);
	sqlite3_bind_int64(st, 17, r->supervisor_pid);
	sqlite3_bind_int64(st, 18, r->supervisor_start);
	bind_text(st, 19, r->socket);
	bind_text(st, 20, r->error);
	sqlite3_bind_int64(st, 21, r->base_depth);
	bind_text(st, 22, r->lifetime_action[0] ? r->lifetime_action : "stop");
}

static void read_sandbox(sqlite3_stmt *st, struct aj_sandbox_rec *r)
{
	const unsigned char *policy = sqlite3_column_text(st, 3);

	memset(r, 0, sizeof *r);
	col_copy(st, 0, r->id, sizeof r->id);
	col_copy(st, 1, r->name, sizeof r->name);
	col_copy(st, 2, r->owner, sizeof r->owner);
	r->policy = strdup(policy ? (const char *)policy : "{}");
	col_copy(st, 4, r->state, sizeof r->state);
	r->generation = sqlite3_column_int64(st, 5);
	r->created_ms = sqlite3_column_int64(st, 6);
	r->updated_ms = sqlite3_column_int64(st, 7);
	r->started_ms = sqlite3_column_int64(st, 8);
	r->stopped_ms = sqlite3_column_int64(st, 9);
	r->last_active_ms = sqlite3_column_int64(st, 10);
	r->idle_timeout_ms = sqlite3_column_int64(st, 11);
	col_copy(st, 12, r->idle_action, sizeof r->idle_action);
	r->max_lifetime_ms = sqlite3_column_int64(st, 13);
	r->retention_ms = sqlite3_column_int64(st, 14);
	col_copy(st, 15, r->base_snapshot, sizeof r->base_snapshot);
	r->supervisor_pid = sqlite3_column_int64(st, 16);
	r->supervisor_start = sqlite3_column_int64(st, 17);
	col_copy(st, 18, r->socket, sizeof r->socket);
	col_copy(st, 19, r->error, sizeof r->error);
	r->base_depth = sqlite3_column_int64(st, 20);
	col_copy(st, 21, r->lifetime_action, sizeof r->lifetime_action);
}

static int load_sandbox_lists(struct aj_store *s, struct aj_sandbox_rec *r, struct aj_err *err)
{
	return load_strv(s, "SELECT key || '=' || value FROM labels WHERE sandbox_id = ?1 "
			    "ORDER BY key",
			 r->id, NULL, &r->labels, err) < 0 ||
			       load_strv(s, "SELECT layer_id FROM stacks WHERE kind = 'sandbox' AND "
					    "owner_id = ?1 ORDER BY position",
					 r->id, NULL, &r->layers, err) < 0
		       ? -1
		       : 0;
}

int aj_store_sandbox_insert(struct aj_store *s, const struct aj_sandbox_rec *r,
			    struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "INSERT INTO sandboxes (" SB_COLS ") VALUES (?1, ?2, ?3, ?4, "
				   "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
				   "?18, ?19, ?20, ?21, ?22)",
				err);

	if (!st)
		return -1;
	bind_sandbox(st, r);
	if (run(s, st, "add the sandbox", err) < 0) {
		/* The only constraint on a new row's columns is the unique name. */
		if (err && err->errnum == EEXIST) {
			aj_err_set(err, AJ_LAYER_STATE, EEXIST, "a sandbox named \"%s\" already exists",
				   r->name);
			aj_err_class(err, AJ_ERRC_EXISTS);
		}
		return -1;
	}
	for (size_t i = 0; i < r->labels.n; i++) {
		const char *kv = r->labels.v[i], *eq = strchr(kv, '=');
		st = prep(s, "INSERT INTO labels (sandbox_id, key, value) VALUES (?1, ?2, ?3)", err);
		if (!st)
			return -1;
		bind_text(st, 1, r->id);
		sqlite3_bind_text(st, 2, kv, eq ? (int)(eq - kv) : -1, SQLITE_TRANSIENT);
		bind_text(st, 3, eq ? eq + 1 : "");
		if (run(s, st, "add a label", err) < 0)
			return -1;
	}
	return save_stack(s, "sandbox", r->id, &r->layers, err);
}

int aj_store_sandbox_get(struct aj_store *s, const char *ref, const char *owner,
			 struct aj_sandbox_rec *out, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "SELECT " SB_COLS " FROM sandboxes WHERE (id = ?1 OR name = "
				   "?1) AND (?2 IS NULL OR owner = ?2)",
				err);
	int rc;

	if (!st)
		return -1;
	bind_text(st, 1, ref);
	if (owner)
		bind_text(st, 2, owner);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		read_sandbox(st, out);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE) {
		aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no sandbox \"%s\"", ref);
		return aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	if (rc != SQLITE_ROW)
		return db_error(s, err, "read the sandbox");
	if (load_sandbox_lists(s, out, err) < 0) {
		aj_sandbox_rec_free(out);
		return -1;
	}
	return 0;
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
	sqlite3_stmt *st = prep(s, "SELECT " SB_COLS " FROM sandboxes WHERE ?1 IS NULL OR owner "
				   "= ?1 ORDER BY created_ms, id",
				err);
	struct aj_sandbox_rec *v = NULL;
	size_t cap = 0, cnt = 0;
	int rc;

	if (!st)
		return -1;
	if (owner)
		bind_text(st, 1, owner);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			struct aj_sandbox_rec *nv;
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof *v);
			if (!nv)
				break;
			v = nv;
		}
		read_sandbox(st, &v[cnt++]);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		aj_sandbox_recs_free(v, cnt);
		return db_error(s, err, "list sandboxes");
	}
	for (size_t i = 0; i < cnt;) {
		if (load_sandbox_lists(s, &v[i], err) < 0) {
			aj_sandbox_recs_free(v, cnt);
			return -1;
		}
		if (has_labels(&v[i], labels)) {
			i++;
			continue;
		}
		aj_sandbox_rec_free(&v[i]);
		memmove(&v[i], &v[i + 1], (cnt - i - 1) * sizeof *v);
		cnt--;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int aj_store_sandbox_update(struct aj_store *s, const struct aj_sandbox_rec *r,
			    struct aj_err *err)
{
	sqlite3_stmt *st = prep(
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
	if (run(s, st, "update the sandbox", err) < 0)
		return -1;
	if (sqlite3_changes(s->db) == 0) { /* removed meanwhile */
		aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no sandbox \"%s\"", r->name);
		return aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	return save_stack(s, "sandbox", r->id, &r->layers, err);
}

int aj_store_sandbox_touch(struct aj_store *s, const char *id, int64_t now_ms,
			   struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "UPDATE sandboxes SET last_active_ms = ?2 WHERE id = ?1", err);

	if (!st)
		return -1;
	bind_text(st, 1, id);
	sqlite3_bind_int64(st, 2, now_ms);
	return run(s, st, "record activity", err);
}

int aj_store_sandbox_delete(struct aj_store *s, const char *id, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "DELETE FROM stacks WHERE kind = 'sandbox' AND owner_id = ?1",
				err);

	if (!st)
		return -1;
	bind_text(st, 1, id);
	if (run(s, st, "delete the sandbox's stack", err) < 0)
		return -1;
	st = prep(s, "DELETE FROM sandboxes WHERE id = ?1", err);
	if (!st)
		return -1;
	bind_text(st, 1, id);
	return run(s, st, "delete the sandbox", err);
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
	for (size_t i = 0; i < n; i++)
		aj_sandbox_rec_free(&r[i]);
	free(r);
}

/* ---- snapshots ------------------------------------------------------------------------ */

#define SNAP_COLS "id, name, owner, source, state, created_ms, retention_ms, size_bytes"

static void read_snapshot(sqlite3_stmt *st, struct aj_snapshot_rec *r)
{
	memset(r, 0, sizeof *r);
	col_copy(st, 0, r->id, sizeof r->id);
	col_copy(st, 1, r->name, sizeof r->name);
	col_copy(st, 2, r->owner, sizeof r->owner);
	col_copy(st, 3, r->source, sizeof r->source);
	col_copy(st, 4, r->state, sizeof r->state);
	r->created_ms = sqlite3_column_int64(st, 5);
	r->retention_ms = sqlite3_column_int64(st, 6);
	r->size_bytes = sqlite3_column_int64(st, 7);
}

static int load_snapshot_layers(struct aj_store *s, struct aj_snapshot_rec *r,
				struct aj_err *err)
{
	return load_strv(s, "SELECT layer_id FROM stacks WHERE kind = 'snapshot' AND owner_id = "
			    "?1 ORDER BY position",
			 r->id, NULL, &r->layers, err);
}

int aj_store_snapshot_insert(struct aj_store *s, const struct aj_snapshot_rec *r,
			     struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "INSERT INTO snapshots (" SNAP_COLS ") VALUES (?1, ?2, ?3, ?4, "
				   "?5, ?6, ?7, ?8)",
				err);

	if (!st)
		return -1;
	bind_text(st, 1, r->id);
	bind_text(st, 2, r->name);
	bind_text(st, 3, r->owner);
	bind_text(st, 4, r->source);
	bind_text(st, 5, r->state);
	sqlite3_bind_int64(st, 6, r->created_ms);
	sqlite3_bind_int64(st, 7, r->retention_ms);
	sqlite3_bind_int64(st, 8, r->size_bytes);
	if (run(s, st, "add the snapshot", err) < 0) {
		if (err && err->errnum == EEXIST) {
			aj_err_set(err, AJ_LAYER_STATE, EEXIST, "a snapshot named \"%s\" already "
								"exists",
				   r->name);
			aj_err_class(err, AJ_ERRC_EXISTS);
		}
		return -1;
	}
	return save_stack(s, "snapshot", r->id, &r->layers, err);
}

int aj_store_snapshot_get(struct aj_store *s, const char *ref, const char *owner,
			  struct aj_snapshot_rec *out, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "SELECT " SNAP_COLS " FROM snapshots WHERE (id = ?1 OR name = "
				   "?1) AND (?2 IS NULL OR owner = ?2)",
				err);
	int rc;

	if (!st)
		return -1;
	bind_text(st, 1, ref);
	if (owner)
		bind_text(st, 2, owner);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		read_snapshot(st, out);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE) {
		aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no snapshot \"%s\"", ref);
		return aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	if (rc != SQLITE_ROW)
		return db_error(s, err, "read the snapshot");
	if (load_snapshot_layers(s, out, err) < 0) {
		aj_snapshot_rec_free(out);
		return -1;
	}
	return 0;
}

int aj_store_snapshot_list(struct aj_store *s, const char *owner, struct aj_snapshot_rec **out,
			   size_t *n, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "SELECT " SNAP_COLS " FROM snapshots WHERE ?1 IS NULL OR owner "
				   "= ?1 ORDER BY created_ms, id",
				err);
	struct aj_snapshot_rec *v = NULL;
	size_t cap = 0, cnt = 0;
	int rc;

	if (!st)
		return -1;
	if (owner)
		bind_text(st, 1, owner);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			struct aj_snapshot_rec *nv;
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof *v);
			if (!nv)
				break;
			v = nv;
		}
		read_snapshot(st, &v[cnt++]);
	}
	sqlite3_finalize(st);
	for (size_t i = 0; rc == SQLITE_DONE && i < cnt; i++)
		if (load_snapshot_layers(s, &v[i], err) < 0)
			rc = SQLITE_ERROR;
	if (rc != SQLITE_DONE) {
		aj_snapshot_recs_free(v, cnt);
		return err && err->msg[0] ? -1 : db_error(s, err, "list snapshots");
	}
	*out = v;
	*n = cnt;
	return 0;
}

int aj_store_snapshot_set_state(struct aj_store *s, const char *id, const char *state,
				int64_t size_bytes, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "UPDATE snapshots SET state = ?2, size_bytes = ?3 WHERE id = ?1",
				err);

	if (!st)
		return -1;
	bind_text(st, 1, id);
	bind_text(st, 2, state);
	sqlite3_bind_int64(st, 3, size_bytes);
	return run(s, st, "update the snapshot", err);
}

int aj_store_snapshot_delete(struct aj_store *s, const char *id, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "DELETE FROM stacks WHERE kind = 'snapshot' AND owner_id = ?1",
				err);

	if (!st)
		return -1;
	bind_text(st, 1, id);
	if (run(s, st, "delete the snapshot's stack", err) < 0)
		return -1;
	st = prep(s, "DELETE FROM snapshots WHERE id = ?1", err);
	if (!st)
		return -1;
	bind_text(st, 1, id);
	return run(s, st, "delete the snapshot", err);
}

int aj_store_snapshot_users(struct aj_store *s, const char *id, struct aj_strv *names,
			    struct aj_err *err)
{
	/* The snapshot's own source is no user: a snapshot of a stopped sandbox puts the layer on
	 * the source's stack too, and the stack keeps the layer when the snapshot goes. */
	return load_strv(s, "SELECT DISTINCT sb.name FROM sandboxes sb JOIN stacks st ON "
			    "st.kind = 'sandbox' AND st.owner_id = sb.id WHERE st.layer_id = (SELECT "
			    "layer_id FROM stacks WHERE kind = 'snapshot' AND owner_id = ?1 ORDER "
			    "BY position DESC LIMIT 1) AND sb.id NOT IN (SELECT source FROM snapshots "
			    "WHERE id = ?1) ORDER BY sb.name",
			 id, NULL, names, err);
}

void aj_snapshot_rec_free(struct aj_snapshot_rec *r)
{
	aj_strv_free(&r->layers);
}

void aj_snapshot_recs_free(struct aj_snapshot_rec *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		aj_snapshot_rec_free(&r[i]);
	free(r);
}

/* ---- layers --------------------------------------------------------------------------- */

int aj_store_layer_insert(struct aj_store *s, const char *id, const char *state,
			  struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "INSERT INTO layers (id, state, created_ms) VALUES (?1, ?2, ?3)",
				err);

	if (!st)
		return -1;
	bind_text(st, 1, id);
	bind_text(st, 2, state);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)aj_now_realtime_ms());
	return run(s, st, "add a layer", err);
}

int aj_store_layer_set_state(struct aj_store *s, const char *id, const char *state,
			     struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "UPDATE layers SET state = ?2 WHERE id = ?1", err);

	if (!st)
		return -1;
	bind_text(st, 1, id);
	bind_text(st, 2, state);
	return run(s, st, "update a layer", err);
}

int aj_store_layers_unused(struct aj_store *s, struct aj_strv *ids, struct aj_err *err)
{
	/* Layers still "creating" belong to an operation in progress or to crash recovery. */
	return load_strv(s, "SELECT id FROM layers WHERE state = 'ready' AND id NOT IN (SELECT "
			    "layer_id FROM stacks) ORDER BY id",
			 NULL, NULL, ids, err);
}

int aj_store_layers_in_state(struct aj_store *s, const char *state, struct aj_strv *ids,
			     struct aj_err *err)
{
	return load_strv(s, "SELECT id FROM layers WHERE state = ?1 ORDER BY id", state, NULL, ids,
			 err);
}

int aj_store_layer_sandboxes(struct aj_store *s, const char *layer, struct aj_strv *ids,
			     struct aj_err *err)
{
	return load_strv(s, "SELECT DISTINCT owner_id FROM stacks WHERE kind = 'sandbox' AND "
			    "layer_id = ?1 ORDER BY owner_id",
			 layer, NULL, ids, err);
}

int aj_store_sandbox_drop_layer(struct aj_store *s, const char *sandbox, const char *layer,
				struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "DELETE FROM stacks WHERE kind = 'sandbox' AND owner_id = ?1 "
				   "AND layer_id = ?2",
				err);

	if (!st)
		return -1;
	bind_text(st, 1, sandbox);
	bind_text(st, 2, layer);
	return run(s, st, "drop a layer from a stack", err);
}

int aj_store_layer_get(struct aj_store *s, const char *id, char *state, size_t len,
		       struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "SELECT state FROM layers WHERE id = ?1", err);
	int rc;

	if (!st)
		return -1;
	bind_text(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		col_copy(st, 0, state, len);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(s, err, "read a layer");
	return rc == SQLITE_ROW;
}

int aj_store_layer_snapshots(struct aj_store *s, const char *layer, struct aj_strv *ids,
			     struct aj_err *err)
{
	return load_strv(s, "SELECT DISTINCT owner_id FROM stacks WHERE kind = 'snapshot' AND "
			    "layer_id = ?1 ORDER BY owner_id",
			 layer, NULL, ids, err);
}

int aj_store_layer_delete_unused(struct aj_store *s, const char *id, bool *deleted,
				 struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "DELETE FROM layers WHERE id = ?1 AND state = 'ready' AND id "
				   "NOT IN (SELECT layer_id FROM stacks)",
				err);

	*deleted = false;
	if (!st)
		return -1;
	bind_text(st, 1, id);
	if (run(s, st, "delete a layer", err) < 0)
		return -1;
	*deleted = sqlite3_changes(s->db) > 0;
	return 0;
}

int aj_store_layer_delete(struct aj_store *s, const char *id, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "DELETE FROM layers WHERE id = ?1", err);

	if (!st)
		return -1;
	bind_text(st, 1, id);
	return run(s, st, "delete a layer", err);
}

/* ---- restore intents ------------------------------------------------------------------- */

/* Kept in the stacks table under their own kind: a layer an intent names is then "used"
 * (aj_store_layers_unused) and cannot be removed under a restore that needs it. */
int aj_store_restore_intent_set(struct aj_store *s, const char *sandbox_id,
				const struct aj_strv *layers, struct aj_err *err)
{
	return save_stack(s, "restore", sandbox_id, layers, err);
}

int aj_store_restore_intent_get(struct aj_store *s, const char *sandbox_id,
				struct aj_strv *layers, struct aj_err *err)
{
	return load_strv(s, "SELECT layer_id FROM stacks WHERE kind = 'restore' AND owner_id = ?1 "
			    "ORDER BY position",
			 sandbox_id, NULL, layers, err);
}

int aj_store_restore_intents(struct aj_store *s, struct aj_strv *sandbox_ids,
			     struct aj_err *err)
{
	return load_strv(s, "SELECT DISTINCT owner_id FROM stacks WHERE kind = 'restore' ORDER BY "
			    "owner_id",
			 NULL, NULL, sandbox_ids, err);
}

/* ---- events --------------------------------------------------------------------------- */

int aj_store_event_add(struct aj_store *s, const char *sandbox_id, const char *type,
		       const char *data_json, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "INSERT INTO events (time_ms, sandbox_id, type, data) VALUES "
				   "(?1, ?2, ?3, ?4)",
				err);

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)aj_now_realtime_ms());
	bind_text(st, 2, sandbox_id);
	bind_text(st, 3, type);
	bind_text(st, 4, data_json ? data_json : "{}");
	return run(s, st, "record an event", err);
}

int aj_store_events(struct aj_store *s, const char *sandbox_id, int64_t after,
		    int (*fn)(void *arg, int64_t seq, int64_t time_ms, const char *sandbox,
			      const char *type, const char *data),
		    void *arg, struct aj_err *err)
{
	sqlite3_stmt *st = prep(s, "SELECT seq, time_ms, sandbox_id, type, data FROM events WHERE "
				   "seq > ?1 AND (?2 IS NULL OR sandbox_id = ?2) ORDER BY seq",
				err);
	int rc;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, after);
	if (sandbox_id)
		bind_text(st, 2, sandbox_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (fn(arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
		       (const char *)sqlite3_column_text(st, 2),
		       (const char *)sqlite3_column_text(st, 3),
		       (const char *)sqlite3_column_text(st, 4)) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_error(s, err, "read events");
}

int aj_state_dir_default(char *buf, size_t len)
{
	const char *env = getenv("AGENTJAIL_STATE_DIR");
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	/* Here rather than in each verb, so that no verb can miss it (run --overlay did). */
	if (env && *env)
		snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		snprintf(buf, len, "/var/lib/agentjail");
	else if (xdg && xdg[0] == '/')
		snprintf(buf, len, "%s/agentjail", xdg);
	else if (home && home[0] == '/')
		snprintf(buf, len, "%s/.local/state/agentjail", home);
	else
		return -1;
	return 0;
}
