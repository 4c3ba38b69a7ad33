#include "build/dockerfile.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/cleanup.h"

static const struct {
	const char *name;
	enum aj_df_kind kind;
	const char *flags; /* the flags it takes, space-separated, each " name " */
} keywords[] = {
	{"FROM", AJ_DF_FROM, " platform "},
	{"RUN", AJ_DF_RUN, ""},
	{"COPY", AJ_DF_COPY, " chown chmod from "},
	{"ADD", AJ_DF_ADD, " chown chmod "},
	{"ENV", AJ_DF_ENV, ""},
	{"ARG", AJ_DF_ARG, ""},
	{"WORKDIR", AJ_DF_WORKDIR, ""},
	{"USER", AJ_DF_USER, ""},
	{"LABEL", AJ_DF_LABEL, ""},
	{"EXPOSE", AJ_DF_EXPOSE, ""},
	{"CMD", AJ_DF_CMD, ""},
	{"ENTRYPOINT", AJ_DF_ENTRYPOINT, ""},
	{"SHELL", AJ_DF_SHELL, ""},
	{"VOLUME", AJ_DF_VOLUME, ""},
	{"STOPSIGNAL", AJ_DF_STOPSIGNAL, ""},
};

/* Known to Docker, not built here: refused by name rather than as unknown. */
static const char *const unsupported[] = {"ONBUILD", "HEALTHCHECK", "MAINTAINER"};

const char *aj_df_kind_name(enum aj_df_kind k)
{
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (keywords[i].kind == k)
			return keywords[i].name;
	return "?";
}

const char *aj_df_flag(const struct aj_df_insn *in, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < in->flags.n; i++)
		if (strncmp(in->flags.v[i], name, n) == 0 && in->flags.v[i][n] == '=')
			return in->flags.v[i] + n + 1;
	return NULL;
}

/* ---- lines ------------------------------------------------------------------------------ */

struct lexer {
	const char *p, *end;
	unsigned line; /* of the line at p */
	const char *file;
	char escape;
};

/* The next physical line (without its newline, \r\n as \n) into *s, *n; false at the end. */
static bool next_line(struct lexer *lx, const char **s, size_t *n)
{
	const char *nl;

	if (lx->p >= lx->end)
		return false;
	nl = memchr(lx->p, '\n', (size_t)(lx->end - lx->p));
	*s = lx->p;
	*n = nl ? (size_t)(nl - lx->p) : (size_t)(lx->end - lx->p);
	if (*n && (*s)[*n - 1] == '\r')
		(*n)--;
	lx->p = nl ? nl + 1 : lx->end;
	lx->line++;
	return true;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return false;
	return true;
}

static bool comment(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && isspace((unsigned char)s[i]))
		i++;
	return i < n && s[i] == '#';
}

/* "# name=value" at the top: escape changes the lexer, syntax and check are accepted. */
static int directives(struct lexer *lx, struct aj_err *err)
{
	for (;;) {
		const char *save = lx->p, *s;
		unsigned line = lx->line;
		size_t n;
		char name[16], value[64];

		if (!next_line(lx, &s, &n))
			return 0;
		char buf[128];
		snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf - 1 ? n : sizeof buf - 1), s);
		if (sscanf(buf, " # %15[a-zA-Z] = %63s", name, value) != 2 ||
		    (strcasecmp(name, "escape") && strcasecmp(name, "syntax") &&
		     strcasecmp(name, "check"))) {
			lx->p = save;
			lx->line = line;
			return 0;
		}
		if (strcasecmp(name, "escape") == 0) {
			if (strcmp(value, "\\") && strcmp(value, "`"))
				return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
						  "%s:%u: escape: \"%s\" is not \\ or `", lx->file,
						  lx->line, value);
			lx->escape = value[0];
		}
	}
}

/* Trailing whitespace off; whether the line then ends in the escape character (removed). */
static bool continues(const char *s, size_t *n, char escape)
{
	while (*n && isspace((unsigned char)s[*n - 1]))
		(*n)--;
	if (*n && s[*n - 1] == escape) {
		(*n)--;
		return true;
	}
	return false;
}

