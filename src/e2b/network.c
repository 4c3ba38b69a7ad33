/* sandbox.updateNetwork() (PUT /sandboxes/{id}/network, docs/e2b.md "Changing a sandbox's
 * network"): E2B's egress settings mapped onto agentjail's live update (manager.h's
 * aj_mgr_update), within what the sandbox's template allows, never beyond: a client narrows
 * its sandbox's network, as at create it may only take it away.
 *
 * The body replaces the sandbox's egress settings (what it omits is cleared, as E2B says):
 * - {} : the template's network again;
 * - allow_internet_access: false : nothing allowed (every request a 403);
 * - denyOut [HOST|IP...] : those denied, the template's allowed hosts otherwise;
 * - denyOut ["0.0.0.0/0"] with allowOut [...] : only those of allowOut, each of which must be
 *   one of the template's allowed hosts (as written, with or without its port);
 * - rules (header transforms) and egressProxy: refused, a template's policy says them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "e2b/internal.h"
#include "policy/policy.h"

/* The template's policy as a create makes it: its allow list is the ceiling. */
static int template_allow(struct aj_srv_req *r, const struct aj_sandbox_rec *rec,
			  struct aj_policy *p)
{
	const char *name = e2b_label(rec, E2B_LABEL_TEMPLATE);
	json_t *pol = e2b_template(e2b_of(r)->e2b, name);
	const char *preset = NULL;
	struct aj_err err;

	if (!pol) /* an image template: "base"'s policy */
		pol = e2b_template(e2b_of(r)->e2b, "base");
	if (aj_policy_json_preset(pol, &preset, &err) < 0 ||
	    aj_policy_apply_preset(p, preset ? preset : "workspace-write", &err) < 0 ||
	    aj_policy_apply_json(p, pol, &err) < 0)
		return e2b_fail(r, 500, "the template's policy: %s", err.msg);
	return 0;
}

/* The template's allowed rules that host (as E2B names it) names: the rule itself, or those
 * of its host, with their ports (never more than the template gave) into out. */
static bool in_ceiling(const struct aj_strv *allow, const char *host, struct aj_strv *out)
{
	bool found = false;

	for (size_t i = 0; i < allow->n; i++) {
		const char *a = allow->v[i];
		size_t n = strlen(host);
		if (!strcmp(a, host) || (!strncmp(a, host, n) && a[n] == ':' && !strchr(host, ':'))) {
			if (out && !aj_strv_contains(out, a))
				aj_strv_push(out, a);
			found = true;
		}
	}
	return found;
}

/* E2B names hosts and addresses without ports, for every port: a rule with ":*". */
static char *every_port(const char *s)
{
	size_t colons = 0;

	for (const char *p = s; *p; p++)
		colons += *p == ':';
	if (s[0] == '[' || colons == 1)
		return aj_xstrdup(s); /* a port given, or a bracketed address */
	if (colons > 1)
		return aj_xasprintf("[%s]:*", s); /* an IPv6 address */
	return aj_xasprintf("%s:*", s);
}

static int read_list(struct aj_srv_req *r, const char *member, struct aj_strv *out, bool *all)
{
	json_t *v = json_object_get(e2b_of(r)->msg, member), *e;
	size_t i;

	*all = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > 256)
		return e2b_fail(r, 400, "%s: expected an array of hosts or addresses", member);
	json_array_foreach(v, i, e) {
		const char *s = json_string_value(e);
		if (!s || !*s || strlen(s) > 255 || strpbrk(s, " \t\r\n"))
			return e2b_fail(r, 400, "%s[%zu]: expected a host or an address", member, i);
		if (!strcmp(s, "0.0.0.0/0") || !strcmp(s, "::/0")) {
			*all = true;
			continue;
		}
		if (strchr(s, '/'))
			return e2b_fail(r, 400, "%s[%zu]: \"%s\": address ranges other than 0.0.0.0/0 "
					 "are not supported here; name hosts or addresses",
					 member, i, s);
		aj_strv_push(out, s);
	}
	return 0;
}

static void network_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	_cleanup_policy_ struct aj_policy tpl;
	_cleanup_strv_ struct aj_strv allow_out = AJ_STRV_INIT, deny_out = AJ_STRV_INIT;
	_cleanup_strv_ struct aj_strv allow = AJ_STRV_INIT, deny = AJ_STRV_INIT;
	struct aj_update u = AJ_UPDATE_INIT;
	const struct aj_sandbox_rec *rec = &x->rec;
	json_t *internet = json_object_get(x->msg, "allow_internet_access");
	bool all_allow, all_deny;
	struct aj_err err;

	aj_policy_init(&tpl);
	if (json_object_get(x->msg, "rules") || json_object_get(x->msg, "egressProxy"))
		return (void)e2b_fail(r, 400, "%s: not supported by agentjail's E2B API: a "
					     "template's policy sets credentials and proxies "
					     "(docs/e2b.md)",
				      json_object_get(x->msg, "rules") ? "rules" : "egressProxy");
	if (internet && !json_is_boolean(internet))
		return (void)e2b_fail(r, 400, "allow_internet_access: expected true or false");
	if (read_list(r, "allowOut", &allow_out, &all_allow) < 0 ||
	    read_list(r, "denyOut", &deny_out, &all_deny) < 0)
		return;
	if (e2b_find_live(r, m, false) < 0)
		return;
	if (template_allow(r, rec, &tpl) < 0)
		return;
	for (size_t i = 0; i < allow_out.n; i++)
		if (!in_ceiling(&tpl.net_allow, allow_out.v[i], NULL)) {
			e2b_fail(r, 400, "allowOut[%zu]: \"%s\" is not one of the hosts the sandbox's "
					 "template allows; agentjail does not widen a sandbox's network "
					 "on a client's word",
				 i, allow_out.v[i]);
			return;
		}
	if (tpl.net_mode != AJ_NET_PROXY && (allow_out.n || json_is_true(internet))) {
		e2b_fail(r, 400, "the sandbox's template gives it no network to change");
		return;
	}
	if (json_is_false(internet) || (all_deny && !allow_out.n)) {
		/* nothing allowed */
	} else if (all_deny) {
		for (size_t i = 0; i < allow_out.n; i++)
			in_ceiling(&tpl.net_allow, allow_out.v[i], &allow);
	} else {
		aj_strv_copy(&allow, &tpl.net_allow);
		for (size_t i = 0; i < deny_out.n; i++)
			aj_strv_push_owned(&deny, every_port(deny_out.v[i]));
	}
	if (tpl.net_mode == AJ_NET_PROXY) {
		u.allow = &allow;
		u.deny = &deny;
		if (aj_mgr_update(m, rec->id, &u, NULL, &err) < 0) {
			if (err.layer == AJ_LAYER_POLICY)
				e2b_fail(r, 400, "%s", err.msg);
			else
				e2b_fail_err(r, &err);
			return;
		}
	}
	aj_srv_ok(r, 204, NULL);
}

const struct e2b_route e2b_network_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_PUT, "/sandboxes/{id}/network", E2B_API, NULL, network_work, NULL),
	E2B_ROUTES_END,
};
