/* The sandbox's network namespace: only loopback, brought up; and its hostname. */
#ifndef AJ_SANDBOX_NETIF_H
#define AJ_SANDBOX_NETIF_H

#include "common/err.h"

int aj_netif_loopback_up(struct aj_err *err);
int aj_netif_set_hostname(const char *name, struct aj_err *err);
/* A listening socket on 127.0.0.1:port of the calling process's network namespace (the
 * sandbox's), for the supervisor to accept on from outside: the egress proxy's, and each of
 * network.host_ports. `what` names it in errors. */
int aj_netif_loopback_listener(unsigned port, const char *what, int *fd_out, struct aj_err *err);

#endif
