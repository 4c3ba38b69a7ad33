#include "ports/dialer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdpass.h"

/* One request is one byte (4 or 6: the family); one answer is an errno (0: a socket is
 * attached). */

static void answer(int fd, int errnum, int sock)
{
	int32_t e = errnum;
	struct iovec iov = {.iov_base = &e, .iov_len = sizeof e};

	aj_fdpass_send(fd, &iov, 1, sock >= 0 ? &sock : NULL, sock >= 0 ? 1 : 0);
}

/* Joins the network namespace net_sock belongs to: as root the namespace alone; rootless
 * its owner, the sandbox's user namespace (ours: we hold every capability there), first. */
static int join(int net_sock)
{
	_cleanup_close_ int net = ioctl(net_sock, SIOCGSKNS), user = -1;

	if (net < 0)
		return -1;
	if (setns(net, CLONE_NEWNET) == 0)
		return 0;
	if (errno != EPERM)
		return -1;
	user = ioctl(net, NS_GET_USERNS);
	if (user < 0 || setns(user, CLONE_NEWUSER) < 0)
		return -1;
	return setns(net, CLONE_NEWNET);
}

/* The dialer's whole life; never returns. */
static _Noreturn void dialer_main(int fd, int net_sock, pid_t parent)
{
	unsigned char fam;

	sigset_t none;

	/* The supervisor's handlers (libevent's) and mask are not the dialer's. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_NAME, "aj-dialer"); /* in ps, next to its supervisor */
	if (join(net_sock) < 0) {
		answer(fd, errno, -1);
		_exit(1);
	}
	close(net_sock);
	answer(fd, 0, -1);
	for (;;) {
		ssize_t n = recv(fd, &fam, 1, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			_exit(0);
		}
		int s = socket(fam == 6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			       0);
		answer(fd, s < 0 ? errno : 0, s);
		if (s >= 0)
			close(s);
	}
}

void aj_dialer_init(struct aj_dialer *d)
{
	d->pid = -1;
	d->fd = -1;
	d->why = 0;
}

/* One answer: 0 with *sock (or none wanted), or -1 with errno. */
static int read_answer(int fd, int *sock)
{
	int32_t e = 0;
	int fds[1] = {-1};
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = &e, .iov_len = sizeof e};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			   .msg_controllen = sizeof cbuf};
	ssize_t n;

	do
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	aj_fdpass_take(&m, fds, sock ? 1 : 0);
	if (n != (ssize_t)sizeof e) {
		aj_fds_close(fds, 1);
		errno = EPIPE;
		return -1;
	}
	if (e != 0) {
		aj_fds_close(fds, 1);
		errno = e;
		return -1;
	}
	if (sock) {
		if (fds[0] < 0) {
			errno = EPROTO;
			return -1;
		}
		*sock = fds[0];
	}
	return 0;
}

int aj_dialer_start(struct aj_dialer *d, int net_sock, struct aj_err *err)
{
	int sv[2];
	pid_t parent = getpid();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "the published ports' socket pair");
	d->pid = fork();
	if (d->pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		errno = e;
		return aj_err_sys(err, AJ_LAYER_NET, "fork the published ports' dialer");
	}
	if (d->pid == 0) {
		close(sv[0]);
		/* Nothing of the supervisor's stays open, stdio included, but the pair (at 3)
		 * and the socket of the sandbox's namespace (at 4). */
		int a = fcntl(sv[1], F_DUPFD, 10), b = fcntl(net_sock, F_DUPFD, 10);
		if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 ||
		    close_range(5, ~0U, 0) < 0 || close_range(0, 2, 0) < 0)
			_exit(1);
		dialer_main(3, 4, parent);
	}
	close(sv[1]);
	d->fd = sv[0];
	if (read_answer(d->fd, NULL) < 0) {
		int e = errno;
		aj_dialer_stop(d);
		errno = e;
		return aj_err_sys(err, AJ_LAYER_NET,
				  "join the sandbox's network namespace for its published ports");
	}
	return 0;
}

int aj_dialer_socket(struct aj_dialer *d, int family, struct aj_err *err)
{
	unsigned char fam = family == AF_INET6 ? 6 : 4;
	int sock = -1;

	if (d->fd < 0)
		return aj_err_set(err, AJ_LAYER_NET, ENOTCONN, "the sandbox's network is gone");
	if (send(d->fd, &fam, 1, MSG_NOSIGNAL) != 1 || read_answer(d->fd, &sock) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "a socket in the sandbox's network namespace");
	return sock;
}

void aj_dialer_stop(struct aj_dialer *d)
{
	aj_close_fd(&d->fd); /* the dialer exits at end of file */
	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	d->pid = -1;
}
