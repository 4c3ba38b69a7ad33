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
#include "common/secret_name.h"
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

static int read_list(struct aj_srv_req *r, json_t *obj, const char *member, struct aj_strv *out,
		     bool *all)
{
	json_t *v = json_object_get(obj, member), *e;
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

int e2b_network_egress(struct aj_srv_req *r, json_t *obj, json_t *internet,
		       const struct aj_policy *tpl, struct aj_strv *allow, struct aj_strv *deny)
{
	_cleanup_strv_ struct aj_strv allow_out = AJ_STRV_INIT, deny_out = AJ_STRV_INIT;
	bool all_allow, all_deny;

	if (internet && !json_is_boolean(internet))
		return e2b_fail(r, 400, "allow_internet_access: expected true or false");
	if (read_list(r, obj, "allowOut", &allow_out, &all_allow) < 0 ||
	    read_list(r, obj, "denyOut", &deny_out, &all_deny) < 0)
		return -1;
	for (size_t i = 0; i < allow_out.n; i++)
		if (!in_ceiling(&tpl->net_allow, allow_out.v[i], NULL))
			return e2b_fail(r, 400, "allowOut[%zu]: \"%s\" is not one of the hosts the "
						"sandbox's template allows; agentjail does not widen a "
						"sandbox's network on a client's word",
					i, allow_out.v[i]);
	if (tpl->net_mode != AJ_NET_PROXY && (allow_out.n || json_is_true(internet)))
		return e2b_fail(r, 400, "the sandbox's template gives it no network to change");
	if (json_is_false(internet) || (all_deny && !allow_out.n)) {
		/* nothing allowed */
	} else if (all_deny) {
		for (size_t i = 0; i < allow_out.n; i++)
			in_ceiling(&tpl->net_allow, allow_out.v[i], allow);
	} else {
		aj_strv_copy(allow, &tpl->net_allow);
		for (size_t i = 0; i < deny_out.n; i++)
			aj_strv_push_owned(deny, every_port(deny_out.v[i]));
	}
	return 0;
}

/* ---- rules: header transforms with the owner's secrets ------------------------------------ */

#define SECRET_REF "${e2b.secrets."

/* E2B's rules name domains: the credential is bound to the domain's HTTPS (443) and to the
 * ports the sandbox's allowed rules name for it (a loopback test server, an API on 8443);
 * other ports of the host (ssh) are tunnelled untouched. A key with a port is that port. */
static json_t *rule_hosts(const char *host, const struct aj_strv *allow)
{
	json_t *a = json_array();
	size_t n = strlen(host);

	json_array_append_new(a, json_string(host));
	if (strchr(host, ':'))
		return a;
	for (size_t i = 0; i < allow->n; i++) {
		const char *v = allow->v[i];
		if (!strncmp(v, host, n) && v[n] == ':' && v[n + 1] >= '0' && v[n + 1] <= '9' &&
		    strspn(v + n + 1, "0123456789") == strlen(v + n + 1))
			json_array_append_new(a, json_string(v));
	}
	return a;
}

/* One header of a rule as a credential: its value holds one "${e2b.secrets.NAME}", which
 * becomes the format's "{}". */
static int header_cred(struct aj_srv_req *r, const char *path, const char *host,
		       const char *header, json_t *value, const struct aj_strv *allow,
		       json_t *creds, size_t n)
{
	const char *v = json_string_value(value), *at, *end;
	char name[AJ_SECRET_NAME_MAX + 1], var[32];
	_cleanup_free_ char *format = NULL;

	if (!v)
		return e2b_fail(r, 400, "%s.%.64s: expected a string", path, header);
	at = strstr(v, SECRET_REF);
	end = at ? strchr(at, '}') : NULL;
	if (!at || !end)
		return e2b_fail(r, 400, "%s.%.64s: agentjail's proxy adds a header to carry a secret: "
					"its value must hold one ${e2b.secrets.NAME} (Secret.fill); "
					"fixed headers and ${e2b.identity...} tokens are not supported",
				path, header);
	if (strstr(end, "${e2b.") || strstr(v, "${e2b.") != at || strstr(v, "{}"))
		return e2b_fail(r, 400, "%s.%.64s: one ${e2b.secrets.NAME} per header, no other "
					"${e2b...} and no \"{}\"",
				path, header);
	at += strlen(SECRET_REF);
	if ((size_t)(end - at) > AJ_SECRET_NAME_MAX)
		return e2b_fail(r, 400, "%s.%.64s: the secret's name is too long", path, header);
	snprintf(name, sizeof name, "%.*s", (int)(end - at), at);
	if (aj_secret_name_canon(name, name, sizeof name) < 0)
		return e2b_fail(r, 400, "%s.%.64s: \"%s\" is not a secret name", path, header, name);
	format = aj_xasprintf("%.*s{}%s", (int)(at - strlen(SECRET_REF) - v), v, end + 1);
	do /* a name the template's own credentials do not have */
		snprintf(var, sizeof var, "E2B_RULE_%zu", n++);
	while (json_object_get(creds, var));
	json_object_set_new(creds, var,
			    json_pack("{s:s, s:o, s:s, s:s, s:b}", "from_secret", name, "hosts",
				      rule_hosts(host, allow), "header", header, "format", format,
				      "replace", 1));
	return 0;
}

int e2b_network_rules(struct aj_srv_req *r, json_t *rules, struct aj_policy *p)
{
	_cleanup_json_ json_t *creds = NULL;
	const char *host;
	json_t *list;
	struct aj_err err;
	size_t n = 0;

	if (!rules || json_is_null(rules))
		return 0;
	if (!json_is_object(rules) || json_object_size(rules) > 64)
		return e2b_fail(r, 400, "network.rules: expected an object of at most 64 hosts");
	creds = aj_policy_creds_to_json(p);
	json_object_foreach(rules, host, list) {
		json_t *rule;
		size_t i;
		if (!json_is_array(list))
			return e2b_fail(r, 400, "network.rules.%.64s: expected an array of rules", host);
		json_array_foreach(list, i, rule) {
			json_t *tf = json_object_get(rule, "transform"), *h;
			const char *hk, *k;
			json_t *hv, *m;
			char path[160];
			snprintf(path, sizeof path, "network.rules.%.64s[%zu]", host, i);
			if (!json_is_object(rule))
				return e2b_fail(r, 400, "%s: expected an object", path);
			json_object_foreach(rule, k, m) if (strcmp(k, "transform")) return e2b_fail(
				r, 400, "%s.%.32s: unknown field", path, k);
			if (!tf || json_is_null(tf))
				continue;
			if (!json_is_object(tf))
				return e2b_fail(r, 400, "%s.transform: expected an object", path);
			json_object_foreach(tf, k, m) if (strcmp(k, "headers")) return e2b_fail(
				r, 400, "%s.transform.%.32s: not supported (headers only)", path, k);
			h = json_object_get(tf, "headers");
			if (h && !json_is_object(h))
				return e2b_fail(r, 400, "%s.transform.headers: expected an object", path);
			snprintf(path + strlen(path), sizeof path - strlen(path), ".transform.headers");
			json_object_foreach(h, hk, hv) {
				if (++n > 64)
					return e2b_fail(r, 400, "network.rules: at most 64 headers "
								"in all");
				if (header_cred(r, path, host, hk, hv, &p->net_allow, creds, n) < 0)
					return -1;
			}
		}
	}
	if (aj_policy_creds_apply_json(p, "network.rules", creds, &err) < 0)
		return e2b_fail(r, 400, "%s", err.msg);
	return 0;
}

static void network_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	_cleanup_policy_ struct aj_policy tpl;
	_cleanup_strv_ struct aj_strv allow = AJ_STRV_INIT, deny = AJ_STRV_INIT;
	struct aj_update u = AJ_UPDATE_INIT;
	const struct aj_sandbox_rec *rec = &x->rec;
	struct aj_err err;

	aj_policy_init(&tpl);
	if (json_object_get(x->msg, "rules") || json_object_get(x->msg, "egressProxy"))
		return (void)e2b_fail(r, 400, "%s: not supported by agentjail's E2B API on a running "
					     "sandbox: give rules at create (docs/e2b.md)",
				      json_object_get(x->msg, "rules") ? "rules" : "egressProxy");
	if (e2b_find_live(r, m, false) < 0 || template_allow(r, rec, &tpl) < 0)
		return;
	if (e2b_network_egress(r, x->msg, json_object_get(x->msg, "allow_internet_access"), &tpl,
			       &allow, &deny) < 0)
		return;
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
