/* Converting a sandbox-runtime ("srt") settings file into an agentjail policy: the field
 * tables, the network and credentials lists, and the output document (the filesystem lists
 * are in import_srt_fs.c, what srt enforces beyond its settings file in import_srt_builtin.c).
 * Facts about srt come from its sources,
 * anthropic-experimental/sandbox-runtime src/sandbox/sandbox-config.ts (the settings schema)
 * and domain-pattern.ts (domain entries); docs/policy.md says what each field becomes.
 *
 * Every field srt defines has a row here, so that a field this file does not know is an
 * error rather than silently lost: srt's own schema rejects unknown keys for the same reason.
 */
#include "policy/import_srt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jfields.h"
#include "common/util.h"
#include "policy/import_srt_internal.h"
#include "policy/policy.h"
#include "rules/egress.h"

/* Every srt field is a row of common/jfields.h, read by its engine. What a row does with
 * its value is one of these kinds, its `doc` saying why (for SRT_FALSE, SRT_EMPTY and
 * SRT_REFUSE: why agentjail has no equivalent; for SRT_DROP: why dropping it weakens
 * nothing):
 *   SRT_SECTION  an object read with its own table
 *   SRT_LIST     an array, each element handled by an element row (SRT_EACH)
 *   SRT_FALSE    a boolean: false is srt's default and says nothing; true has no equivalent
 *   SRT_EMPTY    an array or object: empty says nothing; anything else has no equivalent
 *   SRT_DROP     configures srt itself or its reports, no permission: dropped with a note
 *   SRT_REFUSE   any value has no equivalent
 * The engine's callbacks get the struct srt_import as the read's arg. */
static int srt_false(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e);
static int srt_empty(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e);
static int srt_drop(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e);
static int srt_refuse(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e);

#define SRT_SECTION(n, table) {.name = (n), .type = AJ_JF_OBJECT, .sub = (table)}
#define SRT_LIST(n, el) {.name = (n), .type = AJ_JF_ARRAY, .sub = &(el)}
#define SRT_FALSE(n, why) {.name = (n), .type = AJ_JF_BOOL, .parse = srt_false, .doc = (why)}
#define SRT_EMPTY(n, why) {.name = (n), .type = AJ_JF_ANY, .parse = srt_empty, .doc = (why)}
#define SRT_DROP(n, why) {.name = (n), .type = AJ_JF_ANY, .parse = srt_drop, .doc = (why)}
#define SRT_REFUSE(n, why) {.name = (n), .type = AJ_JF_ANY, .parse = srt_refuse, .doc = (why)}
#define SRT_END {.name = NULL}

/* An element row whose parse is fn(im, path, el, err). */
#define SRT_EACH(row, fn)                                                                      \
	static int row##_parse(const struct aj_jf_field *f, const char *path, json_t *v,       \
			       void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)    \
	{                                                                                      \
		return fn(o->arg, path, v, &e->err);                                           \
	}                                                                                      \
	static const struct aj_jf_field row = {.name = "", .type = AJ_JF_ANY,                  \
					       .parse = row##_parse}

void srt_note(struct srt_import *im, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!im->ctx->note)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	im->ctx->note(msg, im->ctx->opaque);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static int type_error(const char *path, const char *want, const json_t *v, struct aj_err *err)
{
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected %s, got %s", path, want,
			  type_name(v));
}

static const char *string_el(const char *path, json_t *el, struct aj_err *err)
{
	if (json_is_string(el))
		return json_string_value(el);
	type_error(path, "a string", el, err);
	return NULL;
}

/* A required string member of an srt object; sub is its path. */
static const char *member_string(const char *sub, json_t *obj, const char *key,
				 struct aj_err *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v) {
		aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: missing", sub);
		return NULL;
	}
	return string_el(sub, v, err);
}

static int no_equivalent(const char *path, const char *why, struct aj_err *err)
{
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: no equivalent in agentjail (%s)", path,
			  why);
}

/* ---- network ------------------------------------------------------------------------------- */

static bool port_ok(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return s[0] >= '1' && s[0] <= '9' && n == strlen(s) && n <= 5 && atol(s) <= 65535;
}

/* srt's host part (isValidDomainPattern): a name with a dot, "localhost", "*.NAME" with two
 * labels or more after "*.", or (deniedDomains only) "*". Bracketed IPv6 is checked by
 * agentjail's own rule parser. */
