/* The field-table engine (common/jfields.c): reading into a struct, every problem it reports
 * with the field's path, the options, printing back through the table and the JSON Schema. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/jfields.h"
#include "common/strv.h"
#include "unit.h"

struct mount {
	char *dst;
	struct aj_strv options;
};

struct conf {
	char *name;
	bool on;
	int64_t count;
	int mode;
	struct aj_strv tags;
	char *home;
	struct mount mounts[4];
	size_t n_mounts;
};

static const char *const modes[] = {"fast", "slow", NULL};

static int check_no_x(const char *path, const char *s, struct aj_err *err)
{
	if (strchr(s, 'x'))
		return aj_err_set(err, AJ_LAYER_API, 0, "%s: no x, got \"%s\"", path, s);
	return 0;
}

static const struct aj_jf_field mount_fields[] = {
	{.name = "destination", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct mount, dst)},
	{.name = "options", .type = AJ_JF_ARRAY, .off = offsetof(struct mount, options),
	 .check = check_no_x},
	{.name = NULL},
};

/* Each element of "mounts" into the next struct mount, with the mount's own table. */
static int parse_mount(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct conf *c = dst;
	struct aj_jf_opts sub = *o;

	if (!c)
		return 0;
	if (c->n_mounts == 4)
		return aj_jf_fail(e, AJ_JF_RANGE, f, path, v, "%s: too many", path);
	sub.prefix = path;
	return aj_jf_read(mount_fields, v, &c->mounts[c->n_mounts++], &sub, e);
}

static const struct aj_jf_field mount_el = {.name = "", .type = AJ_JF_OBJECT,
					    .sub = mount_fields, .parse = parse_mount};

static const struct aj_jf_field inner_fields[] = {
	{.name = "home", .type = AJ_JF_STRING, .off = offsetof(struct conf, home)},
	{.name = NULL},
};

static const struct aj_jf_field conf_fields[] = {
	{.name = "name", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct conf, name), .max = 8, .check = check_no_x, .doc = "The name."},
	{.name = "on", .type = AJ_JF_BOOL, .off = offsetof(struct conf, on)},
	{.name = "count", .type = AJ_JF_INT, .off = offsetof(struct conf, count), .min = 1,
	 .max = 10, .flags = AJ_JF_INTEGRAL, .expect = "a whole number from 1 to 10", .dflt = 3},
	{.name = "mode", .type = AJ_JF_ENUM, .off = offsetof(struct conf, mode), .values = modes},
	{.name = "tags", .type = AJ_JF_ARRAY, .off = offsetof(struct conf, tags), .max = 2},
	{.name = "inner", .type = AJ_JF_OBJECT, .sub = inner_fields},
	{.name = "mounts", .type = AJ_JF_ARRAY, .sub = &mount_el},
	{.name = NULL},
};

static void conf_free(struct conf *c)
{
	free(c->name);
	free(c->home);
	aj_strv_free(&c->tags);
	for (size_t i = 0; i < c->n_mounts; i++) {
		free(c->mounts[i].dst);
		aj_strv_free(&c->mounts[i].options);
	}
	memset(c, 0, sizeof *c);
}

static struct aj_jf_error last;

/* Reads text into c; the error, if any, is in `last`. */
static int read_text(const char *text, struct conf *c, unsigned flags)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_API, .flags = flags};
	json_t *j = json_loads(text, 0, NULL);
	int r;

	if (!j)
		return -2;
	r = aj_jf_read(conf_fields, j, c, &o, &last);
	json_decref(j);
	return r;
}

static void refused(const char *text, enum aj_jf_problem problem, const char *path,
		    const char *msg)
{
	struct conf c = {0};

	CHECK(read_text(text, &c, 0) == -1, "%s is refused", text);
	CHECK(last.problem == problem, "%s: problem %d (got %d)", text, problem, last.problem);
	CHECK_STR(last.path, path, "%s: the path", text);
	CHECK_STR(last.err.msg, msg, "%s: the message", text);
	conf_free(&c);
}

