/* The OCI bundle's seccomp profile (linux.seccomp) compiled to BPF. */
#ifndef AJ_OCI_SECCOMP_H
#define AJ_OCI_SECCOMP_H

#include <jansson.h>
#include <linux/filter.h>
#include <stddef.h>

#include "common/err.h"

/* *insns is malloc'd. *unknown counts syscall names libseccomp does not know (skipped, as
 * runc does). Errors name the field ("linux.seccomp.syscalls[3].action"). */
int aj_oci_seccomp_compile(json_t *seccomp, struct sock_filter **insns, size_t *n_insns,
			   size_t *unknown, struct aj_err *err);

extern const char *const aj_oci_seccomp_actions[];
extern const char *const aj_oci_seccomp_operators[];

#endif