/* One logical line (an instruction with its continuations joined) into *out; 0 at the end. */
static int logical_line(struct lexer *lx, char **out, unsigned *start, struct aj_err *err)
{
	const char *s;
	size_t n, len = 0, cap = 256;
	char *buf;

	do {
		if (!next_line(lx, &s, &n))
			return 0;
	} while (blank(s, n) || comment(s, n));
	*start = lx->line;
	buf = aj_xmalloc(cap);
	for (;;) {
		bool more = continues(s, &n, lx->escape);

		if (len + n + 2 > cap) {
			cap = (len + n + 2) * 2;
			buf = aj_xrealloc(buf, cap);
		}
		memcpy(buf + len, s, n);
		len += n;
		buf[len] = '\0';
		if (!more)
			break;
		do {
			if (!next_line(lx, &s, &n)) {
				free(buf);
				return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
						  "%s:%u: the instruction continues (a line ending in "
						  "%c) past the end of the file",
						  lx->file, *start, lx->escape);
			}
		} while (comment(s, n) || blank(s, n));
	}
	*out = buf;
	return 1;
}

/* ---- instructions ----------------------------------------------------------------------- */

static const char *skip_space(const char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

/* Splits s into words at unquoted whitespace, quotes and escapes kept for aj_df_expand(). */
static int split_words(const char *s, char escape, struct aj_strv *out)
{
	for (s = skip_space(s); *s; s = skip_space(s)) {
		const char *b = s;
		char q = 0;

		for (; *s && (q || !isspace((unsigned char)*s)); s++) {
			if (*s == escape && q != '\'' && s[1]) {
				s++;
			} else if (q && *s == q) {
				q = 0;
			} else if (!q && (*s == '"' || *s == '\'')) {
				q = *s;
			}
		}
		if (q)
			return -1;
		aj_strv_push_owned(out, aj_xstrndup(b, (size_t)(s - b)));
	}
	return 0;
}

/* A JSON array of strings into out; false if s is not one. */
static bool exec_form(const char *s, struct aj_strv *out)
{
	_cleanup_json_ json_t *j = NULL;
	size_t i;
	json_t *v;

	if (*s != '[')
		return false;
	j = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_array(j))
		return false;
	json_array_foreach(j, i, v)
		if (!json_is_string(v))
			return false;
	json_array_foreach(j, i, v)
		aj_strv_push(out, json_string_value(v));
	return true;
}

static bool takes_flag(const char *flags, const char *name, size_t n)
{
	char want[40];

	if (n + 3 > sizeof want)
		return false;
	snprintf(want, sizeof want, " %.*s ", (int)n, name);
	return strstr(flags, want) != NULL;
}

/* Leading --name=value words; *rest after them. */
static int parse_flags(struct aj_df_insn *in, const char *flags, const char **rest,
		       const char *where, struct aj_err *err)
{
	const char *s = skip_space(*rest);

	while (s[0] == '-' && s[1] == '-') {
		const char *b = s + 2, *e = b, *eq;

		while (*e && !isspace((unsigned char)*e))
			e++;
		eq = memchr(b, '=', (size_t)(e - b));
		if (!takes_flag(flags, b, (size_t)((eq ? eq : e) - b)))
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
					  "%s: %s does not take the flag --%.*s (not supported here)",
					  where, aj_df_kind_name(in->kind), (int)((eq ? eq : e) - b), b);
		if (!eq || eq + 1 == e)
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
					  "%s: --%.*s needs a value (--%.*s=VALUE)", where,
					  (int)(e - b), b, (int)(e - b), b);
		aj_strv_push_owned(&in->flags, aj_xstrndup(b, (size_t)(e - b)));
		s = skip_space(e);
	}
	*rest = s;
	return 0;
}

static int need(bool ok, const struct aj_df_insn *in, const char *where, const char *what,
		struct aj_err *err)
{
	if (ok)
		return 0;
	return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: %s %s", where,
			  aj_df_kind_name(in->kind), what);
}

static int parse_args(struct aj_df_insn *in, const char *rest, char escape, const char *where,
		      struct aj_err *err)
{
	size_t len = strlen(rest);

