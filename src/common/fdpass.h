/* Descriptors passed over unix sockets (SCM_RIGHTS), for every protocol that carries them:
 * the control socket, init's socket, the launch sync pair, OCI's console socket. */
#ifndef AJ_COMMON_FDPASS_H
#define AJ_COMMON_FDPASS_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The most descriptors one message sends. */
#define AJ_FDPASS_MAX 8

/* Sends iov[0..niov) with fds[0..nfds) attached, without SIGPIPE, again after EINTR. The
 * bytes sent, or -1 with errno (E2BIG past AJ_FDPASS_MAX descriptors). */
ssize_t aj_fdpass_send(int sock, const struct iovec *iov, size_t niov, const int *fds,
		       size_t nfds);

/* The descriptors a received message carried, in order: the first `max` go to fds (NULL with
 * max 0: none wanted), every other one is closed, so a misbehaving peer cannot leave
 * descriptors in the receiver. Returns how many went to fds. */
size_t aj_fdpass_take(struct msghdr *m, int *fds, size_t max);

/* Closes fds[0..n) that are >= 0 and leaves -1 in them: the descriptors a message brought
 * that nobody takes. */
void aj_fds_close(int *fds, size_t n);

/* The descriptors one message brought, owned until taken (aj_steal_fd(&set.v[i])). A
 * _cleanup_fdset_ variable closes what is left when it goes out of scope; aj_fdset_close()
 * does so at once (before the next message is received into the same set). */
struct aj_fdset {
	int v[AJ_FDPASS_MAX];
	size_t n;
};

void aj_fdset_close(struct aj_fdset *s);
#define _cleanup_fdset_ __attribute__((cleanup(aj_fdset_close)))

#endif