static bool srt_host_ok(const char *h, bool denied)
{
	size_t n = strlen(h);

	if (h[0] == '[')
		return true;
	if (strcmp(h, "*") == 0)
		return denied;
	if (strcmp(h, "localhost") == 0)
		return true;
	if (strncmp(h, "*.", 2) == 0) {
		h += 2;
		n -= 2;
		if (!strchr(h, '*') && strchr(h, '.') && h[0] != '.' && h[n - 1] != '.' &&
		    !strstr(h, ".."))
			return true;
		return false;
	}
	return n > 0 && !strchr(h, '*') && strchr(h, '.') && h[0] != '.' && h[n - 1] != '.';
}

/* Splits srt's "HOST[:PORT]" / "[V6][:PORT]" into host and port. */
static int split_entry(const char *v, char *host, size_t len, const char **port)
{
	const char *colon, *close;
	size_t n;

	*port = NULL;
	if (v[0] == '[') {
		close = strchr(v, ']');
		if (!close || (close[1] && close[1] != ':'))
			return -1;
		n = (size_t)(close - v) + 1;
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strchr(v, ':');
		if (colon && strchr(colon + 1, ':'))
			return -1; /* an unbracketed IPv6 address: srt refuses it as ambiguous */
		n = colon ? (size_t)(colon - v) : strlen(v);
	}
	if (n == 0 || n >= len)
		return -1;
	memcpy(host, v, n);
	host[n] = '\0';
	*port = colon ? colon + 1 : NULL;
	return 0;
}

/* An srt domain entry as an agentjail rule. srt: "an entry without a port matches any port"
 * (domain-pattern.ts); an agentjail rule without a port means 80 and 443 only, so the port
 * becomes explicit ("*"). The rule is then checked by the proxy's own parser. */
static int srt_rule(const char *path, const char *v, bool denied, char *out, size_t len,
		    struct aj_egress_rule *r, struct aj_err *err)
{
	char host[AJ_EGRESS_HOST_MAX + 3], why[256];
	const char *port;

	if (strstr(v, "://") || strchr(v, '/') || split_entry(v, host, sizeof host, &port) < 0 ||
	    (port && !port_ok(port)) || !srt_host_ok(host, denied))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: \"%s\" is not a domain entry srt accepts (a name with a dot, "
				  "*.NAME with two labels or more after \"*.\", \"localhost\", an IP "
				  "address with IPv6 in brackets%s, then optionally :PORT)",
				  path, v, denied ? ", or \"*\"" : "");
	snprintf(out, len, "%s:%s", host, port ? port : "*");
	if (aj_egress_rule_parse(out, AJ_RULE_PORTS_WEB, r, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: \"%s\": %s", path, v, why);
	return 0;
}

static int allowed_domain(struct srt_import *im, const char *path, json_t *el,
			  struct aj_err *err)
{
	const char *v = string_el(path, el, err);
	struct aj_egress_rule r;
	char rule[AJ_EGRESS_HOST_MAX + 16];
	bool local;

	if (!v || srt_rule(path, v, false, rule, sizeof rule, &r, err) < 0)
		return -1;
	local = !r.suffix && (strcmp(r.host, "localhost") == 0 || aj_egress_host_is_literal(r.host));
	aj_egress_rule_free(&r);
	if (local)
		srt_note(im, "%s: \"%s\": agentjail's proxy still refuses loopback and private "
			 "addresses unless network.allow_private names them (not added here)",
			 path, v);
	if (!aj_strv_contains(&im->net_allow, rule))
		aj_strv_push(&im->net_allow, rule);
	return 0;
}

/* srt also applies an IP address in deniedDomains to every name that resolves to it; an
 * agentjail rule judges the name asked for, so a denied address would let such names by. */
static int denied_domain(struct srt_import *im, const char *path, json_t *el, struct aj_err *err)
{
	const char *v = string_el(path, el, err);
	struct aj_egress_rule r;
	char rule[AJ_EGRESS_HOST_MAX + 16];
	bool literal;

	if (!v || srt_rule(path, v, true, rule, sizeof rule, &r, err) < 0)
		return -1;
	literal = !r.suffix && !r.any_host && aj_egress_host_is_literal(r.host);
	aj_egress_rule_free(&r);
	if (literal)
		return no_equivalent(path,
				     "srt denies an address to every name resolving to it; "
				     "agentjail's deny rules match the name asked for",
				     err);
	if (!aj_strv_contains(&im->net_deny, rule))
		aj_strv_push(&im->net_deny, rule);
	return 0;
}

SRT_EACH(allowed_domain_el, allowed_domain);
SRT_EACH(denied_domain_el, denied_domain);

