/* The "update" operation (docs/sandboxes.md "Changing a running sandbox"): the manager sends
 * the sandbox's whole new policy, which differs from the running one only where a live
 * change is possible, and the supervisor applies it: network.allow and network.deny in the
 * running proxy (connections they no longer allow closed), limits.memory, limits.pids and
 * limits.cpus in the cgroup. Everything is checked before anything changes; then the record
 * (policy, idle timeout) is saved and an "update" event says what changed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "control/proto.h"
#include "egress/egress.h"
#include "rules/egress.h"
#include "supervisor/persist.h"
#include "supervisor/procs.h"

static bool same_list(const struct aj_strv *a, const struct aj_strv *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]))
			return false;
	return true;
}

/* The policy without what a live update may change. */
static json_t *fixed_part(const struct aj_policy *p)
{
	json_t *j = aj_policy_to_json(p);

	json_object_del(json_object_get(j, "network"), "allow");
	json_object_del(json_object_get(j, "network"), "deny");
	json_object_del(json_object_get(j, "limits"), "memory");
	json_object_del(json_object_get(j, "limits"), "pids");
	json_object_del(json_object_get(j, "limits"), "cpus");
	return j;
}

/* Whether np differs from the record's policy only where a live update may: anything else
 * would be saved without being enforced until the next start. */
static bool only_live_changes(const struct persist *p, const struct aj_policy *np)
{
	_cleanup_policy_ struct aj_policy cur;
	_cleanup_json_ json_t *a = NULL, *b = NULL;
	struct aj_err err;

	aj_policy_init(&cur);
	cur.managed = true;
	if (aj_policy_load_text(&cur, p->rec.policy, &err) < 0)
		return false;
	a = fixed_part(&cur);
	b = fixed_part(np);
	return a && b && json_equal(a, b);
}

static json_t *strv_json(const struct aj_strv *v)
{
	json_t *a = json_array();

	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->v[i]));
	return a;
}

static void fail(struct conn *c, const struct aj_err *err)
{
	aj_persist_reply(c, aj_ctl_error(err), NULL, 0);
}

