#include "control/client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdpass.h"
#include "control/proto.h"

int aj_ctl_connect(const char *socket_path, struct aj_err *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;

	if (!socket_path[0] || strlen(socket_path) >= sizeof a.sun_path)
		return aj_err_set(err, AJ_LAYER_STATE, EINVAL, "bad control socket path \"%s\"",
				  socket_path);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", socket_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "socket");
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE,
				  "connect to the sandbox's supervisor at \"%s\"", socket_path);
	return aj_steal_fd(&fd);
}

static bool stale(json_t *msg, uint64_t rid)
{
	json_t *got = json_object_get(msg, "rid");

	return json_is_integer(got) && (uint64_t)json_integer_value(got) != rid;
}

int aj_ctl_call(int fd, json_t *req, const int *fds, size_t nfds, json_t **reply, int *rfds,
		size_t *nrfds, int timeout_ms, struct aj_err *err)
{
	static _Atomic uint64_t next_rid = 1;
	uint64_t rid = next_rid++;
	_cleanup_json_ json_t *msg = NULL;
	_cleanup_fdset_ struct aj_fdset got = {.n = 0};
	int r;

	json_object_set_new(req, "rid", json_integer((json_int_t)rid));
	r = aj_ctl_send(fd, req, fds, nfds);
	json_decref(req);
	if (reply)
		*reply = NULL;
	if (nrfds)
		*nrfds = 0;
	if (r < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "send to the supervisor");
	for (;;) {
		if (aj_ctl_recv(fd, &msg, got.v, &got.n, timeout_ms) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "wait for the supervisor");
		if (!json_object_get(msg, "event") && stale(msg, rid) == false)
			break;
		/* An event that raced ahead of the reply, or a late answer to an earlier request
		 * on this connection (one that timed out): not ours here. */
		json_decref(aj_steal_ptr(&msg));
		aj_fdset_close(&got);
	}
	if (!json_is_true(json_object_get(msg, "ok"))) {
		aj_ctl_take_error(msg, err);
		return -1;
	}
	for (size_t i = 0; rfds && nrfds && i < got.n; i++)
		rfds[(*nrfds)++] = aj_steal_fd(&got.v[i]);
	if (reply)
		*reply = aj_steal_ptr(&msg);
	return 0;
}

int aj_ctl_simple(const char *socket_path, const char *op, json_t **reply, struct aj_err *err)
{
	_cleanup_close_ int fd = aj_ctl_connect(socket_path, err);

	if (fd < 0)
		return -1;
	return aj_ctl_call(fd, json_pack("{s:s}", "op", op), NULL, 0, reply, NULL, NULL, 30000,
			   err);
}
