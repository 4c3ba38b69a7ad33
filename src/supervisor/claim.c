/* The "claim" operation: a warm pool's sandbox (`serve --warm-pool`, owner AJ_POOL_OWNER)
 * given to the owner a create asked for it (docs/api.md, "Warm pools"). The supervisor is
 * the writer of a live sandbox's record, so it makes the change: in one transaction the
 * record takes its owner, name, labels and timers, its times start now, and the pool's
 * events of the sandbox are replaced by a "create" and a "start" of this moment; then the
 * metrics the pool's wait sampled go and the timers are armed anew. Only a sandbox still the
 * pool's can be claimed, so a claimed one is never claimed again (never returned to a pool).
 * Everything is checked before anything changes; a failure changes nothing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "control/proto.h"
#include "supervisor/persist.h"
#include "supervisor/procs.h"

/* What a claim may set, read from the request before anything changes. */
struct claim {
	const char *owner, *name, *idle_action, *lifetime_action;
	int64_t idle_timeout_ms, max_lifetime_ms, retention_ms;
	json_t *labels;
};

static bool count_ok(json_t *v, int64_t *out)
{
	if (!v) {
		*out = 0;
		return true;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = json_integer_value(v);
	return true;
}

static bool action_ok(const char *a)
{
	return !a || !strcmp(a, "pause") || !strcmp(a, "stop");
}

static bool labels_ok(json_t *labels)
{
	size_t i;
	json_t *v;

	if (!labels)
		return true;
	if (!json_is_array(labels))
		return false;
	json_array_foreach(labels, i, v) {
		const char *s = json_string_value(v);
		if (!s || !strchr(s, '=') || s[0] == '=')
			return false;
	}
	return true;
}

static int read_claim(json_t *req, struct claim *c)
{
	c->owner = json_string_value(json_object_get(req, "owner"));
	c->name = json_string_value(json_object_get(req, "name"));
	c->idle_action = json_string_value(json_object_get(req, "idle_action"));
	c->lifetime_action = json_string_value(json_object_get(req, "lifetime_action"));
	c->labels = json_object_get(req, "labels");
	/* "" is the local owner (the CLI's and the unix socket's). */
	if (!c->owner || strlen(c->owner) >= sizeof ((struct aj_sandbox_rec *)0)->owner ||
	    !strcmp(c->owner, AJ_POOL_OWNER) || !c->name || !c->name[0] ||
	    strlen(c->name) >= sizeof ((struct aj_sandbox_rec *)0)->name ||
	    !action_ok(c->idle_action) || !action_ok(c->lifetime_action) || !labels_ok(c->labels) ||
	    !count_ok(json_object_get(req, "idle_timeout_ms"), &c->idle_timeout_ms) ||
	    !count_ok(json_object_get(req, "max_lifetime_ms"), &c->max_lifetime_ms) ||
	    !count_ok(json_object_get(req, "retention_ms"), &c->retention_ms))
		return -1;
	return 0;
}

static void apply(struct aj_sandbox_rec *r, const struct claim *c, int64_t now)
{
	size_t i;
	json_t *v;

	snprintf(r->owner, sizeof r->owner, "%s", c->owner);
	snprintf(r->name, sizeof r->name, "%s", c->name);
	aj_strv_clear(&r->labels);
	json_array_foreach(c->labels, i, v)
		aj_strv_push(&r->labels, json_string_value(v));
	r->idle_timeout_ms = c->idle_timeout_ms;
	r->max_lifetime_ms = c->max_lifetime_ms;
	r->retention_ms = c->retention_ms;
	snprintf(r->idle_action, sizeof r->idle_action, "%s", c->idle_action ? c->idle_action : "pause");
	snprintf(r->lifetime_action, sizeof r->lifetime_action, "%s",
		 c->lifetime_action ? c->lifetime_action : "stop");
	r->created_ms = r->updated_ms = r->started_ms = r->last_active_ms = now;
}

/* The record and the sandbox's history, in one transaction. */
static int save_claimed(struct persist *p, struct aj_err *err)
{
	_cleanup_free_ char *start = aj_xasprintf(
		"{\"generation\":%lld,\"mode\":\"%s\"}", (long long)p->rec.generation,
		p->plan.privileged ? "privileged" : "rootless");

	if (aj_store_begin(p->store, err) < 0)
		return -1;
	if (aj_store_sandbox_update(p->store, &p->rec, err) < 0 ||
	    aj_store_sandbox_set_labels(p->store, &p->rec, err) < 0 ||
	    aj_store_events_delete(p->store, p->id, err) < 0 ||
	    aj_store_event_add(p->store, p->id, "create", NULL, err) < 0 ||
	    aj_store_event_add(p->store, p->id, "start", start, err) < 0) {
		aj_store_rollback(p->store);
		return -1;
	}
	return aj_store_commit(p->store, err);
}

void aj_persist_claim_op(struct persist *p, struct conn *c, json_t *req)
{
	struct aj_sandbox_rec was = p->rec; /* the scalar fields; labels are copied below */
	struct claim cl;
	struct aj_err err;

	if (strcmp(p->rec.owner, AJ_POOL_OWNER) != 0) {
		aj_persist_reply_err(c, AJ_LAYER_STATE, EPERM,
				     "claim: this sandbox is no warm pool's (claimed already?)");
		return;
	}
	if (p->paused || p->stopping) {
		aj_persist_reply_err(c, AJ_LAYER_STATE, EBUSY,
				     p->paused ? "claim: the sandbox is paused"
					       : "claim: the sandbox is stopping");
		return;
	}
	if (read_claim(req, &cl) < 0) {
		aj_persist_reply_err(c, AJ_LAYER_USAGE, EINVAL,
				     "claim: \"owner\" (not the pool's) and \"name\", optional "
				     "\"labels\" (KEY=VALUE strings), \"idle_timeout_ms\", "
				     "\"max_lifetime_ms\", \"retention_ms\" (>= 0), \"idle_action\", "
				     "\"lifetime_action\" (\"pause\" or \"stop\")");
		return;
	}
	/* What the pool's wait left in the queue belongs to the history that goes. */
	aj_persist_flush_events(p);
	was.labels = (struct aj_strv)AJ_STRV_INIT;
	aj_strv_copy(&was.labels, &p->rec.labels);
	apply(&p->rec, &cl, (int64_t)aj_now_realtime_ms());
	if (save_claimed(p, &err) < 0) {
		aj_strv_free(&p->rec.labels);
		p->rec = was; /* the policy and layers were never touched */
		aj_persist_reply(c, aj_ctl_error(&err), NULL, 0);
		return;
	}
	aj_strv_free(&was.labels);
	/* Nothing the pool's wait measured is the new owner's. */
	aj_metrics_free(&p->metrics);
	memset(&p->metrics, 0, sizeof p->metrics);
	aj_persist_touch(p);
	aj_persist_rearm(p);
	aj_persist_publish_name(p);
	aj_persist_reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
}