static void reads(void)
{
	struct conf c = {0};

	CHECK(read_text("{\"name\": \"ab\", \"on\": true, \"count\": 4.0, \"mode\": \"slow\", "
			"\"tags\": [\"t1\", \"t2\"], \"inner\": {\"home\": \"/h\"}, "
			"\"mounts\": [{\"destination\": \"/m\", \"options\": [\"ro\"]}]}",
			&c, 0) == 0,
	      "a whole document is read");
	CHECK_STR(c.name, "ab", "a string is stored");
	CHECK(c.on, "a boolean is stored");
	CHECK(c.count == 4, "an integral real counts as an integer with AJ_JF_INTEGRAL");
	CHECK(c.mode == 1, "an enum is stored as its index");
	CHECK(c.tags.n == 2 && !strcmp(c.tags.v[1], "t2"), "strings go into a strv");
	CHECK_STR(c.home, "/h", "a section's members go into the same struct");
	CHECK(c.n_mounts == 1 && !strcmp(c.mounts[0].dst, "/m") &&
		      c.mounts[0].options.n == 1,
	      "a parse reads array elements into structs of its own");
	CHECK(read_text("{\"name\": \"cd\", \"tags\": [\"t3\"]}", &c, 0) == 0 &&
		      !strcmp(c.name, "cd") && c.tags.n == 1,
	      "a second read replaces strings and string arrays");
	conf_free(&c);
	CHECK(read_text("{\"name\": \"ab\", \"bogus\": 1, \"on\": null}", &c,
			AJ_JF_IGNORE_UNKNOWN | AJ_JF_NULL_ABSENT) == 0 && !c.on,
	      "unknown members and nulls can be skipped");
	conf_free(&c);
	CHECK(read_text("{\"on\": true, \"name\": null}", &c, AJ_JF_NULL_ABSENT) == -1 &&
		      last.problem == AJ_JF_MISSING,
	      "a null required member is missing when nulls are absent");
	conf_free(&c);
}

static void problems(void)
{
	refused("{\"nmae\": 1}", AJ_JF_UNKNOWN, "nmae",
		"nmae: unknown field (expected one of: name, on, count, mode, tags, inner, mounts)");
	refused("{\"on\": true}", AJ_JF_MISSING, "name", "name: required");
	refused("{\"name\": 5}", AJ_JF_TYPE, "name", "name: expected a string, got an integer");
	refused("{\"name\": \"123456789\"}", AJ_JF_RANGE, "name",
		"name: expected a string, got a string");
	refused("{\"name\": \"x\"}", AJ_JF_VALUE, "name", "name: no x, got \"x\"");
	refused("{\"name\": \"a\", \"on\": 1}", AJ_JF_TYPE, "on",
		"on: expected true or false, got an integer");
	refused("{\"name\": \"a\", \"count\": 11}", AJ_JF_RANGE, "count",
		"count: expected a whole number from 1 to 10, got an integer");
	refused("{\"name\": \"a\", \"count\": 1.5}", AJ_JF_TYPE, "count",
		"count: expected a whole number from 1 to 10, got a number");
	refused("{\"name\": \"a\", \"mode\": \"medium\"}", AJ_JF_RANGE, "mode",
		"mode: expected one of fast, slow, got \"medium\"");
	refused("{\"name\": \"a\", \"mode\": false}", AJ_JF_TYPE, "mode",
		"mode: expected one of fast, slow, got a boolean");
	refused("{\"name\": \"a\", \"tags\": \"t\"}", AJ_JF_TYPE, "tags",
		"tags: expected an array of strings, got a string");
	refused("{\"name\": \"a\", \"tags\": [\"a\", \"b\", \"c\"]}", AJ_JF_RANGE, "tags",
		"tags: expected an array of strings, got an array");
	refused("{\"name\": \"a\", \"tags\": [\"a\", 2]}", AJ_JF_TYPE, "tags[1]",
		"tags[1]: expected a string, got an integer");
	refused("{\"name\": \"a\", \"inner\": {\"hmoe\": \"/\"}}", AJ_JF_UNKNOWN, "inner.hmoe",
		"inner.hmoe: unknown field (expected one of: home)");
	refused("{\"name\": \"a\", \"inner\": []}", AJ_JF_TYPE, "inner",
		"inner: expected an object, got an array");
	refused("{\"name\": \"a\", \"mounts\": [{\"destination\": \"/\"}, {}]}", AJ_JF_MISSING,
		"mounts[1].destination", "mounts[1].destination: required");
	refused("{\"name\": \"a\", \"mounts\": [{\"destination\": \"/\", \"options\": [\"a\", "
		"\"x\"]}]}",
		AJ_JF_VALUE, "mounts[0].options[1]", "mounts[0].options[1]: no x, got \"x\"");
	CHECK(last.err.layer == AJ_LAYER_API, "errors carry the layer of the options");
}

