/* The state store (src/state/) on a database of the test's own in a temporary directory:
 * sandboxes by id and by name with the owner checked, listing by owner and labels, snapshots,
 * layers and their stacks, restore intents, events, transactions, the error classes of a
 * missing record and a taken name, and the migration of a database an older agentjail made.
 * The old database is written with SQLite directly, as the first schema step left it: the
 * fixture is the history, so it must not follow later changes of store.c. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/store.h"
#include "unit.h"

static char root[64];

static struct aj_store *open_store(const char *sub)
{
	char dir[128];
	struct aj_store *s = NULL;
	struct aj_err err;

	snprintf(dir, sizeof dir, "%s/%s", root, sub);
	if (aj_store_open(dir, &s, &err) < 0) {
		printf("# open %s: %s\n", dir, err.msg);
		return NULL;
	}
	return s;
}

static void sandbox(struct aj_sandbox_rec *r, const char *id, const char *name,
		    const char *owner, int64_t created)
{
	memset(r, 0, sizeof *r);
	snprintf(r->id, sizeof r->id, "%s", id);
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->owner, sizeof r->owner, "%s", owner);
	r->state = AJ_ST_STOPPED;
	r->policy = (char *)"{\"tier\":\"namespaces\"}";
	r->created_ms = created;
	r->updated_ms = created + 1;
	r->base_depth = 1;
}

static void layers(struct aj_store *s)
{
	struct aj_err err;
	enum aj_store_state st = AJ_SS_READY;

	CHECK(aj_store_layer_insert(s, "L1", AJ_SS_READY, &err) == 0 &&
		      aj_store_layer_insert(s, "L2", AJ_SS_READY, &err) == 0 &&
		      aj_store_layer_insert(s, "L3", AJ_SS_CREATING, &err) == 0,
	      "layers are recorded");
	CHECK(aj_store_layer_get(s, "L3", &st, &err) == 1 && st == AJ_SS_CREATING,
	      "a layer's state is read back");
	CHECK(aj_store_layer_get(s, "nope", &st, &err) == 0,
	      "an unknown layer is 0, not an error");
	CHECK(aj_store_layer_insert(s, "L1", AJ_SS_READY, &err) < 0 && err.errnum == EEXIST,
	      "a layer id is recorded once (EEXIST)");
}

static void sandboxes(struct aj_store *s)
{
	struct aj_sandbox_rec r, got;
	struct aj_err err;

	sandbox(&r, "a1", "alpha", "alice", 100);
	aj_strv_push(&r.labels, "team=a");
	aj_strv_push(&r.labels, "env=dev");
	aj_strv_push(&r.layers, "L2");
	aj_strv_push(&r.layers, "L1");
	r.idle_timeout_ms = 5000;
	r.max_lifetime_ms = 7000;
	CHECK(aj_store_sandbox_insert(s, &r, &err) == 0, "a sandbox is inserted");
	aj_strv_free(&r.labels);
	aj_strv_free(&r.layers);

	CHECK(aj_store_sandbox_get(s, "a1", NULL, &got, &err) == 0 && !strcmp(got.name, "alpha"),
	      "got by id");
	CHECK_STR(got.policy, "{\"tier\":\"namespaces\"}", "the policy comes back");
	CHECK(got.created_ms == 100 && got.updated_ms == 101 && got.idle_timeout_ms == 5000 &&
		      got.max_lifetime_ms == 7000 && got.base_depth == 1,
	      "the numbers come back");
	CHECK_STR(got.idle_action, "pause", "an empty idle action is stored as pause");
	CHECK_STR(got.lifetime_action, "stop", "an empty lifetime action is stored as stop");
	CHECK(got.labels.n == 2 && !strcmp(got.labels.v[0], "env=dev") &&
		      !strcmp(got.labels.v[1], "team=a"),
	      "labels come back as key=value, sorted by key");
	CHECK(got.layers.n == 2 && !strcmp(got.layers.v[0], "L2") && !strcmp(got.layers.v[1], "L1"),
	      "the layer stack keeps its order (bottom first)");
	aj_sandbox_rec_free(&got);

	CHECK(aj_store_sandbox_get(s, "alpha", "alice", &got, &err) == 0 && !strcmp(got.id, "a1"),
	      "got by name, with its owner");
	aj_sandbox_rec_free(&got);
	CHECK(aj_store_sandbox_get(s, "alpha", "bob", &got, &err) < 0 && err.errnum == ENOENT &&
		      err.cls == AJ_ERRC_NOT_FOUND,
	      "another owner's sandbox is not found by name");
	CHECK_CONTAINS(err.msg, "no sandbox \"alpha\"", "the error names the reference");
	CHECK(aj_store_sandbox_get(s, "a1", "bob", &got, &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND,
	      "nor by id");
	CHECK(aj_store_sandbox_get(s, "ghost", NULL, &got, &err) < 0 && err.errnum == ENOENT &&
		      err.cls == AJ_ERRC_NOT_FOUND && err.layer == AJ_LAYER_STATE,
	      "an unknown sandbox is NOT_FOUND in the state layer");

	sandbox(&r, "a2", "alpha", "bob", 200);
	CHECK(aj_store_sandbox_insert(s, &r, &err) < 0 && err.errnum == EEXIST &&
		      err.cls == AJ_ERRC_EXISTS,
	      "a taken name is EXISTS, whoever owns it");
	CHECK_CONTAINS(err.msg, "a sandbox named \"alpha\" already exists", "naming the name");

	sandbox(&r, "b1", "beta", "bob", 50);
	aj_strv_push(&r.labels, "team=b");
	CHECK(aj_store_sandbox_insert(s, &r, &err) == 0, "a second owner's sandbox");
	aj_strv_free(&r.labels);
	sandbox(&r, "g1", "gamma", "alice", 300);
	aj_strv_push(&r.labels, "team=a");
	CHECK(aj_store_sandbox_insert(s, &r, &err) == 0, "a third sandbox");
	aj_strv_free(&r.labels);
}

static void listing(struct aj_store *s)
{
	struct aj_sandbox_rec *v = NULL;
	struct aj_strv want = {0};
	struct aj_err err;
	size_t n = 0;

	CHECK(aj_store_sandbox_list(s, NULL, NULL, &v, &n, &err) == 0 && n == 3 &&
		      !strcmp(v[0].name, "beta") && !strcmp(v[1].name, "alpha") &&
		      !strcmp(v[2].name, "gamma"),
	      "every sandbox, by creation time");
	CHECK(n == 3 && v[1].labels.n == 2 && v[1].layers.n == 2,
	      "listed records carry their labels and layers");
	aj_sandbox_recs_free(v, n);
	CHECK(aj_store_sandbox_list(s, "alice", NULL, &v, &n, &err) == 0 && n == 2 &&
		      !strcmp(v[0].owner, "alice") && !strcmp(v[1].owner, "alice"),
	      "an owner's sandboxes only");
	aj_sandbox_recs_free(v, n);
	aj_strv_push(&want, "team=a");
	CHECK(aj_store_sandbox_list(s, NULL, &want, &v, &n, &err) == 0 && n == 2 &&
		      !strcmp(v[0].name, "alpha") && !strcmp(v[1].name, "gamma"),
	      "the sandboxes with a label");
	aj_sandbox_recs_free(v, n);
	aj_strv_push(&want, "env=dev");
	CHECK(aj_store_sandbox_list(s, NULL, &want, &v, &n, &err) == 0 && n == 1 &&
		      !strcmp(v[0].name, "alpha"),
	      "the sandboxes with every label asked for");
	aj_sandbox_recs_free(v, n);
	CHECK(aj_store_sandbox_list(s, "carol", NULL, &v, &n, &err) == 0 && n == 0,
	      "an owner without sandboxes has an empty list");
	aj_sandbox_recs_free(v, n);
	aj_strv_free(&want);
}

static void updates(struct aj_store *s)
{
	struct aj_sandbox_rec r, got;
	struct aj_err err;

	if (aj_store_sandbox_get(s, "alpha", NULL, &r, &err) < 0) {
		CHECK(0, "read alpha back for the update: %s", err.msg);
		return;
	}
	r.state = AJ_ST_RUNNING;
	snprintf(r.socket, sizeof r.socket, "/run/x.sock");
	r.generation = 4;
	aj_strv_clear(&r.layers);
	aj_strv_push(&r.layers, "L1");
	aj_strv_clear(&r.labels); /* update leaves labels alone */
	CHECK(aj_store_sandbox_update(s, &r, &err) == 0, "a sandbox is updated");
	CHECK(aj_store_sandbox_touch(s, "a1", 999, &err) == 0, "and touched");
	CHECK(aj_store_sandbox_get(s, "a1", NULL, &got, &err) == 0 &&
		      got.state == AJ_ST_RUNNING && got.generation == 4 &&
		      !strcmp(got.socket, "/run/x.sock") && got.last_active_ms == 999,
	      "the update and the activity are read back");
	CHECK(got.layers.n == 1 && !strcmp(got.layers.v[0], "L1"), "with the new layer stack");
	CHECK(got.labels.n == 2, "and the labels it had");
	aj_sandbox_rec_free(&got);
	aj_sandbox_rec_free(&r);

	sandbox(&r, "zz", "nobody-here", "alice", 1);
	CHECK(aj_store_sandbox_update(s, &r, &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND &&
		      strstr(err.msg, "nobody-here"),
	      "updating a removed sandbox is NOT_FOUND, naming it");
}

