/* The state store: the only module that knows SQLite. One database per state directory
 * (state.db, WAL mode) holds sandboxes, their labels and layer stacks, snapshots, layers and
 * events. Concurrent CLI calls, supervisors and the daemon share it safely: every write runs
 * in a BEGIN IMMEDIATE transaction and waits (busy timeout) for the others.
 *
 * Records returned to callers are plain structs; their owned pointers are released with the
 * matching *_free() function. struct aj_store is opaque.
 */
#ifndef AJ_STATE_STORE_H
#define AJ_STATE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strv.h"

struct aj_store;

/* Sandbox states. "running" and "paused" have a live supervisor. The names are what the
 * store's state column holds and what the front ends show; inside the program a state is
 * this enum. */
enum aj_sandbox_state {
	AJ_ST_CREATING = 0,
	AJ_ST_RUNNING,
	AJ_ST_PAUSED,
	AJ_ST_STOPPED,
	AJ_ST_DELETING,
};

const char *aj_sandbox_state_name(enum aj_sandbox_state st);
/* 0 with *st for a state's name, -1 for any other string. */
int aj_sandbox_state_parse(const char *name, enum aj_sandbox_state *st);

/* A layer's or a snapshot's state: "creating" until it is complete, then "ready" (the names
 * are the store's column values). */
enum aj_store_state {
	AJ_SS_CREATING = 0,
	AJ_SS_READY,
};

const char *aj_store_state_name(enum aj_store_state st);

struct aj_sandbox_rec {
	char id[33];
	char name[129];
	char owner[129];
	char *policy;   /* effective policy, JSON */
	enum aj_sandbox_state state;
	int64_t generation;
	int64_t created_ms, updated_ms, started_ms, stopped_ms, last_active_ms;
	int64_t idle_timeout_ms;  /* 0: none */
	char idle_action[8];      /* "pause" or "stop" */
	int64_t max_lifetime_ms;  /* 0: none */
	char lifetime_action[8];  /* at max_lifetime: "stop" (default) or "pause" */
	int64_t retention_ms;     /* stopped sandboxes are deleted after this; 0: kept */
	char base_snapshot[33];
	int64_t supervisor_pid;
	int64_t supervisor_start; /* start time of that pid, to detect pid reuse */
	char socket[256];
	char error[512];
	/* How many layers at the bottom of `layers` are the sandbox's base, the stack it was made
	 * or last restored with (diff compares with it); -1: not recorded (made by an older
	 * agentjail), derived from base_snapshot. */
	int64_t base_depth;
	struct aj_strv labels; /* "key=value" */
	struct aj_strv layers; /* lower layers, bottom first */
};

struct aj_snapshot_rec {
	char id[33];
	char name[129];
	char owner[129];
	char source[33]; /* sandbox id */
	enum aj_store_state state;
	int64_t created_ms;
	int64_t retention_ms;
	int64_t size_bytes;
	char image[72]; /* the source's image digest: the layers are its root's; "" a workspace */
	struct aj_strv layers; /* bottom first */
};

/* An image (src/state/images.c): its manifest digest is its id. */
struct aj_image_rec {
	char digest[72];   /* the manifest's */
	char config[72];   /* the config blob's */
	char platform[96]; /* "linux/amd64" */
	char source[512];  /* where it came from: a reference, a file */
	int64_t created_ms; /* when it entered the store */
	int64_t size_bytes; /* of its unpacked layers */
	struct aj_strv layers; /* diff_ids, bottom first */
	struct aj_strv names;  /* the owner's names for it */
};

int aj_store_open(const char *state_dir, struct aj_store **out, struct aj_err *err);
void aj_store_close(struct aj_store *s);
const char *aj_store_dir(const struct aj_store *s);

int aj_store_begin(struct aj_store *s, struct aj_err *err);
int aj_store_commit(struct aj_store *s, struct aj_err *err);
void aj_store_rollback(struct aj_store *s);

/* Sandboxes. get: by id or name; owner NULL means any owner. ENOENT when absent. */
int aj_store_sandbox_insert(struct aj_store *s, const struct aj_sandbox_rec *r,
			    struct aj_err *err);
