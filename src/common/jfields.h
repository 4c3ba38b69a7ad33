/* One reader for JSON input described as data: a table of rows, one per field (name, type,
 * required, where the value goes, its range or allowed values, a check), and one engine that
 * walks a JSON object against it. The engine finds unknown fields, missing required ones,
 * wrong types and values out of range, and names the field's path in every error
 * ("limits.memory", "mounts[3].options[1]"). The same table prints the values back as JSON
 * (aj_jf_write, so that a policy round-trips) and describes them as a JSON Schema
 * (aj_jf_schema, for MCP's tools/list).
 *
 * Users: the policy (src/policy/parse.c), the HTTP API's request bodies
 * (src/server/json_body.c), MCP's tool arguments (src/mcp/tools.c), and the other front
 * ends' readers. Each front end words its errors its own way: the engine's error carries the
 * problem, the path and the row as data next to a message in the engine's words (the
 * policy's), and a front end that answers differently builds its message from those.
 *
 * Pure: no I/O, no globals. Ownership: the tables are static data; what the engine stores
 * belongs to the caller's struct (strings are strdup'd, the old value freed; string arrays
 * go into a struct aj_strv); the JSON it reads is borrowed, and the error's `value` points
 * into it.
 */
#ifndef AJ_COMMON_JFIELDS_H
#define AJ_COMMON_JFIELDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define AJ_JF_PATH_MAX 256

enum aj_jf_type {
	AJ_JF_ANY,    /* any JSON value: the row's parse decides (and stores) */
	AJ_JF_STRING, /* char * (strdup'd); min/max bound the length in bytes */
	AJ_JF_BOOL,   /* bool */
	AJ_JF_INT,    /* int64_t, from min to max (both 0: any) */
	AJ_JF_ENUM,   /* int or an enum field: the index of the string in `values` */
	AJ_JF_OBJECT, /* sub: the members' table, stored into the same base; NULL: any object */
	AJ_JF_ARRAY,  /* sub[0] checks each element ("path[i]") and hands it to its parse, with
			 the array's dst; min/max bound the count; without sub, the elements
			 are strings, stored into a struct aj_strv unless the row has a parse */
	AJ_JF_MAP,    /* an object of any keys (check_str checks each), sub[0] checks each
			 value ("path.KEY") as for an array */
};

/* Row flags. */
#define AJ_JF_REQUIRED 0x1u    /* absent is an error */
#define AJ_JF_INTEGRAL 0x2u    /* AJ_JF_INT: a number without a fraction counts (30.0), as
				  JSON Schema's "integer" */
#define AJ_JF_NULLABLE 0x4u    /* a null value of this member counts as absent (what the
				  AJ_JF_NULL_ABSENT option says of every member) */
#define AJ_JF_SEES_ABSENT 0x8u /* the row's parse is called for an absent member too, with v
				  NULL: a default, or a requirement in the row's own words */
/* Paths as OCI's config.json errors write them: */
#define AJ_JF_NAMED_APART 0x10u /* the member is "object: name", not "object.name" */
#define AJ_JF_ELEMS_APART 0x20u /* ARRAY, MAP: the elements are "path: [3]" and
				   "path: \"key\"", not "path[3]" and "path.key" */

/* Read options. */
#define AJ_JF_IGNORE_UNKNOWN 0x1u /* fields no row names are skipped (OCI's rule) */
#define AJ_JF_NULL_ABSENT 0x2u    /* a null member counts as absent */
#define AJ_JF_TABLE_ORDER 0x4u    /* members are read in the table's order, an absent one at
				     its turn: a row's check may rely on the rows above it (OCI:
				     the namespaces before the sysctls that need one) */

enum aj_jf_problem {
	AJ_JF_NONE,
	AJ_JF_UNKNOWN, /* a member no row names; `table` is the table it is not in */
	AJ_JF_MISSING, /* a required member is absent */
	AJ_JF_TYPE,    /* a value of the wrong JSON type */
	AJ_JF_RANGE,   /* a number, length, count or enum string outside what the row allows */
	AJ_JF_VALUE,   /* a check or parse refused the value (the message says why) */
	AJ_JF_NOMEM,   /* no longer reported (allocation failure aborts, common/alloc.h); the
			* front ends' switches still name it */
};

