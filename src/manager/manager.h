/* The sandbox manager: persistent sandboxes as logical objects (docs/sandboxes.md). It keeps
 * the state store, the workspace layers and the supervisors consistent, and is what the CLI
 * verbs, the HTTP daemon and the MCP server call. It never sets up a sandbox itself: it
 * starts supervisors (a fresh process each) and talks to them over their control sockets.
 *
 * Operations that touch one sandbox's files (create, start, snapshot, fork, rm) hold an flock
 * on <state>/sandboxes/<id>/lock, and the maker of a layer one on <state>/layers/.lock-<id>,
 * released by the kernel if the caller crashes; crash recovery (aj_mgr_recover) and gc only
 * touch what they can lock. A struct aj_mgr owns its store handle.
 */
#ifndef AJ_MANAGER_MANAGER_H
#define AJ_MANAGER_MANAGER_H

#include <jansson.h>
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
	const char *lifetime_action; /* at max_lifetime_ms: "stop" (default) or "pause" */
};

/* Errors about the named object carry a class (err->cls, common/err.h): AJ_ERRC_NOT_FOUND
 * unknown sandbox or snapshot, AJ_ERRC_WRONG_STATE wrong state (running / in use),
 * AJ_ERRC_EXISTS duplicate name; their errnum is ENOENT, EBUSY, EEXIST. Every other error has
 * no class, whatever its errnum. */

int aj_mgr_open(struct aj_mgr *m, const char *state_dir, const char *owner,
		struct aj_err *err);
void aj_mgr_close(struct aj_mgr *m);
/* From now on every manager of this process has its supervisors forked by the zygote at the
 * other end of fd (serve's, cli/cmd_zygote.c) rather than forking and exec'ing them itself;
 * a zygote that is gone is passed by. Called once, before any thread exists. */
void aj_mgr_set_zygote(int fd);
#define _cleanup_mgr_ __attribute__((cleanup(aj_mgr_close)))

/* A persistent sandbox's supervisor is `agentjail __supervise --state-dir STATE --ready-fd 3
 * ID`, its ready pipe on this descriptor: exec'd by the manager, and by serve's zygote once a
 * supervisor crashed (cli/cmd_zygote.c). argv gets the 7 words and a NULL; it points into
 * state_dir and id. */
#define AJ_SUPERVISE_READY_FD 3
#define AJ_SUPERVISE_ARGC 7
void aj_mgr_supervise_argv(char *argv[AJ_SUPERVISE_ARGC + 1], const char *state_dir,
			   const char *id);

/* Reads a sandbox and brings its state up to date: a running sandbox whose supervisor died
 * is marked stopped (workspace intact). */
int aj_mgr_get(struct aj_mgr *m, const char *ref, struct aj_sandbox_rec *out,
	       struct aj_err *err);
int aj_mgr_list(struct aj_mgr *m, const struct aj_strv *labels, struct aj_sandbox_rec **out,
		size_t *n, struct aj_err *err);

int aj_mgr_create(struct aj_mgr *m, const struct aj_create_opts *o, struct aj_sandbox_rec *out,
		  struct aj_err *err);
/* limits.disk "default" decided as create decides it: AJ_DISK_PERSISTENT where the state
 * directory can enforce it, none where it cannot. Create does it itself; a caller that weighs
 * the policy first (the API's quotas) does it before. */
void aj_mgr_resolve_disk(struct aj_mgr *m, struct aj_policy *pol);
/* The bytes a sandbox's writable layers hold, as its quota directory counts them; 0 where it
 * has none. */
uint64_t aj_mgr_disk_used(struct aj_mgr *m, const char *id);
/* The policy a create of `pol` would store (its image pinned to a digest, the variables the
 * allowlist lets in captured, validated), computed on a copy: *out is a new string. */
int aj_mgr_policy_text(struct aj_mgr *m, const struct aj_policy *pol, char **out,
		       struct aj_err *err);
/* Warm pools (`serve --warm-pool`, claim.c): gives the running sandbox `pool_id`, made for
 * the pool (owner AJ_POOL_OWNER) with the policy `policy_text` (aj_mgr_policy_text()'s), to
 * m's owner as a create with `o` would have made it: its name (o->name, else the one it
 * has), labels and timers, its record's times and history starting now. 1 when it is
 * claimed (*out filled), 0 when it cannot be (no longer running, another policy, o asks for
 * what a pool's sandbox cannot give: a snapshot, no start), nothing changed; -1 with err (a
 * name taken: AJ_ERRC_EXISTS, the sandbox still the pool's). */
int aj_mgr_claim(struct aj_mgr *m, const char *pool_id, const char *policy_text,
		 const struct aj_create_opts *o, struct aj_sandbox_rec *out, struct aj_err *err);
int aj_mgr_start(struct aj_mgr *m, const char *ref, struct aj_err *err);
int aj_mgr_stop(struct aj_mgr *m, const char *ref, struct aj_err *err);
int aj_mgr_pause(struct aj_mgr *m, const char *ref, bool pause, struct aj_err *err);
/* Sets the maximum lifetime, counted from the current start (started_ms), of a sandbox in
 * any state; a live one's supervisor applies it at once (0: none). */
