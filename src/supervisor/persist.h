/* The supervisor of a persistent sandbox (`agentjail __supervise`): one process per live
 * sandbox, outside it, outliving the CLI call and the daemon that started it, like a
 * container shim. It owns the sandbox's cgroup, its init, the control socket clients talk
 * to, timers (exec timeouts, idle timeout, lifetime) and the sandbox's events.
 *
 * persist.c: start-up, the event loop, stopping. control.c: client requests and init's
 * replies. Everything a struct persist holds is freed when the process exits.
 */
#ifndef AJ_SUPERVISOR_PERSIST_H
#define AJ_SUPERVISOR_PERSIST_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cgroup/cgroup.h"
#include "cgroup/guard.h"
#include "common/warn.h"
#include "image/root.h"
#include "policy/plan.h"
#include "ports/dialer.h"
#include "supervisor/metrics.h"
#include "sandbox/initproto.h"
#include "sandbox/launch.h"
#include "state/store.h"

struct persist;

struct outmsg;
struct pevent;
struct aj_egress; /* egress/egress.h */
struct aj_ports;  /* ports/publish.h */

struct conn {
	struct persist *p;
	int fd;
	struct event *ev, *wev;
	struct outmsg *qhead, *qtail; /* messages the client could not take yet, in order */
	size_t qbytes;
	bool dead; /* sending failed: freed from its read event */
	uint64_t cur_rid; /* id of the request being answered (see control.c's reply) */
	struct conn *next;
};

struct proc_io; /* procs.c: stdio the supervisor holds for a spawned command */

struct exec_rec {
	struct persist *p;
	uint64_t id;
	pid_t pid;
	struct conn *owner; /* NULL once the client went away: the command runs on */
	struct event *timer;
	uint64_t started_us;
	bool timed_out;
	bool relay; /* the gvisor tier's terminal: its master is inside, resized through init */
	char argv0[128];
	struct proc_io *io; /* spawned: the supervisor holds its stdio; NULL for exec */
	struct exec_rec *next;
};

/* What the supervisor does with init's answer to a request (control.c). */
enum pending_kind { K_EXEC, K_FILE, K_PTY };

/* A request forwarded to init, waiting for its answer. */
struct pending {
	uint64_t id;
	enum aj_init_op op; /* of the request */
	struct conn *owner;
	int keep_fd;  /* a descriptor to hand back with the answer (a terminal's master) */
	uint64_t timeout_ms;
	enum pending_kind kind;
	json_t *ctx;  /* request details kept for the answer */
	struct proc_io *io; /* spawn: stdio prepared for the command */
	uint64_t rid;       /* the client's request id, for the answer */
	struct pending *next;
};

/* The gvisor tier's streamed inotify instances (control.c): the client's end of each one's
 * socket, by its inode, so that a client adding a watch "to its instance" names init's. */
struct watch_stream {
	dev_t dev;
	ino_t ino;
	uint64_t instance;
	struct watch_stream *next;
};

struct persist {
	struct aj_store *store;
	char state_dir[4096];
	char id[33];
	struct aj_sandbox_rec rec;
	struct aj_policy pol;
	struct aj_features feat;
	struct aj_plan plan;
	struct aj_image_root img; /* an image sandbox's root (the plan points into it) */
	struct aj_cgroup cg;
	struct aj_cgroup_guard guard; /* removes cg if this supervisor is killed */
	bool have_cg;
	struct aj_sandbox sb;
	struct aj_egress *egress; /* network.mode "proxy" (src/egress/) */
	struct aj_ports *ports;   /* network.publish, as bound at this start */
	struct aj_ports *host_ports; /* network.host_ports */
	struct aj_dialer dialer;  /* sockets inside: published ports and the "socket" op */
	struct event_base *base;
	int listen_fd;
	char sock_path[256];
	struct event *ev_listen, *ev_init, *ev_pid, *ev_tick, *ev_term;
	struct event *ev_flush;            /* writes queued events to the store */
	struct pevent *evq, *evq_tail;     /* events not yet in the store */
	struct conn *conns;
	struct exec_rec *execs;
	struct exec_rec *done; /* spawned commands that ended, kept a while for late readers */
	struct pending *pendings;
	struct watch_stream *wstreams;
	uint64_t next_id;
	uint64_t last_activity_ms;
	bool paused;
	struct conn *pause_lease; /* the connection whose closing resumes the sandbox */
	bool stopping;
	const char *stop_reason;
	const struct aj_warn *warn; /* the caller's: what the supervisor has to tell its log */
	struct aj_metrics metrics; /* sampled every AJ_METRICS_EVERY_S (metrics.h) */
	uint64_t next_sample_us; /* monotonic: when the timers next take a metrics sample */
	unsigned sample_every_s; /* AJ_METRICS_EVERY_S, more while idle (supervisor/metrics.h) */
	bool disk_hit;           /* the last sample found limits.disk reached */
	struct aj_strv volume_dirs; /* filesystem.volumes' sources (storage/volumes.h) */
	int *vol_fds;            /* their locks, held while the sandbox runs */
	size_t n_vol_fds;
	int etc_fd; /* the shared /etc's lock (etc_share.h), held until the supervisor exits */
};

/* Entry point of `agentjail __supervise`. ready_fd receives one JSON line when the sandbox
 * is up (or why it could not start) and is closed; warnings go to `warn`. Returns the
 * process exit status. */
int aj_supervise(const char *state_dir, const char *id, int ready_fd, const struct aj_warn *warn);

/* control.c */
void aj_persist_on_init(evutil_socket_t fd, short what, void *arg);
void aj_persist_dispatch(struct persist *p, struct conn *c, json_t *req, int *fds,
			 size_t nfds);
/* update.c: the "update" operation (live network rules and limits) */
void aj_persist_update_op(struct persist *p, struct conn *c, json_t *req);
/* conn.c */
void aj_persist_on_accept(evutil_socket_t fd, short what, void *arg);
void aj_persist_conn_close(struct persist *p, struct conn *c);
void aj_persist_conn_flush_all(struct persist *p);
/* Sends msg (consumed) with fds (duplicated if it has to wait), after what is queued. */
void aj_conn_send(struct conn *c, json_t *msg, const int *fds, size_t nfds);
/* persist.c */
void aj_persist_stop(struct persist *p, const char *reason);
int aj_persist_set_paused(struct persist *p, bool paused, struct aj_err *err);
/* Writes p->rec to the store in one transaction. */
int aj_persist_save(struct persist *p, struct aj_err *err);
void aj_persist_event(struct persist *p, const char *type, json_t *data);
/* Writes the queued events to the store now. */
void aj_persist_flush_events(struct persist *p);
void aj_persist_touch(struct persist *p);
/* Points the names index (state/names.h) at this sandbox's control socket: at start, and at
 * a warm pool's claim (a pool's sandbox is in no index: no client may ask for it by name). */
void aj_persist_publish_name(struct persist *p);
/* The timers computed again at once (a lifetime or timeout that changed). */
void aj_persist_rearm(struct persist *p);
/* claim.c: the "claim" operation (a warm pool's sandbox given to an owner) */
void aj_persist_claim_op(struct persist *p, struct conn *c, json_t *req);

#endif
