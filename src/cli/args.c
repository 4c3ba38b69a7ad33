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

const struct aj_opt_choice aj_cli_log_levels[] = {
	{"error", AJ_LOG_ERROR}, {"warn", AJ_LOG_WARN}, {"info", AJ_LOG_INFO},
	{"debug", AJ_LOG_DEBUG}, {NULL, 0}};

/* --log-level: a choice that also says it was given, so the configuration file's yields. */
static int set_log_level(void *base, const struct aj_option *o, const char *v, struct aj_err *err)
{
	struct aj_cli *c = base;
	struct aj_option choice = *o;

	choice.type = AJ_OPT_CHOICE;
	if (aj_args_apply(&choice, base, v, err) < 0)
		return -1;
	c->log_level_given = true;
	return 0;
}

#define G(field) .to = AJ_TO_GLOBAL, .off = offsetof(struct aj_cli, field)
const struct aj_option aj_cli_options[] = {
	{AJ_OPT("state-dir", 0, AJ_OPT_STRING), G(state_dir), .metavar = "DIR",
	 .complete = AJ_COMP_DIR, .help = "state directory (default: see docs/cli.md)"},
	{AJ_OPT("json", 0, AJ_OPT_SWITCH), G(json), .help = "machine-readable output"},
	{AJ_OPT("verbose", 'v', AJ_OPT_SWITCH), G(verbose),
	 .help = "say more about what is done (--log-level info)"},
	{AJ_OPT("log-level", 0, AJ_OPT_FUNC), G(log_level), .metavar = "LEVEL",
	 .parse = set_log_level, .complete = AJ_COMP_CHOICES, .choices = aj_cli_log_levels,
	 .help = "what agentjail says on stderr: error, warn (default), info "
					 "or debug"},
	{AJ_OPT("help", 'h', AJ_OPT_SWITCH), G(help), .help = "show this help"},
	AJ_OPT_END,
};
#undef G

enum aj_log_level aj_cli_level(void)
{
	return aj_cli.verbose && aj_cli.log_level < AJ_LOG_INFO ? AJ_LOG_INFO : aj_cli.log_level;
}

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

/* A verb's row, else a shared one. */
static const struct aj_option *lookup_long(const struct aj_option *t, const char *name, size_t n)
{
	const struct aj_option *o = aj_args_find(t, name, n);
	return o || t == aj_cli_options ? o : aj_args_find(aj_cli_options, name, n);
}

static const struct aj_option *lookup_short(const struct aj_option *t, char c)
{
	const struct aj_option *o = find_short(t, c);
	return o || t == aj_cli_options ? o : find_short(aj_cli_options, c);
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
	/* Only a switch comes without a value (the parser never calls others so). */
	if (!v && o->type != AJ_OPT_SWITCH)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s needs a value", what);
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
		aj_strv_push(dst, v);
		return 0;
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

/* Optimal string alignment distance (a transposition costs one), for suggestions. */
static size_t distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), d[40][40];

	if (la >= 40 || lb >= 40)
		return 99;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], best = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

const char *aj_args_nearest(const char *const *names, size_t count, const char *name, size_t n)
{
	const char *best = NULL;
	size_t best_d = n < 4 ? 1 : 2;

	for (size_t i = 0; i < count; i++) {
		size_t d = distance(name, n, names[i]);
		if (n >= 3 && strlen(names[i]) > n && strncmp(names[i], name, n) == 0)
			d = 1; /* a beginning of it: --mem for --memory */
		if (d <= best_d && (!best || d < best_d)) {
			best = names[i];
			best_d = d;
		}
	}
	return best;
}

/* The nearest long name of the verb's table and the shared options. */
static const char *nearest_option(const struct aj_option *table, const char *name, size_t n)
{
	const char *names[256];
	size_t count = 0;

	for (const struct aj_option *o = table; o && o->name && count < 256; o++)
		if (!(o->flags & AJ_OPTF_HIDDEN))
			names[count++] = o->name;
	for (const struct aj_option *o = aj_cli_options; table != aj_cli_options && o->name; o++)
		names[count++] = o->name;
	return aj_args_nearest(names, count, name, n);
}

/* Which other verbs take an option of this name ("fork" for --count). */
static void other_verbs(const char *name, size_t n, const struct aj_option *mine, char *buf,
			size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (const struct aj_verb *const *v = aj_verbs; *v && off < len; v++)
		if ((*v)->options != mine && !((*v)->flags & AJ_VERB_HIDDEN) && !(*v)->alias_of &&
		    aj_args_find((*v)->options, name, n))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
						(*v)->name);
}

static int unknown_long(const struct aj_option *table, const char *name, size_t n,
			struct aj_err *err)
{
	const char *near = nearest_option(table, name, n);
	char others[200];

	aj_err_set(err, AJ_LAYER_USAGE, 0, "unknown option \"--%.*s\"", (int)n, name);
	if (near)
		return aj_err_hint(err, "did you mean --%s? see --help for the options of this command",
				   near);
	other_verbs(name, n, table, others, sizeof others);
	if (others[0] && table == aj_cli_options) /* before the verb */
		return aj_err_hint(err, "--%.*s is an option of %s: write it after the verb", (int)n,
				   name, others);
	if (others[0])
		return aj_err_hint(err, "--%.*s is an option of %s; see --help for the options of "
					"this command",
				   (int)n, name, others);
	return aj_err_hint(err, "see --help for the options of this command");
}