static const struct aj_jf_field network_fields[] = {
	SRT_LIST("allowedDomains", allowed_domain_el),
	SRT_LIST("deniedDomains", denied_domain_el),
	SRT_DROP("deniedDomainReasons",
	 "texts srt shows when it denies a host; agentjail's proxy answers 403 naming the rule"),
	SRT_DROP("strictAllowlist",
	 "agentjail never asks: a host no rule allows is denied"),
	SRT_EMPTY("allowUnixSockets",
	 "agentjail keeps no list of host unix sockets to let through: a sandbox reaches none "
	 "outside the paths it is granted"),
	SRT_FALSE("allowAllUnixSockets",
	 "agentjail does not lift its confinement of unix sockets"),
	SRT_DROP("allowLocalBinding",
	 "a sandbox binds only on its own loopback, in its own network namespace, which nothing "
	 "outside reaches unless a port is published"),
	SRT_EMPTY("allowMachLookup", "macOS XPC services"),
	SRT_REFUSE("httpProxyPort",
	 "agentjail always filters through its own egress proxy; it cannot hand the sandbox's "
	 "traffic to another proxy that does the filtering"),
	SRT_REFUSE("socksProxyPort",
	 "agentjail always filters through its own egress proxy; it cannot hand the sandbox's "
	 "traffic to another proxy that does the filtering"),
	SRT_REFUSE("mitmProxy", "agentjail's proxy routes no host to another proxy"),
	SRT_REFUSE("parentProxy", "agentjail's proxy connects out directly"),
	SRT_REFUSE("tlsTerminate",
	 "agentjail terminates TLS only for hosts a credential is bound to (see credentials)"),
	SRT_REFUSE("filterRequest", "agentjail has no per-request filter"),
	SRT_END,
};

/* ---- filesystem and credentials ------------------------------------------------------------ */

#define PATH_LIST(fn, list)                                                                    \
	static int fn(struct srt_import *im, const char *path, json_t *el, struct aj_err *err) \
	{                                                                                      \
		const char *v = string_el(path, el, err);                                      \
		return v ? srt_add_path(im, &im->list, path, v, err) : -1;                     \
	}
PATH_LIST(deny_read_path, deny_read)
PATH_LIST(allow_read_path, allow_read)
PATH_LIST(allow_write_path, allow_write)
PATH_LIST(deny_write_path, deny_write)

SRT_EACH(deny_read_el, deny_read_path);
SRT_EACH(allow_read_el, allow_read_path);
SRT_EACH(allow_write_el, allow_write_path);
SRT_EACH(deny_write_el, deny_write_path);

static const struct aj_jf_field filesystem_fields[] = {
	SRT_LIST("denyRead", deny_read_el),
	SRT_LIST("allowRead", allow_read_el),
	SRT_LIST("allowWrite", allow_write_el),
	SRT_LIST("denyWrite", deny_write_el),
	SRT_FALSE("disabled", "agentjail always confines the filesystem"),
	SRT_FALSE("allowGitConfig",
	 "agentjail keeps .git/config read-only in a writable workspace together with .git/hooks "
	 "(filesystem.protect_git) and cannot lift one without the other"),
	SRT_END,
};

/* A credential entry: only mode "deny" has an agentjail form. The other keys only matter
 * with "mask" (srt: "accepted but ignored for deny"). */
static int credential_mode(const char *path, json_t *el, const char *const *keys,
			   struct aj_err *err)
{
	const char *key, *mode;
	json_t *v;
	char sub[256];

	if (!json_is_object(el))
		return type_error(path, "an object", el, err);
	json_object_foreach(el, key, v) {
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], key) != 0)
			i++;
		if (!keys[i])
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.%s: unknown field", path, key);
	}
	snprintf(sub, sizeof sub, "%s.mode", path);
	v = json_object_get(el, "mode");
	mode = v && json_is_string(v) ? json_string_value(v) : "";
	if (strcmp(mode, "deny") == 0)
		return 0;
	if (strcmp(mode, "mask") == 0)
		return no_equivalent(sub,
				     "agentjail's credentials put a secret into requests to named "
				     "hosts in place of a placeholder variable; write them by hand "
				     "(docs/policy.md, credentials)",
				     err);
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected \"deny\" or \"mask\"", sub);
}

static const char *const cred_file_keys[] = {
	"path", "mode", "extract", "onExtractNoMatch", "decode", "maskClaims", "maskDuplicates",
	"injectHosts", NULL,
};
static const char *const cred_env_keys[] = {
	"name", "mode", "extract", "onExtractNoMatch", "decode", "maskClaims", "injectHosts", NULL,
};

/* srt: a denied credential file is "denied via the filesystem read-deny mechanism". */
static int credential_file(struct srt_import *im, const char *path, json_t *el,
			   struct aj_err *err)
{
	char sub[256];
	const char *v;

