#include "sandbox/sync.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

int aj_sync_send(int fd, const struct aj_sync_msg *m)
{
	ssize_t n;

	do
		n = send(fd, m, sizeof *m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n != (ssize_t)sizeof *m) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

int aj_sync_recv(int fd, struct aj_sync_msg *m, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -1;
	if (r == 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	do
		n = recv(fd, m, sizeof *m, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n == 0) {
		errno = EPIPE;
		return -1;
	}
	if (n != (ssize_t)sizeof *m) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}
