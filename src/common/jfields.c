/* The field-table engine (common/jfields.h): reading a JSON object against a table, printing
 * a struct back through the same table, and the table as a JSON Schema. */
#include "common/jfields.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/strv.h"

const char *aj_jf_type_name(const json_t *v)
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

const char *aj_jf_expect(const struct aj_jf_field *f)
{
	if (f->expect)
		return f->expect;
	switch (f->type) {
	case AJ_JF_ANY: return "a value";
	case AJ_JF_STRING: return "a string";
	case AJ_JF_BOOL: return "true or false";
	case AJ_JF_INT: return "an integer";
	case AJ_JF_ENUM: return "one of the listed strings";
	case AJ_JF_OBJECT:
	case AJ_JF_MAP: return "an object";
	case AJ_JF_ARRAY: return f->sub ? "an array" : "an array of strings";
	}
	return "?";
}

const struct aj_jf_field *aj_jf_find(const struct aj_jf_field *table, const char *name)
{
	for (const struct aj_jf_field *f = table; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

static void set_where(struct aj_jf_error *e, enum aj_jf_problem problem,
		      const struct aj_jf_field *f, const char *path, const json_t *v)
{
	e->problem = problem;
	e->field = f;
	e->value = v;
	snprintf(e->path, sizeof e->path, "%s", path);
}

int aj_jf_fail(struct aj_jf_error *e, enum aj_jf_problem problem, const struct aj_jf_field *f,
	       const char *path, const json_t *v, const char *fmt, ...)
{
	char msg[sizeof e->err.msg];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	set_where(e, problem, f, path, v);
	return aj_err_set(&e->err, e->layer, 0, "%s", msg);
}

int aj_jf_type_error(struct aj_jf_error *e, const struct aj_jf_field *f, const char *path,
		     const json_t *v)
{
	if (f->refusal)
		return aj_jf_fail(e, AJ_JF_TYPE, f, path, v, "%s: %s", path, f->refusal);
	return aj_jf_fail(e, AJ_JF_TYPE, f, path, v, "%s: expected %s, got %s", path,
			  aj_jf_expect(f), aj_jf_type_name(v));
}

static int range_error(struct aj_jf_error *e, const struct aj_jf_field *f, const char *path,
		       const json_t *v)
{
	aj_jf_type_error(e, f, path, v);
	e->problem = AJ_JF_RANGE;
	return -1;
}

/* A check or parse that failed through err alone: the problem is the value. */
static int value_failed(struct aj_jf_error *e, const struct aj_jf_field *f, const char *path,
			const json_t *v)
{
	if (e->problem == AJ_JF_NONE)
		set_where(e, AJ_JF_VALUE, f, path, v);
	return -1;
}

static bool bounded(const struct aj_jf_field *f)
{
	return f->min != 0 || f->max != 0;
}

static int read_object(const struct aj_jf_field *table, json_t *obj, void *base,
		       const char *prefix, const struct aj_jf_opts *o, struct aj_jf_error *e);
static int read_member(const struct aj_jf_field *f, const char *path, json_t *v, void *base,
		       void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e);

static int read_int(const struct aj_jf_field *f, const char *path, json_t *v,
		    struct aj_jf_error *e)
{
	double d;

	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		if (bounded(f) && (n < f->min || n > f->max))
			return range_error(e, f, path, v);
		return 0;
	}
	if (!(f->flags & AJ_JF_INTEGRAL) || !json_is_real(v))
		return aj_jf_type_error(e, f, path, v);
	d = json_real_value(v);
	if (!(d >= -9.0e18 && d <= 9.0e18) || d != (double)(long long)d)
		return aj_jf_type_error(e, f, path, v);
	if (bounded(f) && (d < (double)f->min || d > (double)f->max))
		return range_error(e, f, path, v);
	return 0;
}

static int64_t int_value(const json_t *v)
{
	return json_is_integer(v) ? (int64_t)json_integer_value(v)
				  : (int64_t)json_real_value(v);
}

static int enum_index(const struct aj_jf_field *f, const char *path, json_t *v,
		      struct aj_jf_error *e)
{
	char list[256] = "";

	if (json_is_string(v))
		for (int i = 0; f->values[i]; i++)
			if (strcmp(f->values[i], json_string_value(v)) == 0)
				return i;
	for (int i = 0; f->values[i]; i++) {
		strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
		strncat(list, f->values[i], sizeof list - strlen(list) - 1);
	}
	if (f->refusal)
		return aj_jf_fail(e, json_is_string(v) ? AJ_JF_RANGE : AJ_JF_TYPE, f, path, v,
				  "%s: %s", path, f->refusal);
	if (!json_is_string(v))
		return aj_jf_fail(e, AJ_JF_TYPE, f, path, v, "%s: expected one of %s, got %s",
				  path, list, aj_jf_type_name(v));
	return aj_jf_fail(e, AJ_JF_RANGE, f, path, v, "%s: expected one of %s, got \"%s\"", path,
			  list, json_string_value(v));
}

static int read_string(const struct aj_jf_field *f, const char *path, json_t *v,
		       struct aj_jf_error *e)
{
	size_t n;

	if (!json_is_string(v))
		return aj_jf_type_error(e, f, path, v);
	n = json_string_length(v);
	if (bounded(f) && (n < (size_t)f->min || n > (size_t)f->max))
		return range_error(e, f, path, v);
	if (f->check && f->check(path, json_string_value(v), &e->err) < 0)
		return value_failed(e, f, path, v);
	return 0;
}

/* An array's elements: strings checked by f->check (sub NULL), or each read by sub[0]:
 * checked, and given to its parse with the array's dst (an element row without a parse
 * stores nothing: the array's dst is not its to write). */
static int read_elements(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	static const struct aj_jf_field string_el = {.name = "", .type = AJ_JF_STRING};
	char elpath[AJ_JF_PATH_MAX];
	size_t i;
	json_t *el;

	json_array_foreach(v, i, el) {
		if (f->flags & AJ_JF_ELEMS_APART)
			snprintf(elpath, sizeof elpath, "%s: [%zu]", path, i);
		else
			snprintf(elpath, sizeof elpath, "%s[%zu]", path, i);
		if (!f->sub) {
			if (!json_is_string(el))
				return aj_jf_type_error(e, &string_el, elpath, el);
			if (f->check && f->check(elpath, json_string_value(el), &e->err) < 0)
				return value_failed(e, f, elpath, el);
		} else if (read_member(f->sub, elpath, el, NULL, f->sub->parse ? dst : NULL, o,
				       e) < 0) {
			return -1;
		}
	}
	return 0;
}

static int read_map(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	char kpath[AJ_JF_PATH_MAX];
	const char *key;
	json_t *val;

	json_object_foreach(v, key, val) {
		if (f->flags & AJ_JF_ELEMS_APART)
			snprintf(kpath, sizeof kpath, "%s: \"%s\"", path, key);
		else
			snprintf(kpath, sizeof kpath, "%s.%s", path, key);
		if (f->check && f->check(kpath, key, &e->err) < 0)
			return value_failed(e, f, kpath, val);
		if (f->sub &&
		    read_member(f->sub, kpath, val, NULL, f->sub->parse ? dst : NULL, o, e) < 0)
			return -1;
	}
	return 0;
}

/* The type and shape checks of every kind, and what is inside objects and arrays. */
static int check_value(const struct aj_jf_field *f, const char *path, json_t *v, void *base,
		       void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	switch (f->type) {
	case AJ_JF_ANY: return 0;
	case AJ_JF_STRING: return read_string(f, path, v, e);
	case AJ_JF_BOOL: return json_is_boolean(v) ? 0 : aj_jf_type_error(e, f, path, v);
	case AJ_JF_INT: return read_int(f, path, v, e);
	case AJ_JF_ENUM: return enum_index(f, path, v, e) < 0 ? -1 : 0;
	case AJ_JF_OBJECT:
		if (!json_is_object(v))
			return aj_jf_type_error(e, f, path, v);
		return f->sub ? read_object(f->sub, v, base, path, o, e) : 0;
	case AJ_JF_ARRAY:
		if (!json_is_array(v))
			return aj_jf_type_error(e, f, path, v);
		if (bounded(f) && (json_array_size(v) < (size_t)f->min ||
				   json_array_size(v) > (size_t)f->max))
			return range_error(e, f, path, v);
		return read_elements(f, path, v, dst, o, e);
	case AJ_JF_MAP:
		if (!json_is_object(v))
			return aj_jf_type_error(e, f, path, v);
		return read_map(f, path, v, dst, o, e);
	}
	return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "%s: unhandled field type", path);
}

