/* Policy JSON <-> struct aj_policy, driven by one field table so that parsing, unknown-field
 * errors and printing the effective policy cannot drift apart. Adding a field means adding
 * one row here and one paragraph in docs/policy.md.
 */
#include "policy/policy.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "rules/addr.h"
#include "rules/egress.h"

enum fkind {
	F_OBJECT,
	F_VERSION,
	F_PRESET, /* applied before the other fields; only type-checked here */
	F_STRING,
	F_BOOL,
	F_SIZE,
	F_DURATION,
	F_COUNT,
	F_CPUS,
	F_ID,
	F_STRV,
	F_ENVMAP,
	F_ENUM,
	F_CREDS, /* credentials.c */
	F_PORTS,
};

typedef int (*check_fn)(const char *path, const char *value, struct aj_err *err);

struct field {
	const char *name;
	enum fkind kind;
	size_t off;
	const struct field *sub;        /* F_OBJECT: NULL-name-terminated table */
	const char *const *enum_names;  /* F_ENUM: NULL-terminated, index is the value */
	check_fn check;                 /* F_STRING and each F_STRV element */
};

#define FIELD_END {NULL, F_OBJECT, 0, NULL, NULL, NULL}
#define OFF(m) offsetof(struct aj_policy, m)

static int check_abs_path(const char *path, const char *v, struct aj_err *err)
{
	if (aj_path_is_clean_abs(v))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected an absolute path without \".\", \"..\" or repeated or "
			  "trailing '/', got \"%s\"",
			  path, v);
}

static int check_env_pattern(const char *path, const char *v, struct aj_err *err)
{
	size_t n = strlen(v);
	char name[256];

	if (n > 0 && n < sizeof name && v[n - 1] == '*') {
		memcpy(name, v, n - 1);
		name[n - 1] = '\0';
		if (n == 1 || aj_policy_env_name_ok(name))
			return 0;
	} else if (aj_policy_env_name_ok(v)) {
		return 0;
	}
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected a variable name or a prefix ending in '*', got \"%s\"", path,
			  v);
}

static int check_name(const char *path, const char *v, struct aj_err *err)
{
	size_t n = strlen(v);

	if (n == 0 || n > 64)
		goto bad;
	for (const char *c = v; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			goto bad;
	return 0;
bad:
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected 1-64 characters from [A-Za-z0-9._-], got \"%s\"", path, v);
}

/* Egress rules and ranges are checked with the proxy's own parsers (src/egress/), so that
 * what the policy accepts is exactly what the proxy enforces. */