void aj_persist_update_op(struct persist *p, struct conn *c, json_t *req)
{
	json_t *pol = json_object_get(req, "policy"), *idle = json_object_get(req, "idle_timeout_ms");
	json_t *life = json_object_get(req, "max_lifetime_ms");
	char *old_text;
	int64_t old_idle, old_life;
	_cleanup_policy_ struct aj_policy np;
	struct aj_strv old_allow, old_deny;
	struct aj_cgroup_limits lim = {0};
	struct aj_err err;
	unsigned which = 0, closed = 0;
	bool net;
	_cleanup_free_ char *text = NULL;

	aj_policy_init(&np);
	np.managed = true; /* as load_plan reads it */
	if (!json_is_object(pol) || (idle && (!json_is_integer(idle) || json_integer_value(idle) < 0)) ||
	    (life && (!json_is_integer(life) || json_integer_value(life) < 0))) {
		aj_persist_reply_err(c, AJ_LAYER_USAGE, EINVAL,
				     "update: \"policy\" (an object), \"idle_timeout_ms\" and "
				     "\"max_lifetime_ms\" (>= 0)");
		return;
	}
	text = json_dumps(pol, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text || aj_policy_load_text(&np, text, &err) < 0 || aj_policy_validate(&np, &err) < 0) {
		if (!text)
			aj_err_set(&err, AJ_LAYER_INTERNAL, ENOMEM, "update: the policy's text");
		fail(c, &err);
		return;
	}
	if (np.net_mode != p->pol.net_mode) {
		aj_err_set(&err, AJ_LAYER_NET, ENOTSUP,
			   "network.mode: a running sandbox keeps the mode it started with (its "
			   "network namespace and proxy are made at start); stop it, update, start");
		fail(c, &err);
		return;
	}
	if (!only_live_changes(p, &np)) {
		aj_err_set(&err, AJ_LAYER_USAGE, EINVAL,
			   "update: only network.allow, network.deny and limits.memory, .pids and "
			   ".cpus change while the sandbox runs");
		fail(c, &err);
		return;
	}
	net = !same_list(&np.net_allow, &p->pol.net_allow) || !same_list(&np.net_deny, &p->pol.net_deny);
	if (net && !p->egress) {
		aj_err_set(&err, AJ_LAYER_NET, ENOTSUP,
			   "network.allow: this sandbox runs no egress proxy (network.mode \"%s\"), "
			   "so it has no rules to change",
			   np.net_mode == AJ_NET_NONE ? "none" : "host");
		fail(c, &err);
		return;
	}
	if (net) { /* the rules must build before anything changes */
		struct aj_egress_rules probe;
		if (aj_egress_rules_build(&probe, &np.net_allow, &np.net_deny, &err) < 0) {
			fail(c, &err);
			return;
		}
		aj_egress_rules_free(&probe);
	}
	lim.memory = np.limits.memory;
	lim.pids = np.limits.pids;
	lim.cpu_milli = np.limits.cpu_milli;
	which |= np.limits.memory != p->pol.limits.memory ? 1u << AJ_CG_MEMORY : 0;
	which |= np.limits.pids != p->pol.limits.pids ? 1u << AJ_CG_PIDS : 0;
	which |= np.limits.cpu_milli != p->pol.limits.cpu_milli ? 1u << AJ_CG_CPU : 0;
	if (which && !p->have_cg) {
		aj_err_set(&err, AJ_LAYER_CGROUP, ENOTSUP,
			   "limits: the sandbox runs without a cgroup of its own (rootless without "
			   "a delegated cgroup?), so it has no limit to change");
		fail(c, &err);
		return;
	}
	/* The record first: what is saved is what runs from here on, or nothing changed. */
	old_text = p->rec.policy;
	old_idle = p->rec.idle_timeout_ms;
	old_life = p->rec.max_lifetime_ms;
	p->rec.policy = text;
	if (idle)
		p->rec.idle_timeout_ms = json_integer_value(idle);
	if (life)
		p->rec.max_lifetime_ms = json_integer_value(life);
	p->rec.updated_ms = (int64_t)aj_now_realtime_ms();
	if (aj_persist_save(p, &err) < 0)
		goto undo_record;
	if (which && p->cg.env->ops->set_limits(&p->cg, &lim, which, &err) < 0) {
		struct aj_cgroup_limits was = {.memory = p->pol.limits.memory,
					       .pids = p->pol.limits.pids,
					       .cpu_milli = p->pol.limits.cpu_milli};
		p->cg.env->ops->set_limits(&p->cg, &was, which, NULL); /* what a failure left */
		goto undo_record;
	}
	p->pol.limits.memory = np.limits.memory;
	p->pol.limits.pids = np.limits.pids;
	p->pol.limits.cpu_milli = np.limits.cpu_milli;
	if (net) {
		old_allow = p->pol.net_allow;
		old_deny = p->pol.net_deny;
		p->pol.net_allow = np.net_allow;
		p->pol.net_deny = np.net_deny;
		/* the rules were built above: this does not fail but for memory */
		if (aj_egress_update(p->egress, &closed, &err) < 0) {
			p->pol.net_allow = old_allow;
			p->pol.net_deny = old_deny;
			fail(c, &err);
			return;
		}
		np.net_allow = old_allow; /* freed with np */
		np.net_deny = old_deny;
	}
	text = NULL; /* the record's now */
	free(old_text);
	{
		json_t *ev = json_pack("{s:I, s:I, s:I, s:I, s:I}", "memory",
				       (json_int_t)p->pol.limits.memory, "pids",
				       (json_int_t)p->pol.limits.pids, "cpu_milli",
				       (json_int_t)p->pol.limits.cpu_milli, "idle_timeout_ms",
				       (json_int_t)p->rec.idle_timeout_ms, "closed", (json_int_t)closed);

		if (net) {
			json_object_set_new(ev, "allow", strv_json(&p->pol.net_allow));
			json_object_set_new(ev, "deny", strv_json(&p->pol.net_deny));
		}
		aj_persist_event(p, "update", ev);
	}
	aj_persist_reply(c, json_pack("{s:b, s:I}", "ok", 1, "closed", (json_int_t)closed), NULL,
			 0);
	return;
undo_record:
	p->rec.policy = old_text;
	p->rec.idle_timeout_ms = old_idle;
	p->rec.max_lifetime_ms = old_life;
	{
		struct aj_err ignored;
		aj_persist_save(p, &ignored);
	}
	fail(c, &err);
}
