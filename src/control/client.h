/* Client side of the control protocol: connect to a sandbox's supervisor and make requests.
 * A connection is a plain descriptor owned by the caller. */
#ifndef AJ_CONTROL_CLIENT_H
#define AJ_CONTROL_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "common/err.h"

int aj_ctl_connect(const char *socket_path, struct aj_err *err);
/* Sends req (consumed) with fds, waits for the reply (events that arrive first are skipped
 * into *events if non-NULL, as an array). On {"ok":false} fills err and returns -1; on success
 * *reply (may be NULL) gets the reply and rfds/nrfds any descriptors that came with it. */
int aj_ctl_call(int fd, json_t *req, const int *fds, size_t nfds, json_t **reply, int *rfds,
		size_t *nrfds, int timeout_ms, struct aj_err *err);
/* One-shot: connect, {"op": op}, close. */
int aj_ctl_simple(const char *socket_path, const char *op, json_t **reply, struct aj_err *err);

#endif