static int check_rule(const char *path, const char *v, struct aj_err *err)
{
	struct aj_egress_rule r;
	char why[256];

	if (aj_egress_rule_parse(v, AJ_RULE_PORTS_WEB, &r, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: %s (expected host-pattern[:port])",
				  path, why);
	aj_egress_rule_free(&r);
	return 0;
}

static int check_cidr(const char *path, const char *v, struct aj_err *err)
{
	struct aj_cidr c;
	char why[256];

	if (aj_egress_cidr_parse(v, &c, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: %s", path, why);
	return 0;
}

static const char *const ws_modes[] = {"rw", "ro", NULL};
static const char *const net_modes[] = {"none", "host", "proxy", NULL};
static const char *const output_actions[] = {"truncate", "kill", NULL};
static const char *const tiers[] = {"namespaces", "landlock", NULL};

static const struct field filesystem_fields[] = {
	{"workspace", F_STRING, OFF(workspace), NULL, NULL, NULL},
	{"workspace_mode", F_ENUM, OFF(workspace_mode), NULL, ws_modes, NULL},
	{"mount", F_STRING, OFF(workspace_mount), NULL, NULL, check_abs_path},
	{"protect_git", F_BOOL, OFF(protect_git), NULL, NULL, NULL},
	{"read_only", F_STRV, OFF(read_only), NULL, NULL, check_abs_path},
	{"read_write", F_STRV, OFF(read_write), NULL, NULL, check_abs_path},
	{"mask", F_STRV, OFF(mask), NULL, NULL, check_abs_path},
	FIELD_END,
};

static const struct field user_fields[] = {
	{"uid", F_ID, OFF(uid), NULL, NULL, NULL},
	{"gid", F_ID, OFF(gid), NULL, NULL, NULL},
	{"name", F_STRING, OFF(user_name), NULL, NULL, check_name},
	{"home", F_STRING, OFF(home), NULL, NULL, check_abs_path},
	{"shell", F_STRING, OFF(shell), NULL, NULL, check_abs_path},
	FIELD_END,
};

static const struct field environment_fields[] = {
	{"allow", F_STRV, OFF(env_allow), NULL, NULL, check_env_pattern},
	{"set", F_ENVMAP, OFF(env_set), NULL, NULL, NULL},
	FIELD_END,
};

static const struct field network_fields[] = {
	{"mode", F_ENUM, OFF(net_mode), NULL, net_modes, NULL},
	{"allow", F_STRV, OFF(net_allow), NULL, NULL, check_rule},
	{"deny", F_STRV, OFF(net_deny), NULL, NULL, check_rule},
	{"allow_private", F_STRV, OFF(net_allow_private), NULL, NULL, check_cidr},
	{"max_connections", F_COUNT, OFF(net_max_connections), NULL, NULL, NULL},
	{"max_bytes", F_SIZE, OFF(net_max_bytes), NULL, NULL, NULL},
	{"listen", F_PORTS, OFF(net_listen), NULL, NULL, NULL},
	FIELD_END,
};

static const struct field limits_fields[] = {
	{"memory", F_SIZE, OFF(limits.memory), NULL, NULL, NULL},
	{"pids", F_COUNT, OFF(limits.pids), NULL, NULL, NULL},
	{"cpus", F_CPUS, OFF(limits.cpu_milli), NULL, NULL, NULL},
	{"timeout", F_DURATION, OFF(limits.timeout_ms), NULL, NULL, NULL},
	{"file_size", F_SIZE, OFF(limits.file_size), NULL, NULL, NULL},
	{"open_files", F_COUNT, OFF(limits.open_files), NULL, NULL, NULL},
	{"output_bytes", F_SIZE, OFF(limits.output_bytes), NULL, NULL, NULL},
	{"output_action", F_ENUM, OFF(limits.output_action), NULL, output_actions, NULL},
	{"tmpfs_size", F_SIZE, OFF(limits.tmpfs_size), NULL, NULL, NULL},
	FIELD_END,
};

static const struct field syscalls_fields[] = {
	{"allow", F_STRV, OFF(syscalls_allow), NULL, NULL, check_name},
	FIELD_END,
};

static const struct field root_fields[] = {
	{"version", F_VERSION, 0, NULL, NULL, NULL},
	{"preset", F_PRESET, 0, NULL, NULL, NULL},
	{"filesystem", F_OBJECT, 0, filesystem_fields, NULL, NULL},
	{"cwd", F_STRING, OFF(cwd), NULL, NULL, check_abs_path},
	{"user", F_OBJECT, 0, user_fields, NULL, NULL},
	{"hostname", F_STRING, OFF(hostname), NULL, NULL, check_name},
	{"environment", F_OBJECT, 0, environment_fields, NULL, NULL},
	{"network", F_OBJECT, 0, network_fields, NULL, NULL},
	{"credentials", F_CREDS, 0, NULL, NULL, NULL},
	{"limits", F_OBJECT, 0, limits_fields, NULL, NULL},
	{"syscalls", F_OBJECT, 0, syscalls_fields, NULL, NULL},
	{"allow_degraded", F_STRV, OFF(allow_degraded), NULL, NULL, check_name},
	{"tier", F_ENUM, OFF(tier), NULL, tiers, NULL},
	FIELD_END,
};

static const char *kind_expect(const struct field *f)
{
	switch (f->kind) {
	case F_OBJECT: return "an object";
	case F_VERSION: return "the number 1";
	case F_PRESET:
	case F_STRING: return "a string";
	case F_BOOL: return "true or false";
	case F_SIZE: return "a size (number of bytes, or a string such as \"512MiB\"), or null";
	case F_DURATION: return "a duration (seconds, or a string such as \"30s\"), or null";
	case F_COUNT: return "a non-negative whole number, or null";
	case F_CPUS: return "a number of CPUs such as 1.5, or null";
	case F_ID: return "a whole number from 0 to 65535";
	case F_STRV: return "an array of strings";
	case F_ENVMAP: return "an object mapping variable names to strings";
	case F_ENUM: return "one of the listed strings";
	case F_CREDS: return "an object mapping variable names to credentials";
	case F_PORTS: return "an array of TCP port numbers (1-65535)";
	}
	return "?";
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static int type_error(const char *path, const struct field *f, const json_t *v,
		      struct aj_err *err)
{
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected %s, got %s", path,
			  kind_expect(f), json_type_name(v));
}

static int apply_object(struct aj_policy *p, const struct field *table, const char *prefix,
			json_t *obj, struct aj_err *err);

/* Numbers given as JSON numbers are taken as bytes / seconds / CPUs; strings go through the
 * same parsers as the CLI flags so "512MiB" means the same in both places. */
static int apply_quantity(const char *path, const struct field *f, json_t *v, uint64_t *out,
			  struct aj_err *err)
{
	char buf[64];

	if (json_is_null(v)) {
		*out = 0;
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v) && json_real_value(v) >= 0 && f->kind != F_COUNT &&
		 f->kind != F_SIZE)
		snprintf(buf, sizeof buf, "%.3f", json_real_value(v));
	else if (json_is_string(v) && f->kind != F_COUNT)
		snprintf(buf, sizeof buf, "%s", json_string_value(v));
	else
		return type_error(path, f, v, err);
	if (f->kind == F_SIZE)
		return aj_policy_parse_size(path, buf, out, err);
	if (f->kind == F_DURATION)
		return aj_policy_parse_duration(path, buf, out, err);
	if (f->kind == F_CPUS)
		return aj_policy_parse_cpus(path, buf, out, err);
	return aj_policy_parse_count(path, buf, out, err);
}

static int apply_strv(const char *path, const struct field *f, json_t *v, struct aj_strv *sv,
		      struct aj_err *err)
{
	size_t i;
	json_t *el;
	char elpath[256];

	if (!json_is_array(v))
		return type_error(path, f, v, err);
	aj_strv_clear(sv);
	json_array_foreach(v, i, el) {
		snprintf(elpath, sizeof elpath, "%s[%zu]", path, i);
		if (!json_is_string(el))
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected a string, got %s",
					  elpath, json_type_name(el));
		if (f->check && f->check(elpath, json_string_value(el), err) < 0)
			return -1;
		if (aj_strv_push(sv, json_string_value(el)) < 0)
			return aj_err_sys(err, AJ_LAYER_POLICY, "%s", elpath);
	}
	return 0;
}

static int apply_ports(const char *path, const struct field *f, json_t *v, struct aj_ports *out,
		       struct aj_err *err)
{
	struct aj_ports ports = {0};
	size_t i;
	json_t *el;

	if (!json_is_array(v))
		return type_error(path, f, v, err);
	json_array_foreach(v, i, el) {
		json_int_t n = json_is_integer(el) ? json_integer_value(el) : 0;
		size_t k = 0;

		if (n < 1 || n > 65535)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s[%zu]: expected a TCP port number (1-65535), got %s", path,
					  i, json_is_integer(el) ? "a number out of range"
								  : json_type_name(el));
		while (k < ports.n && ports.v[k] != (uint16_t)n)
			k++;
		if (k < ports.n)
			continue;
		if (ports.n == AJ_PORTS_MAX)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: more than %d ports", path,
					  AJ_PORTS_MAX);
		ports.v[ports.n++] = (uint16_t)n;
	}
	*out = ports;
	return 0;
}