static void transactions(struct aj_store *s)
{
	struct aj_sandbox_rec r, got;
	struct aj_err err;

	sandbox(&r, "t1", "tx", "alice", 400);
	CHECK(aj_store_begin(s, &err) == 0 && aj_store_sandbox_insert(s, &r, &err) == 0,
	      "an insert inside a transaction");
	aj_store_rollback(s);
	CHECK(aj_store_sandbox_get(s, "tx", NULL, &got, &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND,
	      "is gone after a rollback");
	CHECK(aj_store_begin(s, &err) == 0 && aj_store_sandbox_insert(s, &r, &err) == 0 &&
		      aj_store_commit(s, &err) == 0,
	      "and kept after a commit");
	CHECK(aj_store_sandbox_get(s, "tx", NULL, &got, &err) == 0, "so it is found");
	aj_sandbox_rec_free(&got);
	CHECK(aj_store_sandbox_delete(s, "t1", &err) == 0 &&
		      aj_store_sandbox_get(s, "t1", NULL, &got, &err) < 0 &&
		      err.cls == AJ_ERRC_NOT_FOUND,
	      "a deleted sandbox is not found");
	/* Labels go with their sandbox: the same id again starts without them. */
	aj_strv_push(&r.labels, "team=old");
	CHECK(aj_store_sandbox_insert(s, &r, &err) == 0 &&
		      aj_store_sandbox_delete(s, "t1", &err) == 0,
	      "a labelled sandbox is added and deleted");
	aj_strv_free(&r.labels);
	CHECK(aj_store_sandbox_insert(s, &r, &err) == 0 &&
		      aj_store_sandbox_get(s, "t1", NULL, &got, &err) == 0 && got.labels.n == 0,
	      "its labels went with it");
	aj_sandbox_rec_free(&got);
	aj_store_sandbox_delete(s, "t1", &err);
}

static void snapshot(struct aj_snapshot_rec *r, const char *id, const char *name,
		     const char *owner, int64_t created)
{
	memset(r, 0, sizeof *r);
	snprintf(r->id, sizeof r->id, "%s", id);
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->owner, sizeof r->owner, "%s", owner);
	snprintf(r->source, sizeof r->source, "a1");
	r->state = AJ_SS_CREATING;
	r->created_ms = created;
	r->retention_ms = 60000;
}