	if (credential_mode(path, el, cred_file_keys, err) < 0)
		return -1;
	snprintf(sub, sizeof sub, "%s.path", path);
	v = member_string(sub, el, "path", err);
	return v ? srt_add_path(im, &im->deny_read, sub, v, err) : -1;
}

/* srt unsets a denied variable in the sandbox. agentjail passes in only environment.allow,
 * so this changes something only for a variable that list names exactly (then it is taken
 * out); one a prefix pattern ("LC_*") lets in cannot be singled out. */
static int credential_env(struct srt_import *im, const char *path, json_t *el, struct aj_err *err)
{
	char sub[256];
	const char *name;

	if (credential_mode(path, el, cred_env_keys, err) < 0)
		return -1;
	snprintf(sub, sizeof sub, "%s.name", path);
	name = member_string(sub, el, "name", err);
	if (!name)
		return -1;
	for (size_t i = 0; i < im->env_allow.n; i++) {
		const char *p = im->env_allow.v[i];
		size_t n = strlen(p);
		if (strcmp(p, name) == 0) {
			free(im->env_allow.v[i]);
			memmove(&im->env_allow.v[i], &im->env_allow.v[i + 1],
				(im->env_allow.n - i) * sizeof im->env_allow.v[0]);
			im->env_allow.n--;
			im->env_changed = true;
			return 0;
		}
		if (n > 0 && p[n - 1] == '*' && strncmp(p, name, n - 1) == 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: \"%s\" is passed into every sandbox by agentjail's "
					  "environment.allow entry \"%s\", which cannot leave out one name",
					  sub, name, p);
	}
	srt_note(im, "%s: dropped: agentjail does not pass %s into the sandbox anyway", path, name);
	return 0;
}

SRT_EACH(credential_file_el, credential_file);
SRT_EACH(credential_env_el, credential_env);

static const struct aj_jf_field credentials_fields[] = {
	SRT_LIST("files", credential_file_el),
	SRT_LIST("envVars", credential_env_el),
	SRT_EMPTY("awsPairs", "agentjail does not re-sign AWS SigV4 requests"),
	SRT_DROP("allowPlaintextInject",
	 "it matters only for masked credentials, which are refused"),
	SRT_DROP("sigv4", "it matters only for masked credentials, which are refused"),
	SRT_END,
};

/* ---- the top level ------------------------------------------------------------------------- */

static const struct aj_jf_field top_fields[] = {
	SRT_SECTION("network", network_fields),
	SRT_SECTION("filesystem", filesystem_fields),
	SRT_SECTION("credentials", credentials_fields),
	SRT_DROP("ignoreViolations",
	 "it silences srt's violation reports and grants nothing"),
	SRT_FALSE("enableWeakerNestedSandbox",
	 "agentjail has no weaker mode for running inside containers; where those refuse user "
	 "namespaces, choose `--tier landlock` explicitly"),
	SRT_FALSE("enableWeakerNetworkIsolation",
	 "macOS: opens com.apple.trustd.agent to the sandbox"),
	SRT_FALSE("allowAppleEvents",
	 "macOS: lets the sandbox start applications outside it"),
	SRT_DROP("allowPty",
	 "every agentjail sandbox has pseudo-terminals of its own (a private devpts)"),
	SRT_DROP("ripgrep", "where srt finds a helper program"),
	SRT_DROP("seccomp", "where srt finds a helper program"),
	SRT_DROP("bwrapPath", "where srt finds a helper program"),
	SRT_DROP("socatPath", "where srt finds a helper program"),
	SRT_DROP("javaAgentJarPath", "where srt finds a helper program"),
	SRT_DROP("windows", "srt's Windows backend"),
	SRT_DROP("mandatoryDenySearchDepth",
	 "how deep srt searches for dotfiles to keep read-only; see the note on its built-in "
	 "protections"),
	SRT_DROP("git",
	 "git's safe.directory; agentjail shows the workspace as owned by the sandbox user"),
	SRT_END,
};

static int srt_false(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return json_is_false(v) ? 0 : no_equivalent(path, f->doc, &e->err);
}

/* srt's defaults: nothing to say about them. */
static bool says_nothing(const json_t *v)
{
	return json_is_false(v) || json_is_null(v) ||
	       (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_object(v) && json_object_size(v) == 0);
}

static int srt_empty(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!json_is_array(v) && !json_is_object(v))
		return type_error(path, "an array or an object", v, &e->err);
	if (says_nothing(v))
		return 0;
	return no_equivalent(path, f->doc, &e->err);
}

