/* Policy JSON <-> struct aj_policy, driven by one field table (read and printed by the
 * engine of common/jfields.h) so that parsing, unknown-field errors and printing the
 * effective policy cannot drift apart. Adding a field means adding one row here and one
 * paragraph in docs/policy.md.
 */
#include "policy/policy.h"
#include "policy/users.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/jfields.h"
#include "common/util.h"
#include "rules/addr.h"
#include "rules/egress.h"
#include "rules/publish.h"
#include "storage/volumes.h"

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

static int check_volume(const char *path, const char *v, struct aj_err *err)
{
	struct aj_volume_entry e;
	char why[160];

	if (aj_volume_entry_parse(v, &e, why, sizeof why) == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: \"%s\" %s", path, v, why);
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
	bool ok = n > 0 && n <= 64;

	for (const char *c = v; ok && *c; c++)
		ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		     (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.';
	if (ok)
		return 0;
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

static int check_publish(const char *path, const char *v, struct aj_err *err)
{
	struct aj_publish pub;
	char why[256];

	if (aj_publish_parse(v, &pub, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "%s: \"%s\": %s (expected [HOSTIP:][HOSTPORT:]PORT)", path, v, why);
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

/* ---- the policy's own kinds of value --------------------------------------------------- */

enum quantity { Q_SIZE, Q_DURATION, Q_COUNT, Q_CPUS };

/* Numbers given as JSON numbers are taken as bytes / seconds / CPUs; strings go through the
 * same parsers as the CLI flags so "512MiB" means the same in both places. */
static int parse_quantity(enum quantity q, const struct aj_jf_field *f, const char *path,
			  json_t *v, uint64_t *out, struct aj_jf_error *e)
{
	uint64_t scratch;
	char buf[64];

	if (!out)
		out = &scratch;
	if (json_is_null(v)) {
		*out = 0;
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v) && json_real_value(v) >= 0 && q != Q_COUNT && q != Q_SIZE)
		snprintf(buf, sizeof buf, "%.3f", json_real_value(v));
	else if (json_is_string(v) && q != Q_COUNT)
		snprintf(buf, sizeof buf, "%s", json_string_value(v));
	else
		return aj_jf_type_error(e, f, path, v);
	switch (q) {
	case Q_SIZE: return aj_policy_parse_size(path, buf, out, &e->err);
	case Q_DURATION: return aj_policy_parse_duration(path, buf, out, &e->err);
	case Q_CPUS: return aj_policy_parse_cpus(path, buf, out, &e->err);
	case Q_COUNT: return aj_policy_parse_count(path, buf, out, &e->err);
	}
	return -1;
}

#define QUANTITY_PARSER(fn, q)                                                                 \
	static int fn(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,     \
		      const struct aj_jf_opts *o, struct aj_jf_error *e)                       \
	{                                                                                      \
		return parse_quantity(q, f, path, v, dst, e);                                  \
	}
QUANTITY_PARSER(parse_size, Q_SIZE)
QUANTITY_PARSER(parse_duration, Q_DURATION)
QUANTITY_PARSER(parse_count, Q_COUNT)
QUANTITY_PARSER(parse_cpus, Q_CPUS)

/* Numbers with no limit print as null so the document round-trips. */
static json_t *dump_number(const struct aj_jf_field *f, const void *dst, void *arg)
{
	uint64_t u = *(const uint64_t *)dst;

	return u ? json_integer((json_int_t)u) : json_null();
}

/* limits.disk: a size, null (none), or "default" (policy.h AJ_DISK_DEFAULT). */
static int parse_disk(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (json_is_string(v) && !strcmp(json_string_value(v), "default")) {
		if (dst)
			*(uint64_t *)dst = AJ_DISK_DEFAULT;
		return 0;
	}
	return parse_size(f, path, v, dst, o, e);
}

static json_t *dump_disk(const struct aj_jf_field *f, const void *dst, void *arg)
{
	return *(const uint64_t *)dst == AJ_DISK_DEFAULT ? json_string("default")
							 : dump_number(f, dst, arg);
}

static json_t *dump_duration(const struct aj_jf_field *f, const void *dst, void *arg)
{
	uint64_t u = *(const uint64_t *)dst;

	if (!u)
		return json_null();
	return u % 1000 ? json_real((double)u / 1000.0) : json_integer((json_int_t)(u / 1000));
}

static json_t *dump_cpus(const struct aj_jf_field *f, const void *dst, void *arg)
{
	uint64_t u = *(const uint64_t *)dst;

	return u ? json_real((double)u / 1000.0) : json_null();
}

static int parse_version(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
				  "%s: this agentjail reads policy version 1", path);
	return 0;
}

static json_t *dump_version(const struct aj_jf_field *f, const void *dst, void *arg)
{
	return json_integer(1);
}

/* The preset is applied before the other fields (aj_policy_load); here it is only read. */
static int parse_preset(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return 0;
}

static int parse_envmap(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_strv *sv = dst;
	const char *key;
	json_t *val;

	if (!json_is_object(v))
		return aj_jf_type_error(e, f, path, v);
	if (sv)
		aj_strv_clear(sv);
	json_object_foreach(v, key, val) {
		if (!aj_policy_env_name_ok(key))
			return aj_err_set(&e->err, AJ_LAYER_POLICY, 0,
					  "%s: \"%s\" is not a valid variable name", path, key);
		if (!json_is_string(val))
			return aj_err_set(&e->err, AJ_LAYER_POLICY, 0,
					  "%s.%s: expected a string, got %s", path, key,
					  aj_jf_type_name(val));
		if (sv)
			aj_strv_setenv(sv, key, json_string_value(val));
	}
	return 0;
}

static json_t *dump_envmap(const struct aj_jf_field *f, const void *dst, void *arg)
{
	const struct aj_strv *sv = dst;
	json_t *o = json_object();

	for (size_t i = 0; o && i < sv->n; i++) {
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

static int parse_ports(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_ports ports = {0};
	size_t i;
	json_t *el;

	if (!json_is_array(v))
		return aj_jf_type_error(e, f, path, v);
	json_array_foreach(v, i, el) {
		json_int_t n = json_is_integer(el) ? json_integer_value(el) : 0;
		size_t k = 0;

		if (n < 1 || n > 65535)
			return aj_err_set(&e->err, AJ_LAYER_POLICY, 0,
					  "%s[%zu]: expected a TCP port number (1-65535), got %s", path,
					  i, json_is_integer(el) ? "a number out of range"
								  : aj_jf_type_name(el));
		while (k < ports.n && ports.v[k] != (uint16_t)n)
			k++;
		if (k < ports.n)
			continue;
		if (ports.n == AJ_PORTS_MAX)
			return aj_err_set(&e->err, AJ_LAYER_POLICY, 0, "%s: more than %d ports", path,
					  AJ_PORTS_MAX);
		ports.v[ports.n++] = (uint16_t)n;
	}
	if (dst)
		*(struct aj_ports *)dst = ports;
	return 0;
}

static json_t *dump_ports(const struct aj_jf_field *f, const void *dst, void *arg)
{
	const struct aj_ports *ports = dst;
	json_t *a = json_array();

	for (size_t i = 0; a && i < ports->n; i++)
		json_array_append_new(a, json_integer(ports->v[i]));
	return a;
}

/* credentials.c reads and prints the whole field; dst is the policy (offset 0). */
static int parse_creds(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return aj_policy_creds_apply_json(dst, path, v, &e->err);
}

static json_t *dump_creds(const struct aj_jf_field *f, const void *dst, void *arg)
{
	return aj_policy_creds_to_json(dst);
}

/* ---- the table ----------------------------------------------------------------------------- */

#define STRING(n, m, chk) {.name = (n), .type = AJ_JF_STRING, .off = OFF(m), .check = (chk)}
#define STRINGS(n, m, chk) {.name = (n), .type = AJ_JF_ARRAY, .off = OFF(m), .check = (chk)}
#define BOOLEAN(n, m) {.name = (n), .type = AJ_JF_BOOL, .off = OFF(m)}
#define ENUM(n, m, names) {.name = (n), .type = AJ_JF_ENUM, .off = OFF(m), .values = (names)}
/* The engine stores an ENUM's index as an int. */
_Static_assert(sizeof(enum aj_ws_mode) == sizeof(int) && sizeof(enum aj_net_mode) == sizeof(int) &&
		       sizeof(enum aj_output_action) == sizeof(int) &&
		       sizeof(enum aj_preview_access) == sizeof(int),
	       "enum fields are int-sized");
#define SECTION(n, table) {.name = (n), .type = AJ_JF_OBJECT, .sub = (table)}
#define ID(n, m)                                                                               \
	{.name = (n), .type = AJ_JF_INT, .off = OFF(m), .min = 0, .max = 65535,                \
	 .expect = "a whole number from 0 to 65535"}
#define OWN(n, m, p, d, words)                                                                 \
	{.name = (n), .type = AJ_JF_ANY, .off = OFF(m), .parse = (p), .dump = (d), .expect = (words)}
#define SIZE(n, m)                                                                             \
	OWN(n, m, parse_size, dump_number,                                                     \
	    "a size (number of bytes, or a string such as \"512MiB\"), or null")
#define DURATION(n, m)                                                                         \
	OWN(n, m, parse_duration, dump_duration,                                               \
	    "a duration (seconds, or a string such as \"30s\"), or null")
#define COUNT(n, m) OWN(n, m, parse_count, dump_number, "a non-negative whole number, or null")
#define CPUS(n, m) OWN(n, m, parse_cpus, dump_cpus, "a number of CPUs such as 1.5, or null")
#define FIELD_END {.name = NULL}

static const char *const ws_modes[] = {"rw", "ro", NULL};
static const char *const net_modes[] = {"none", "host", "proxy", NULL};
static const char *const output_actions[] = {"truncate", "kill", NULL};
static const char *const tiers[] = {"namespaces", "landlock", "gvisor", NULL};
static const char *const preview_modes[] = {"token", "public", NULL};

static const struct aj_jf_field filesystem_fields[] = {
	STRING("workspace", workspace, NULL),
	ENUM("workspace_mode", workspace_mode, ws_modes),
	STRING("mount", workspace_mount, check_abs_path),
	BOOLEAN("protect_git", protect_git),
	STRINGS("read_only", read_only, check_abs_path),
	STRINGS("read_write", read_write, check_abs_path),
	STRINGS("mask", mask, check_abs_path),
	STRINGS("volumes", volumes, check_volume),
	FIELD_END,
};

static const struct aj_jf_field user_fields[] = {
	ID("uid", uid),
	ID("gid", gid),
	STRING("name", user_name, check_name),
	STRING("home", home, check_abs_path),
	STRING("shell", shell, check_abs_path),
	FIELD_END,
};

static const struct aj_jf_field environment_fields[] = {
	STRINGS("allow", env_allow, check_env_pattern),
	OWN("set", env_set, parse_envmap, dump_envmap,
	    "an object mapping variable names to strings"),
	FIELD_END,
};

static const struct aj_jf_field network_fields[] = {
	ENUM("mode", net_mode, net_modes),
	STRINGS("allow", net_allow, check_rule),
	STRINGS("deny", net_deny, check_rule),
	STRINGS("allow_private", net_allow_private, check_cidr),
	COUNT("max_connections", net_max_connections),
	SIZE("max_bytes", net_max_bytes),
	OWN("listen", net_listen, parse_ports, dump_ports,
	    "an array of TCP port numbers (1-65535)"),
	STRINGS("publish", net_publish, check_publish),
	OWN("public_ports", net_public_ports, parse_ports, dump_ports,
	    "an array of TCP port numbers (1-65535)"),
	ENUM("preview", net_preview, preview_modes),
	OWN("host_ports", net_host_ports, parse_ports, dump_ports,
	    "an array of TCP port numbers (1-65535)"),
	FIELD_END,
};

static const struct aj_jf_field limits_fields[] = {
	SIZE("memory", limits.memory),
	COUNT("pids", limits.pids),
	CPUS("cpus", limits.cpu_milli),
	DURATION("timeout", limits.timeout_ms),
	SIZE("file_size", limits.file_size),
	OWN("disk", limits.disk, parse_disk, dump_disk,
	    "a size (number of bytes, or a string such as \"10GiB\"), null, or \"default\""),
	COUNT("open_files", limits.open_files),
	SIZE("output_bytes", limits.output_bytes),
	ENUM("output_action", limits.output_action, output_actions),
	SIZE("tmpfs_size", limits.tmpfs_size),
	FIELD_END,
};

static const struct aj_jf_field syscalls_fields[] = {
	STRINGS("allow", syscalls_allow, check_name),
	FIELD_END,
};

/* An image reference is checked where it is resolved (image/ref.c, against the store); here
 * only that it is one word. */
static int check_image_ref(const char *path, const char *v, struct aj_err *err)
{
	size_t n = strlen(v);
	bool ok = n > 0 && n < 600;

	for (const char *c = v; ok && *c; c++)
		ok = *c > ' ' && *c < 127;
	if (ok)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected an image reference such as busybox:latest, got \"%s\"", path,
			  v);
}

/* USER[:GROUP], each a name of the image's or an id (docker's --user). */
static int check_user_spec(const char *path, const char *v, struct aj_err *err)
{
	if (aj_user_spec_ok(v))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected USER[:GROUP], each a name or an id 0-65535 (root, app, "
			  "1000:1000), got \"%s\"",
			  path, v);
}

static const struct aj_jf_field rootfs_fields[] = {
	STRING("image", rootfs_image, check_image_ref),
	FIELD_END,
};

static const struct aj_jf_field process_fields[] = {
	STRING("user", process_user, check_user_spec),
	FIELD_END,
};

static const struct aj_jf_field root_fields[] = {
	{.name = "version", .type = AJ_JF_ANY, .parse = parse_version, .dump = dump_version,
	 .expect = "the number 1"},
	{.name = "preset", .type = AJ_JF_STRING, .off = OFF(preset), .parse = parse_preset},
	SECTION("filesystem", filesystem_fields),
	SECTION("rootfs", rootfs_fields),
	SECTION("process", process_fields),
	STRING("cwd", cwd, check_abs_path),
	SECTION("user", user_fields),
	STRING("hostname", hostname, check_name),
	SECTION("environment", environment_fields),
	SECTION("network", network_fields),
	{.name = "credentials", .type = AJ_JF_ANY, .off = 0, .parse = parse_creds,
	 .dump = dump_creds, .expect = "an object mapping variable names to credentials"},
	SECTION("limits", limits_fields),
	SECTION("syscalls", syscalls_fields),
	STRINGS("allow_degraded", allow_degraded, check_name),
	ENUM("tier", tier, tiers),
	FIELD_END,
};

int aj_policy_apply_json(struct aj_policy *p, json_t *root, struct aj_err *err)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_POLICY};
	struct aj_jf_error e;

	if (!json_is_object(root))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "policy: expected a JSON object at the top level, got %s",
				  aj_jf_type_name(root));
	if (aj_jf_read(root_fields, root, p, &o, &e) < 0) {
		*err = e.err;
		return -1;
	}
	return 0;
}

