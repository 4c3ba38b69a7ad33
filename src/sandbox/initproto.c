#include "sandbox/initproto.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/fdpass.h"

int aj_init_send(int sock, const struct aj_init_hdr *h, const void *payload, const int *fds,
		 size_t nfds)
{
	struct iovec iov[2] = {{(void *)h, sizeof *h}, {(void *)payload, h->len}};
	ssize_t n;

	if (h->len > AJ_INIT_MAX_PAYLOAD || nfds > AJ_INIT_MAX_FDS) {
		errno = E2BIG;
		return -1;
	}
	n = aj_fdpass_send(sock, iov, h->len ? 2 : 1, fds, nfds);
	if (n < 0)
		return -1;
	return (size_t)n == sizeof *h + h->len ? 0 : (errno = EMSGSIZE, -1);
}

int aj_init_recv(int sock, struct aj_init_hdr *h, char *buf, size_t cap, int *fds,
		 size_t *nfds)
{
	/* h is only written (by recvmsg); cppcheck takes its place in the iovec for a read and
	 * would blame every caller that passes an unset header. */
	/* cppcheck-suppress ctuuninitvar */
	struct iovec iov[2] = {{h, sizeof *h}, {buf, cap ? cap - 1 : 0}};
	char cbuf[CMSG_SPACE(sizeof(int) * (AJ_INIT_MAX_FDS + 2))];
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = cbuf,
			   .msg_controllen = sizeof cbuf};
	size_t got_fds = 0;
	ssize_t n;

	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	got_fds = aj_fdpass_take(&m, fds, fds ? AJ_INIT_MAX_FDS : 0);
	if (nfds)
		*nfds = got_fds;
	if (n == 0) {
		errno = EPIPE;
		return -1;
	}
	if ((size_t)n < sizeof *h || (m.msg_flags & MSG_TRUNC) || h->len != (size_t)n - sizeof *h) {
		if (fds)
			aj_fds_close(fds, got_fds);
		if (nfds)
			*nfds = 0;
		errno = EPROTO;
		return -1;
	}
	if (cap)
		buf[h->len] = '\0';
	return 0;
}

int aj_init_strings(char *buf, size_t len, char **out, size_t max)
{
	size_t n = 0, i = 0;

	if (len == 0)
		return 0;
	if (buf[len - 1] != '\0')
		return -1;
	while (i < len && n < max) {
		out[n++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	return i == len ? (int)n : -1;
}