static int store_strv(const struct aj_jf_field *f, const char *path, json_t *v,
		      struct aj_strv *sv, struct aj_jf_error *e)
{
	size_t i;
	json_t *el;

	aj_strv_clear(sv);
	json_array_foreach(v, i, el)
		aj_strv_push(sv, json_string_value(el));
	return 0;
}

static int store(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		 struct aj_jf_error *e)
{
	switch (f->type) {
	case AJ_JF_STRING:
		free(*(char **)dst);
		*(char **)dst = aj_xstrdup(json_string_value(v));
		return 0;
	case AJ_JF_BOOL: *(bool *)dst = json_is_true(v); return 0;
	case AJ_JF_INT: *(int64_t *)dst = int_value(v); return 0;
	case AJ_JF_ENUM: *(int *)dst = enum_index(f, path, v, e); return 0;
	case AJ_JF_ARRAY: return f->sub ? 0 : store_strv(f, path, v, dst, e);
	case AJ_JF_ANY:
	case AJ_JF_OBJECT:
	case AJ_JF_MAP: return 0;
	}
	return 0;
}

static int read_member(const struct aj_jf_field *f, const char *path, json_t *v, void *base,
		       void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (check_value(f, path, v, base, dst, o, e) < 0)
		return -1;
	if (f->parse)
		return f->parse(f, path, v, dst, o, e) < 0 ? value_failed(e, f, path, v) : 0;
	return dst ? store(f, path, v, dst, e) : 0;
}

