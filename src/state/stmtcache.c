/* Prepared statements kept between calls (internal.h: state_prep, state_stmt_done).
 *
 * Compiling a statement costs far more than running it: looking a sandbox up by name (its
 * row, its labels, its layers) spent nine tenths of its instructions in sqlite3_prepare, on
 * every API request and every CLI verb. Each connection therefore keeps the statements it
 * compiled, keyed by the SQL text's address (every statement of this module is a string
 * literal), and hands one out again once its previous user is done with it.
 *
 * The cache is one table for the process, behind a mutex: a statement's cleanup
 * (_cleanup_stmt_) sees only the statement, not the store it came from, and the daemon's
 * worker threads each use a connection of their own at the same time. An entry is out from
 * state_prep until its cleanup, which resets it and clears its bindings (an unbound parameter
 * must read as NULL again: the owner filter of the lookups relies on it); whoever took it
 * hands it back so, never with sqlite3_finalize. A statement asked
 * for while its entry is out (a nested use) or with the table full of entries in use is
 * prepared afresh and finalized by its cleanup, as before. aj_store_close finalizes the
 * connection's entries before closing it.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "state/internal.h"

/* Enough for the statements of every connection of the daemon (a worker touches about ten
 * on its hot paths); cold entries give way to new ones. */
#define CACHE_SLOTS 128

struct entry {
	sqlite3 *db;       /* NULL: free */
	const char *sql;   /* the literal's address */
	sqlite3_stmt *st;
	uint64_t used;     /* last hand-out, for eviction */
	bool out;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry cache[CACHE_SLOTS];
static uint64_t clock_;

/* The entry of db and sql, or NULL. Under mu. */
static struct entry *find(sqlite3 *db, const char *sql)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (cache[i].db == db && cache[i].sql == sql)
			return &cache[i];
	return NULL;
}

/* A free entry, or the least recently used one of db not out (its statement finalized), or
 * NULL. Only db's own: its connection is the calling thread's, and a connection opened
 * without SQLite's mutex must not see another thread finalize one of its statements. Under
 * mu. */
static struct entry *slot(sqlite3 *db)
{
	struct entry *lru = NULL;

	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		if (!cache[i].db)
			return &cache[i];
		if (cache[i].db == db && !cache[i].out && (!lru || cache[i].used < lru->used))
			lru = &cache[i];
	}
	if (lru) {
		sqlite3_finalize(lru->st);
		*lru = (struct entry){0};
	}
	return lru;
}

sqlite3_stmt *state_prep(struct aj_store *s, const char *sql, struct aj_err *err)
{
	sqlite3_stmt *st = NULL;
	struct entry *e;

	pthread_mutex_lock(&mu);
	e = find(s->db, sql);
	if (e && !e->out) {
		e->out = true;
		e->used = ++clock_;
		pthread_mutex_unlock(&mu);
		return e->st;
	}
	pthread_mutex_unlock(&mu);
	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		state_db_error(s, err, "prepare");
		return NULL;
	}
	if (e) /* in use further up the stack: this one is finalized after its use */
		return st;
	pthread_mutex_lock(&mu);
	if (!find(s->db, sql) && (e = slot(s->db))) {
		*e = (struct entry){.db = s->db, .sql = sql, .st = st, .used = ++clock_, .out = true};
	}
	pthread_mutex_unlock(&mu);
	return st;
}

void state_stmt_done(sqlite3_stmt *st)
{
	bool kept = false;

	if (!st)
		return;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < CACHE_SLOTS && !kept; i++)
		if (cache[i].st == st) {
			/* Reset under the lock: no other thread can take it meanwhile. */
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			cache[i].out = false;
			kept = true;
		}
	pthread_mutex_unlock(&mu);
	if (!kept)
		sqlite3_finalize(st);
}

void state_stmt_forget(sqlite3 *db)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (cache[i].db == db) {
			/* One still out is its holder's to finalize (state_stmt_done no longer
			 * finds it): finalizing it here would make that a second time. */
			if (!cache[i].out)
				sqlite3_finalize(cache[i].st);
			cache[i] = (struct entry){0};
		}
	pthread_mutex_unlock(&mu);
}