static int srt_drop(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!says_nothing(v))
		srt_note(o->arg, "%s: dropped (%s)", path, f->doc);
	return 0;
}

static int srt_refuse(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return no_equivalent(path, f->doc, &e->err);
}

/* The engine's problems in the words of srt imports: unknown fields refused with the list of
 * the fields known here, types named as srt's schema does ("a number"). */
static int walk(struct srt_import *im, json_t *srt, struct aj_err *err)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_POLICY, .arg = im};
	struct aj_jf_error e;
	char list[512] = "";

	if (aj_jf_read(top_fields, srt, NULL, &o, &e) == 0)
		return 0;
	if (e.problem == AJ_JF_TYPE)
		return type_error(e.path, aj_jf_expect(e.field), e.value, err);
	if (e.problem != AJ_JF_UNKNOWN) {
		*err = e.err;
		return -1;
	}
	for (const struct aj_jf_field *f = e.table; f->name; f++) {
		strncat(list, f == e.table ? "" : ", ", sizeof list - strlen(list) - 1);
		strncat(list, f->name, sizeof list - strlen(list) - 1);
	}
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: unknown field, refused so that nothing is silently lost (srt fields "
			  "known here: %s)",
			  e.path, list);
}

/* ---- the policy document ------------------------------------------------------------------- */

static json_t *strv_json(const struct aj_strv *sv)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < sv->n; i++)
		if (json_array_append_new(a, json_string(sv->v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* srt with no allowedDomains has no network at all; deny rules then say nothing, and
 * agentjail refuses rules with any network mode but "proxy". */
static json_t *network_json(struct srt_import *im)
{
	if (im->net_allow.n == 0) {
		if (im->net_deny.n)
			srt_note(im, "network.deniedDomains: dropped: with no allowedDomains the "
				 "sandbox has no network at all (network.mode \"none\")");
		return json_pack("{s:s}", "mode", "none");
	}
	return json_pack("{s:s, s:o, s:o}", "mode", "proxy", "allow", strv_json(&im->net_allow),
			 "deny", strv_json(&im->net_deny));
}

static json_t *policy_json(struct srt_import *im)
{
	json_t *doc = json_pack(
		"{s:i, s:{s:s, s:s, s:b, s:o, s:o, s:o}, s:o}", "version", 1, "filesystem",
		"workspace", im->ctx->workspace, "workspace_mode", im->ws_write ? "rw" : "ro",
		"protect_git", 1, "read_only", strv_json(&im->read_only), "read_write",
		strv_json(&im->read_write), "mask", strv_json(&im->mask), "network",
		network_json(im));

	if (doc && im->env_changed &&
	    json_object_set_new(doc, "environment",
				json_pack("{s:o}", "allow", strv_json(&im->env_allow))) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

static void import_init(struct srt_import *im, const struct aj_srt_ctx *ctx)
{
	struct aj_policy defaults;

	memset(im, 0, sizeof *im);
	im->ctx = ctx;
	/* agentjail's own default, so that the two cannot drift apart. */
	aj_policy_init(&defaults);
	aj_strv_copy(&im->env_allow, &defaults.env_allow);
	aj_policy_free(&defaults);
}

static void import_free(struct srt_import *im)
{
	srt_paths_free(&im->allow_write);
	srt_paths_free(&im->deny_write);
	srt_paths_free(&im->allow_read);
	srt_paths_free(&im->deny_read);
	aj_strv_free(&im->read_only);
	aj_strv_free(&im->read_write);
	aj_strv_free(&im->mask);
	aj_strv_free(&im->net_allow);
	aj_strv_free(&im->net_deny);
	aj_strv_free(&im->env_allow);
}

/* srt requires "network" and "filesystem"; a file without them is read as their empty form
 * (no network, nothing writable), which is as strict as srt gets. */
json_t *aj_policy_import_srt(json_t *srt, const struct aj_srt_ctx *ctx, struct aj_err *err)
{
	struct srt_import im;
	json_t *doc = NULL;

	aj_err_clear(err);
	if (!ctx->workspace || !aj_path_is_clean_abs(ctx->workspace))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "the workspace must be a clean absolute path, got \"%s\"",
				  ctx->workspace ? ctx->workspace : "(none)"),
		       NULL;
	if (!json_is_object(srt))
		return type_error("srt settings", "a JSON object at the top level", srt, err), NULL;
	import_init(&im, ctx);
	if (walk(&im, srt, err) == 0 && srt_convert_fs(&im, err) == 0) {
		doc = policy_json(&im);
		if (!doc)
			aj_err_sys(err, AJ_LAYER_POLICY, "srt settings: building the policy");
	}
	import_free(&im);
	return doc;
}
