/* Helpers shared by the files that build a plan (plan.c, plan_rootfs.c). Not for other
 * modules. */
#ifndef AJ_POLICY_PLAN_INTERNAL_H
#define AJ_POLICY_PLAN_INTERNAL_H

#include "policy/plan.h"

void aj_plan_set_layer(struct aj_plan *p, int layer, int state, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A layer the policy needs is unavailable: degraded if allow_degraded names `name` (or
 * `group`), otherwise an error in err_layer with the probe and the remedy. */
int aj_plan_need(struct aj_plan *p, int layer, const char *name, const char *group,
		 enum aj_layer err_layer, const char *probe, const char *remedy,
		 struct aj_err *err);
/* Appends an operation (dst and src are copied). NULL on allocation failure. */
struct aj_op *aj_plan_add_op(struct aj_plan *p, int kind, const char *dst, const char *src,
			     unsigned flags, uint64_t landlock, const char *why);
int aj_plan_rootfs(struct aj_plan *p, struct aj_err *err);

#endif