int aj_policy_json_preset(json_t *root, const char **out, struct aj_err *err)
{
	json_t *v = json_is_object(root) ? json_object_get(root, "preset") : NULL;

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "preset: expected a string, got %s",
				  aj_jf_type_name(v));
	*out = json_string_value(v);
	return 0;
}

/* The preset (the file's, unless overridden), then the file's fields over it. */
static int apply_file(struct aj_policy *p, json_t *root, const char *preset_override,
		      struct aj_err *err)
{
	const char *preset = NULL;

	if (root && aj_policy_json_preset(root, &preset, err) < 0)
		return -1;
	if (preset_override)
		preset = preset_override;
	if (aj_policy_apply_preset(p, preset ? preset : "workspace-write", err) < 0)
		return -1;
	return root ? aj_policy_apply_json(p, root, err) : 0;
}

int aj_policy_load(struct aj_policy *p, const char *file, const char *preset_override,
		   struct aj_err *err)
{
	_cleanup_json_ json_t *root = NULL;
	json_error_t jerr;

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
	}
	if (apply_file(p, root, preset_override, err) < 0)
		return file ? aj_err_prefix(err, "policy file \"%s\"", file) : -1;
	return 0;
}

int aj_policy_load_text(struct aj_policy *p, const char *text, struct aj_err *err)
{
	json_error_t jerr;
	_cleanup_json_ json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);

	if (!root)
		return aj_err_set(err, AJ_LAYER_POLICY, 0, "stored policy, line %d: %s", jerr.line,
				  jerr.text);
	return apply_file(p, root, NULL, err);
}

json_t *aj_policy_to_json(const struct aj_policy *p)
{
	return aj_jf_write(root_fields, p, NULL);
}
