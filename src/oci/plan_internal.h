/* Shared by the files that turn a bundle into a plan (plan_oci.c: the document, the root,
 * the layers; plan_ns.c: the namespaces and what belongs to them), and by them alone. */
#ifndef AJ_OCI_PLAN_INTERNAL_H
#define AJ_OCI_PLAN_INTERNAL_H

#include "oci/plan_oci.h"

/* plan_ns.c: new or joined namespaces, the hostname, the clone flags; the sysctls of the
 * namespaces the container makes (those of joined ones are written from outside once they
 * are opened, aj_oci_cplan_open_ns). */
int oci_plan_namespaces(struct aj_oci_cplan *c, struct aj_err *err);
int oci_plan_sysctls(struct aj_oci_cplan *c, struct aj_err *err);
/* The joined namespaces' descriptors (borrowed) and what is done in them, into l. */
void oci_plan_ns_launch(struct aj_oci_cplan *c, struct aj_container_launch *l);
void oci_plan_ns_free(struct aj_oci_cplan *c);

#endif