int aj_store_sandbox_get(struct aj_store *s, const char *ref, const char *owner,
			 struct aj_sandbox_rec *out, struct aj_err *err);
/* All sandboxes of owner (NULL: all) having every label in `labels` ("k=v"). *out is a
 * malloc'd array of *n records. */
int aj_store_sandbox_list(struct aj_store *s, const char *owner, const struct aj_strv *labels,
			  struct aj_sandbox_rec **out, size_t *n, struct aj_err *err);
/* Writes every mutable column of r (state, times, supervisor, socket, error, generation,
 * policy) and its layer stack; labels are not changed. */
int aj_store_sandbox_update(struct aj_store *s, const struct aj_sandbox_rec *r,
			    struct aj_err *err);
/* Replaces the labels of r->id with r->labels (update leaves the labels as they are). */
int aj_store_sandbox_set_labels(struct aj_store *s, const struct aj_sandbox_rec *r,
				struct aj_err *err);
int aj_store_sandbox_touch(struct aj_store *s, const char *id, int64_t now_ms,
			   struct aj_err *err);
int aj_store_sandbox_delete(struct aj_store *s, const char *id, struct aj_err *err);
void aj_sandbox_rec_free(struct aj_sandbox_rec *r);
void aj_sandbox_recs_free(struct aj_sandbox_rec *r, size_t n);

/* Snapshots. */
int aj_store_snapshot_insert(struct aj_store *s, const struct aj_snapshot_rec *r,
			     struct aj_err *err);
int aj_store_snapshot_get(struct aj_store *s, const char *ref, const char *owner,
			  struct aj_snapshot_rec *out, struct aj_err *err);
int aj_store_snapshot_list(struct aj_store *s, const char *owner, struct aj_snapshot_rec **out,
			   size_t *n, struct aj_err *err);
int aj_store_snapshot_set_state(struct aj_store *s, const char *id, enum aj_store_state state,
				int64_t size_bytes, struct aj_err *err);
int aj_store_snapshot_delete(struct aj_store *s, const char *id, struct aj_err *err);
/* Sandboxes (not deleted) whose stack includes the snapshot's top layer, but its source: in
 * use. */
int aj_store_snapshot_users(struct aj_store *s, const char *id, struct aj_strv *sandbox_names,
			    struct aj_err *err);
void aj_snapshot_rec_free(struct aj_snapshot_rec *r);
void aj_snapshot_recs_free(struct aj_snapshot_rec *r, size_t n);

/* Records held by a variable of a function (common/cleanup.h's convention), freed when it
 * goes out of scope: initialise them to AJ_REC_INIT; a lookup that fails leaves the record
 * freeable. */
#define AJ_REC_INIT {.id = ""}
/* The owner of a warm pool's sandboxes (`serve --warm-pool`) until one is claimed: no token or
 * API key owner can be it (':' is outside an owner's alphabet), so no front end lists them. */
#define AJ_POOL_OWNER ":pool"
#define _cleanup_sandbox_rec_ __attribute__((cleanup(aj_sandbox_rec_free)))
#define _cleanup_snapshot_rec_ __attribute__((cleanup(aj_snapshot_rec_free)))

/* Images. put adds the record and its layers (nothing when it exists); names are the
 * owner's own ("busybox:latest"); get finds a name, a digest, or 12 or more hex digits of a
 * digest the owner names. */
int aj_store_image_put(struct aj_store *s, const struct aj_image_rec *r, struct aj_err *err);
int aj_store_image_tag(struct aj_store *s, const char *owner, const char *name,
		       const char *digest, struct aj_err *err);
int aj_store_image_untag(struct aj_store *s, const char *owner, const char *name,
			 struct aj_err *err);
int aj_store_image_get(struct aj_store *s, const char *owner, const char *ref,
		       struct aj_image_rec *out, struct aj_err *err);
/* owner NULL: every image, named or not. */
int aj_store_image_list(struct aj_store *s, const char *owner, struct aj_image_rec **out,
			size_t *n, struct aj_err *err);