	while (len && isspace((unsigned char)rest[len - 1]))
		len--;
	switch (in->kind) {
	case AJ_DF_RUN:
	case AJ_DF_CMD:
	case AJ_DF_ENTRYPOINT:
		in->exec_form = exec_form(rest, &in->args);
		if (!in->exec_form)
			aj_strv_push_owned(&in->args, aj_xstrndup(rest, len));
		/* CMD [] and ENTRYPOINT [] clear what the base image had. */
		return need((in->args.n > 0 || (in->exec_form && in->kind != AJ_DF_RUN)) &&
				    (in->exec_form || len > 0),
			    in, where, "needs a command", err);
	case AJ_DF_SHELL:
		in->exec_form = exec_form(rest, &in->args);
		return need(in->exec_form && in->args.n > 0, in, where,
			    "needs a JSON array of strings (SHELL [\"/bin/sh\", \"-c\"])", err);
	case AJ_DF_COPY:
	case AJ_DF_ADD:
		in->exec_form = exec_form(rest, &in->args);
		if (!in->exec_form && split_words(rest, escape, &in->args) < 0)
			return need(false, in, where, "has an unterminated quote", err);
		if (in->args.n < 2)
			return need(false, in, where, "needs a source and a destination", err);
		for (size_t i = 0; i < in->args.n; i++)
			if (!strncmp(in->args.v[i], "<<", 2))
				return need(false, in, where,
					    "here-documents (<<) are not supported", err);
		return 0;
	case AJ_DF_VOLUME:
		in->exec_form = exec_form(rest, &in->args);
		if (!in->exec_form && split_words(rest, escape, &in->args) < 0)
			return need(false, in, where, "has an unterminated quote", err);
		return need(in->args.n > 0, in, where, "needs a path", err);
	case AJ_DF_ENV:
	case AJ_DF_LABEL: {
		struct aj_strv words = AJ_STRV_INIT;
		int r = split_words(rest, escape, &words);

		if (r < 0 || words.n == 0) {
			aj_strv_free(&words);
			return need(false, in, where,
				    r < 0 ? "has an unterminated quote" : "needs key=value", err);
		}
		if (in->kind == AJ_DF_ENV && !strchr(words.v[0], '=')) {
			/* The legacy form: ENV KEY the rest of the line. */
			const char *v = skip_space(skip_space(rest) + strlen(words.v[0]));
			bool has_value = v < rest + len;

			if (has_value)
				aj_strv_pushf(&in->args, "%s=%.*s", words.v[0],
					      (int)(len - (size_t)(v - rest)), v);
			aj_strv_free(&words);
			return need(has_value, in, where, "needs a value (ENV KEY=VALUE)", err);
		}
		for (size_t i = 0; i < words.n; i++) {
			const char *eq = strchr(words.v[i], '=');
			if (!eq || eq == words.v[i]) {
				aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
					   "%s: %s: \"%s\" is not key=value", where,
					   aj_df_kind_name(in->kind), words.v[i]);
				aj_strv_free(&words);
				return -1;
			}
			aj_strv_push(&in->args, words.v[i]);
		}
		aj_strv_free(&words);
		return 0;
	}
	case AJ_DF_WORKDIR:
		aj_strv_push_owned(&in->args, aj_xstrndup(rest, len));
		return need(len > 0, in, where, "needs a path", err);
	case AJ_DF_FROM:
	case AJ_DF_ARG:
	case AJ_DF_USER:
	case AJ_DF_EXPOSE:
	case AJ_DF_STOPSIGNAL:
		if (split_words(rest, escape, &in->args) < 0)
			return need(false, in, where, "has an unterminated quote", err);
		break;
	}
	switch (in->kind) {
	case AJ_DF_FROM:
		if (in->args.n == 3 && strcasecmp(in->args.v[1], "AS") == 0) {
			free(in->args.v[1]);
			in->args.v[1] = in->args.v[2];
			in->args.v[2] = NULL;
			in->args.n = 2;
			return 0;
		}
		return need(in->args.n == 1, in, where, "takes IMAGE [AS NAME]", err);
	case AJ_DF_ARG:
		return need(in->args.n > 0, in, where, "needs a name (ARG NAME[=DEFAULT])", err);
	case AJ_DF_USER:
		return need(in->args.n == 1, in, where, "takes one USER[:GROUP]", err);
	case AJ_DF_STOPSIGNAL:
		return need(in->args.n == 1, in, where, "takes one signal", err);
	case AJ_DF_EXPOSE:
		return need(in->args.n > 0, in, where, "needs a port", err);
	case AJ_DF_RUN:
	case AJ_DF_COPY:
	case AJ_DF_ADD:
	case AJ_DF_ENV:
	case AJ_DF_WORKDIR:
	case AJ_DF_LABEL:
	case AJ_DF_CMD:
	case AJ_DF_ENTRYPOINT:
	case AJ_DF_SHELL:
	case AJ_DF_VOLUME:
		break;
	}
	return 0;
}