static void prefix_and_value(void)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_API, .prefix = "arguments"};
	json_t *j = json_pack("{s:i}", "count", 0);
	struct aj_jf_error e;

	CHECK(aj_jf_read(conf_fields, j, NULL, &o, &e) == -1 && e.problem == AJ_JF_RANGE,
	      "a read without a base still checks");
	CHECK_STR(e.path, "arguments.count", "paths start with the prefix");
	CHECK(e.field == &conf_fields[2] && e.value == json_object_get(j, "count"),
	      "the error names the row and the value");
	json_decref(j);
	j = json_string("x");
	CHECK(aj_jf_read(conf_fields, j, NULL, &o, &e) == -1 && e.problem == AJ_JF_TYPE,
	      "a non-object is refused");
	CHECK_STR(e.err.msg, "arguments: expected an object, got a string", "...naming the prefix");
	CHECK(aj_jf_read_value(&conf_fields[0], "n", j, NULL, &o, &e) == -1 &&
		      e.problem == AJ_JF_VALUE,
	      "one value against one row");
	json_decref(j);
}

static int check_key(const char *path, const char *s, struct aj_err *err)
{
	if (strchr(s, '='))
		return aj_err_set(err, AJ_LAYER_API, 0, "%s: a key without '='", path);
	return 0;
}

static const struct aj_jf_field short_string = {.name = "", .type = AJ_JF_STRING, .max = 3,
						.expect = "a string of at most 3 bytes"};

static const struct aj_jf_field map_fields[] = {
	{.name = "labels", .type = AJ_JF_MAP, .check = check_key, .sub = &short_string},
	{.name = NULL},
};

static void maps(void)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_API};
	struct aj_jf_error e;
	json_t *j;

	j = json_pack("{s:{s:s, s:s}}", "labels", "a", "x", "b", "yy");
	CHECK(aj_jf_read(map_fields, j, NULL, &o, &e) == 0, "a map of any keys");
	json_decref(j);
	j = json_pack("{s:{s:s}}", "labels", "a=b", "x");
	CHECK(aj_jf_read(map_fields, j, NULL, &o, &e) == -1 && e.problem == AJ_JF_VALUE,
	      "a key its check refuses");
	CHECK_STR(e.path, "labels.a=b", "...named by its path");
	CHECK_STR(e.err.msg, "labels.a=b: a key without '='", "...in the check's words");
	json_decref(j);
	j = json_pack("{s:{s:s}}", "labels", "a", "long");
	CHECK(aj_jf_read(map_fields, j, NULL, &o, &e) == -1 && e.problem == AJ_JF_RANGE &&
		      !strcmp(e.path, "labels.a"),
	      "a value its row refuses");
	CHECK_STR(e.err.msg, "labels.a: expected a string of at most 3 bytes, got a string",
		  "...with the row's words");
	json_decref(j);
	j = json_pack("{s:[]}", "labels");
	CHECK(aj_jf_read(map_fields, j, NULL, &o, &e) == -1 && e.problem == AJ_JF_TYPE,
	      "a map must be an object");
	json_decref(j);
}

/* ---- the table's order, absent members, OCI's paths ------------------------------------ */

struct ordered {
	char seen[64]; /* the rows' names in the order their parse ran; "-" marks an absent one */
	int64_t n;
};

static int note_row(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct ordered *d = o->arg;

	(void)path;
	(void)dst;
	(void)e;
	snprintf(d->seen + strlen(d->seen), sizeof d->seen - strlen(d->seen), "%s%s ", v ? "" : "-",
		 f->name);
	return 0;
}

static int need_b(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		  const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!v)
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "%s: wanted here, in these words", path);
	return note_row(f, path, v, dst, o, e);
}

