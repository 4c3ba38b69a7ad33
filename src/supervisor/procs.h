/* Spawned commands: commands whose stdio the supervisor holds, so that they outlive any
 * client (a daemon restart, a dropped HTTP stream) and can be read, written and re-attached
 * to later. `exec` hands the client's own descriptors to the command instead (the CLI's fast
 * path); both are started by init the same way.
 *
 * Control operations (JSON over the control socket; ids are the exec ids of `exec`):
 *   spawn   {argv, env?, cwd?, tty?, rows?, cols?, stdin?, timeout_ms?, tag?, attach?,
 *            kill_on_close?, meta?}
 *           -> {ok, exec, pid}. stdin: keep a writable stdin (else /dev/null). timeout_ms:
 *           absent = the policy's timeout, 0 = none. attach: this connection follows it.
 *           kill_on_close: the command is killed when this connection closes (a client gone
 *           before the command started kills it at its start): the daemon's exec and
 *           terminal, whose commands live as long as their client, whatever the daemon does.
 *           meta: any JSON the client keeps with the command (E2B's process config), shown
 *           by procs.
 *   attach  {exec, from?} -> {ok, exec, running, offset}; then the retained output from byte
 *           offset `from` (default: none, only what comes next), then live output, then exit.
 *   detach  {exec}
 *   input   {exec, data (base64), eof?} -> {ok}; EAGAIN when the stdin buffer is full.
 *   close_stdin {exec}; resize {exec, rows, cols}; procs {} -> {ok, procs: [...]}.
 * Events to followers:
 *   {"event":"output", exec, stream: "stdout"|"stderr"|"pty", offset, size, data (base64),
 *    time_ms (when the supervisor read it)}
 *   {"event":"exit", exec, exit_code, status, limit?, wall_ms, cpu_ms, output_truncated}
 * Offsets count every byte the command wrote, both streams together, so a client that lost
 * its connection asks again `from` the last offset it saw plus that event's size.
 */
#ifndef AJ_SUPERVISOR_PROCS_H
#define AJ_SUPERVISOR_PROCS_H

#include <jansson.h>
#include <stdbool.h>

#include "supervisor/persist.h"

/* Handles spawn, attach, detach, input, close_stdin, resize and procs; false if `op` is
 * none of them. */
bool aj_procs_request(struct persist *p, struct conn *c, const char *op, json_t *req);

/* From control.c's init handling. */
/* A terminal for a spawned command: master (taken) is held here, slave (lent) goes to init;
 * owner and ctx are the spawn request's. */
void aj_procs_on_pty(struct persist *p, struct conn *owner, json_t *ctx, int master, int slave);
void aj_procs_started(struct persist *p, struct exec_rec *e, struct pending *q);
/* Takes e (already unlinked from p->execs) and the exit event. */
void aj_procs_exited(struct persist *p, struct exec_rec *e, json_t *exit_ev);
void aj_procs_io_free(struct proc_io *io);
json_t *aj_procs_describe(const struct exec_rec *e);

/* A connection went away, or a slow one caught up. */
void aj_procs_forget_conn(struct persist *p, struct conn *c);
void aj_procs_on_drained(struct persist *p);
/* Whether a client follows the command (it keeps the sandbox from idling). */
bool aj_procs_followed(const struct exec_rec *e);
/* Drops ended commands kept past their time; from the supervisor's tick. */
void aj_procs_expire(struct persist *p);

/* control.c's exec machinery, shared with spawn. */
struct pending *aj_persist_send_exec(struct persist *p, struct conn *c, json_t *req,
				     const int *fds, size_t nfds, int keep_fd,
				     struct aj_err *err);
int aj_persist_start_tty(struct persist *p, struct conn *c, json_t *req, struct aj_err *err);
void aj_persist_signal_exec(struct persist *p, uint64_t id, int sig);
/* The window size of a relayed terminal (the gvisor tier's, kept by init inside). */
void aj_persist_resize_exec(struct persist *p, uint64_t id, unsigned rows, unsigned cols);
void aj_persist_reply(struct conn *c, json_t *msg, const int *fds, size_t nfds);
void aj_persist_reply_err(struct conn *c, enum aj_layer layer, int e, const char *msg);

#endif