static void snapshots(struct aj_store *s)
{
	struct aj_snapshot_rec r, got, *v = NULL;
	struct aj_strv users = {0};
	struct aj_err err;
	size_t n = 0;

	snapshot(&r, "s1", "snap", "alice", 10);
	aj_strv_push(&r.layers, "L1");
	aj_strv_push(&r.layers, "L2");
	CHECK(aj_store_snapshot_insert(s, &r, &err) == 0, "a snapshot is inserted");
	aj_strv_free(&r.layers);
	CHECK(aj_store_snapshot_get(s, "s1", NULL, &got, &err) == 0 && !strcmp(got.name, "snap") &&
		      !strcmp(got.source, "a1") && got.retention_ms == 60000 &&
		      got.layers.n == 2 && !strcmp(got.layers.v[1], "L2"),
	      "got by id, with its stack");
	aj_snapshot_rec_free(&got);
	CHECK(aj_store_snapshot_get(s, "snap", "alice", &got, &err) == 0 && !strcmp(got.id, "s1"),
	      "got by name with its owner");
	aj_snapshot_rec_free(&got);
	CHECK(aj_store_snapshot_get(s, "snap", "bob", &got, &err) < 0 && err.errnum == ENOENT &&
		      err.cls == AJ_ERRC_NOT_FOUND,
	      "another owner's snapshot is not found");
	CHECK_CONTAINS(err.msg, "no snapshot \"snap\"", "the error names the reference");
	snapshot(&r, "s2", "snap", "bob", 20);
	CHECK(aj_store_snapshot_insert(s, &r, &err) < 0 && err.errnum == EEXIST &&
		      err.cls == AJ_ERRC_EXISTS && strstr(err.msg, "a snapshot named \"snap\""),
	      "a taken snapshot name is EXISTS");
	snapshot(&r, "s0", "early", "bob", 5);
	CHECK(aj_store_snapshot_insert(s, &r, &err) == 0, "a second snapshot");
	CHECK(aj_store_snapshot_list(s, NULL, &v, &n, &err) == 0 && n == 2 &&
		      !strcmp(v[0].id, "s0") && !strcmp(v[1].id, "s1") && v[1].layers.n == 2,
	      "snapshots are listed by creation time, with their stacks");
	aj_snapshot_recs_free(v, n);
	CHECK(aj_store_snapshot_list(s, "alice", &v, &n, &err) == 0 && n == 1 &&
		      !strcmp(v[0].id, "s1"),
	      "an owner's snapshots only");
	aj_snapshot_recs_free(v, n);
	CHECK(aj_store_snapshot_set_state(s, "s1", AJ_SS_READY, 4096, &err) == 0 &&
		      aj_store_snapshot_get(s, "s1", NULL, &got, &err) == 0 &&
		      got.state == AJ_SS_READY && got.size_bytes == 4096,
	      "a snapshot is settled with its size");
	aj_snapshot_rec_free(&got);
	/* alpha (a1, the source) and gamma both stack L1; the snapshot's top is L2. */
	CHECK(aj_store_snapshot_users(s, "s1", &users, &err) == 0 && users.n == 0,
	      "nobody else stacks the snapshot's top layer");
	aj_strv_free(&users);
}

