/* Sandboxes and snapshots as the API shows them (docs/openapi.json, components/schemas).
 * The fields and names follow `agentjail inspect --json`, minus the supervisor's host pid,
 * which is of no use to a remote owner. */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "server/internal.h"

json_t *aj_srv_time_json(int64_t ms)
{
	char buf[40];

	if (!ms)
		return json_null();
	aj_format_time_ms((uint64_t)ms, buf, sizeof buf);
	return json_string(buf);
}

static json_t *labels_json(const struct aj_strv *labels)
{
	json_t *o = json_object();

	for (size_t i = 0; i < labels->n; i++) {
		const char *eq = strchr(labels->v[i], '=');
		char key[256];
		snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - labels->v[i]) : 255, labels->v[i]);
		json_object_set_new(o, key, json_string(eq ? eq + 1 : ""));
	}
	return o;
}

static json_t *strv_json(const struct aj_strv *sv)
{
	json_t *a = json_array();

	for (size_t i = 0; i < sv->n; i++)
		json_array_append_new(a, json_string(sv->v[i]));
	return a;
}

json_t *aj_srv_sandbox_json(const struct aj_sandbox_rec *r)
{
	json_t *policy = json_loads(r->policy ? r->policy : "{}", 0, NULL);

	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:s?, "
			 "s:{s:I, s:s, s:I, s:I}, s:s?, s:o}",
			 "id", r->id, "name", r->name, "owner", r->owner, "state",
			 aj_sandbox_state_name(r->state),
			 "generation", (json_int_t)r->generation, "created",
			 aj_srv_time_json(r->created_ms), "started", aj_srv_time_json(r->started_ms),
			 "stopped", aj_srv_time_json(r->stopped_ms), "last_active",
			 aj_srv_time_json(r->last_active_ms), "labels", labels_json(&r->labels),
			 "layers", strv_json(&r->layers), "base_snapshot",
			 r->base_snapshot[0] ? r->base_snapshot : NULL, "ttl", "idle_timeout_ms",
			 (json_int_t)r->idle_timeout_ms, "idle_action", r->idle_action,
			 "max_lifetime_ms", (json_int_t)r->max_lifetime_ms, "retention_ms",
			 (json_int_t)r->retention_ms, "error", r->error[0] ? r->error : NULL,
			 "policy", policy ? policy : json_object());
}

json_t *aj_srv_snapshot_json(const struct aj_snapshot_rec *s)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:o, s:s?}", "id", s->id, "name",
			 s->name, "source", s->source, "state", aj_store_state_name(s->state),
			 "created", aj_srv_time_json(s->created_ms), "size_bytes",
			 (json_int_t)s->size_bytes, "retention_ms", (json_int_t)s->retention_ms,
			 "layers", strv_json(&s->layers), "image", s->image[0] ? s->image : NULL);
}

static uint64_t limit_bytes(json_t *limits, const char *name)
{
	json_t *v = json_object_get(limits, name);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
							       : 0;
}

/* A record's policy has the disk limit its create decided (limits.disk "default" resolved). */
struct aj_srv_limits aj_srv_policy_limits(const char *policy_json)
{
	json_t *p = policy_json ? json_loads(policy_json, 0, NULL) : NULL;
	json_t *l = json_object_get(p, "limits");
	struct aj_srv_limits out = {limit_bytes(l, "memory"), limit_bytes(l, "disk")};

	json_decref(p);
	return out;
}
