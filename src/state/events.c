/* The events table: appended by supervisors and verbs, read in order by `agentjail events`,
 * the HTTP API's event stream and the E2B front end. */
#include "state/store.h"

#include "common/util.h"
#include "state/internal.h"

int aj_store_event_add(struct aj_store *s, const char *sandbox_id, const char *type,
		       const char *data_json, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "INSERT INTO events (time_ms, sandbox_id, type, data) VALUES (?1, "
			      "?2, ?3, ?4)", err);

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)aj_now_realtime_ms());
	state_bind_text(st, 2, sandbox_id);
	state_bind_text(st, 3, type);
	state_bind_text(st, 4, data_json ? data_json : "{}");
	return state_run(s, st, "record an event", err);
}

int aj_store_events_delete(struct aj_store *s, const char *sandbox_id, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "DELETE FROM events WHERE sandbox_id = ?1", err);

	if (!st)
		return -1;
	state_bind_text(st, 1, sandbox_id);
	return state_run(s, st, "remove a sandbox's events", err);
}

int aj_store_events(struct aj_store *s, const char *sandbox_id, int64_t after,
		    int (*fn)(void *arg, int64_t seq, int64_t time_ms, const char *sandbox,
			      const char *type, const char *data),
		    void *arg, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "SELECT seq, time_ms, sandbox_id, type, data FROM events WHERE seq "
			      "> ?1 AND (?2 IS NULL OR sandbox_id = ?2) ORDER BY seq", err);
	int rc;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, after);
	if (sandbox_id)
		state_bind_text(st, 2, sandbox_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (fn(arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
		       (const char *)sqlite3_column_text(st, 2),
		       (const char *)sqlite3_column_text(st, 3),
		       (const char *)sqlite3_column_text(st, 4)) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	return rc == SQLITE_DONE ? 0 : state_db_error(s, err, "read events");
}
