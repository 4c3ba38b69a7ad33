/* Helpers shared by the verb files (verbs_life.c, verbs_proc.c). Not for other modules. */
#ifndef AJ_OCI_VERBS_H
#define AJ_OCI_VERBS_H

#include <jansson.h>
#include <sys/types.h>

#include "cgroup/oci.h"
#include "common/err.h"
#include "oci/plan_oci.h"
#include "oci/spec.h"
#include "oci/state.h"

/* What a verb holds, released at the end of its scope (common/cleanup.h's convention): the
 * container's state, its cgroup, a plan and a process. Each is released safely when zeroed
 * (declare them = {0}), after a failed load, and twice. */
#define OCI_STATE __attribute__((cleanup(aj_oci_state_free))) struct aj_oci_state
#define OCI_CGROUP __attribute__((cleanup(aj_cgroup_oci_free))) struct aj_cgroup_oci
#define OCI_CPLAN __attribute__((cleanup(aj_oci_cplan_free))) struct aj_oci_cplan
#define OCI_PROCESS __attribute__((cleanup(aj_oci_process_free))) struct aj_container_process

int aj_oci_one_operand(int argc, char **argv, int first, const char **id, struct aj_err *err);
int aj_oci_write_pidfile(const char *path, pid_t pid, struct aj_err *err);
/* A connected descriptor to the caller's --console-socket. */
int aj_oci_connect_console(const char *path, struct aj_err *err);
json_t *aj_oci_load_json(const char *path, struct aj_err *err);
/* The container's cgroup from its recorded path (the caller frees it). */
int aj_oci_load_cg(const struct aj_oci_state *st, struct aj_cgroup_oci *cg, struct aj_err *err);

#endif