static int apply_envmap(const char *path, const struct field *f, json_t *v, struct aj_strv *sv,
			struct aj_err *err)
{
	const char *key;
	json_t *val;

	if (!json_is_object(v))
		return type_error(path, f, v, err);
	aj_strv_clear(sv);
	json_object_foreach(v, key, val) {
		if (!aj_policy_env_name_ok(key))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: \"%s\" is not a valid variable name", path, key);
		if (!json_is_string(val))
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s.%s: expected a string, got %s",
					  path, key, json_type_name(val));
		if (aj_strv_setenv(sv, key, json_string_value(val)) < 0)
			return aj_err_sys(err, AJ_LAYER_POLICY, "%s.%s", path, key);
	}
	return 0;
}

static int apply_enum(const char *path, const struct field *f, json_t *v, int *out,
		      struct aj_err *err)
{
	char list[256] = "";

	if (json_is_string(v))
		for (int i = 0; f->enum_names[i]; i++)
			if (strcmp(f->enum_names[i], json_string_value(v)) == 0) {
				*out = i;
				return 0;
			}
	for (int i = 0; f->enum_names[i]; i++) {
		strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
		strncat(list, f->enum_names[i], sizeof list - strlen(list) - 1);
	}
	if (!json_is_string(v))
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected one of %s, got %s", path,
				  list, json_type_name(v));
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: expected one of %s, got \"%s\"", path,
			  list, json_string_value(v));
}

