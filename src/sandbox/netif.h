/* The sandbox's network namespace: only loopback, brought up; and its hostname. */
#ifndef AJ_SANDBOX_NETIF_H
#define AJ_SANDBOX_NETIF_H

#include "common/err.h"

int aj_netif_loopback_up(struct aj_err *err);
int aj_netif_set_hostname(const char *name, struct aj_err *err);
/* The egress proxy's listening socket on 127.0.0.1:port of the calling process's network
 * namespace (the sandbox's), for the supervisor to accept on from outside. */
int aj_netif_proxy_listener(unsigned port, int *fd_out, struct aj_err *err);

#endif
