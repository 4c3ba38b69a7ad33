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

/* agentjail's own deny list reduced to the groups that keep a container from making
 * privileged files in a host directory it writes ("setid": set-ID modes; "namespaces": a
 * nested user namespace, which would give back CAP_SETFCAP), for a container whose bundle
 * turned the rest off (io.agentjail.seccomp=bundle). *insns is malloc'd. */
int aj_oci_seccomp_host_guard(struct sock_filter **insns, size_t *n_insns, struct aj_err *err);

extern const char *const aj_oci_seccomp_actions[];
extern const char *const aj_oci_seccomp_operators[];

#endif