/* --name, --name=VALUE, --name VALUE */
static int parse_long(const struct aj_option *table, void *ctx, int argc, char **argv, int *i,
		      struct aj_err *err)
{
	const char *arg = argv[(*i)++] + 2, *eq = strchr(arg, '='), *value = eq ? eq + 1 : NULL;
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	const struct aj_option *o = lookup_long(table, arg, n);

	if (!o)
		return unknown_long(table, arg, n, err);
	if (o->metavar && !value) {
		if (*i >= argc)
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "--%s needs a value (%s)", o->name,
					  o->metavar);
		value = argv[(*i)++];
	} else if (!o->metavar && value) {
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--%s takes no value", o->name);
	}
	return take(o, ctx, value, err);
}

/* -x, -x VALUE, -xVALUE, and clusters of switches (-it) whose last letter may take the next
 * argument as its value. A letter that takes a value inside a cluster is refused: "-tei"
 * could be -t -e i or -t -e -i. */
static int parse_short(const struct aj_option *table, void *ctx, int argc, char **argv, int *i,
		       struct aj_err *err)
{
	const char *arg = argv[(*i)++];

	/* -memory: a long name written with one dash. */
	if (arg[2] && lookup_long(table, arg + 1, strlen(arg + 1)))
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "unknown option \"%s\"", arg),
		       aj_err_hint(err, "did you mean -%s? long options take two dashes", arg);
	for (const char *p = arg + 1; *p; p++) {
		const struct aj_option *o = lookup_short(table, *p);
		if (!o) {
			aj_err_set(err, AJ_LAYER_USAGE, 0, "unknown option \"-%c\"%s%s%s", *p,
				   arg[2] ? " in \"" : "", arg[2] ? arg : "", arg[2] ? "\"" : "");
			return aj_err_hint(err, "see --help for the options of this command");
		}
		if (!o->metavar) {
			if (take(o, ctx, NULL, err) < 0)
				return -1;
			continue;
		}
		if (p == arg + 1 && p[1]) /* -m512MiB */
			return take(o, ctx, p + 1, err);
		if (p[1])
			return aj_err_set(err, AJ_LAYER_USAGE, 0,
					  "-%c takes a value (%s): in \"%s\" write it last, or apart",
					  *p, o->metavar, arg);
		if (*i >= argc)
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "-%c needs a value (%s)", *p,
					  o->metavar);
		return take(o, ctx, argv[(*i)++], err);
	}
	return 0;
}

static bool is_option(const char *arg)
{
	return arg[0] == '-' && arg[1] != '\0';
}

static int parse_option(const struct aj_option *table, void *ctx, int argc, char **argv, int *i,
			struct aj_err *err)
{
	return argv[*i][1] == '-' ? parse_long(table, ctx, argc, argv, i, err)
				  : parse_short(table, ctx, argc, argv, i, err);
}

int aj_args_parse(const struct aj_option *table, void *ctx, int argc, char **argv, int *pos,
		  struct aj_err *err)
{
	while (*pos < argc) {
		if (strcmp(argv[*pos], "--") == 0) {
			(*pos)++;
			return 0;
		}
		if (!is_option(argv[*pos]))
			return 0;
		if (parse_option(table, ctx, argc, argv, pos, err) < 0)
			return -1;
	}
	return 0;
}

int aj_verb_parse(const struct aj_verb *v, void *ctx, int argc, char **argv, char ***args,
		  int *nargs, struct aj_err *err)
{
	int i = 1, w = 1;

	if (v->flags & AJ_VERB_OPTS_FIRST) {
		if (aj_args_parse(v->options, ctx, argc, argv, &i, err) < 0)
			return -1;
		w = i;
	} else {
		/* Positionals are moved down over the options already consumed, in order. */
		while (i < argc) {
			if (strcmp(argv[i], "--") == 0) {
				for (i++; i < argc;)
					argv[w++] = argv[i++];
				break;
			}
			if (!is_option(argv[i]))
				argv[w++] = argv[i++];
			else if (parse_option(v->options, ctx, argc, argv, &i, err) < 0)
				return -1;
		}
		argc = w;
		w = 1;
	}
	*args = argv + w;
	*nargs = argc - w;
	if (aj_cli.help) {
		aj_verb_usage(stdout, v);
		return 1;
	}
	return 0;
}

int aj_verb_parse_n(const struct aj_verb *v, void *ctx, int argc, char **argv, char ***args,
		    int *nargs, int min, int max, struct aj_err *err)
{
	int r = aj_verb_parse(v, ctx, argc, argv, args, nargs, err);

	if (r)
		return r;
	if (*nargs > max)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "unexpected argument \"%s\"",
				  (*args)[max]);
	if (*nargs < min)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "usage: agentjail %s", v->synopsis);
	return 0;
}
