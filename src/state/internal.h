/* Shared by the state module's files; not for other modules. The only header that includes
 * sqlite3.h: whatever else includes it is in src/state/ (docs/architecture.md, rule 6).
 *
 * Files: store.c opens the database, runs the schema migrations and the transactions, and
 * holds the statement helpers and the generic record lookups below; sandboxes.c (sandboxes
 * and their labels), snapshots.c, stacks.c (layers, the stacks that order them, restore
 * intents) and events.c each own their tables' SQL.
 *
 * Statements come from state_prep into a _cleanup_stmt_ variable of the function that asked
 * for them, which hands them back when it returns (stmtcache.c keeps them compiled for the
 * next call: SQL given to state_prep must be a string literal). A record read into a caller's struct
 * owns its pointers from then on, also after a later step fails: the failing function frees
 * it before it returns, so a caller never frees after an error.
 */
#ifndef AJ_STATE_INTERNAL_H
#define AJ_STATE_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>

#include "common/err.h"
#include "common/strv.h"
#include "state/store.h"

struct aj_store {
	sqlite3 *db;
	char dir[4096];
};

/* Hands a statement of state_prep back: reset for its next use, or finalized (stmtcache.c).
 * A no-op on NULL. */
void state_stmt_done(sqlite3_stmt *st);
/* Finalizes the statements kept for db, before it is closed. */
void state_stmt_forget(sqlite3 *db);

static inline void state_finalizep(sqlite3_stmt **st)
{
	state_stmt_done(*st);
}

#define _cleanup_stmt_ __attribute__((cleanup(state_finalizep)))

/* The error of the statement that just failed: EEXIST for a constraint (a unique name),
 * EBUSY for a lock that outlasted the busy timeout, EIO otherwise. Returns -1. */
int state_db_error(struct aj_store *s, struct aj_err *err, const char *what);
int state_exec(struct aj_store *s, const char *sql, struct aj_err *err);
/* The statement of sql (a string literal), compiled once per connection; NULL with err set
 * if it does not compile. Its _cleanup_stmt_ variable hands it back. */
sqlite3_stmt *state_prep(struct aj_store *s, const char *sql, struct aj_err *err);
/* NULL binds as "": every text column is NOT NULL. */
void state_bind_text(sqlite3_stmt *st, int i, const char *v);
/* Runs a statement that returns no rows (its owner finalizes it). */
int state_run(struct aj_store *s, sqlite3_stmt *st, const char *what, struct aj_err *err);
void state_col_copy(sqlite3_stmt *st, int i, char *dst, size_t len);
/* A layer's or a snapshot's state column: 0 with *st, -1 with err for a name agentjail does
 * not know (what names the row). */
int state_col_state(sqlite3_stmt *st, int i, const char *what, enum aj_store_state *out,
		    struct aj_err *err);
/* Pushes the first column of every row of sql (?1 = a, ?2 = b unless NULL) onto out. */
int state_load_strv(struct aj_store *s, const char *sql, const char *a, const char *b,
		    struct aj_strv *out, struct aj_err *err);

/* Layer stacks (stacks.c): the ordered layers of a sandbox ("sandbox"), a snapshot
 * ("snapshot") or a restore in progress ("restore"), bottom first. save replaces the whole
 * stack; delete removes it. */
int state_stack_save(struct aj_store *s, const char *kind, const char *id,
		     const struct aj_strv *layers, struct aj_err *err);
int state_stack_load(struct aj_store *s, const char *kind, const char *id,
		     struct aj_strv *layers, struct aj_err *err);
int state_stack_delete(struct aj_store *s, const char *kind, const char *id,
		       struct aj_err *err);

/* A table of records with an id, a unique name and an owner (sandboxes, snapshots), as the
 * generic lookups read it. by_ref selects one row: ?1 its id or name, ?2 its owner (unbound,
 * NULL: any owner); by_owner selects the rows of owner ?1 (NULL: all) in listing order. */
struct state_table {
	const char *noun, *plural; /* "sandbox", "sandboxes": in error messages */
	const char *by_ref, *by_owner;
	size_t size; /* of one record */
	/* The current row into rec (overwritten); -1 for a row the program cannot hold (a
	 * state it does not know), with rec's pointers still to free. */
	int (*read)(sqlite3_stmt *st, void *rec, struct aj_err *err);
	/* What the row does not hold (labels, layers); on failure the lookups free rec. */
	int (*load)(struct aj_store *s, void *rec, struct aj_err *err);
	void (*free)(void *rec);
};

/* One record by reference, the owner checked: ENOENT with AJ_ERRC_NOT_FOUND when no record
 * has that id or name, or its owner is another (the two are not told apart). */
int state_get_by_ref(struct aj_store *s, const struct state_table *t, const char *ref,
		     const char *owner, void *out, struct aj_err *err);
/* The records of owner (NULL: all): *out is a malloc'd array of *n records. */
int state_list(struct aj_store *s, const struct state_table *t, const char *owner, void **out,
	       size_t *n, struct aj_err *err);
/* Frees each record, then the array. */
void state_recs_free(const struct state_table *t, void *v, size_t n);
/* The errors of the classes (err.h): no such record, the name taken. Return -1. */
int state_not_found(struct aj_err *err, const char *noun, const char *ref);
int state_name_taken(struct aj_err *err, const char *noun, const char *name);

#endif
