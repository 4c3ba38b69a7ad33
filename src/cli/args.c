#include "cli/args.h"

#include <string.h>

static const struct aj_option *find_long(const struct aj_option *t, const char *name, size_t n)
{
	for (; t->name; t++)
		if (strlen(t->name) == n && strncmp(t->name, name, n) == 0)
			return t;
	return NULL;
}

static const struct aj_option *find_short(const struct aj_option *t, char c)
{
	for (; t->name; t++)
		if (t->short_name && t->short_name == c)
			return t;
	return NULL;
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
			o = find_long(table, arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
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
		if (o->value && !value) {
			if (*pos >= argc)
				return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s needs a value (%s)", shown,
						  o->value);
			value = argv[(*pos)++];
		} else if (!o->value && value) {
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s takes no value", shown);
		}
		if (o->apply(ctx, o->name, value, err) < 0)
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
		if (o->short_name)
			snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name,
				 o->value ? " " : "", o->value ? o->value : "");
		else
			snprintf(left, sizeof left, "    --%s%s%s", o->name, o->value ? " " : "",
				 o->value ? o->value : "");
		fprintf(f, "  %-30s %s\n", left, o->help);
	}
}
