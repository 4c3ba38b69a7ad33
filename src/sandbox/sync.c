#include "sandbox/sync.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdpass.h"

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

/* A peer that exits with messages of ours unread leaves ECONNRESET on our socket, which the
 * next receive returns before anything queued (the kernel reports the socket's error first,
 * and clears it). What the peer sent before it went, its ERROR above all, is still queued:
 * one more receive reads it, or end-of-file. */
static bool reset_once(bool *reset)
{
	if (errno != ECONNRESET || *reset)
		return false;
	*reset = true;
	return true;
}

int aj_sync_recv(int fd, struct aj_sync_msg *m, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	bool reset = false;
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
	while (n < 0 && (errno == EINTR || reset_once(&reset)));
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

int aj_sync_send_fd(int fd, const struct aj_sync_msg *m, int pass)
{
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof *m};
	ssize_t n = aj_fdpass_send(fd, &iov, 1, &pass, 1);

	if (n < 0)
		return -1;
	if (n != (ssize_t)sizeof *m) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

int aj_sync_recv_fd(int fd, struct aj_sync_msg *m, int timeout_ms, int *passed)
{
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {.iov_base = m, .iov_len = sizeof *m};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof ctl};
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	bool reset = false;
	ssize_t n;
	int r;

	*passed = -1;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		if (r == 0)
			errno = ETIMEDOUT;
		return -1;
	}
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && (errno == EINTR || reset_once(&reset)));
	if (n < 0)
		return -1;
	/* Only the first descriptor is wanted; aj_fdpass_take closes any other. */
	if (!aj_fdpass_take(&mh, passed, 1))
		*passed = -1;
	if (n == 0 || n != (ssize_t)sizeof *m) {
		aj_close_fd(passed);
		errno = n == 0 ? EPIPE : EPROTO;
		return -1;
	}
	return 0;
}