static int apply_string(const char *path, const struct field *f, json_t *v, char **out,
			struct aj_err *err)
{
	char *s;

	if (!json_is_string(v))
		return type_error(path, f, v, err);
	if (f->check && f->check(path, json_string_value(v), err) < 0)
		return -1;
	s = strdup(json_string_value(v));
	if (!s)
		return aj_err_sys(err, AJ_LAYER_POLICY, "%s", path);
	free(*out);
	*out = s;
	return 0;
}

static int apply_field(struct aj_policy *p, const struct field *f, const char *path, json_t *v,
		       struct aj_err *err)
{
	char *base = (char *)p + f->off;

	switch (f->kind) {
	case F_OBJECT:
		if (!json_is_object(v))
			return type_error(path, f, v, err);
		return apply_object(p, f->sub, path, v, err);
	case F_VERSION:
		if (!json_is_integer(v) || json_integer_value(v) != 1)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: this agentjail reads policy version 1", path);
		return 0;
	case F_PRESET:
		return json_is_string(v) ? 0 : type_error(path, f, v, err);
	case F_STRING:
		return apply_string(path, f, v, (char **)base, err);
	case F_BOOL:
		if (!json_is_boolean(v))
			return type_error(path, f, v, err);
		*(bool *)base = json_is_true(v);
		return 0;
	case F_SIZE:
	case F_DURATION:
	case F_COUNT:
	case F_CPUS:
		return apply_quantity(path, f, v, (uint64_t *)base, err);
	case F_ID:
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 65535)
			return type_error(path, f, v, err);
		*(uint64_t *)base = (uint64_t)json_integer_value(v);
		return 0;
	case F_STRV:
		return apply_strv(path, f, v, (struct aj_strv *)base, err);
	case F_ENVMAP:
		return apply_envmap(path, f, v, (struct aj_strv *)base, err);
	case F_ENUM:
		return apply_enum(path, f, v, (int *)base, err);
	case F_CREDS:
		return aj_policy_creds_apply_json(p, path, v, err);
	case F_PORTS:
		return apply_ports(path, f, v, (struct aj_ports *)base, err);
	}
	return aj_err_set(err, AJ_LAYER_INTERNAL, 0, "%s: unhandled field kind", path);
}

static int unknown_field(const struct field *table, const char *path, struct aj_err *err)
{
	char list[512] = "";

	for (const struct field *f = table; f->name; f++) {
		strncat(list, f == table ? "" : ", ", sizeof list - strlen(list) - 1);
		strncat(list, f->name, sizeof list - strlen(list) - 1);
	}
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: unknown field (expected one of: %s)", path,
			  list);
}

static int apply_object(struct aj_policy *p, const struct field *table, const char *prefix,
			json_t *obj, struct aj_err *err)
{
	const char *key;
	json_t *v;
	char path[256];

	json_object_foreach(obj, key, v) {
		const struct field *f = table;

		snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", key);
		while (f->name && strcmp(f->name, key) != 0)
			f++;
		if (!f->name)
			return unknown_field(table, path, err);
		if (apply_field(p, f, path, v, err) < 0)
			return -1;
	}
	return 0;
}

int aj_policy_apply_json(struct aj_policy *p, json_t *root, struct aj_err *err)
{
	if (!json_is_object(root))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "policy: expected a JSON object at the top level, got %s",
				  json_type_name(root));
	return apply_object(p, root_fields, "", root, err);
}

int aj_policy_json_preset(json_t *root, const char **out, struct aj_err *err)
{
	json_t *v = json_is_object(root) ? json_object_get(root, "preset") : NULL;

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "preset: expected a string, got %s",
				  json_type_name(v));
	*out = json_string_value(v);
	return 0;
}

int aj_policy_load(struct aj_policy *p, const char *file, const char *preset_override,
		   struct aj_err *err)
{
	json_t *root = NULL;
	json_error_t jerr;
	const char *preset = NULL;
	int r = -1;

