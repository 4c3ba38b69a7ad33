/* Sockets in a sandbox's network namespace, for the supervisor outside it: the way in of
 * published ports, and of port-forward and the daemon's port proxy (src/server/portproxy.c)
 * through the control socket's "socket" operation.
 *
 * A socket belongs to the network namespace it was made in for its whole life, so the
 * supervisor only needs sockets made there, not to be there itself. A dialer is a process
 * forked from the supervisor that joins the sandbox's network namespace (found through a
 * socket the sandbox's child made there, SIOCGSKNS; rootless, first the namespace's owner,
 * the sandbox's user namespace, which the supervisor's user owns) and makes unconnected TCP
 * sockets on request, passing each back. It stays in the supervisor's
 * pid namespace, invisible to the sandbox (which can neither signal nor trace it), holds
 * nothing but its end of the pair, is not dumpable, and dies with the supervisor.
 */
#ifndef AJ_PORTS_DIALER_H
#define AJ_PORTS_DIALER_H

#include <sys/types.h>

#include "common/err.h"

struct aj_dialer {
	pid_t pid; /* -1: not started */
	int fd;    /* the supervisor's end */
	int why;   /* not started: the errno of the failed start, else 0 */
};

void aj_dialer_init(struct aj_dialer *d);
/* Joins the network namespace of net_sock (a socket made there; the caller keeps it). -1
 * with err. */
int aj_dialer_start(struct aj_dialer *d, int net_sock, struct aj_err *err);
/* A new non-blocking TCP socket (AF_INET or AF_INET6) in the sandbox's namespace: the
 * caller connects it to the sandbox's loopback. */
int aj_dialer_socket(struct aj_dialer *d, int family, struct aj_err *err);
/* Ends the process and waits for it. */
void aj_dialer_stop(struct aj_dialer *d);

#endif