static void stacks(struct aj_store *s)
{
	struct aj_sandbox_rec r;
	struct aj_strv ids = {0};
	struct aj_err err;

	sandbox(&r, "u1", "user", "bob", 500);
	aj_strv_push(&r.layers, "L1");
	aj_strv_push(&r.layers, "L2");
	CHECK(aj_store_sandbox_insert(s, &r, &err) == 0, "a sandbox on the snapshot's stack");
	aj_strv_free(&r.layers);
	CHECK(aj_store_snapshot_users(s, "s1", &ids, &err) == 0 && ids.n == 1 &&
		      !strcmp(ids.v[0], "user"),
	      "it uses the snapshot (by name)");
	aj_strv_clear(&ids);
	CHECK(aj_store_layer_sandboxes(s, "L2", &ids, &err) == 0 && ids.n == 1 &&
		      !strcmp(ids.v[0], "u1"),
	      "the sandboxes whose stack holds a layer");
	aj_strv_clear(&ids);
	CHECK(aj_store_layer_snapshots(s, "L1", &ids, &err) == 0 && ids.n == 1 &&
		      !strcmp(ids.v[0], "s1"),
	      "the snapshots whose stack holds a layer");
	aj_strv_clear(&ids);
	CHECK(aj_store_sandbox_drop_layer(s, "u1", "L2", &err) == 0 &&
		      aj_store_layer_sandboxes(s, "L2", &ids, &err) == 0 && ids.n == 0,
	      "a layer is dropped from a sandbox's stack");
	aj_strv_clear(&ids);
	CHECK(aj_store_layer_insert(s, "L4", AJ_SS_READY, &err) == 0 &&
		      aj_store_layers_unused(s, &ids, &err) == 0 && ids.n == 1 &&
		      !strcmp(ids.v[0], "L4"),
	      "ready layers on no stack are unused (not a creating one)");
	aj_strv_clear(&ids);
	CHECK(aj_store_layers_in_state(s, AJ_SS_CREATING, &ids, &err) == 0 && ids.n == 1 &&
		      !strcmp(ids.v[0], "L3"),
	      "layers by state");
	aj_strv_free(&ids);
}

