/* agentjail __man OUTDIR DOCS: the manual pages, written at build time (make man) from the
 * verb and option tables and from the documentation. agentjail.1 is the command line as a
 * whole (the shared options, the configuration file, the exit codes: the part of docs/cli.md
 * before its first verb, and its exit code sections); agentjail-VERB.1 has the verb's
 * synopsis, its summary, the section of docs/cli.md headed "## agentjail VERB" (or one that
 * lists the verb among others), and its options from the table. The Markdown of the docs is a
 * small subset (headings, paragraphs, lists, tables, code blocks, `code`, **bold**, links),
 * turned into man(7) requests here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/cleanup.h"
#include "common/util.h"

/* ---- Markdown to roff ------------------------------------------------------------------------ */

/* The few characters beyond ASCII the docs use, as groff's names (rendered in any locale);
 * the length consumed, 0 for anything else. */
static size_t special(FILE *f, const char *s, size_t n)
{
	static const struct {
		const char *utf8, *roff;
	} map[] = {{"\xc3\x97", "\\(mu"}, {"\xe2\x80\x93", "\\(en"}, {"\xe2\x80\x94", "\\(em"},
		   {"\xe2\x80\xa6", "..."},  {"\xe2\x86\x92", "\\(->"}};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		size_t l = strlen(map[i].utf8);
		if (n >= l && memcmp(s, map[i].utf8, l) == 0) {
			fputs(map[i].roff, f);
			return l;
		}
	}
	return 0;
}

/* Text: inline code and bold as bold, links as their text, roff's special characters escaped. */
static void inline_text(FILE *f, const char *s, size_t n)
{
	bool code = false, bold = false;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		size_t k = special(f, s + i, n - i);
		if (k) {
			i += k - 1;
		} else if (c == '`') {
			code = !code;
			fputs(code ? "\\fB" : "\\fR", f);
		} else if (!code && c == '*' && i + 1 < n && s[i + 1] == '*') {
			bold = !bold;
			fputs(bold ? "\\fB" : "\\fR", f);
			i++;
		} else if (!code && c == '[' && memchr(s + i, ']', n - i)) {
			const char *close = memchr(s + i, ']', n - i);
			if (close + 1 < s + n && close[1] == '(' && memchr(close, ')', (size_t)(s + n - close))) {
				inline_text(f, s + i + 1, (size_t)(close - s - i - 1));
				i = (size_t)((const char *)memchr(close, ')', (size_t)(s + n - close)) - s);
			} else {
				fputc(c, f);
			}
		} else if (c == '\\') {
			fputs("\\e", f);
		} else if (c == '-' && code) {
			fputs("\\-", f);
		} else {
			fputc(c, f);
		}
	}
	if (code || bold)
		fputs("\\fR", f);
}

/* A line of filled text: a leading '.' or '\'' would be a request. */
static void text_line(FILE *f, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	if (n && (*s == '.' || *s == '\''))
		fputs("\\&", f);
	inline_text(f, s, n);
	fputc('\n', f);
}

static void verbatim_line(FILE *f, const char *s, size_t n)
{
	if (n && (*s == '.' || *s == '\''))
		fputs("\\&", f);
	for (size_t i = 0; i < n; i++) {
		size_t k = special(f, s + i, n - i);
		if (k)
			i += k - 1;
		else if (s[i] == '\\')
			fputs("\\e", f);
		else if (s[i] == '-')
			fputs("\\-", f);
		else
			fputc(s[i], f);
	}
	fputc('\n', f);
}

/* A table row: the first cell is the tag, the others its text. "|" inside `code` is text. */
static void table_row(FILE *f, const char *s, size_t n)
{
	const char *cell = s + 1, *end = s + n;
	bool code = false;
	int k = 0;

	fputs(".TP\n", f);
	for (const char *p = cell; p < end; p++) {
		if (*p == '`')
			code = !code;
		if (*p != '|' || code)
			continue;
		if (k > 1)
			fputs("\\(em\n", f);
		text_line(f, cell, (size_t)(p - cell));
		k++;
		cell = p + 1;
	}
}

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t l = strlen(prefix);
	return n >= l && strncmp(s, prefix, l) == 0;
}

/* Lines [s, s+n) of Markdown as man requests. */
static void markdown(FILE *f, const char *s, size_t n)
{
	const char *end = s + n;
	bool code = false, para = false;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
		if (starts(s, len, "```")) {
			fputs(code ? ".fi\n.RE\n" : ".PP\n.RS 2\n.nf\n", f);
			code = !code;
			para = false;
		} else if (code) {
			verbatim_line(f, s, len);
		} else if (len == 0) {
			para = false;
		} else if (starts(s, len, "#")) {
			size_t h = 0;
			while (h < len && s[h] == '#')
				h++;
			fputs(".SS ", f);
			text_line(f, s + h, len - h);
			para = true;
		} else if (*s == '|' && nl && starts(nl + 1, (size_t)(end - nl - 1), "|-")) {
			/* a header row; its separator row follows */
			len += 1 + strcspn(nl + 1, "\n");
		} else if (*s == '|') {
			table_row(f, s, len);
			para = true;
		} else if (starts(s, len, "- ")) {
			fputs(".IP \\(bu 2\n", f);
			text_line(f, s + 2, len - 2);
			para = true;
		} else {
			if (!para)
				fputs(".PP\n", f);
			text_line(f, s, len);
			para = true;
		}
		s += len + 1;
	}
	if (code)
		fputs(".fi\n.RE\n", f);
}

