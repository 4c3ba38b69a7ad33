/* SCM_RIGHTS sending and receiving (fdpass.h). */
#include "common/fdpass.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

ssize_t aj_fdpass_send(int sock, const struct iovec *iov, size_t niov, const int *fds,
		       size_t nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * AJ_FDPASS_MAX)];
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = niov};
	ssize_t n;

	if (nfds > AJ_FDPASS_MAX) {
		errno = E2BIG;
		return -1;
	}
	if (nfds) {
		struct cmsghdr *c;
		memset(cbuf, 0, sizeof cbuf);
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

size_t aj_fdpass_take(struct msghdr *m, int *fds, size_t max)
{
	size_t kept = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		size_t n;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (fds && kept < max)
				fds[kept++] = fd;
			else
				close(fd);
		}
	}
	return kept;
}

void aj_fds_close(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		aj_close_fd(&fds[i]);
}

void aj_fdset_close(struct aj_fdset *s)
{
	aj_fds_close(s->v, s->n);
	s->n = 0;
}
