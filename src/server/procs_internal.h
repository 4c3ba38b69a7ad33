/* What the API's two command files share (not for other modules): api_exec.c (exec, and the
 * stream that follows a command's output) and api_processes.c (background processes).
 *
 * Everything goes through the supervisor's spawn operations (supervisor/procs.h): the
 * supervisor holds the command's stdio, so the daemon keeps nothing a restart would lose.
 * Ownership: a request's struct aj_srv_pdata is its r->data (made by aj_srv_pdata_new, freed
 * with the request); its connection to the supervisor (ctl) passes to a stream that follows
 * the command, which then closes it. The supervisor calls run on worker threads, the streams
 * on the loop thread.
 */
#ifndef AJ_SERVER_PROCS_INTERNAL_H
#define AJ_SERVER_PROCS_INTERNAL_H

#include "server/internal.h"

#define AJ_SRV_CALL_MS 30000

struct aj_srv_pdata {
	json_t *spawn;      /* the supervisor request, built from the body */
	json_t *stdin_text; /* exec: bytes for stdin, then EOF (a JSON string of base64) */
	int ctl;
	uint64_t exec;
	int pid;
	int64_t from;
	bool follow, from_given;
	int start_failed; /* 126 or 127 when the command could not be started */
	json_t *attach;   /* the supervisor's answer to attach */
	char socket[108]; /* the supervisor's control socket, once a worker found it */
	struct event *ev; /* exec_direct.c: waiting for the supervisor's answer */
};

/* A new r->data for r (ctl -1). */
__attribute__((returns_nonnull)) struct aj_srv_pdata *aj_srv_pdata_new(struct aj_srv_req *r);
void aj_srv_pdata_free(void *p);
/* For a struct aj_srv_pdata * held by a function, not a request. */
static inline void aj_srv_pdata_freep(struct aj_srv_pdata **d)
{
	if (*d)
		aj_srv_pdata_free(*d);
}

/* Output in lines: text when it is UTF-8 (a sequence split across chunks is held back for
 * the next one), base64 otherwise. */
struct aj_srv_textconv {
	unsigned char hold[3][3];
	size_t nhold[3];
};

/* The supervisor's output and exit events as the API's lines (new references). */
json_t *aj_srv_output_line(struct aj_srv_textconv *tc, json_t *ev);
json_t *aj_srv_exit_line(json_t *ev);

/* The supervisor's spawn request for the body into d->spawn (attach: exec's and the
 * terminal's: the connection follows the command, and the supervisor kills the command when
 * that connection closes); -1 with the request failed. */
int aj_srv_build_spawn(struct aj_srv_req *r, struct aj_srv_pdata *d, bool attach);
/* The body's "stdin" or "stdin_base64" into d->stdin_text and d->spawn. */
int aj_srv_spawn_stdin(struct aj_srv_req *r, struct aj_srv_pdata *d);

/* Worker thread: a connection to the sandbox's supervisor into d->ctl, a call on it (the
 * answer in *reply if wanted; req consumed), and a spawn of d->spawn. -1 with the request
 * failed. */
int aj_srv_proc_connect(struct aj_srv_req *r, struct aj_mgr *m, struct aj_srv_pdata *d);
int aj_srv_proc_call(struct aj_srv_req *r, struct aj_srv_pdata *d, json_t *req, json_t **reply);
/* The request failed with the supervisor's err (start failures kept in d). Returns -1. */
int aj_srv_proc_fail(struct aj_srv_req *r, struct aj_srv_pdata *d, const struct aj_err *err);
int aj_srv_proc_spawn(struct aj_srv_req *r, struct aj_mgr *m, struct aj_srv_pdata *d);

/* Loop thread: takes r over as a stream of JSON lines following command d->exec on d->ctl,
 * `first` its first line (consumed); `only`: that line was the last. kill_on_close: the
 * command dies with the client (exec). */
void aj_srv_proc_stream(struct aj_srv_req *r, struct aj_srv_pdata *d, bool kill_on_close,
			json_t *first, bool only);

/* ---- exec straight from the loop thread (exec_direct.c) ------------------------------------ */

/* Loop thread: sends d->spawn to the supervisor of r's sandbox when the daemon knows its
 * socket for r's owner and reference, and takes r over (0). -1: not known, or that socket
 * does not answer (forgotten): the caller lets a worker look the sandbox up. */
int aj_srv_exec_direct(struct aj_srv_req *r, struct aj_srv_pdata *d);
/* Remembers (loop thread) that r's owner reaches r's sandbox at socket. */
void aj_srv_socks_put(const struct aj_srv_req *r, const char *socket);
/* Whose lookup an entry holds: an owner and a reference. */
struct aj_srv_sockkey {
	char owner[AJ_SRV_OWNER_MAX];
	char ref[sizeof ((struct aj_srv_req *)0)->ref];
	bool any_owner;
};
void aj_srv_socks_key(const struct aj_srv_req *r, struct aj_srv_sockkey *k);
/* Loop thread: keeps fd, a connection to socket whose last command's exit was read and on
 * which nothing else is pending, for k's next exec; closes it where k's entry is gone, holds
 * another socket or has one parked already. */
void aj_srv_socks_park(const struct aj_srv_sockkey *k, const char *socket, int fd);
/* Loop thread, exec's done: the supervisor answered the spawn (or the request failed). */
void aj_srv_exec_started(struct aj_srv_req *r);

#endif