/* ---- the documentation's sections ----------------------------------------------------------- */

/* The body of the "## agentjail ..." section that names the verb, NULL if none. */
static const char *section(const char *doc, const char *verb, size_t *len)
{
	for (const char *p = doc; (p = strstr(p, "\n## agentjail ")); p++) {
		const char *names = p + strlen("\n## agentjail "), *eol = strchr(names, '\n'), *next;
		size_t vl = strlen(verb);
		bool match = false;
		for (const char *q = names; eol && q + vl <= eol; q++)
			if (!strncmp(q, verb, vl) && (q == names || q[-1] == ' ') &&
			    (q + vl == eol || q[vl] == ',' || q[vl] == ' '))
				match = true;
		if (!match || !eol)
			continue;
		next = strstr(eol, "\n## ");
		*len = next ? (size_t)(next - eol) : strlen(eol);
		return eol + 1;
	}
	return NULL;
}

/* ---- pages ----------------------------------------------------------------------------------- */

static void upper(const char *s, char *buf, size_t len)
{
	size_t i = 0;

	for (; s[i] && i + 1 < len; i++)
		buf[i] = s[i] >= 'a' && s[i] <= 'z' ? (char)(s[i] - 32) : s[i];
	buf[i] = '\0';
}

static void option_item(FILE *f, const struct aj_option *o)
{
	char range[96];

	fputs(".TP\n", f);
	if (o->short_name)
		fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
	fputs("\\fB\\-\\-", f);
	for (const char *p = o->name; *p; p++)
		fputs(*p == '-' ? "\\-" : (char[2]){*p, 0}, f);
	fputs("\\fR", f);
	if (o->metavar)
		fprintf(f, " \\fI%s\\fR", o->metavar);
	fputc('\n', f);
	text_line(f, o->help, strlen(o->help));
	if (o->choices) {
		fputs(".br\nOne of:", f);
		for (const struct aj_opt_choice *c = o->choices; c->name; c++)
			fprintf(f, " \\fB%s\\fR%s", c->name, c[1].name ? "," : ".");
		fputc('\n', f);
	}
	aj_args_range_text(o, range, sizeof range);
	if (range[0])
		fprintf(f, ".br\nFrom %s.\n", range);
}

static void options(FILE *f, const struct aj_verb *v)
{
	if (v->options && v->options->name) {
		fputs(".SH OPTIONS\n", f);
		for (const struct aj_option *o = v->options; o->name; o++)
			if (!(o->flags & AJ_OPTF_HIDDEN))
				option_item(f, o);
	}
	if (v->flags & AJ_VERB_OWN_ARGS)
		return;
	fputs(".SH SHARED OPTIONS\nAccepted by every command, before it as well as after it "
	      "(\\fBagentjail\\fR(1)).\n",
	      f);
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		if (!aj_args_find(v->options, o->name, strlen(o->name)))
			option_item(f, o);
}

static void synopsis(FILE *f, const struct aj_verb *v)
{
	fputs(".SH SYNOPSIS\n.nf\n", f);
	for (const char *line = v->synopsis; line && *line;) {
		size_t n = strcspn(line, "\n");
		fputs("\\fBagentjail\\fR ", f);
		verbatim_line(f, line, n);
		line += n + (line[n] == '\n');
	}
	fputs(".fi\n", f);
}

static int verb_page(const char *dir, const struct aj_verb *v, const char *doc, struct aj_err *err)
{
	char path[4200], up[64];
	const char *body;
	size_t len = 0;
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof path, "%s/agentjail-%s.1", dir, v->name);
	if (!(f = fopen(path, "w")))
		return aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path);
	upper(v->name, up, sizeof up);
	fprintf(f, ".\\\" Generated by agentjail __man from its option tables and docs/cli.md.\n"
		   ".TH AGENTJAIL-%s 1 \"\" \"agentjail %s\" \"agentjail\"\n.ad l\n.nh\n.SH NAME\n"
		   "agentjail\\-%s \\- ",
		up, AJ_VERSION, v->name);
	text_line(f, v->summary, strlen(v->summary));
	synopsis(f, v);
	fputs(".SH DESCRIPTION\n", f);
	if (v->help)
		markdown(f, v->help, strlen(v->help));
	if ((body = section(doc, v->name, &len)))
		markdown(f, body, len);
	options(f, v);
	for (const struct aj_verb *const *s = v->subs; s && *s; s++) {
		fprintf(f, ".SH %s\n", (*s)->name);
		synopsis(f, *s);
		markdown(f, (*s)->help, strlen((*s)->help));
		options(f, *s);
	}
	fputs(".SH SEE ALSO\n\\fBagentjail\\fR(1), and docs/cli.md in agentjail's documentation\n", f);
	return ferror(f) ? aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path) : 0;
}