static int unknown_field(const struct aj_jf_field *table, const char *path, json_t *v,
			 struct aj_jf_error *e)
{
	char list[512] = "";

	for (const struct aj_jf_field *f = table; f->name; f++) {
		strncat(list, f == table ? "" : ", ", sizeof list - strlen(list) - 1);
		strncat(list, f->name, sizeof list - strlen(list) - 1);
	}
	aj_jf_fail(e, AJ_JF_UNKNOWN, NULL, path, v, "%s: unknown field (expected one of: %s)",
		   path, list);
	e->table = table;
	return -1;
}

/* The path of a member: "prefix.name", or "prefix: name" for a row named apart. */
static void join(char *out, const char *prefix, const struct aj_jf_field *f, const char *name)
{
	const char *sep = !prefix[0] ? "" : f && (f->flags & AJ_JF_NAMED_APART) ? ": " : ".";

	snprintf(out, AJ_JF_PATH_MAX, "%s%s%s", prefix, sep, name);
}

static bool absent(const struct aj_jf_field *f, const json_t *v, const struct aj_jf_opts *o)
{
	return !v || (json_is_null(v) &&
		      ((o->flags & AJ_JF_NULL_ABSENT) || (f->flags & AJ_JF_NULLABLE)));
}

/* One row's member, present or not: read; or missing; or its parse told of the absence. */
static int read_field(const struct aj_jf_field *f, json_t *v, void *base, const char *prefix,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	char path[AJ_JF_PATH_MAX];
	void *dst = base ? (char *)base + f->off : NULL;

	join(path, prefix, f, f->name);
	if (!absent(f, v, o))
		return read_member(f, path, v, base, dst, o, e);
	if (f->flags & AJ_JF_REQUIRED)
		return aj_jf_fail(e, AJ_JF_MISSING, f, path, NULL, "%s: %s", path,
				  f->refusal ? f->refusal : "required");
	if ((f->flags & AJ_JF_SEES_ABSENT) && f->parse && f->parse(f, path, NULL, dst, o, e) < 0)
		return value_failed(e, f, path, NULL);
	return 0;
}

static int find_unknown(const struct aj_jf_field *table, json_t *obj, const char *prefix,
			struct aj_jf_error *e)
{
	char path[AJ_JF_PATH_MAX];
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		if (aj_jf_find(table, key))
			continue;
		join(path, prefix, NULL, key);
		return unknown_field(table, path, v, e);
	}
	return 0;
}

/* In the table's order: members no row names first, then each row at its turn. */
static int read_in_table_order(const struct aj_jf_field *table, json_t *obj, void *base,
			       const char *prefix, const struct aj_jf_opts *o,
			       struct aj_jf_error *e)
{
	if (!(o->flags & AJ_JF_IGNORE_UNKNOWN) && find_unknown(table, obj, prefix, e) < 0)
		return -1;
	for (const struct aj_jf_field *f = table; f->name; f++)
		if (read_field(f, json_object_get(obj, f->name), base, prefix, o, e) < 0)
			return -1;
	return 0;
}

static int read_object(const struct aj_jf_field *table, json_t *obj, void *base,
		       const char *prefix, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	char path[AJ_JF_PATH_MAX];
	const char *key;
	json_t *v;

	if (o->flags & AJ_JF_TABLE_ORDER)
		return read_in_table_order(table, obj, base, prefix, o, e);
	json_object_foreach(obj, key, v) {
		const struct aj_jf_field *f = aj_jf_find(table, key);

		if (!f) {
			if (o->flags & AJ_JF_IGNORE_UNKNOWN)
				continue;
			join(path, prefix, NULL, key);
			return unknown_field(table, path, v, e);
		}
		if (!absent(f, v, o) && read_field(f, v, base, prefix, o, e) < 0)
			return -1;
	}
	for (const struct aj_jf_field *f = table; f->name; f++) {
		v = json_object_get(obj, f->name);
		if (absent(f, v, o) && read_field(f, NULL, base, prefix, o, e) < 0)
			return -1;
	}
	return 0;
}

