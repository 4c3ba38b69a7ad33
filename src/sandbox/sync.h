/* Messages between the supervisor and the sandbox's init over a SOCK_SEQPACKET pair: one
 * fixed-size record per message, so the post-fork child never allocates to talk, and errors
 * cross the fork as data (layer, errno, message) rather than as an exit status. */
#ifndef AJ_SANDBOX_SYNC_H
#define AJ_SANDBOX_SYNC_H

#include <stdint.h>
#include <sys/resource.h>

#include "common/err.h"

enum aj_sync_type {
	AJ_SYNC_GO = 1, /* parent -> child: ids mapped, cgroup joined; go on */
	AJ_SYNC_READY,  /* child -> parent: sandbox built, command started (or failed to) */
	AJ_SYNC_ERROR,  /* child -> parent: a setup step failed, see err */
	AJ_SYNC_EXIT,   /* init -> parent: the command ended with status */
	AJ_SYNC_SIGNAL, /* parent -> init: forward signal `status` to the command */
	AJ_SYNC_LISTENER, /* child -> parent: the egress proxy's listening socket (SCM_RIGHTS),
			   * made inside the sandbox's network namespace */
	AJ_SYNC_HOSTPORT, /* child -> parent: the listening socket of network.host_ports' port
			   * `status` (SCM_RIGHTS), in the policy's order */
	AJ_SYNC_NETSOCK,  /* child -> parent: a socket of the sandbox's network namespace
			   * (SCM_RIGHTS), the supervisor's way in (ports/dialer.h) */
	AJ_SYNC_NETNS,    /* parent -> child: the network namespace made for it (SCM_RIGHTS;
			   * plan->netns_later) */
	AJ_SYNC_CGROUP,   /* parent -> child, before NETNS: a cgroup v1 hierarchy's "tasks" file
			   * of the sandbox's cgroup, made meanwhile (SCM_RIGHTS), to join */
};

struct aj_sync_msg {
	uint32_t type;
	int32_t pid;        /* READY: the command's pid inside the sandbox */
	int32_t status;     /* EXIT: wait status; SIGNAL: signal number */
	int32_t exec_errno; /* READY/EXIT: errno of a failed execve or chdir, else 0 */
	char exec_stage[16];/* "chdir" or "exec" when exec_errno is set */
	struct rusage ru;   /* EXIT: resource usage of the command and reaped descendants */
	struct aj_err err;  /* ERROR */
};

int aj_sync_send(int fd, const struct aj_sync_msg *m);
/* Waits up to timeout_ms (-1: forever). Returns 0, or -1 with errno ETIMEDOUT, EPIPE (peer
 * gone) or the recv error. */
int aj_sync_recv(int fd, struct aj_sync_msg *m, int timeout_ms);
/* The same with one descriptor attached (SCM_RIGHTS). On receipt *passed is the descriptor
 * that came with the message (close-on-exec), or -1 if none did. */
int aj_sync_send_fd(int fd, const struct aj_sync_msg *m, int pass);
int aj_sync_recv_fd(int fd, struct aj_sync_msg *m, int timeout_ms, int *passed);

#endif