static void intents(struct aj_store *s)
{
	struct aj_strv ids = {0}, intent = {0};
	struct aj_err err;
	bool deleted = true;

	aj_strv_push(&intent, "L4");
	CHECK(aj_store_restore_intent_set(s, "u1", &intent, &err) == 0 &&
		      aj_store_layers_unused(s, &ids, &err) == 0 && ids.n == 0,
	      "a restore intent's layer counts as used");
	aj_strv_clear(&ids);
	CHECK(aj_store_layer_delete_unused(s, "L4", &deleted, &err) == 0 && !deleted,
	      "so it is not deleted as unused");
	aj_strv_clear(&intent);
	CHECK(aj_store_restore_intent_get(s, "u1", &intent, &err) == 0 && intent.n == 1 &&
		      !strcmp(intent.v[0], "L4"),
	      "the intent is read back");
	CHECK(aj_store_restore_intents(s, &ids, &err) == 0 && ids.n == 1 &&
		      !strcmp(ids.v[0], "u1"),
	      "the sandboxes with an intent");
	aj_strv_clear(&ids);
	aj_strv_clear(&intent);
	CHECK(aj_store_restore_intent_set(s, "u1", &intent, &err) == 0 &&
		      aj_store_restore_intent_get(s, "u1", &intent, &err) == 0 && intent.n == 0 &&
		      aj_store_restore_intents(s, &ids, &err) == 0 && ids.n == 0,
	      "an empty stack clears the intent");
	CHECK(aj_store_layer_delete_unused(s, "L4", &deleted, &err) == 0 && deleted,
	      "then the layer is deleted as unused");
	CHECK(aj_store_layer_set_state(s, "L3", AJ_SS_READY, &err) == 0 &&
		      aj_store_layer_delete(s, "L3", &err) == 0 &&
		      aj_store_layer_get(s, "L3", &(enum aj_store_state){0}, &err) == 0,
	      "a layer's state is changed and its record deleted");

	CHECK(aj_store_snapshot_delete(s, "s1", &err) == 0 &&
		      aj_store_layer_snapshots(s, "L1", &ids, &err) == 0 && ids.n == 0,
	      "a deleted snapshot's stack goes with it");
	aj_strv_free(&ids);
	aj_strv_free(&intent);
}

struct seen {
	int n;
	int64_t last_seq;
	char types[8][16];
	char first_data[32];
	int stop_after;
};

static int on_event(void *arg, int64_t seq, int64_t time_ms, const char *sb, const char *type,
		    const char *data)
{
	struct seen *w = arg;

	if (w->n < 8)
		snprintf(w->types[w->n], sizeof w->types[0], "%s", type);
	if (w->n == 0)
		snprintf(w->first_data, sizeof w->first_data, "%s", data);
	w->n++;
	w->last_seq = seq;
	(void)time_ms;
	(void)sb;
	return w->stop_after && w->n == w->stop_after;
}

static void events(struct aj_store *s)
{
	struct seen w = {0};
	struct aj_err err;
	int64_t first;

	CHECK(aj_store_event_add(s, "a1", "create", NULL, &err) == 0 &&
		      aj_store_event_add(s, "b1", "start", "{\"pid\":1}", &err) == 0 &&
		      aj_store_event_add(s, "a1", "stop", "{}", &err) == 0,
	      "events are appended");
	CHECK(aj_store_events(s, NULL, 0, on_event, &w, &err) == 0 && w.n == 3 &&
		      !strcmp(w.types[0], "create") && !strcmp(w.types[1], "start") &&
		      !strcmp(w.types[2], "stop"),
	      "all events, in order");
	CHECK_STR(w.first_data, "{}", "an event without data holds {}");
	first = w.last_seq - 2;
	memset(&w, 0, sizeof w);
	CHECK(aj_store_events(s, "a1", 0, on_event, &w, &err) == 0 && w.n == 2 &&
		      !strcmp(w.types[1], "stop"),
	      "one sandbox's events");
	memset(&w, 0, sizeof w);
	CHECK(aj_store_events(s, NULL, first, on_event, &w, &err) == 0 && w.n == 2 &&
		      !strcmp(w.types[0], "start"),
	      "only the events after a sequence number");
	memset(&w, 0, sizeof w);
	w.stop_after = 1;
	CHECK(aj_store_events(s, NULL, 0, on_event, &w, &err) == 0 && w.n == 1,
	      "a callback that returns non-zero stops the walk, which is no error");
}

