/* The "credentials" field: secrets the egress proxy adds to requests for the hosts they are
 * bound to (src/egress/creds.c). The policy names where a secret comes from, never the secret
 * itself, so policies, plans, reports and the state store hold no secret. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/util.h"
#include "policy/policy.h"
#include "rules/egress.h"

static const char *const cred_fields = "from_env, from_file, hosts, header, format";

static void cred_free(struct aj_credential *c)
{
	free(c->name);
	free(c->from_env);
	free(c->from_file);
	free(c->header);
	free(c->format);
	aj_strv_free(&c->hosts);
	memset(c, 0, sizeof *c);
}

void aj_policy_creds_free(struct aj_policy *p)
{
	for (size_t i = 0; i < p->n_creds; i++)
		cred_free(&p->creds[i]);
	free(p->creds);
	p->creds = NULL;
	p->n_creds = 0;
}

static bool header_name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

/* A header value: printable ASCII and spaces, "{}" where the secret goes. */
static bool format_ok(const char *s)
{
	if (!strstr(s, "{}") || strlen(s) > 512)
		return false;
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

static int get_string(const char *path, const char *key, json_t *v, char **out,
		      struct aj_err *err)
{
	if (!json_is_string(v))
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.%s: expected a string", path, key);
	free(*out);
	*out = aj_xstrdup(json_string_value(v));
	return 0;
}

static int parse_hosts(const char *path, json_t *v, struct aj_credential *c, struct aj_err *err)
{
	struct aj_egress_rule r;
	char why[256];
	size_t i;
	json_t *el;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s.hosts: expected a non-empty array of host names", path);
	json_array_foreach(v, i, el) {
		if (!json_is_string(el))
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.hosts[%zu]: expected a string",
					  path, i);
		if (aj_egress_rule_parse(json_string_value(el), AJ_RULE_PORTS_TLS, &r, why,
					 sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.hosts[%zu]: %s", path, i, why);
		bool literal = !r.suffix && !r.any_host && aj_egress_host_is_literal(r.host);
		bool any = r.any_host;
		aj_egress_rule_free(&r);
		/* The proxy issues certificates for these names; a secret bound to every host
		 * would go wherever the sandbox points it. */
		if (any || literal)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s.hosts[%zu]: a credential is bound to host names (exact "
					  "or *.suffix), not to \"*\" or an IP address",
					  path, i);
		aj_strv_push(&c->hosts, json_string_value(el));
	}
	return 0;
}

static int parse_field(const char *path, const char *key, json_t *v, struct aj_credential *c,
		       struct aj_err *err)
{
	if (strcmp(key, "from_env") == 0) {
		if (get_string(path, key, v, &c->from_env, err) < 0)
			return -1;
		if (!aj_policy_env_name_ok(c->from_env))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s.from_env: \"%s\" is not a variable name", path,
					  c->from_env);
		return 0;
	}
	if (strcmp(key, "from_file") == 0) {
		if (get_string(path, key, v, &c->from_file, err) < 0)
			return -1;
		if (!aj_path_is_clean_abs(c->from_file))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s.from_file: expected a clean absolute path, got \"%s\"",
					  path, c->from_file);
		return 0;
	}
	if (strcmp(key, "hosts") == 0)
		return parse_hosts(path, v, c, err);
	if (strcmp(key, "header") == 0) {
		if (get_string(path, key, v, &c->header, err) < 0)
			return -1;
		return header_name_ok(c->header)
			       ? 0
			       : aj_err_set(err, AJ_LAYER_POLICY, 0,
					    "%s.header: \"%s\" is not an HTTP header name", path,
					    c->header);
	}
	if (strcmp(key, "format") == 0) {
		if (get_string(path, key, v, &c->format, err) < 0)
			return -1;
		return format_ok(c->format)
			       ? 0
			       : aj_err_set(err, AJ_LAYER_POLICY, 0,
					    "%s.format: expected printable text containing \"{}\" "
					    "(where the secret goes), at most 512 characters",
					    path);
	}
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.%s: unknown field (expected one of: %s)",
			  path, key, cred_fields);
}

static int parse_one(const char *path, const char *name, json_t *obj, struct aj_credential *c,
		     struct aj_err *err)
{
	const char *key;
	json_t *v;

	if (!aj_policy_env_name_ok(name))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: \"%s\" is not a variable name (the name is the variable "
				  "that holds the placeholder inside the sandbox)",
				  path, name);
	if (!json_is_object(obj))
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected an object with %s", path,
				  cred_fields);
	c->name = aj_xstrdup(name);
	json_object_foreach(obj, key, v)
		if (parse_field(path, key, v, c, err) < 0)
			return -1;
	if (!c->from_env == !c->from_file)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: expected exactly one of from_env and from_file", path);
	if (!c->hosts.n)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.hosts: missing (the hosts the "
							   "secret may be sent to)",
				  path);
	if (c->format && !c->header)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.format: needs header", path);
	if (c->header && !c->format)
		c->format = aj_xstrdup("{}");
	return 0;
}

int aj_policy_creds_apply_json(struct aj_policy *p, const char *path, json_t *v,
			       struct aj_err *err)
{
	struct aj_credential *creds;
	char sub[320];
	const char *name;
	json_t *obj;
	size_t n = 0;

	if (!json_is_object(v))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: expected an object mapping variable names to credentials",
				  path);
	creds = aj_xcalloc(json_object_size(v) + 1, sizeof *creds);
	json_object_foreach(v, name, obj) {
		snprintf(sub, sizeof sub, "%s.%s", path, name);
		if (parse_one(sub, name, obj, &creds[n++], err) < 0) {
			for (size_t i = 0; i < n; i++)
				cred_free(&creds[i]);
			free(creds);
			return -1;
		}
	}
	aj_policy_creds_free(p);
	p->creds = creds;
	p->n_creds = n;
	return 0;
}

json_t *aj_policy_creds_to_json(const struct aj_policy *p)
{
	json_t *o = json_object();

	for (size_t i = 0; i < p->n_creds; i++) {
		const struct aj_credential *c = &p->creds[i];
		json_t *hosts = json_array(), *cj = json_object();
		for (size_t j = 0; j < c->hosts.n; j++)
			json_array_append_new(hosts, json_string(c->hosts.v[j]));
		if (c->from_env)
			json_object_set_new(cj, "from_env", json_string(c->from_env));
		if (c->from_file)
			json_object_set_new(cj, "from_file", json_string(c->from_file));
		json_object_set_new(cj, "hosts", hosts);
		if (c->header) {
			json_object_set_new(cj, "header", json_string(c->header));
			json_object_set_new(cj, "format", json_string(c->format));
		}
		json_object_set_new(o, c->name, cj);
	}
	return o;
}