static void insn_free(struct aj_df_insn *in)
{
	aj_strv_free(&in->flags);
	aj_strv_free(&in->args);
	free(in->text);
}

static int parse_insn(struct aj_dockerfile *df, const char *file, unsigned line, char *text,
		      struct aj_err *err)
{
	const char *s = skip_space(text), *rest;
	size_t kw = 0, k;
	char where[300];
	struct aj_df_insn in = {.line = line, .flags = AJ_STRV_INIT, .args = AJ_STRV_INIT};

	while (s[kw] && !isspace((unsigned char)s[kw]))
		kw++;
	snprintf(where, sizeof where, "%s:%u", file, line);
	for (k = 0; k < sizeof keywords / sizeof keywords[0]; k++)
		if (strlen(keywords[k].name) == kw && strncasecmp(s, keywords[k].name, kw) == 0)
			break;
	if (k == sizeof keywords / sizeof keywords[0]) {
		for (size_t u = 0; u < sizeof unsupported / sizeof unsupported[0]; u++)
			if (strlen(unsupported[u]) == kw && strncasecmp(s, unsupported[u], kw) == 0)
				return aj_err_set(err, AJ_LAYER_USAGE, ENOTSUP,
						  "%s: %s is not supported by agentjail build", where,
						  unsupported[u]);
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: unknown instruction \"%.*s\"",
				  where, (int)(kw > 40 ? 40 : kw), s);
	}
	in.kind = keywords[k].kind;
	rest = s + kw;
	if (parse_flags(&in, keywords[k].flags, &rest, where, err) < 0 ||
	    parse_args(&in, rest, df->escape, where, err) < 0) {
		insn_free(&in);
		return -1;
	}
	if (df->n == 0 && in.kind != AJ_DF_FROM && in.kind != AJ_DF_ARG) {
		insn_free(&in);
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "%s: %s before FROM (only ARG may come first)", where,
				  keywords[k].name);
	}
	if (df->n == AJ_DF_MAX_INSNS) {
		insn_free(&in);
		return aj_err_set(err, AJ_LAYER_USAGE, E2BIG, "%s: more than %d instructions",
				  where, AJ_DF_MAX_INSNS);
	}
	in.text = aj_xstrdup(s);
	df->v = aj_xrealloc(df->v, (df->n + 1) * sizeof *df->v);
	df->v[df->n++] = in;
	return 0;
}

int aj_dockerfile_parse(const char *text, size_t len, const char *file, struct aj_dockerfile *df,
			struct aj_err *err)
{
	struct lexer lx = {.p = text, .end = text + len, .file = file, .escape = '\\'};
	bool from = false;

	memset(df, 0, sizeof *df);
	df->escape = '\\';
	if (len > AJ_DF_MAX_BYTES)
		return aj_err_set(err, AJ_LAYER_USAGE, E2BIG, "%s: larger than %u bytes", file,
				  AJ_DF_MAX_BYTES);
	if (memchr(text, '\0', len))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: has a NUL byte: not a text file",
				  file);
	if (directives(&lx, err) < 0)
		return -1;
	df->escape = lx.escape;
	for (;;) {
		char *line = NULL;
		unsigned start = 0;
		int r = logical_line(&lx, &line, &start, err);

		if (r <= 0) {
			if (r < 0) {
				aj_dockerfile_free(df);
				return -1;
			}
			break;
		}
		r = parse_insn(df, file, start, line, err);
		free(line);
		if (r < 0) {
			aj_dockerfile_free(df);
			return -1;
		}
		from = from || df->v[df->n - 1].kind == AJ_DF_FROM;
	}
	if (!from) {
		aj_dockerfile_free(df);
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: no FROM instruction", file);
	}
	return 0;
}

void aj_dockerfile_free(struct aj_dockerfile *df)
{
	for (size_t i = 0; i < df->n; i++)
		insn_free(&df->v[i]);
	free(df->v);
	df->v = NULL;
	df->n = 0;
}

/* ---- variables -------------------------------------------------------------------------- */

struct expander {
	const char *s;
	char escape;
	const char *(*lookup)(void *arg, const char *name);
	void *arg;
	char *out;
	size_t len, cap;
	const char *what;
	struct aj_err *err;
	int depth;
	bool too_long;
};

