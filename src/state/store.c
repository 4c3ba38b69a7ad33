/* The store itself: opening the database, its schema migrations, transactions, the
 * statement helpers and the generic record lookups every table's file uses (internal.h), and
 * the default state directory. state_prep is stmtcache.c's. */
#include "state/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "state/internal.h"

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
	/* 4: images (src/state/images.c): the record by manifest digest, the layers it stacks
	 * (diff_ids, bottom first), the names owners give it. */
	"CREATE TABLE images (digest TEXT PRIMARY KEY, config TEXT NOT NULL, platform TEXT NOT"
	" NULL, source TEXT NOT NULL DEFAULT '', created_ms INTEGER NOT NULL, size_bytes INTEGER"
	" NOT NULL DEFAULT 0);"
	"CREATE TABLE image_layers (digest TEXT NOT NULL REFERENCES images(digest), position"
	" INTEGER NOT NULL, diff_id TEXT NOT NULL, PRIMARY KEY (digest, position));"
	"CREATE INDEX image_layers_diff ON image_layers(diff_id);"
	"CREATE TABLE image_names (owner TEXT NOT NULL, name TEXT NOT NULL, digest TEXT NOT NULL"
	" REFERENCES images(digest), PRIMARY KEY (owner, name));"
	"CREATE INDEX image_names_digest ON image_names(digest);",
	/* 5: the image a snapshot's source ran on (its digest; '' the host's root): the
	 * snapshot's layers are that image's system changes, not a workspace. Snapshots made
	 * before learn it from their source while it exists. */
	"ALTER TABLE snapshots ADD COLUMN image TEXT NOT NULL DEFAULT '';"
	"UPDATE snapshots SET image = COALESCE((SELECT json_extract(policy, '$.rootfs.image') FROM"
	" sandboxes WHERE sandboxes.id = snapshots.source), '');",
};

int state_db_error(struct aj_store *s, struct aj_err *err, const char *what)
{
	int code = sqlite3_extended_errcode(s->db);
	int e = (code & 0xff) == SQLITE_CONSTRAINT ? EEXIST
	      : (code & 0xff) == SQLITE_BUSY	    ? EBUSY
						    : EIO;
	return aj_err_set(err, AJ_LAYER_STATE, e, "%s: %s", what, sqlite3_errmsg(s->db));
}

int state_exec(struct aj_store *s, const char *sql, struct aj_err *err)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return state_db_error(s, err, "state store");
	return 0;
}

/* PRAGMA user_version, or -1 with err set. */
static int schema_version(struct aj_store *s, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(s, "PRAGMA user_version", err);

	if (!st)
		return -1;
	return sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
}

static int migrate(struct aj_store *s, struct aj_err *err)
{
	const int latest = (int)(sizeof migrations / sizeof migrations[0]);
	int version = schema_version(s, err);

	if (version < 0)
		return aj_err_prefix(err, "read the schema version");
	if (version > latest)
		return aj_err_set(err, AJ_LAYER_STATE, EPROTO,
				  "state store schema version %d is newer than this agentjail "
				  "(%d)",
				  version, latest);
	for (int v = version; v < latest; v++) {
		char bump[64];
		if (state_exec(s, "BEGIN IMMEDIATE", err) < 0)
			return -1;
		snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
		/* Another process may have migrated while we waited for the lock. */
		if (schema_version(s, NULL) > v) {
			state_exec(s, "COMMIT", err);
			continue;
		}
		if (state_exec(s, migrations[v], err) < 0 || state_exec(s, bump, err) < 0 ||
		    state_exec(s, "COMMIT", err) < 0) {
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			return aj_err_prefix(err, "schema migration %d", v + 1);
		}
	}
	return 0;
}

static void store_closep(struct aj_store **s)
{
	aj_store_close(*s);
}

int aj_store_open(const char *state_dir, struct aj_store **out, struct aj_err *err)
{
	__attribute__((cleanup(store_closep))) struct aj_store *s = aj_xcalloc(1, sizeof *s);
	char path[4200];

	snprintf(s->dir, sizeof s->dir, "%s", state_dir);
	if (aj_mkdir_p(state_dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create the state directory \"%s\"",
				  state_dir);
	snprintf(path, sizeof path, "%s/state.db", state_dir);
	/* SQLite reports its own allocation failures (SQLITE_NOMEM) as errors. */
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
						   SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK)
		return aj_err_set(err, AJ_LAYER_STATE, EIO, "open \"%s\": %s", path,
				  s->db ? sqlite3_errmsg(s->db) : "out of memory");
	sqlite3_busy_timeout(s->db, 10000);
	if (state_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
			"PRAGMA foreign_keys=ON",
		     err) < 0 ||
	    migrate(s, err) < 0)
		return aj_err_prefix(err, "state store \"%s\"", path);
	*out = aj_steal_ptr(&s);
	return 0;
}

void aj_store_close(struct aj_store *s)
{
	if (!s)
		return;
	state_stmt_forget(s->db);
	sqlite3_close(s->db);
	free(s);
}

const char *aj_store_dir(const struct aj_store *s)
{
	return s->dir;
}

int aj_store_begin(struct aj_store *s, struct aj_err *err)
{
	return state_exec(s, "BEGIN IMMEDIATE", err);
}