int aj_mgr_set_lifetime(struct aj_mgr *m, const char *ref, int64_t max_lifetime_ms,
			struct aj_err *err);
int aj_mgr_remove(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err);

int aj_mgr_snapshot(struct aj_mgr *m, const char *ref, const char *name, int64_t retention_ms,
		    struct aj_snapshot_rec *out, struct aj_err *err);
int aj_mgr_snapshot_remove(struct aj_mgr *m, const char *ref, struct aj_err *err);
/* Puts a sandbox's workspace back to a snapshot: its layer stack becomes the snapshot's, with
 * an empty writable layer on top, and what it changed since is discarded. A running or paused
 * sandbox is stopped first and started again after (its processes do not survive). */
int aj_mgr_restore(struct aj_mgr *m, const char *ref, const char *snapshot, struct aj_err *err);
/* count (1-1000) new sandboxes on the source's current state; names: prefix-1.. (prefix NULL:
 * the source's name + "-fork-" + 6 hex digits), each checked valid and free before anything
 * changes; on a later failure the ones made are removed. Their names go to *names. */
int aj_mgr_fork(struct aj_mgr *m, const char *ref, unsigned count, const char *prefix,
		bool start, struct aj_strv *names, struct aj_err *err);
/* One new sandbox as aj_mgr_fork() makes them, named exactly `name` (the CLI's fork --name N
 * with a count of 1). */
int aj_mgr_fork_named(struct aj_mgr *m, const char *ref, const char *name, bool start,
		      struct aj_strv *names, struct aj_err *err);
/* What the sandbox changed since its base (the stack it was made with or restored to). */
int aj_mgr_diff(struct aj_mgr *m, const char *ref,
		int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err);

/* What `agentjail update` and PATCH /v1/sandboxes/{id} change (docs/sandboxes.md "Changing
 * a running sandbox"); each member says whether it is given. */
struct aj_update {
	const struct aj_strv *allow, *deny; /* the whole new network.allow and .deny */
	int net_mode;                       /* enum aj_net_mode, -1: unchanged */
	bool set_memory, set_pids, set_cpus;
	uint64_t memory, pids, cpu_milli;   /* 0: none */
	int64_t idle_timeout_ms;            /* -1: unchanged */
	int64_t max_lifetime_ms;            /* -1: unchanged */
};
#define AJ_UPDATE_INIT {.net_mode = -1, .idle_timeout_ms = -1, .max_lifetime_ms = -1}

/* Changes the sandbox's policy and lifetimes. A running (or paused) sandbox gets the change
 * live through its supervisor (the proxy's rules, the cgroup's limits), which saves the
 * record; a stopped one's record is saved here, for its next start. What cannot change live
 * (the network mode) is refused for a running sandbox; on any refusal nothing changed. The
 * new record into out (NULL: not wanted). */
int aj_mgr_update(struct aj_mgr *m, const char *ref, const struct aj_update *u,
		  struct aj_sandbox_rec *out, struct aj_err *err);

/* A running (or paused) sandbox's resource figures (supervisor/metrics.h): {"now": a
 * sample taken now, "samples": those kept from start_ms to end_ms (0: no bound), "every_s"};
 * a stopped sandbox has none (EBUSY, wrong state). *out is a new reference. */
int aj_mgr_metrics(struct aj_mgr *m, const char *ref, int64_t start_ms, int64_t end_ms,
		   json_t **out, struct aj_err *err);

/* Connects to a running sandbox's supervisor; fails with EBUSY naming the state otherwise. */
int aj_mgr_connect(struct aj_mgr *m, const char *ref, struct aj_sandbox_rec *rec,
		   struct aj_err *err);

/* Connects to the supervisor the names index (state/names.h) gives for a running sandbox's
 * name, without opening the state store. The index is a hint, never the truth: the caller's
 * request names the sandbox it meant ("exec_named"), which a supervisor of another refuses.
 * -1 (nothing reported) whenever the index cannot say: the caller then opens the store and
 * uses aj_mgr_connect(), which says what became of the sandbox. */
int aj_mgr_connect_named(const char *state_dir, const char *ref);

struct aj_gc_report {
	unsigned sandboxes_deleted, snapshots_deleted, layers_deleted, marked_stopped,
		recovered;
	unsigned builds_deleted; /* API builds' directories and uploads (build/job.h) */
};
/* Recovery, retention, unused layers, and layer and sandbox directories the store does not
 * know. */
int aj_mgr_gc(struct aj_mgr *m, struct aj_gc_report *r, struct aj_err *err);
/* Finishes or undoes interrupted snapshots, forks and restores, and removes sandboxes left
 * "creating", of what nobody holds the lock of. */
int aj_mgr_recover(struct aj_mgr *m, unsigned *recovered, struct aj_err *err);

/* The store's sandbox id/name rules: names are 1-63 of [A-Za-z0-9_.-], not all hex. */
bool aj_mgr_name_ok(const char *name);

#endif