static void error_init(struct aj_jf_error *e, const struct aj_jf_opts *o)
{
	e->problem = AJ_JF_NONE;
	e->path[0] = '\0';
	e->field = e->table = NULL;
	e->value = NULL;
	e->layer = o->layer;
	aj_err_clear(&e->err);
}

int aj_jf_read(const struct aj_jf_field *table, json_t *obj, void *base,
	       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	const char *prefix = o->prefix ? o->prefix : "";
	struct aj_jf_field whole = {.name = prefix, .type = AJ_JF_OBJECT};

	error_init(e, o);
	if (!json_is_object(obj))
		return aj_jf_type_error(e, &whole, prefix, obj);
	return read_object(table, obj, base, prefix, o, e);
}

int aj_jf_read_value(const struct aj_jf_field *f, const char *path, json_t *v, void *base,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	error_init(e, o);
	return read_member(f, path, v, base, base ? (char *)base + f->off : NULL, o, e);
}

/* ---- printing ------------------------------------------------------------------------------ */

static json_t *strv_json(const struct aj_strv *sv)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < sv->n; i++)
		json_array_append_new(a, json_string(sv->v[i]));
	return a;
}

static json_t *field_json(const struct aj_jf_field *f, const void *base, void *arg)
{
	const char *dst = (const char *)base + f->off;

	if (f->dump)
		return f->dump(f, dst, arg);
	switch (f->type) {
	case AJ_JF_STRING: {
		const char *s = *(char *const *)dst;
		return s ? json_string(s) : NULL;
	}
	case AJ_JF_BOOL: return json_boolean(*(const bool *)dst);
	case AJ_JF_INT: return json_integer((json_int_t) * (const int64_t *)dst);
	case AJ_JF_ENUM: return json_string(f->values[*(const int *)dst]);
	case AJ_JF_OBJECT: return f->sub ? aj_jf_write(f->sub, base, arg) : NULL;
	case AJ_JF_ARRAY: return f->sub ? NULL : strv_json((const struct aj_strv *)dst);
	case AJ_JF_ANY:
	case AJ_JF_MAP: return NULL;
	}
	return NULL;
}

json_t *aj_jf_write(const struct aj_jf_field *table, const void *base, void *arg)
{
	json_t *obj = json_object();

	for (const struct aj_jf_field *f = table; obj && f->name; f++) {
		json_t *v = field_json(f, base, arg);
		if (v)
			json_object_set_new(obj, f->name, v);
	}
	return obj;
}

/* ---- JSON Schema --------------------------------------------------------------------------- */

static const char *schema_type(const struct aj_jf_field *f)
{
	switch (f->type) {
	case AJ_JF_STRING:
	case AJ_JF_ENUM: return "string";
	case AJ_JF_BOOL: return "boolean";
	case AJ_JF_INT: return "integer";
	case AJ_JF_OBJECT:
	case AJ_JF_MAP: return "object";
	case AJ_JF_ARRAY: return "array";
	case AJ_JF_ANY: return NULL;
	}
	return NULL;
}

static json_t *field_schema(const struct aj_jf_field *f)
{
	json_t *s = json_object();
	const char *type = schema_type(f);

	if (!s)
		return NULL;
	if (type)
		json_object_set_new(s, "type", json_string(type));
	if (f->doc)
		json_object_set_new(s, "description", json_string(f->doc));
	if (f->type == AJ_JF_INT && bounded(f)) {
		json_object_set_new(s, "minimum", json_integer(f->min));
		json_object_set_new(s, "maximum", json_integer(f->max));
	}
	if (f->type == AJ_JF_INT)
		json_object_set_new(s, "default", json_integer(f->dflt));
	if (f->type == AJ_JF_BOOL)
		json_object_set_new(s, "default", json_boolean(f->dflt));
	if (f->type == AJ_JF_ENUM) {
		json_t *names = json_array();
		for (int i = 0; names && f->values[i]; i++)
			json_array_append_new(names, json_string(f->values[i]));
		json_object_set_new(s, "enum", names);
	}
	if (f->type == AJ_JF_OBJECT && f->sub)
		json_object_update_new(s, aj_jf_schema(f->sub));
	if (f->type == AJ_JF_ARRAY)
		json_object_set_new(s, "items", f->sub ? field_schema(f->sub)
						      : json_pack("{s:s}", "type", "string"));
	return s;
}

json_t *aj_jf_schema(const struct aj_jf_field *table)
{
	json_t *props = json_object(), *req = json_array();

	for (const struct aj_jf_field *f = table; props && req && f->name; f++) {
		json_object_set_new(props, f->name, field_schema(f));
		if (f->flags & AJ_JF_REQUIRED)
			json_array_append_new(req, json_string(f->name));
	}
	if (!props || !req) {
		json_decref(props);
		json_decref(req);
		return NULL;
	}
	return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required",
			 req, "additionalProperties", 0);
}
