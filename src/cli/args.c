/* The option engine (args.h): finds the row an argument names, converts its value by the
 * row's type into the row's destination, and checks the row's range or allowed values. */
#include "cli/args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/policy_flags.h"
#include "common/strv.h"
#include "policy/policy.h"

struct aj_cli aj_cli = {.log_level = AJ_LOG_WARN};

_Static_assert(sizeof(enum aj_log_level) == sizeof(int), "CHOICE rows store an int");

const struct aj_option *aj_args_find(const struct aj_option *t, const char *name, size_t n)
{
	for (; t && t->name; t++)
		if (strlen(t->name) == n && strncmp(t->name, name, n) == 0)
			return t;
	return NULL;
}

static const struct aj_option *find_short(const struct aj_option *t, char c)
{
	for (; t && t->name; t++)
		if (t->short_name && t->short_name == c)
			return t;
	return NULL;
}

const char *aj_args_choice_name(const struct aj_opt_choice *c, int value)
{
	for (; c && c->name; c++)
		if (c->value == value)
			return c->name;
	return NULL;
}

/* ---- values ---------------------------------------------------------------------------- */

static void format_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms && ms % 86400000 == 0 && ms > 86400000)
		snprintf(buf, len, "%llud", (unsigned long long)(ms / 86400000));
	else if (ms && ms % 3600000 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms && ms % 60000 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ms);
}

static void format_size(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	int u = -1;

	if (n == 1) {
		snprintf(buf, len, "1 byte");
		return;
	}
	while (u + 1 < 5 && n >= 1024 && n % 1024 == 0) {
		n /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)n, u < 0 ? " bytes" : units[u]);
}

static void format_number(const struct aj_option *o, uint64_t v, char *buf, size_t len)
{
	switch (o->type) {
	case AJ_OPT_SIZE:
		format_size(v, buf, len);
		break;
	case AJ_OPT_DURATION:
		format_duration(v, buf, len);
		break;
	case AJ_OPT_CPUS:
		snprintf(buf, len, "%llu.%03llu", (unsigned long long)(v / 1000),
			 (unsigned long long)(v % 1000));
		break;
	case AJ_OPT_SWITCH:
	case AJ_OPT_STRING:
	case AJ_OPT_STRDUP:
	case AJ_OPT_LIST:
	case AJ_OPT_CHOICE:
	case AJ_OPT_COUNT:
	case AJ_OPT_FUNC:
		snprintf(buf, len, "%llu", (unsigned long long)v);
		break;
	}
}

void aj_args_range_text(const struct aj_option *o, char *buf, size_t len)
{
	char lo[32], hi[32];

	buf[0] = '\0';
	if (!o->max)
		return;
	format_number(o, o->min, lo, sizeof lo);
	format_number(o, o->max, hi, sizeof hi);
	snprintf(buf, len, "%s%s to %s", o->flags & AJ_OPTF_ZERO_OK ? "0 or " : "", lo, hi);
}

static int store_number(const struct aj_option *o, void *dst, uint64_t v, const char *what,
			struct aj_err *err)
{
	char range[80];

	if (o->max && (v < o->min || v > o->max) && !(v == 0 && (o->flags & AJ_OPTF_ZERO_OK))) {
		aj_args_range_text(o, range, sizeof range);
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: expected %s", what, range);
	}
	if (o->scale > 1)
		v /= o->scale;
	switch (o->store) {
	case AJ_STORE_U64:
		*(uint64_t *)dst = v;
		break;
	case AJ_STORE_UINT:
		*(unsigned *)dst = v > UINT32_MAX ? UINT32_MAX : (unsigned)v;
		break;
	case AJ_STORE_SIZE:
		*(size_t *)dst = (size_t)v;
		break;
	case AJ_STORE_INT:
		*(int *)dst = v > INT32_MAX ? INT32_MAX : (int)v;
		break;
	}
	return 0;
}

static int parse_number(const struct aj_option *o, const char *what, const char *v,
			uint64_t *out, struct aj_err *err)
{
	if ((o->flags & AJ_OPTF_NONE_OK) && (strcmp(v, "none") == 0 || strcmp(v, "0") == 0)) {
		*out = 0;
		return 0;
	}
	switch (o->type) {
	case AJ_OPT_SIZE:
		return aj_policy_parse_size(what, v, out, err);
	case AJ_OPT_DURATION:
		return aj_policy_parse_duration(what, v, out, err);
	case AJ_OPT_CPUS:
		return aj_policy_parse_cpus(what, v, out, err);
	case AJ_OPT_COUNT:
		return aj_policy_parse_count(what, v, out, err);
	case AJ_OPT_SWITCH:
	case AJ_OPT_STRING:
	case AJ_OPT_STRDUP:
	case AJ_OPT_LIST:
	case AJ_OPT_CHOICE:
	case AJ_OPT_FUNC:
		break;
	}
	return aj_err_set(err, AJ_LAYER_INTERNAL, EINVAL, "%s: not a number option", what);
}

