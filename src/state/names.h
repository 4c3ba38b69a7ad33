/* The names index: STATE/names/NAME, a symbolic link to the control socket of the running
 * sandbox of that name, kept by its supervisor.
 *
 * It lets a client reach a running sandbox's supervisor without opening the state store,
 * whose first statement alone costs about a third of a millisecond (SQLite reads and parses
 * the whole schema), more than the rest of a CLI exec's own work. The index is a hint, never
 * the truth: a link can be stale (a supervisor killed before it could remove it) or point at
 * a socket nobody listens on. A client's request names the sandbox it meant, a supervisor
 * of another refuses it, and the client then asks the store (aj_mgr_connect_named(),
 * "exec_named").
 */
#ifndef AJ_STATE_NAMES_H
#define AJ_STATE_NAMES_H

#include <stddef.h>

/* Points NAME at socket_path, replacing any earlier link atomically. -1 with errno; the
 * caller goes on without the index (its clients then use the store). */
int aj_names_publish(const char *state_dir, const char *name, const char *socket_path);
/* Removes NAME's link if it still points at the control socket of sandbox id (ID.sock),
 * never a successor's: at the sandbox's stop, and where its supervisor was found dead. */
void aj_names_withdraw(const char *state_dir, const char *name, const char *id);
/* The socket path NAME points at into buf: 0, or -1 (no link, a name that cannot be one). */
int aj_names_resolve(const char *state_dir, const char *name, char *buf, size_t len);

#endif
