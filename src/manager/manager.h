/* The sandbox manager: persistent sandboxes as logical objects (DESIGN section 4). It keeps
 * the state store, the workspace layers and the supervisors consistent, and is what the CLI
 * verbs, the HTTP daemon and the MCP server call. It never sets up a sandbox itself: it
 * starts supervisors (a fresh process each) and talks to them over their control sockets.
 *
 * Operations that touch one sandbox's files (start, snapshot, fork, rm) hold an flock on
 * <state>/sandboxes/<id>/lock, released by the kernel if the caller crashes; crash recovery
 * (aj_mgr_recover) only touches what it can lock. A struct aj_mgr owns its store handle.
 */
#ifndef AJ_MANAGER_MANAGER_H
#define AJ_MANAGER_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "policy/policy.h"
#include "state/store.h"

struct aj_mgr {
	struct aj_store *store;
	char state[4096];
	char owner[129];
	bool any_owner; /* the CLI sees every owner; the daemon restricts to one */
};

struct aj_create_opts {
	const char *name;          /* NULL: generated */
	struct aj_policy *policy;  /* loaded, not validated; owned by the caller */
	const struct aj_strv *labels;
	const char *from_snapshot; /* NULL: an empty workspace */
	bool start;
	int64_t idle_timeout_ms, max_lifetime_ms, retention_ms;
	const char *idle_action;   /* "pause" (default) or "stop" */
};

/* Exit-code-relevant classes of manager errors (errnum): ENOENT unknown sandbox or
 * snapshot, EBUSY wrong state (running / in use), EEXIST duplicate name. */

int aj_mgr_open(struct aj_mgr *m, const char *state_dir, const char *owner,
		struct aj_err *err);
void aj_mgr_close(struct aj_mgr *m);

/* Reads a sandbox and brings its state up to date: a running sandbox whose supervisor died
 * is marked stopped (workspace intact). */
int aj_mgr_get(struct aj_mgr *m, const char *ref, struct aj_sandbox_rec *out,
	       struct aj_err *err);
int aj_mgr_list(struct aj_mgr *m, const struct aj_strv *labels, struct aj_sandbox_rec **out,
		size_t *n, struct aj_err *err);

int aj_mgr_create(struct aj_mgr *m, const struct aj_create_opts *o, struct aj_sandbox_rec *out,
		  struct aj_err *err);
int aj_mgr_start(struct aj_mgr *m, const char *ref, struct aj_err *err);
int aj_mgr_stop(struct aj_mgr *m, const char *ref, struct aj_err *err);
int aj_mgr_pause(struct aj_mgr *m, const char *ref, bool pause, struct aj_err *err);
int aj_mgr_remove(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err);

int aj_mgr_snapshot(struct aj_mgr *m, const char *ref, const char *name, int64_t retention_ms,
		    struct aj_snapshot_rec *out, struct aj_err *err);
int aj_mgr_snapshot_remove(struct aj_mgr *m, const char *ref, struct aj_err *err);
/* count new sandboxes on the source's current state; names: prefix-1.. (prefix NULL: the
 * source's name + "-fork"). Their names go to *names. */
int aj_mgr_fork(struct aj_mgr *m, const char *ref, unsigned count, const char *prefix,
		bool start, struct aj_strv *names, struct aj_err *err);
int aj_mgr_diff(struct aj_mgr *m, const char *ref,
		int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err);

/* Connects to a running sandbox's supervisor; fails with EBUSY naming the state otherwise. */
int aj_mgr_connect(struct aj_mgr *m, const char *ref, struct aj_sandbox_rec *rec,
		   struct aj_err *err);

struct aj_gc_report {
	unsigned sandboxes_deleted, snapshots_deleted, layers_deleted, marked_stopped,
		recovered;
};
int aj_mgr_gc(struct aj_mgr *m, struct aj_gc_report *r, struct aj_err *err);
int aj_mgr_recover(struct aj_mgr *m, unsigned *recovered, struct aj_err *err);

/* The store's sandbox id/name rules: names are 1-63 of [A-Za-z0-9_.-], not all hex. */
bool aj_mgr_name_ok(const char *name);

#endif