int aj_store_commit(struct aj_store *s, struct aj_err *err)
{
	if (state_exec(s, "COMMIT", err) < 0) {
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

void state_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_TRANSIENT);
}

int state_run(struct aj_store *s, sqlite3_stmt *st, const char *what, struct aj_err *err)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		return state_db_error(s, err, what);
	return 0;
}

void state_col_copy(sqlite3_stmt *st, int i, char *dst, size_t len)
{
	const unsigned char *v = sqlite3_column_text(st, i);
	snprintf(dst, len, "%s", v ? (const char *)v : "");
}

const char *aj_store_state_name(enum aj_store_state st)
{
	switch (st) {
	case AJ_SS_CREATING: return "creating";
	case AJ_SS_READY: return "ready";
	}
	return "?";
}

int state_col_state(sqlite3_stmt *st, int i, const char *what, enum aj_store_state *out,
		    struct aj_err *err)
{
	const unsigned char *v = sqlite3_column_text(st, i);
	const char *name = v ? (const char *)v : "";

	if (!strcmp(name, "creating"))
		*out = AJ_SS_CREATING;
	else if (!strcmp(name, "ready"))
		*out = AJ_SS_READY;
	else
		return aj_err_set(err, AJ_LAYER_STATE, EPROTO,
				  "%s has a state agentjail does not know (\"%s\")", what, name);
	return 0;
}

int state_load_strv(struct aj_store *s, const char *sql, const char *a, const char *b,
		    struct aj_strv *out, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(s, sql, err);
	int rc;

	if (!st)
		return -1;
	state_bind_text(st, 1, a);
	if (b)
		state_bind_text(st, 2, b);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		aj_strv_push(out, (const char *)sqlite3_column_text(st, 0));
	return rc == SQLITE_DONE ? 0 : state_db_error(s, err, "read");
}

/* ---- records by reference ------------------------------------------------------------- */

int state_not_found(struct aj_err *err, const char *noun, const char *ref)
{
	aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no %s \"%s\"", noun, ref);
	return aj_err_class(err, AJ_ERRC_NOT_FOUND);
}

int state_name_taken(struct aj_err *err, const char *noun, const char *name)
{
	aj_err_set(err, AJ_LAYER_STATE, EEXIST, "a %s named \"%s\" already exists", noun, name);
	return aj_err_class(err, AJ_ERRC_EXISTS);
}

/* The row itself, its statement finalized before anything else is read. */
static int read_by_ref(struct aj_store *s, const struct state_table *t, const char *ref,
		       const char *owner, void *out, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(s, t->by_ref, err);
	char what[64];
	int rc;

	if (!st)
		return -1;
	state_bind_text(st, 1, ref);
	if (owner)
		state_bind_text(st, 2, owner);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && t->read(st, out, err) < 0) {
		t->free(out);
		return -1;
	}
	if (rc == SQLITE_DONE)
		return state_not_found(err, t->noun, ref);
	if (rc != SQLITE_ROW) {
		snprintf(what, sizeof what, "read the %s", t->noun);
		return state_db_error(s, err, what);
	}
	return 0;
}

int state_get_by_ref(struct aj_store *s, const struct state_table *t, const char *ref,
		     const char *owner, void *out, struct aj_err *err)
{
	if (read_by_ref(s, t, ref, owner, out, err) < 0)
		return -1;
	if (t->load(s, out, err) < 0) {
		t->free(out);
		return -1;
	}
	return 0;
}

/* Appends the rows of st to the array *v of *cnt records (capacity *cap). */
static int read_rows(sqlite3_stmt *st, const struct state_table *t, char **v, size_t *cnt,
		     size_t *cap, int *rc, struct aj_err *err)
{
	while ((*rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*cnt == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			*v = aj_xrealloc(*v, *cap * t->size);
		}
		/* Counted either way: a row that fails is freed with the others. */
		if (t->read(st, *v + (*cnt)++ * t->size, err) < 0)
			return -1;
	}
	return 0;
}

/* The rows of owner into the array *v of *cnt records, the statement finalized before
 * anything else is read. */
static int list_rows(struct aj_store *s, const struct state_table *t, const char *owner,
		     char **v, size_t *cnt, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(s, t->by_owner, err);
	char what[64];
	size_t cap = 0;
	int rc = SQLITE_ERROR;

	if (!st)
		return -1;
	if (owner)
		state_bind_text(st, 1, owner);
	if (read_rows(st, t, v, cnt, &cap, &rc, err) < 0)
		return -1;
	if (rc != SQLITE_DONE) {
		snprintf(what, sizeof what, "list %s", t->plural);
		return state_db_error(s, err, what);
	}
	return 0;
}

int state_list(struct aj_store *s, const struct state_table *t, const char *owner, void **out,
	       size_t *n, struct aj_err *err)
{
	char *v = NULL;
	size_t cnt = 0;

	if (list_rows(s, t, owner, &v, &cnt, err) < 0) {
		state_recs_free(t, v, cnt);
		return -1;
	}
	for (size_t i = 0; i < cnt; i++)
		if (t->load(s, v + i * t->size, err) < 0) {
			state_recs_free(t, v, cnt);
			return -1;
		}
	*out = v;
	*n = cnt;
	return 0;
}

void state_recs_free(const struct state_table *t, void *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		t->free((char *)v + i * t->size);
	free(v);
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
