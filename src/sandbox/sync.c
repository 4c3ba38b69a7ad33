#include "sandbox/sync.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

int aj_sync_send_fd(int fd, const struct aj_sync_msg *m, int pass)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof *m};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof ctl};
	struct cmsghdr *c;
	ssize_t n;

	memset(ctl, 0, sizeof ctl);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &pass, sizeof(int));
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n != (ssize_t)sizeof *m) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

/* Closes every descriptor a message carried but the caller did not ask for: a misbehaving
 * peer cannot leak descriptors into the supervisor. */
static void take_fds(struct msghdr *mh, int *passed)
{
	int got = -1;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (got < 0 && passed)
				got = fd;
			else
				close(fd);
		}
	}
	if (passed)
		*passed = got;
}

int aj_sync_recv_fd(int fd, struct aj_sync_msg *m, int timeout_ms, int *passed)
{
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {.iov_base = m, .iov_len = sizeof *m};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof ctl};
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
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
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	take_fds(&mh, passed);
	if (n == 0 || n != (ssize_t)sizeof *m) {
		if (*passed >= 0)
			close(*passed);
		*passed = -1;
		errno = n == 0 ? EPIPE : EPROTO;
		return -1;
	}
	return 0;
}
