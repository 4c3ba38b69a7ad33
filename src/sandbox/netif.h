/* The sandbox's network namespace: only loopback, brought up; and its hostname. */
#ifndef AJ_SANDBOX_NETIF_H
#define AJ_SANDBOX_NETIF_H

#include "common/err.h"

int aj_netif_loopback_up(struct aj_err *err);
int aj_netif_set_hostname(const char *name, struct aj_err *err);

#endif