static const struct aj_jf_field ordered_fields[] = {
	{.name = "a", .type = AJ_JF_ANY, .parse = note_row},
	{.name = "b", .type = AJ_JF_ANY, .flags = AJ_JF_SEES_ABSENT, .parse = need_b},
	{.name = "c", .type = AJ_JF_ANY, .flags = AJ_JF_SEES_ABSENT | AJ_JF_NULLABLE,
	 .parse = note_row},
	{.name = "n", .type = AJ_JF_INT, .off = offsetof(struct ordered, n)},
	{.name = NULL},
};

static int read_ordered(const char *text, unsigned flags, struct ordered *d,
			struct aj_jf_error *e)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_API, .flags = flags, .arg = d};
	json_t *j = json_loads(text, 0, NULL);
	int r = aj_jf_read(ordered_fields, j, d, &o, e);

	json_decref(j);
	return r;
}

static void table_order(void)
{
	struct ordered d = {"", 0};
	struct aj_jf_error e;

	CHECK(read_ordered("{\"c\": 1, \"b\": 2, \"a\": 3}", 0, &d, &e) == 0, "read");
	CHECK_STR(d.seen, "c b a ", "by default in the object's order");
	d.seen[0] = '\0';
	CHECK(read_ordered("{\"c\": 1, \"b\": 2, \"a\": 3}", AJ_JF_TABLE_ORDER, &d, &e) == 0,
	      "read in the table's order");
	CHECK_STR(d.seen, "a b c ", "AJ_JF_TABLE_ORDER: in the table's order");
	d.seen[0] = '\0';
	CHECK(read_ordered("{\"b\": 2, \"c\": null}", AJ_JF_TABLE_ORDER, &d, &e) == 0 &&
		      !strcmp(d.seen, "b -c "),
	      "an absent row that asks is told, with v NULL, at its turn; a nullable null is "
	      "absent (%s)",
	      d.seen);
	d.seen[0] = '\0';
	CHECK(read_ordered("{\"b\": 2, \"a\": null}", 0, &d, &e) == 0 && !strcmp(d.seen, "b a -c "),
	      "in the object's order, absent rows are told after the members (%s)", d.seen);
	CHECK(read_ordered("{\"a\": 1}", AJ_JF_TABLE_ORDER, &d, &e) == -1 &&
		      e.problem == AJ_JF_VALUE && !strcmp(e.path, "b"),
	      "an absent member's parse may refuse it");
	CHECK_STR(e.err.msg, "b: wanted here, in these words", "...in its own words");
	CHECK(read_ordered("{\"b\": 1, \"c\": 2, \"z\": 0}", AJ_JF_TABLE_ORDER, &d, &e) == -1 &&
		      e.problem == AJ_JF_UNKNOWN && !strcmp(e.path, "z"),
	      "an unknown member is still refused in the table's order");
	CHECK(read_ordered("{\"b\": 1, \"n\": null}", 0, &d, &e) == -1 && e.problem == AJ_JF_TYPE,
	      "null is a value of the wrong type for a row that is not nullable");
}

static const struct aj_jf_field apart_el = {.name = "", .type = AJ_JF_INT, .min = 0, .max = 9};

static const struct aj_jf_field apart_inner[] = {
	{.name = "dotted", .type = AJ_JF_STRING},
	{.name = "spaced", .type = AJ_JF_ARRAY, .flags = AJ_JF_NAMED_APART, .sub = &apart_el},
	{.name = NULL},
};

static const struct aj_jf_field apart_fields[] = {
	{.name = "list", .type = AJ_JF_ARRAY, .flags = AJ_JF_ELEMS_APART},
	{.name = "map", .type = AJ_JF_MAP, .flags = AJ_JF_ELEMS_APART, .sub = &short_string},
	{.name = "obj", .type = AJ_JF_OBJECT, .sub = apart_inner},
	{.name = NULL},
};

static void apart_refused(const char *text, const char *path)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_POLICY};
	struct aj_jf_error e;
	json_t *j = json_loads(text, 0, NULL);

	CHECK(aj_jf_read(apart_fields, j, NULL, &o, &e) == -1, "%s is refused", text);
	CHECK_STR(e.path, path, "%s: the path", text);
	json_decref(j);
}

static const struct aj_jf_field refusal_fields[] = {
	{.name = "path", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .refusal = "a path is required"},
	{.name = "depth", .type = AJ_JF_INT, .min = 0, .max = 9, .refusal = "expected 0 to 9"},
	{.name = "mode", .type = AJ_JF_ENUM, .values = modes, .refusal = "fast or slow"},
	{.name = NULL},
};

