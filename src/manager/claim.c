/* Warm pools, the manager's side (docs/api.md, "Warm pools"): a running sandbox made for a
 * pool (owner AJ_POOL_OWNER, by `agentjail serve --warm-pool`) given to the owner whose
 * create it can serve.
 *
 * It can serve a create that a fresh sandbox would answer with the same sandbox: the policy
 * the create would store (aj_mgr_policy_text()) is the one the pool's sandbox was made with,
 * byte for byte, and the create starts it from an empty workspace (no snapshot). The change
 * of owner is the supervisor's to make (it writes a live sandbox's record), and it makes it
 * only for a sandbox still the pool's: one claim per sandbox, never back to a pool. The
 * sandbox's lock is held meanwhile, so that no rm or gc takes it halfway. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "control/client.h"
#include "manager/internal.h"

#define CLAIM_TIMEOUT_MS 10000

/* What create refuses (a bad name or label) is left to create to say: not claimable. */
static bool claimable(const struct aj_create_opts *o)
{
	if (o->from_snapshot || !o->start || (o->name && !aj_mgr_name_ok(o->name)))
		return false;
	for (size_t i = 0; o->labels && i < o->labels->n; i++) {
		const char *kv = o->labels->v[i], *eq = strchr(kv, '=');
		if (!eq || eq == kv)
			return false;
		for (size_t k = 0; k < i; k++)
			if (!strncmp(o->labels->v[k], kv, (size_t)(eq - kv) + 1))
				return false;
	}
	return true;
}

static json_t *claim_request(const struct aj_mgr *m, const struct aj_sandbox_rec *r,
			     const struct aj_create_opts *o)
{
	json_t *labels = json_array();

	for (size_t i = 0; o->labels && i < o->labels->n; i++)
		json_array_append_new(labels, json_string(o->labels->v[i]));
	return json_pack("{s:s, s:s, s:s, s:o, s:I, s:s, s:I, s:s, s:I}", "op", "claim", "owner",
			 m->owner, "name", o->name ? o->name : r->name, "labels", labels,
			 "idle_timeout_ms", (json_int_t)o->idle_timeout_ms, "idle_action",
			 o->idle_action ? o->idle_action : "pause", "max_lifetime_ms",
			 (json_int_t)o->max_lifetime_ms, "lifetime_action",
			 o->lifetime_action ? o->lifetime_action : "stop", "retention_ms",
			 (json_int_t)o->retention_ms);
}

int aj_mgr_claim(struct aj_mgr *m, const char *pool_id, const char *policy_text,
		 const struct aj_create_opts *o, struct aj_sandbox_rec *out, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_close_ int lock = -1, fd = -1;
	struct aj_err mine;

	if (!claimable(o) || !strcmp(m->owner, AJ_POOL_OWNER))
		return 0;
	if (aj_store_sandbox_get(m->store, pool_id, AJ_POOL_OWNER, &r, &mine) < 0)
		return 0; /* gone (a restart's sweep, rm by hand) */
	aj_mgr_refresh(m, &r);
	if (r.state != AJ_ST_RUNNING || !r.policy || strcmp(r.policy, policy_text) != 0)
		return 0;
	/* Not waited for: whoever holds it (rm, gc) is taking it away. */
	if ((lock = aj_mgr_lock(m, r.id, false, &mine)) < 0)
		return 0;
	if ((fd = aj_ctl_connect(r.socket, &mine)) < 0)
		return 0;
	if (aj_ctl_call(fd, claim_request(m, &r, o), NULL, 0, NULL, NULL, NULL, CLAIM_TIMEOUT_MS,
			&mine) < 0) {
		if (mine.errnum == EEXIST) { /* the name: the create's error, as create says it */
			aj_err_set(err, AJ_LAYER_STATE, EEXIST,
				   "a sandbox named \"%s\" already exists", o->name ? o->name : r.name);
			return aj_err_class(err, AJ_ERRC_EXISTS);
		}
		return 0; /* claimed by another request meanwhile, paused, stopping */
	}
	return aj_mgr_get(m, r.id, out, err) < 0 ? -1 : 1;
}
