/* The "credentials" field: secrets the egress proxy adds to requests for the hosts they are
 * bound to (src/egress/creds.c). The policy names where a secret comes from, never the secret
 * itself, so policies, plans, reports and the state store hold no secret. A credential is a
 * table of rows of common/jfields.h, read and printed by the engine, in the policy's words. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/jfields.h"
#include "common/secret_name.h"
#include "common/util.h"
#include "policy/policy.h"
#include "rules/egress.h"

static void cred_free(struct aj_credential *c)
{
	free(c->name);
	free(c->from_env);
	free(c->from_file);
	free(c->from_secret);
	free(c->header);
	free(c->format);
	aj_strv_free(&c->hosts);
	memset(c, 0, sizeof *c);
}

bool aj_policy_uses_secret_store(const struct aj_policy *p)
{
	for (size_t i = 0; i < p->n_creds; i++)
		if (p->creds[i].from_secret)
			return true;
	return false;
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

/* ---- the rows of one credential -------------------------------------------------------- */

static int check_from_env(const char *path, const char *s, struct aj_err *err)
{
	if (aj_policy_env_name_ok(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: \"%s\" is not a variable name", path, s);
}

static int check_from_secret(const char *path, const char *s, struct aj_err *err)
{
	if (aj_secret_name_ok(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: \"%s\" is not a secret name (1 to 128 letters, digits, '_' and '-')",
			  path, s);
}

static int check_from_file(const char *path, const char *s, struct aj_err *err)
{
	if (aj_path_is_clean_abs(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected a clean absolute path, got \"%s\"",
			  path, s);
}

/* A host name the proxy issues certificates for; a secret bound to every host, or to an
 * address, would go wherever the sandbox points it. */
static int check_host(const char *path, const char *s, struct aj_err *err)
{
	struct aj_egress_rule r;
	char why[256];
	bool literal, any;

	if (aj_egress_rule_parse(s, AJ_RULE_PORTS_TLS, &r, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: %s", path, why);
	literal = !r.suffix && !r.any_host && aj_egress_host_is_literal(r.host);
	any = r.any_host;
	aj_egress_rule_free(&r);
	if (any || literal)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: a credential is bound to host names (exact or *.suffix), not to "
				  "\"*\" or an IP address",
				  path);
	return 0;
}

/* Headers that frame the request or route it: the proxy has read the body by them already. */
static bool header_framing(const char *s)
{
	static const char *const names[] = {"Content-Length", "Transfer-Encoding", "Host",
					    "Connection", "Upgrade", "TE", "Trailer",
					    "Keep-Alive", "Proxy-Connection", NULL};

	for (const char *const *n = names; *n; n++)
		if (!strcasecmp(s, *n))
			return true;
	return false;
}

static int check_header(const char *path, const char *s, struct aj_err *err)
{
	if (header_name_ok(s) && header_framing(s))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: \"%s\" frames or routes the request; a credential cannot "
				  "set it",
				  path, s);
	if (header_name_ok(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: \"%s\" is not an HTTP header name", path, s);
}

static int check_format(const char *path, const char *s, struct aj_err *err)
{
	if (format_ok(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected printable text containing \"{}\" (where the secret goes), at "
			  "most 512 characters",
			  path);
}

#define C(m) offsetof(struct aj_credential, m)
static const struct aj_jf_field cred_rows[] = {
	{.name = "from_env", .type = AJ_JF_STRING, .off = C(from_env), .check = check_from_env},
	{.name = "from_file", .type = AJ_JF_STRING, .off = C(from_file), .check = check_from_file},
	{.name = "from_secret", .type = AJ_JF_STRING, .off = C(from_secret),
	 .check = check_from_secret},
	{.name = "hosts", .type = AJ_JF_ARRAY, .off = C(hosts), .min = 1, .max = 4096,
	 .check = check_host, .expect = "a non-empty array of host names"},
	{.name = "header", .type = AJ_JF_STRING, .off = C(header), .check = check_header},
	{.name = "format", .type = AJ_JF_STRING, .off = C(format), .check = check_format},
	{.name = "replace", .type = AJ_JF_BOOL, .off = C(replace)},
	{.name = NULL},
};
#undef C

/* What the rows cannot say alone: one source, some hosts, a format only with a header. */
static int check_cred(const char *path, struct aj_credential *c, struct aj_err *err)
{
	if (!!c->from_env + !!c->from_file + !!c->from_secret != 1)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: expected exactly one of from_env, from_file and from_secret",
				  path);
	if (!c->hosts.n)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s.hosts: missing (the hosts the secret may be sent to)", path);
	if (c->format && !c->header)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.format: needs header", path);
	if (c->replace && !c->header)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.replace: needs header", path);
	if (c->header && !c->format)
		c->format = aj_xstrdup("{}");
	return 0;
}

/* ---- the credentials: NAME -> credential ---------------------------------------------------- */

struct cred_list {
	struct aj_credential *v;
	size_t n;
};

static void cred_list_free(struct cred_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		cred_free(&l->v[i]);
	free(l->v);
}

static int check_cred_name(const char *path, const char *name, struct aj_err *err)
{
	if (aj_policy_env_name_ok(name))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: \"%s\" is not a variable name (the name is the variable that holds "
			  "the placeholder inside the sandbox)",
			  path, name);
}

/* Every entry, its name and type checked by the map's row, read with cred_rows into the next
 * credential of the list at dst (counted before it is read, so that a failed read's strings
 * are freed with the list). */
static int read_creds(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct cred_list *l = dst;
	char sub[AJ_JF_PATH_MAX];
	const char *name;
	json_t *obj;

	l->v = aj_xcalloc(json_object_size(v) + 1, sizeof *l->v);
	json_object_foreach(v, name, obj) {
		struct aj_credential *c = &l->v[l->n++];

		snprintf(sub, sizeof sub, "%s.%s", path, name);
		c->name = aj_xstrdup(name);
		if (aj_jf_read(cred_rows, obj, c, &(struct aj_jf_opts){o->layer, o->flags, sub, NULL},
			       e) < 0 ||
		    check_cred(sub, c, &e->err) < 0)
			return -1;
	}
	return 0;
}

static const struct aj_jf_field cred_obj = {
	.name = "", .type = AJ_JF_OBJECT,
	.expect = "an object with from_env, from_file or from_secret, hosts, header, format, "
		  "replace"};

static const struct aj_jf_field creds_field = {
	.name = "credentials", .type = AJ_JF_MAP, .off = 0, .check = check_cred_name,
	.sub = &cred_obj, .parse = read_creds,
	.expect = "an object mapping variable names to credentials"};

int aj_policy_creds_apply_json(struct aj_policy *p, const char *path, json_t *v,
			       struct aj_err *err)
{
	struct cred_list l = {NULL, 0};
	struct aj_jf_opts o = {.layer = AJ_LAYER_POLICY};
	struct aj_jf_error e;

	if (aj_jf_read_value(&creds_field, path, v, &l, &o, &e) < 0) {
		cred_list_free(&l);
		*err = e.err;
		return -1;
	}
	aj_policy_creds_free(p);
	p->creds = l.v;
	p->n_creds = l.n;
	return 0;
}

json_t *aj_policy_creds_to_json(const struct aj_policy *p)
{
	json_t *o = json_object();

	for (size_t i = 0; i < p->n_creds; i++)
		json_object_set_new(o, p->creds[i].name, aj_jf_write(cred_rows, &p->creds[i], NULL));
	return o;
}