static void one_refusal(const char *text, enum aj_jf_problem problem, const char *msg)
{
	struct aj_jf_opts o = {.layer = AJ_LAYER_API};
	struct aj_jf_error e;
	json_t *j = json_loads(text, 0, NULL);

	CHECK(aj_jf_read(refusal_fields, j, NULL, &o, &e) == -1 && e.problem == problem,
	      "%s is refused (problem %d)", text, e.problem);
	CHECK_STR(e.err.msg, msg, "%s: in the row's own words", text);
	json_decref(j);
}

static void refusals(void)
{
	one_refusal("{}", AJ_JF_MISSING, "path: a path is required");
	one_refusal("{\"path\": 1}", AJ_JF_TYPE, "path: a path is required");
	one_refusal("{\"path\": \"/\", \"depth\": 10}", AJ_JF_RANGE, "depth: expected 0 to 9");
	one_refusal("{\"path\": \"/\", \"mode\": \"x\"}", AJ_JF_RANGE, "mode: fast or slow");
	one_refusal("{\"path\": \"/\", \"mode\": 2}", AJ_JF_TYPE, "mode: fast or slow");
}

static void paths_apart(void)
{
	apart_refused("{\"list\": [\"a\", 1]}", "list: [1]");
	apart_refused("{\"map\": {\"k\": \"long\"}}", "map: \"k\"");
	apart_refused("{\"obj\": {\"dotted\": 1}}", "obj.dotted");
	apart_refused("{\"obj\": {\"spaced\": {}}}", "obj: spaced");
	apart_refused("{\"obj\": {\"spaced\": [10]}}", "obj: spaced[0]");
}

static void writes(void)
{
	struct conf c = {0};
	json_t *j;
	char *text;

	read_text("{\"name\": \"ab\", \"count\": 2, \"mode\": \"slow\", \"tags\": [\"t\"], "
		  "\"inner\": {\"home\": \"/h\"}}",
		  &c, 0);
	j = aj_jf_write(conf_fields, &c, NULL);
	text = json_dumps(j, JSON_COMPACT);
	CHECK_STR(text,
		  "{\"name\":\"ab\",\"on\":false,\"count\":2,\"mode\":\"slow\",\"tags\":[\"t\"],"
		  "\"inner\":{\"home\":\"/h\"}}",
		  "printing goes through the same table (NULL strings and parsed arrays left out)");
	free(text);
	conf_free(&c);
	CHECK(aj_jf_read(conf_fields, j, &c,
			 &(struct aj_jf_opts){.layer = AJ_LAYER_API}, &last) == 0 &&
		      !strcmp(c.home, "/h") && c.count == 2,
	      "and what it prints reads back");
	json_decref(j);
	conf_free(&c);
}

static void schema(void)
{
	json_t *s = aj_jf_schema(conf_fields);
	json_t *props = json_object_get(s, "properties");
	json_t *count = json_object_get(props, "count");

	CHECK_STR(json_string_value(json_object_get(s, "type")), "object", "an object schema");
	CHECK(json_is_false(json_object_get(s, "additionalProperties")),
	      "no other members allowed");
	CHECK(json_array_size(json_object_get(s, "required")) == 1 &&
		      !strcmp(json_string_value(json_array_get(json_object_get(s, "required"), 0)),
			      "name"),
	      "required lists the required rows");
	CHECK_STR(json_string_value(json_object_get(json_object_get(props, "name"), "description")),
		  "The name.", "descriptions come from doc");
	CHECK(json_integer_value(json_object_get(count, "minimum")) == 1 &&
		      json_integer_value(json_object_get(count, "maximum")) == 10 &&
		      json_integer_value(json_object_get(count, "default")) == 3,
	      "an integer has its range and default");
	CHECK(json_array_size(json_object_get(json_object_get(props, "mode"), "enum")) == 2,
	      "an enum lists its values");
	CHECK_STR(json_string_value(json_object_get(json_object_get(props, "on"), "type")),
		  "boolean", "a boolean");
	json_decref(s);
}

int main(void)
{
	reads();
	problems();
	prefix_and_value();
	maps();
	table_order();
	paths_apart();
	refusals();
	writes();
	schema();
	UNIT_EXIT();
}