/* "expected none, host or proxy, got \"bridge\"" */
static int bad_choice(const struct aj_option *o, const char *what, const char *v,
		      struct aj_err *err)
{
	char list[256] = "";
	size_t n = 0, off = 0;

	while (o->choices[n].name)
		n++;
	for (size_t i = 0; i < n && off < sizeof list; i++)
		off += (size_t)snprintf(list + off, sizeof list - off, "%s%s",
					i == 0 ? "" : i + 1 == n ? " or " : ", ", o->choices[i].name);
	return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s: expected %s, got \"%s\"", what, list, v);
}

int aj_args_apply(const struct aj_option *o, void *base, const char *v, struct aj_err *err)
{
	void *dst = (char *)base + o->off;
	char what[80];
	uint64_t n;

	snprintf(what, sizeof what, "--%s", o->name);
	switch (o->type) {
	case AJ_OPT_SWITCH:
		*(bool *)dst = true;
		return 0;
	case AJ_OPT_STRING:
		*(const char **)dst = v;
		return 0;
	case AJ_OPT_STRDUP: {
		char *copy = strdup(v);
		if (!copy)
			return aj_err_sys(err, AJ_LAYER_USAGE, "%s", what);
		free(*(char **)dst);
		*(char **)dst = copy;
		return 0;
	}
	case AJ_OPT_LIST:
		return aj_strv_push(dst, v) < 0 ? aj_err_sys(err, AJ_LAYER_USAGE, "%s", what) : 0;
	case AJ_OPT_CHOICE:
		for (const struct aj_opt_choice *c = o->choices; c->name; c++)
			if (strcmp(c->name, v) == 0) {
				*(int *)dst = c->value;
				return 0;
			}
		return bad_choice(o, what, v, err);
	case AJ_OPT_SIZE:
	case AJ_OPT_DURATION:
	case AJ_OPT_COUNT:
	case AJ_OPT_CPUS:
		if (parse_number(o, what, v, &n, err) < 0)
			return -1;
		return store_number(o, dst, n, what, err);
	case AJ_OPT_FUNC:
		return o->parse(base, o, v, err);
	}
	return aj_err_set(err, AJ_LAYER_INTERNAL, EINVAL, "%s: unknown option type", what);
}

/* ---- the command line ------------------------------------------------------------------ */

static int take(const struct aj_option *o, void *ctx, const char *value, struct aj_err *err)
{
	switch (o->to) {
	case AJ_TO_CTX:
		return aj_args_apply(o, ctx, value, err);
	case AJ_TO_GLOBAL:
		return aj_args_apply(o, &aj_cli, value, err);
	case AJ_TO_POLICY: /* the verb's context starts with its struct aj_pflags */
		return aj_pflags_defer(ctx, o, value, err);
	}
	return aj_err_set(err, AJ_LAYER_INTERNAL, EINVAL, "--%s: unknown target", o->name);
}

int aj_args_parse(const struct aj_option *table, void *ctx, int argc, char **argv, int *pos,
		  struct aj_err *err)
{
	while (*pos < argc) {
		const char *arg = argv[*pos], *value = NULL, *eq;
		const struct aj_option *o;
		char shown[64];

		if (strcmp(arg, "--") == 0) {
			(*pos)++;
			return 0;
		}
		if (arg[0] != '-' || arg[1] == '\0')
			return 0;
		if (arg[1] == '-') {
			eq = strchr(arg + 2, '=');
			o = aj_args_find(table, arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
			value = eq ? eq + 1 : NULL;
			snprintf(shown, sizeof shown, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		} else {
			o = arg[2] == '\0' ? find_short(table, arg[1]) : NULL;
			snprintf(shown, sizeof shown, "%s", arg);
		}
		if (!o)
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "unknown option \"%s\"", shown),
			       aj_err_hint(err, "see --help for the options of this command");
		(*pos)++;
		if (o->metavar && !value) {
			if (*pos >= argc)
				return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s needs a value (%s)", shown,
						  o->metavar);
			value = argv[(*pos)++];
		} else if (!o->metavar && value) {
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s takes no value", shown);
		}
		if (take(o, ctx, value, err) < 0)
			return -1;
	}
	return 0;
}

void aj_args_usage(FILE *f, const char *synopsis, const char *summary,
		   const struct aj_option *table)
{
	fprintf(f, "usage: %s\n\n%s\n\noptions:\n", synopsis, summary);
	for (const struct aj_option *o = table; o->name; o++) {
		char left[64];
		if (o->flags & AJ_OPTF_HIDDEN)
			continue;
		if (o->short_name)
			snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name,
				 o->metavar ? " " : "", o->metavar ? o->metavar : "");
		else
			snprintf(left, sizeof left, "    --%s%s%s", o->name, o->metavar ? " " : "",
				 o->metavar ? o->metavar : "");
		fprintf(f, "  %-30s %s\n", left, o->help);
	}
}
