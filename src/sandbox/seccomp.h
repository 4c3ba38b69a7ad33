/* Loading the plan's seccomp program (BPF compiled at build time, or at plan time when a
 * policy relaxed a group). */
#ifndef AJ_SANDBOX_SECCOMP_H
#define AJ_SANDBOX_SECCOMP_H

#include <linux/filter.h>
#include <stddef.h>

#include "common/err.h"

/* Needs no_new_privs. The filter is inherited by every descendant and cannot be removed. */
int aj_seccomp_load(const struct sock_filter *insns, size_t len, struct aj_err *err);

#endif