	if (file) {
		root = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
		if (!root) {
			if (jerr.line < 1)
				return aj_err_set(err, AJ_LAYER_POLICY, 0, "policy file \"%s\": %s",
						  file, jerr.text);
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "policy file \"%s\", line %d column %d: %s", file,
					  jerr.line, jerr.column, jerr.text);
		}
		if (aj_policy_json_preset(root, &preset, err) < 0)
			goto out;
	}
	if (preset_override)
		preset = preset_override;
	if (aj_policy_apply_preset(p, preset ? preset : "workspace-write", err) < 0)
		goto out;
	if (root && aj_policy_apply_json(p, root, err) < 0)
		goto out;
	r = 0;
out:
	if (r < 0 && file)
		aj_err_prefix(err, "policy file \"%s\"", file);
	json_decref(root);
	return r;
}

int aj_policy_load_text(struct aj_policy *p, const char *text, struct aj_err *err)
{
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	const char *preset = NULL;
	int r = -1;

	if (!root)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "stored policy, line %d: %s", jerr.line,
				  jerr.text);
	if (aj_policy_json_preset(root, &preset, err) == 0 &&
	    aj_policy_apply_preset(p, preset ? preset : "workspace-write", err) == 0 &&
	    aj_policy_apply_json(p, root, err) == 0)
		r = 0;
	json_decref(root);
	return r;
}

/* Printing: numbers with no limit print as null so the document round-trips. */
static json_t *field_to_json(const struct aj_policy *p, const struct field *f);

static json_t *object_to_json(const struct aj_policy *p, const struct field *table)
{
	json_t *obj = json_object();

	for (const struct field *f = table; f->name; f++) {
		json_t *v = field_to_json(p, f);
		if (v)
			json_object_set_new(obj, f->name, v);
	}
	return obj;
}

static json_t *strv_to_json(const struct aj_strv *sv)
{
	json_t *a = json_array();
	for (size_t i = 0; i < sv->n; i++)
		json_array_append_new(a, json_string(sv->v[i]));
	return a;
}

static json_t *envmap_to_json(const struct aj_strv *sv)
{
	json_t *o = json_object();
	for (size_t i = 0; i < sv->n; i++) {
		const char *eq = strchr(sv->v[i], '=');
		char name[256];
		size_t n = eq ? (size_t)(eq - sv->v[i]) : 0;
		if (!eq || n >= sizeof name)
			continue;
		memcpy(name, sv->v[i], n);
		name[n] = '\0';
		json_object_set_new(o, name, json_string(eq + 1));
	}
	return o;
}

static json_t *field_to_json(const struct aj_policy *p, const struct field *f)
{
	const char *base = (const char *)p + f->off;
	uint64_t u;

	switch (f->kind) {
	case F_OBJECT: return object_to_json(p, f->sub);
	case F_VERSION: return json_integer(1);
	case F_PRESET: return p->preset ? json_string(p->preset) : NULL;
	case F_STRING: {
		const char *s = *(char *const *)base;
		return s ? json_string(s) : NULL;
	}
	case F_BOOL: return json_boolean(*(const bool *)base);
	case F_ID: return json_integer((json_int_t) * (const uint64_t *)base);
	case F_SIZE:
	case F_COUNT:
	case F_DURATION:
		u = *(const uint64_t *)base;
		if (!u)
			return json_null();
		if (f->kind == F_DURATION)
			return u % 1000 ? json_real((double)u / 1000.0)
					: json_integer((json_int_t)(u / 1000));
		return json_integer((json_int_t)u);
	case F_CPUS:
		u = *(const uint64_t *)base;
		return u ? json_real((double)u / 1000.0) : json_null();
	case F_STRV: return strv_to_json((const struct aj_strv *)base);
	case F_ENVMAP: return envmap_to_json((const struct aj_strv *)base);
	case F_ENUM: return json_string(f->enum_names[*(const int *)base]);
	case F_CREDS: return aj_policy_creds_to_json(p);
	case F_PORTS: {
		const struct aj_ports *ports = (const struct aj_ports *)base;
		json_t *a = json_array();
		for (size_t i = 0; i < ports->n; i++)
			json_array_append_new(a, json_integer(ports->v[i]));
		return a;
	}
	}
	return NULL;
}

json_t *aj_policy_to_json(const struct aj_policy *p)
{
	return object_to_json(p, root_fields);
}
