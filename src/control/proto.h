/* The control protocol between clients (CLI, daemon, MCP server) and a persistent sandbox's
 * supervisor: JSON messages over a SOCK_SEQPACKET unix socket, one message per packet, with
 * descriptors (stdio, opened files) passed as SCM_RIGHTS. docs/architecture.md lists the
 * operations.
 */
#ifndef AJ_CONTROL_PROTO_H
#define AJ_CONTROL_PROTO_H

#include <jansson.h>
#include <stddef.h>

#include "common/err.h"

#define AJ_CTL_MAX_MSG (256 * 1024)
#define AJ_CTL_MAX_FDS 3

/* Sends msg (not consumed) with up to AJ_CTL_MAX_FDS descriptors. 0 or -1 (errno). */
int aj_ctl_send(int fd, json_t *msg, const int *fds, size_t nfds);
/* Receives one message; timeout_ms -1 waits forever. *msg is a new reference. Extra
 * descriptors beyond AJ_CTL_MAX_FDS are closed. -1 with errno: ETIMEDOUT, EPIPE (peer gone),
 * EPROTO (not JSON), or the socket error. */
int aj_ctl_recv(int fd, json_t **msg, int *fds, size_t *nfds, int timeout_ms);

/* {"ok":false,"error":{"layer":...,"message":...,"errno":N,"hint":...}} (new reference). */
json_t *aj_ctl_error(const struct aj_err *err);
/* Fills err from an error reply; returns -1. */
int aj_ctl_take_error(json_t *reply, struct aj_err *err);

#endif