/* The schema of migration 1, as the first release wrote it, with one sandbox in it. */
static int old_database(const char *dir, int version)
{
	char path[160], bump[64];
	sqlite3 *db = NULL;
	int rc;

	snprintf(path, sizeof path, "%s/state.db", dir);
	if (mkdir(dir, 0700) < 0 || sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	snprintf(bump, sizeof bump, "PRAGMA user_version = %d", version);
	rc = sqlite3_exec(db,
			  "CREATE TABLE sandboxes (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
			  " owner TEXT NOT NULL DEFAULT '', policy TEXT NOT NULL, state TEXT NOT"
			  " NULL, generation INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT"
			  " NULL, updated_ms INTEGER NOT NULL, started_ms INTEGER NOT NULL DEFAULT"
			  " 0, stopped_ms INTEGER NOT NULL DEFAULT 0, last_active_ms INTEGER NOT"
			  " NULL DEFAULT 0, idle_timeout_ms INTEGER NOT NULL DEFAULT 0,"
			  " idle_action TEXT NOT NULL DEFAULT 'pause', max_lifetime_ms INTEGER NOT"
			  " NULL DEFAULT 0, retention_ms INTEGER NOT NULL DEFAULT 0, base_snapshot"
			  " TEXT NOT NULL DEFAULT '', supervisor_pid INTEGER NOT NULL DEFAULT 0,"
			  " supervisor_start INTEGER NOT NULL DEFAULT 0, socket TEXT NOT NULL"
			  " DEFAULT '', error TEXT NOT NULL DEFAULT '');"
			  "CREATE TABLE labels (sandbox_id TEXT NOT NULL REFERENCES sandboxes(id)"
			  " ON DELETE CASCADE, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY"
			  " (sandbox_id, key));"
			  "CREATE TABLE layers (id TEXT PRIMARY KEY, state TEXT NOT NULL,"
			  " created_ms INTEGER NOT NULL);"
			  "CREATE TABLE snapshots (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
			  " owner TEXT NOT NULL DEFAULT '', source TEXT NOT NULL DEFAULT '', state"
			  " TEXT NOT NULL, created_ms INTEGER NOT NULL, retention_ms INTEGER NOT"
			  " NULL DEFAULT 0, size_bytes INTEGER NOT NULL DEFAULT 0);"
			  "CREATE TABLE stacks (kind TEXT NOT NULL, owner_id TEXT NOT NULL,"
			  " position INTEGER NOT NULL, layer_id TEXT NOT NULL REFERENCES"
			  " layers(id), PRIMARY KEY (kind, owner_id, position));"
			  "CREATE INDEX stacks_layer ON stacks(layer_id);"
			  "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, time_ms"
			  " INTEGER NOT NULL, sandbox_id TEXT NOT NULL DEFAULT '', type TEXT NOT"
			  " NULL, data TEXT NOT NULL);"
			  "CREATE INDEX events_sandbox ON events(sandbox_id, seq);"
			  "INSERT INTO sandboxes (id, name, owner, policy, state, created_ms,"
			  " updated_ms) VALUES ('o1', 'old', 'alice', '{}', 'stopped', 1, 2);"
			  "INSERT INTO labels VALUES ('o1', 'k', 'v');",
			  NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, bump, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

static int user_version(const char *dir)
{
	char path[160];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int v = -1;

	snprintf(path, sizeof path, "%s/state.db", dir);
	if (sqlite3_open(path, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void migrations(void)
{
	char dir[128];
	struct aj_store *s = NULL;
	struct aj_sandbox_rec got, r;
	struct aj_err err;
	int latest;

	snprintf(dir, sizeof dir, "%s/old", root);
	if (old_database(dir, 1) < 0) {
		CHECK(0, "write a database of schema version 1");
		return;
	}
	CHECK(aj_store_open(dir, &s, &err) == 0, "a version 1 database opens");
	if (!s)
		return;
	CHECK(aj_store_sandbox_get(s, "old", "alice", &got, &err) == 0 && got.base_depth == -1 &&
		      !strcmp(got.lifetime_action, "stop") && got.labels.n == 1,
	      "its sandbox is kept, with the defaults of the new columns");
	aj_sandbox_rec_free(&got);
	sandbox(&r, "n1", "new", "alice", 3);
	r.base_depth = 2;
	snprintf(r.lifetime_action, sizeof r.lifetime_action, "pause");
	CHECK(aj_store_sandbox_insert(s, &r, &err) == 0 &&
		      aj_store_sandbox_get(s, "new", NULL, &got, &err) == 0 &&
		      got.base_depth == 2 && !strcmp(got.lifetime_action, "pause"),
	      "the migrated database holds the new columns");
	aj_sandbox_rec_free(&got);
	aj_store_close(s);
	latest = user_version(dir);
	CHECK(latest >= 3, "the schema version is recorded (%d)", latest);
	s = NULL;
	CHECK(aj_store_open(dir, &s, &err) == 0 && user_version(dir) == latest,
	      "opening it again runs no migration twice");
	aj_store_close(s);

	snprintf(dir, sizeof dir, "%s/future", root);
	s = NULL;
	CHECK(old_database(dir, 99) == 0 && aj_store_open(dir, &s, &err) < 0 &&
		      err.errnum == EPROTO && err.layer == AJ_LAYER_STATE && s == NULL,
	      "a database of a newer agentjail is refused (EPROTO)");
	CHECK_CONTAINS(err.msg, "newer than this agentjail", "saying why");
}

static void opening(void)
{
	char dir[128], path[160];
	struct aj_store *s = NULL;
	struct aj_err err;
	FILE *f;

	snprintf(path, sizeof path, "%s/file", root);
	f = fopen(path, "w");
	if (f)
		fclose(f);
	snprintf(dir, sizeof dir, "%s/file/state", root);
	CHECK(aj_store_open(dir, &s, &err) < 0 && err.layer == AJ_LAYER_STATE &&
		      err.errnum == ENOTDIR && strstr(err.msg, dir) && s == NULL,
	      "a state directory that cannot be made is an error naming it");
	snprintf(dir, sizeof dir, "%s/fresh/deeper", root);
	CHECK(aj_store_open(dir, &s, &err) == 0 && !strcmp(aj_store_dir(s), dir),
	      "a missing state directory is made, and the store knows its path");
	snprintf(path, sizeof path, "%s/state.db", dir);
	CHECK(access(path, F_OK) == 0, "state.db is inside it");
	aj_store_close(s);
	aj_store_close(NULL);
}

static void default_dir(void)
{
	char buf[256];

	setenv("AGENTJAIL_STATE_DIR", "/srv/aj", 1);
	CHECK(aj_state_dir_default(buf, sizeof buf) == 0 && !strcmp(buf, "/srv/aj"),
	      "$AGENTJAIL_STATE_DIR wins");
	unsetenv("AGENTJAIL_STATE_DIR");
	if (geteuid() == 0) {
		CHECK(aj_state_dir_default(buf, sizeof buf) == 0 &&
			      !strcmp(buf, "/var/lib/agentjail"),
		      "root's default is /var/lib/agentjail");
	} else {
		setenv("XDG_STATE_HOME", "/x/state", 1);
		CHECK(aj_state_dir_default(buf, sizeof buf) == 0 &&
			      !strcmp(buf, "/x/state/agentjail"),
		      "a user's default is under $XDG_STATE_HOME");
	}
}

int main(void)
{
	struct aj_store *s;
	char cmd[128];

	snprintf(root, sizeof root, "/tmp/aj-unit-state.XXXXXX");
	if (!mkdtemp(root)) {
		printf("not ok - make a temporary directory\n");
		return 1;
	}
	s = open_store("main");
	CHECK(s != NULL, "a store opens on a fresh directory");
	if (s) {
		layers(s);
		sandboxes(s);
		listing(s);
		updates(s);
		transactions(s);
		snapshots(s);
		stacks(s);
		intents(s);
		events(s);
		aj_store_close(s);
	}
	migrations();
	opening();
	default_dir();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	UNIT_EXIT();
}