int aj_store_image_delete(struct aj_store *s, const char *digest, struct aj_err *err);
/* Every name, of every owner ("OWNER/NAME", the local owner's bare), pointing at digest. */
int aj_store_image_names_all(struct aj_store *s, const char *digest, struct aj_strv *names,
			     struct aj_err *err);
int aj_store_image_layers_used(struct aj_store *s, struct aj_strv *diff_ids,
			       struct aj_err *err);
void aj_image_rec_free(struct aj_image_rec *r);
void aj_image_recs_free(struct aj_image_rec *r, size_t n);
#define _cleanup_image_rec_ __attribute__((cleanup(aj_image_rec_free)))

/* Layers: directories under <state>/layers, immutable once "ready". */
int aj_store_layer_insert(struct aj_store *s, const char *id, enum aj_store_state state,
			  struct aj_err *err);
int aj_store_layer_set_state(struct aj_store *s, const char *id, enum aj_store_state state,
			     struct aj_err *err);
/* Ready layers referenced by no sandbox or snapshot stack. */
int aj_store_layers_unused(struct aj_store *s, struct aj_strv *ids, struct aj_err *err);
int aj_store_layer_delete(struct aj_store *s, const char *id, struct aj_err *err);
/* Deletes the layer's record if it is ready and no stack references it, in one statement: a
 * stack made meanwhile keeps it. *deleted says whether it was. */
int aj_store_layer_delete_unused(struct aj_store *s, const char *id, bool *deleted,
				 struct aj_err *err);
/* A layer's state into `state`: 1 if the layer is known, 0 if not, -1 on error. */
int aj_store_layer_get(struct aj_store *s, const char *id, enum aj_store_state *state,
		       struct aj_err *err);
/* Ids of snapshots whose stack holds the layer. */
int aj_store_layer_snapshots(struct aj_store *s, const char *layer, struct aj_strv *ids,
			     struct aj_err *err);
int aj_store_layers_in_state(struct aj_store *s, enum aj_store_state state, struct aj_strv *ids,
			     struct aj_err *err);
/* Ids of sandboxes whose stack holds the layer. */
int aj_store_layer_sandboxes(struct aj_store *s, const char *layer, struct aj_strv *ids,
			     struct aj_err *err);
/* Takes the layer out of a sandbox's stack (undoing an interrupted snapshot). */
int aj_store_sandbox_drop_layer(struct aj_store *s, const char *sandbox, const char *layer,
				struct aj_err *err);

/* An in-place restore in progress (manager/snapshot.c): the layer stack the sandbox is being
 * given, recorded before its files change. Setting an empty stack clears it; get yields an
 * empty one when there is none. Its layers count as used while it lasts. */
int aj_store_restore_intent_set(struct aj_store *s, const char *sandbox_id,
				const struct aj_strv *layers, struct aj_err *err);
int aj_store_restore_intent_get(struct aj_store *s, const char *sandbox_id,
				struct aj_strv *layers, struct aj_err *err);
/* Ids of the sandboxes with a restore intent. */
int aj_store_restore_intents(struct aj_store *s, struct aj_strv *sandbox_ids,
			     struct aj_err *err);

/* Events: appended by supervisors and verbs, read by `agentjail events`. */
int aj_store_event_add(struct aj_store *s, const char *sandbox_id, const char *type,
		       const char *data_json, struct aj_err *err);
/* Removes every event of one sandbox (a warm pool's sandbox at its claim: its history starts
 * there). */
int aj_store_events_delete(struct aj_store *s, const char *sandbox_id, struct aj_err *err);
/* Calls fn for each event with seq > after (sandbox_id NULL: all), in order. */
int aj_store_events(struct aj_store *s, const char *sandbox_id, int64_t after,
		    int (*fn)(void *arg, int64_t seq, int64_t time_ms, const char *sandbox,
			      const char *type, const char *data),
		    void *arg, struct aj_err *err);

/* The default state directory (--state-dir wins over it): $AGENTJAIL_STATE_DIR, else
 * /var/lib/agentjail as root, else $XDG_STATE_HOME/agentjail (~/.local/state/agentjail). */
int aj_state_dir_default(char *buf, size_t len);

#endif
