/* Help printed from the tables: a verb's --help, `agentjail --help` and `agentjail help
 * [VERB]`. The manual pages (cmd_man.c) and completions (cmd_completion.c) read the same
 * rows. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"

static void option_line(FILE *f, const struct aj_option *o)
{
	char left[64];

	if (o->short_name)
		snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name,
			 o->metavar ? " " : "", o->metavar ? o->metavar : "");
	else
		snprintf(left, sizeof left, "    --%s%s%s", o->name, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
	fprintf(f, "  %-30s %s\n", left, o->help);
}

void aj_verb_usage(FILE *f, const struct aj_verb *v)
{
	const char *line = v->synopsis;
	bool first = true;

	while (line && *line) {
		size_t n = strcspn(line, "\n");
		fprintf(f, "%s agentjail %.*s\n", first ? "usage:" : "      ", (int)n, line);
		first = false;
		line += n + (line[n] == '\n');
	}
	if (v->help || v->summary)
		fprintf(f, "\n%s\n", v->help ? v->help : v->summary);
	if (v->options && v->options->name) {
		fprintf(f, "\noptions:\n");
		for (const struct aj_option *o = v->options; o->name; o++)
			if (!(o->flags & AJ_OPTF_HIDDEN))
				option_line(f, o);
	}
	fprintf(f, "\nglobal options (also before the command):\n");
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		if (!aj_args_find(v->options, o->name, strlen(o->name)))
			option_line(f, o);
}

void aj_cli_usage(FILE *f)
{
	fprintf(f, "usage: agentjail COMMAND [OPTIONS]\n\ncommands:\n");
	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		if (!((*v)->flags & AJ_VERB_HIDDEN))
			fprintf(f, "  %-13s %s\n", (*v)->name, (*v)->summary);
	fprintf(f, "\nglobal options (before or after the command):\n");
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		option_line(f, o);
	fprintf(f, "\nagentjail COMMAND --help shows a command's options.\n");
}

static void sub_usage(FILE *f, const struct aj_verb *v, const char *footer)
{
	fprintf(f, "usage: agentjail %s SUBCOMMAND [OPTIONS]\n\nsubcommands:\n", v->name);
	for (const struct aj_verb *const *s = v->subs; *s; s++)
		fprintf(f, "  %-12s %s\n", (*s)->name, (*s)->summary);
	fprintf(f, "\nagentjail %s SUBCOMMAND --help shows its options; %s\n", v->name, footer);
}

int aj_verb_run_sub(const struct aj_verb *v, const char *footer, int argc, char **argv)
{
	if (argc < 2) {
		sub_usage(stderr, v, footer);
		return AJ_EXIT_ERROR;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		sub_usage(stdout, v, footer);
		return 0;
	}
	for (const struct aj_verb *const *s = v->subs; *s; s++)
		if (!strcmp(argv[1], (*s)->name))
			return (*s)->fn(*s, argc - 1, argv + 1);
	fprintf(stderr, "agentjail: [usage] %s: unknown subcommand \"%s\"\n", v->name, argv[1]);
	sub_usage(stderr, v, footer);
	return AJ_EXIT_ERROR;
}

const struct aj_verb *aj_verb_find(const char *name)
{
	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		if (strcmp((*v)->name, name) == 0)
			return *v;
	return NULL;
}

static int cmd_help(const struct aj_verb *v, int argc, char **argv)
{
	const struct aj_verb *which;

	(void)v;
	if (argc < 2) {
		aj_cli_usage(stdout);
		return 0;
	}
	which = aj_verb_find(argv[1]);
	if (!which || (which->flags & AJ_VERB_HIDDEN)) {
		fprintf(stderr, "agentjail: [usage] help: unknown command \"%s\"\n", argv[1]);
		return AJ_EXIT_ERROR;
	}
	aj_verb_usage(stdout, which);
	return 0;
}

static const struct aj_arg help_args[] = {
	AJ_ARG("COMMAND", AJ_COMP_VERB),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_help = {
	.name = "help",
	.fn = cmd_help,
	.summary = "show the commands, or a command's options",
	.synopsis = "help [COMMAND]",
	.args = help_args,
	.flags = AJ_VERB_OWN_ARGS | AJ_VERB_NO_CONFIG,
};