static void put(struct expander *x, const char *s, size_t n)
{
	if (x->len + n > AJ_DF_MAX_WORD) {
		x->too_long = true;
		return;
	}
	if (x->len + n + 1 > x->cap) {
		x->cap = (x->len + n + 1) * 2;
		x->out = aj_xrealloc(x->out, x->cap);
	}
	memcpy(x->out + x->len, s, n);
	x->len += n;
	x->out[x->len] = '\0';
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static int expand_until(struct expander *x, char stop);

/* At "$": a reference, expanded into the output. */
static int reference(struct expander *x)
{
	char name[256];
	size_t n = 0;
	const char *v;

	x->s++;
	if (*x->s != '{') {
		while (n < sizeof name - 1 && name_char(x->s[n])) {
			name[n] = x->s[n];
			n++;
		}
		if (n == 0) {
			put(x, "$", 1);
			return 0;
		}
		name[n] = '\0';
		x->s += n;
		v = x->lookup(x->arg, name);
		put(x, v ? v : "", v ? strlen(v) : 0);
		return 0;
	}
	x->s++;
	while (n < sizeof name - 1 && name_char(x->s[n])) {
		name[n] = x->s[n];
		n++;
	}
	name[n] = '\0';
	x->s += n;
	if (n == 0)
		return aj_err_set(x->err, AJ_LAYER_USAGE, EINVAL, "%s: \"${\" without a name",
				  x->what);
	v = x->lookup(x->arg, name);
	if (*x->s == '}') {
		x->s++;
		put(x, v ? v : "", v ? strlen(v) : 0);
		return 0;
	}
	if (x->s[0] == ':' && (x->s[1] == '-' || x->s[1] == '+')) {
		bool set = v && *v, use_word = x->s[1] == '-' ? !set : set;
		size_t mark = x->len;

		x->s += 2;
		if (++x->depth > 16)
			return aj_err_set(x->err, AJ_LAYER_USAGE, EINVAL,
					  "%s: references nested too deep", x->what);
		if (expand_until(x, '}') < 0)
			return -1;
		x->depth--;
		if (*x->s != '}')
			return aj_err_set(x->err, AJ_LAYER_USAGE, EINVAL,
					  "%s: \"${%s\" has no closing \"}\"", x->what, name);
		x->s++;
		/* The word was expanded in place; not used, the value stands instead (":-" of a
		 * set variable) or nothing (":+" of an unset one). */
		if (!use_word) {
			x->len = mark;
			x->out[mark] = '\0';
			if (set)
				put(x, v, strlen(v));
		}
		return 0;
	}
	return aj_err_set(x->err, AJ_LAYER_USAGE, EINVAL,
			  "%s: \"${%s%.1s\": only ${NAME}, ${NAME:-WORD} and ${NAME:+WORD} are "
			  "supported",
			  x->what, name, x->s);
}

static int expand_until(struct expander *x, char stop)
{
	char q = 0;

	while (*x->s && (q || *x->s != stop)) {
		char c = *x->s;

		if (c == x->escape && q != '\'') {
			char next = x->s[1];

			if (!next) {
				put(x, &c, 1);
				x->s++;
			} else if (q == '"' && next != '"' && next != '$' && next != x->escape) {
				put(x, x->s, 2);
				x->s += 2;
			} else {
				put(x, &next, 1);
				x->s += 2;
			}
		} else if (q && c == q) {
			q = 0;
			x->s++;
		} else if (!q && (c == '"' || c == '\'')) {
			q = c;
			x->s++;
		} else if (c == '$' && q != '\'') {
			if (reference(x) < 0)
				return -1;
		} else {
			put(x, &c, 1);
			x->s++;
		}
	}
	if (q)
		return aj_err_set(x->err, AJ_LAYER_USAGE, EINVAL, "%s: unterminated %c quote",
				  x->what, q);
	return 0;
}

int aj_df_expand(const char *word, char escape, const char *(*lookup)(void *arg, const char *name),
		 void *arg, char **out, const char *what, struct aj_err *err)
{
	struct expander x = {.s = word, .escape = escape, .lookup = lookup, .arg = arg,
			     .what = what, .err = err};

	put(&x, "", 0);
	if (expand_until(&x, '\0') < 0) {
		free(x.out);
		return -1;
	}
	if (x.too_long) {
		free(x.out);
		return aj_err_set(err, AJ_LAYER_USAGE, E2BIG, "%s: expands to more than %u bytes",
				  what, AJ_DF_MAX_WORD);
	}
	*out = x.out;
	return 0;
}