static int main_page(const char *dir, const char *doc, struct aj_err *err)
{
	char path[4200];
	const char *first = strstr(doc, "\n## agentjail "), *codes = strstr(doc, "\n### Exit codes\n");
	const char *persist = strstr(doc, "\n## Persistent sandboxes: exit codes and rules\n"), *end;
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof path, "%s/agentjail.1", dir);
	if (!(f = fopen(path, "w")))
		return aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path);
	fprintf(f, ".\\\" Generated by agentjail __man from its option tables and docs/cli.md.\n"
		   ".TH AGENTJAIL 1 \"\" \"agentjail %s\" \"agentjail\"\n.ad l\n.nh\n.SH NAME\n"
		   "agentjail \\- a Linux sandbox for the commands of AI agents\n"
		   ".SH SYNOPSIS\n.nf\n\\fBagentjail\\fR [\\fISHARED OPTIONS\\fR] \\fICOMMAND\\fR "
		   "[\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n.fi\n.SH COMMANDS\n",
		AJ_VERSION);
	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		if (!((*v)->flags & AJ_VERB_HIDDEN)) {
			fprintf(f, ".TP\n\\fBagentjail\\-%s\\fR(1)\n", (*v)->name);
			text_line(f, (*v)->summary, strlen((*v)->summary));
		}
	fputs(".SH SHARED OPTIONS\n", f);
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		option_item(f, o);
	fputs(".SH DESCRIPTION\n", f);
	if (first) /* what comes before the first verb: the options, the configuration file */
		markdown(f, doc, (size_t)(first - doc));
	fputs(".SH EXIT STATUS\n", f);
	if (codes && (end = strstr(codes + 1, "\n### ")))
		markdown(f, codes + strlen("\n### Exit codes\n"), (size_t)(end - codes) -
								      strlen("\n### Exit codes\n"));
	if (persist && (end = strstr(persist + 1, "\n## ")))
		markdown(f, persist + 1, (size_t)(end - persist));
	fputs(".SH ENVIRONMENT\n.TP\n\\fBAGENTJAIL_STATE_DIR\\fR\nThe state directory, under "
	      "\\fB\\-\\-state\\-dir\\fR.\n.TP\n\\fBAGENTJAIL_CONFIG\\fR\nThe configuration file "
	      "(\\fBnone\\fR: none).\n.TP\n\\fBAGENTJAIL_TRACE\\fR\nPrint launch phases with their "
	      "times.\n.SH FILES\n.TP\n\\fI/etc/agentjail/config.json\\fR, "
	      "\\fI~/.config/agentjail/config.json\\fR\nThe configuration file, for root and for "
	      "other users.\n.TP\n\\fI/var/lib/agentjail\\fR, \\fI~/.local/state/agentjail\\fR\nThe "
	      "state directory.\n.SH SEE ALSO\n",
	      f);
	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		if (!((*v)->flags & AJ_VERB_HIDDEN))
			fprintf(f, "\\fBagentjail\\-%s\\fR(1)%s\n", (*v)->name, v[1] ? "," : "");
	return ferror(f) ? aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path) : 0;
}

static int cmd_man(const struct aj_verb *v, int argc, char **argv)
{
	struct aj_err err;
	_cleanup_free_ char *doc = NULL;
	char **args;
	int nargs;

	aj_err_clear(&err);
	if (aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err) != 0 || nargs != 2) {
		fprintf(stderr, "agentjail: [usage] __man OUTDIR DOCS (make man runs it)\n");
		return AJ_EXIT_ERROR;
	}
	if (aj_mkdir_p(args[0], 0755) < 0 && errno != EEXIST)
		aj_err_sys(&err, AJ_LAYER_IO, "mkdir \"%s\"", args[0]);
	else if (!(doc = aj_read_file(args[1], 4u << 20, NULL)))
		aj_err_sys(&err, AJ_LAYER_IO, "read \"%s\"", args[1]);
	else if (main_page(args[0], doc, &err) == 0) {
		for (const struct aj_verb *const *w = aj_verbs; *w; w++)
			if (!((*w)->flags & AJ_VERB_HIDDEN) && verb_page(args[0], *w, doc, &err) < 0)
				break;
	}
	if (err.msg[0]) {
		aj_err_print(&err, stderr);
		return AJ_EXIT_ERROR;
	}
	return 0;
}

static const struct aj_option man_options[] = {AJ_OPT_END};
const struct aj_verb aj_verb_man = {
	.name = "__man",
	.fn = cmd_man,
	.summary = "write the manual pages (make man)",
	.synopsis = "__man OUTDIR DOCS",
	.options = man_options,
	.flags = AJ_VERB_HIDDEN | AJ_VERB_NO_CONFIG,
};