struct aj_jf_error {
	enum aj_jf_problem problem;
	char path[AJ_JF_PATH_MAX];       /* "network.listen[0]", "arguments.offset" */
	const struct aj_jf_field *field; /* the row the value failed, NULL for UNKNOWN */
	const struct aj_jf_field *table; /* UNKNOWN: the table that lacks the name */
	const json_t *value;             /* the offending value (borrowed), NULL for MISSING */
	enum aj_layer layer;             /* of err, from the options */
	struct aj_err err;               /* the whole message, in the engine's words */
};

struct aj_jf_opts {
	enum aj_layer layer; /* of the errors */
	unsigned flags;      /* AJ_JF_IGNORE_UNKNOWN, AJ_JF_NULL_ABSENT */
	const char *prefix;  /* the path of the object read ("arguments"); NULL or "": none */
	void *arg;           /* for the rows' callbacks */
};

struct aj_jf_field;

/* A row's own reading of a value that passed the engine's checks of its type, range and
 * elements; it replaces the engine's store. dst is base + off, NULL when the read has no
 * base (a check only); v is NULL for an absent member of an AJ_JF_SEES_ABSENT row. Returns
 * 0, or -1 after aj_jf_fail() (or an aj_err_* setter on &e->err: the problem is then
 * AJ_JF_VALUE, and the error's errno is the setter's). */
typedef int (*aj_jf_parse_fn)(const struct aj_jf_field *f, const char *path, json_t *v,
			      void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e);
/* A row's own printing of dst; NULL leaves the member out. */
typedef json_t *(*aj_jf_dump_fn)(const struct aj_jf_field *f, const void *dst, void *arg);
/* A string's check (STRING values, the strings of an ARRAY of them, MAP keys): 0 or -1 with
 * err set, its message naming path. */
typedef int (*aj_jf_check_fn)(const char *path, const char *s, struct aj_err *err);

struct aj_jf_field {
	const char *name;              /* NULL ends a table */
	enum aj_jf_type type;
	unsigned flags;                /* AJ_JF_REQUIRED, AJ_JF_INTEGRAL */
	size_t off;                    /* where the value goes: base + off */
	const struct aj_jf_field *sub; /* OBJECT: its table; ARRAY, MAP: one row, the elements' */
	long long min, max;            /* INT: the range; STRING: length; ARRAY: count */
	const char *const *values;     /* ENUM: NULL-terminated names */
	aj_jf_check_fn check;
	aj_jf_parse_fn parse;
	aj_jf_dump_fn dump;
	const char *expect; /* the words after "expected" ("a size such as 512MiB"); NULL: the
			       type's own ("a string") */
	const char *refusal; /* what any refusal of this member by the engine says after its
				path (missing, wrong type, out of range), for an API that words
				each field's refusals alike ("a path is required"); NULL: the
				engine's words for each problem */
	const char *doc;    /* JSON Schema's description */
	long long dflt;     /* INT, BOOL: the default JSON Schema shows */
};

/* Reads obj (an object) against table into base (NULL: checks only, nothing is stored).
 * Members are taken in the object's order and absent ones (required, AJ_JF_SEES_ABSENT)
 * after, or all in the table's order with AJ_JF_TABLE_ORDER. 0, or -1 with e filled. */
int aj_jf_read(const struct aj_jf_field *table, json_t *obj, void *base,
	       const struct aj_jf_opts *o, struct aj_jf_error *e);
/* Reads one value against one row, as for a member at path (for a parse that reads its own
 * elements, and for arrays of objects). */
int aj_jf_read_value(const struct aj_jf_field *f, const char *path, json_t *v, void *base,
		     const struct aj_jf_opts *o, struct aj_jf_error *e);

/* Fails e with problem at path (v may be NULL) and a message; returns -1. */
int aj_jf_fail(struct aj_jf_error *e, enum aj_jf_problem problem, const struct aj_jf_field *f,
	       const char *path, const json_t *v, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* "path: expected <expect>, got <type of v>" as AJ_JF_TYPE; returns -1. */
int aj_jf_type_error(struct aj_jf_error *e, const struct aj_jf_field *f, const char *path,
		     const json_t *v);

/* Prints base's values as the table describes them (a new object; NULL if out of memory). */
json_t *aj_jf_write(const struct aj_jf_field *table, const void *base, void *arg);
/* The JSON Schema of an object read with table: properties, required, no other members. */
json_t *aj_jf_schema(const struct aj_jf_field *table);

const struct aj_jf_field *aj_jf_find(const struct aj_jf_field *table, const char *name);
/* The words after "expected" for f, and a JSON value's type as an error names it ("an
 * integer", "a number", "null"). */
const char *aj_jf_expect(const struct aj_jf_field *f);
const char *aj_jf_type_name(const json_t *v);

#endif
