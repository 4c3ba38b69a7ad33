/* agentjail completion bash|zsh|fish: shell completion scripts printed from the verb and
 * option tables (args.h), so that what a shell offers is what the parser accepts. Names of
 * sandboxes, snapshots and images come at completion time from the hidden `agentjail
 * __complete KIND`, which prints them one per line (nothing, and exit 0, when the state directory cannot be
 * read: a completion must never print an error into the user's line). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "image/ref.h"
#include "state/store.h"

/* ---- what the tables say ------------------------------------------------------------------ */

static bool shown(const struct aj_verb *v)
{
	return !(v->flags & AJ_VERB_HIDDEN);
}

/* What a value completes to, as a word the scripts know: file, dir, sandbox, snapshot,
 * command, verb, words, none. */
static const char *kind(enum aj_complete c)
{
	switch (c) {
	case AJ_COMP_FILE:
		return "file";
	case AJ_COMP_DIR:
		return "dir";
	case AJ_COMP_SANDBOX:
		return "sandbox";
	case AJ_COMP_SNAPSHOT:
		return "snapshot";
	case AJ_COMP_IMAGE:
		return "image";
	case AJ_COMP_COMMAND:
		return "command";
	case AJ_COMP_VERB:
		return "verb";
	case AJ_COMP_CHOICES:
		return "words";
	case AJ_COMP_NONE:
		break;
	}
	return "none";
}

static enum aj_complete value_kind(const struct aj_option *o)
{
	if (o->complete != AJ_COMP_NONE)
		return o->complete;
	return o->type == AJ_OPT_CHOICE ? AJ_COMP_CHOICES : AJ_COMP_NONE;
}

/* The words of a choice option or positional, space-separated. */
static void words_of(const struct aj_opt_choice *c, const char *const *w, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (; c && c->name && off < len; c++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "", c->name);
	for (; w && *w && off < len; w++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "", *w);
}

/* Calls fn for the verb's rows and then the shared ones it does not shadow. */
static void each_option(const struct aj_verb *v, void (*fn)(const struct aj_verb *v,
							   const struct aj_option *o, void *arg),
			void *arg)
{
	for (const struct aj_option *o = v->options; o && o->name; o++)
		if (!(o->flags & AJ_OPTF_HIDDEN))
			fn(v, o, arg);
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		if (!aj_args_find(v->options, o->name, strlen(o->name)))
			fn(v, o, arg);
}

/* A verb and its subcommands, as "policy" and "policy/import-srt". */
static void each_verb(void (*fn)(const struct aj_verb *v, const char *id, void *arg), void *arg)
{
	char id[128];

	for (const struct aj_verb *const *v = aj_verbs; *v; v++) {
		if (!shown(*v))
			continue;
		fn(*v, (*v)->name, arg);
		for (const struct aj_verb *const *s = (*v)->subs; s && *s; s++) {
			snprintf(id, sizeof id, "%s/%s", (*v)->name, (*s)->name);
			fn(*s, id, arg);
		}
	}
}

/* ---- bash ---------------------------------------------------------------------------------- */

static void bash_word(const struct aj_verb *v, const struct aj_option *o, void *arg)
{
	bool values_only = *(bool *)arg;

	(void)v;
	if (values_only && !o->metavar)
		return;
	printf(" --%s", o->name);
	if (o->short_name)
		printf(" -%c", o->short_name);
}

static void bash_spec(const struct aj_verb *v, const char *id, void *arg)
{
	bool f = false, t = true;
	char w[512];

	(void)arg;
	printf("\t%s)\n\t\topts=\"", id);
	each_option(v, bash_word, &f);
	printf("\"\n\t\tvopts=\"");
	each_option(v, bash_word, &t);
	printf("\"\n\t\targs=\"");
	for (const struct aj_arg *a = v->args; a && a->metavar; a++) {
		words_of(NULL, a->words, w, sizeof w);
		for (char *p = w; *p; p++)
			if (*p == ' ')
				*p = ',';
		printf("%s%s%s%s%s", a == v->args ? "" : " ", kind(a->complete), w[0] ? ":" : "", w,
		       a->repeat ? "*" : "");
	}
	printf("\"\n\t\tfirst=%d\n\t\tsubs=\"", (v->flags & AJ_VERB_OPTS_FIRST) ? 1 : 0);
	for (const struct aj_verb *const *s = v->subs; s && *s; s++)
		printf("%s%s", s == v->subs ? "" : " ", (*s)->name);
	printf("\"\n\t\t;;\n");
}

static void bash_value(const struct aj_verb *v, const struct aj_option *o, void *arg)
{
	const char *id = arg;
	enum aj_complete k = value_kind(o);
	char w[512];

	(void)v;
	if (!o->metavar || k == AJ_COMP_NONE)
		return;
	words_of(o->choices, NULL, w, sizeof w);
	printf("\t\"%s --%s\"", id, o->name);
	if (o->short_name)
		printf(" | \"%s -%c\"", id, o->short_name);
	printf(") _agentjail_reply %s \"%s\" ;;\n", kind(k), w);
}

static void bash_values(const struct aj_verb *v, const char *id, void *arg)
{
	(void)arg;
	each_option(v, bash_value, (void *)id);
}

/* The script's fixed parts; the tables fill in the rest. */
static const char bash_functions[] = /* %s: the verbs */
	"_agentjail_names() {\n"
	"\tlocal sd=()\n"
	"\t[ -n \"${_agentjail_sd:-}\" ] && sd=(--state-dir \"$_agentjail_sd\")\n"
	"\tcommand \"${_agentjail_bin:-agentjail}\" \"${sd[@]}\" __complete \"$1\" 2>/dev/null\n"
	"}\n\n"
	"# _agentjail_reply KIND [WORDS]: candidates for the word being completed.\n"
	"_agentjail_reply() {\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]}\n"
	"\tcase $1 in\n"
	"\tfile) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
	"\tdir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")) ;;\n"
	"\tsandbox) COMPREPLY=($(compgen -W \"$(_agentjail_names sandboxes)\" -- \"$cur\")) ;;\n"
	"\tsnapshot) COMPREPLY=($(compgen -W \"$(_agentjail_names snapshots)\" -- \"$cur\")) ;;\n"
	"\timage) COMPREPLY=($(compgen -W \"$(_agentjail_names images)\" -- \"$cur\")) ;;\n"
	"\tcommand) COMPREPLY=($(compgen -c -- \"$cur\" | sort -u)) ;;\n"
	"\tverb) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")) ;;\n"
	"\twords) COMPREPLY=($(compgen -W \"$2\" -- \"$cur\")) ;;\n"
	"\t*) COMPREPLY=() ;;\n"
	"\tesac\n"
	"}\n\n";
static const char bash_main[] =
	"_agentjail() {\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	"\tlocal i=1 verb= w opts vopts args first subs n=0 ended=0 k dashdash=0\n"
	"\t_agentjail_sd= _agentjail_bin=${COMP_WORDS[0]}\n"
	"\twhile [ $i -lt $COMP_CWORD ]; do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tcase $w in\n"
	"\t\t--state-dir) _agentjail_sd=${COMP_WORDS[i+1]}; i=$((i + 1)) ;;\n"
	"\t\t--state-dir=*) _agentjail_sd=${w#*=} ;;\n"
	"\t\t--log-level) i=$((i + 1)) ;;\n"
	"\t\t-*) ;;\n"
	"\t\t*) verb=$w; break ;;\n"
	"\t\tesac\n"
	"\t\ti=$((i + 1))\n"
	"\tdone\n"
	"\tif [ -z \"$verb\" ]; then\n"
	"\t\tcase $prev in\n"
	"\t\t--state-dir) _agentjail_reply dir; return ;;\n"
	"\t\t--log-level) _agentjail_reply words \"error warn info debug\"; return ;;\n"
	"\t\tesac\n"
	"\t\tcase $cur in\n\t\t-*) _agentjail_reply words \"";
static const char bash_main_rest[] =
	" --version\" ;;\n"
	"\t\t*) _agentjail_reply verb ;;\n\t\tesac\n\t\treturn\n\tfi\n"
	"\t_agentjail_spec \"$verb\"\n"
	"\t# A subcommand (policy import-srt) has options of its own.\n"
	"\tif [ -n \"$subs\" ]; then\n"
	"\t\tfor ((k = i + 1; k < COMP_CWORD; k++)); do\n"
	"\t\t\tif [[ \" $subs \" == *\" ${COMP_WORDS[k]} \"* ]]; then\n"
	"\t\t\t\tverb=$verb/${COMP_WORDS[k]} i=$k\n"
	"\t\t\t\t_agentjail_spec \"$verb\"\n\t\t\t\tbreak\n\t\t\tfi\n\t\tdone\n\tfi\n"
	"\t# Count the arguments before the word; the value of an option is the option's.\n"
	"\tfor ((k = i + 1; k < COMP_CWORD; k++)); do\n"
	"\t\tw=${COMP_WORDS[k]}\n"
	"\t\tif [ $ended = 0 ] && [ \"$w\" = -- ]; then ended=1\n"
	"\t\telif [ $dashdash = 0 ] && [ $n = 1 ] && [ \"$first\" = 1 ] &&\n"
	"\t\t\t[ \"$w\" = -- ]; then dashdash=1 # exec NAME -- CMD\n"
	"\t\telif [ $ended = 0 ] && [[ $w == -* ]]; then\n"
	"\t\t\t[[ $w == --state-dir=* ]] && _agentjail_sd=${w#*=}\n"
	"\t\t\t[ \"$w\" = --state-dir ] && _agentjail_sd=${COMP_WORDS[k+1]}\n"
	"\t\t\tif [[ \" $vopts \" == *\" $w \"* ]]; then\n"
	"\t\t\t\tif [ $((k + 1)) = $COMP_CWORD ]; then\n"
	"\t\t\t\t\t_agentjail_value \"$verb\" \"$w\"\n\t\t\t\t\treturn\n\t\t\t\tfi\n"
	"\t\t\t\tk=$((k + 1))\n\t\t\tfi\n"
	"\t\telse\n\t\t\tn=$((n + 1))\n\t\t\t[ \"$first\" = 1 ] && ended=1\n\t\tfi\n"
	"\tdone\n"
	"\tif [ $ended = 0 ] && [[ $cur == -* ]]; then\n"
	"\t\t_agentjail_reply words \"$opts\"\n\t\treturn\n\tfi\n"
	"\tset -- $args\n"
	"\tif [ $n -lt $# ]; then shift $n; k=$1\n"
	"\telse k=${!#}; [[ $k == *'*' ]] || k=none\n\tfi\n"
	"\tk=${k%'*'}\n"
	"\tcase $k in\n"
	"\twords:*) w=${k#words:}; _agentjail_reply words \"${w//,/ }\" ;;\n"
	"\t*) _agentjail_reply \"$k\" ;;\n"
	"\tesac\n"
	"}\n\n"
	"complete -F _agentjail agentjail\n";

static void completion_bash(void)
{
	char verbs[2048] = "";
	size_t off = 0;
	bool f = false;

	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		if (shown(*v))
			off += (size_t)snprintf(verbs + off, sizeof verbs - off, "%s%s", off ? " " : "",
						(*v)->name);
	printf("# bash completion for agentjail, printed by `agentjail completion bash` from its\n"
	       "# option tables. Installed as share/bash-completion/completions/agentjail; or:\n"
	       "#   source <(agentjail completion bash)\n\n");
	printf(bash_functions, verbs);
	printf("# _agentjail_spec VERB: its options, those that take a value, its arguments' kinds\n"
	       "# (\"*\": any number), whether its options end at the first argument, its subcommands.\n"
	       "_agentjail_spec() {\n\topts= vopts= args= first=0 subs=\n\tcase $1 in\n");
	each_verb(bash_spec, NULL);
	printf("\tesac\n}\n\n_agentjail_value() {\n\tcase \"$1 $2\" in\n");
	each_verb(bash_values, NULL);
	printf("\t*) COMPREPLY=() ;;\n\tesac\n}\n\n");
	fputs(bash_main, stdout);
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		bash_word(NULL, o, &f);
	fputs(bash_main_rest, stdout);
}

/* ---- zsh ------------------------------------------------------------------------------------- */

/* Text inside '...' and [...] of an _arguments spec. */
static void zsh_text(const char *t)
{
	for (; t && *t; t++) {
		if (*t == '\'')
			fputs("'\\''", stdout);
		else if (*t == '[' || *t == ']' || *t == ':' || *t == '\\')
			printf("\\%c", *t);
		else
			putchar(*t);
	}
}

static void zsh_action(enum aj_complete k, const struct aj_opt_choice *c, const char *const *w)
{
	char words[512];

	switch (k) {
	case AJ_COMP_FILE:
		fputs("_files", stdout);
		break;
	case AJ_COMP_DIR:
		fputs("_files -/", stdout);
		break;
	case AJ_COMP_SANDBOX:
		fputs("_agentjail_names sandboxes", stdout);
		break;
	case AJ_COMP_SNAPSHOT:
		fputs("_agentjail_names snapshots", stdout);
		break;
	case AJ_COMP_IMAGE:
		fputs("_agentjail_names images", stdout);
		break;
	case AJ_COMP_COMMAND:
		fputs("_command_names -e", stdout);
		break;
	case AJ_COMP_VERB:
		fputs("_agentjail_verbs", stdout);
		break;
	case AJ_COMP_CHOICES:
		words_of(c, w, words, sizeof words);
		printf("(%s)", words);
		break;
	case AJ_COMP_NONE:
		fputs(" ", stdout);
		break;
	}
}

static void zsh_option(const struct aj_verb *v, const struct aj_option *o, void *arg)
{
	(void)v;
	(void)arg;
	/* Every option may repeat ("*"): lists do, and the parser takes the last of the rest. */
	if (o->short_name)
		printf("\t\t'*'{-%c,--%s}'[", o->short_name, o->name);
	else
		printf("\t\t'*--%s[", o->name);
	zsh_text(o->help);
	putchar(']');
	if (o->metavar) {
		putchar(':');
		zsh_text(o->metavar);
		putchar(':');
		zsh_action(value_kind(o), o->choices, NULL);
	}
	fputs("' \\\n", stdout);
}

static void zsh_verb(const struct aj_verb *v, const char *id, void *arg)
{
	int n = 1;

	(void)arg;
	printf("\t%s)\n\t\t_arguments -s -S%s \\\n", id,
	       (v->flags & AJ_VERB_OPTS_FIRST) ? " -A '-*'" : "");
	each_option(v, zsh_option, NULL);
	for (const struct aj_arg *a = v->args; a && a->metavar; a++, n++) {
		if (a->complete == AJ_COMP_COMMAND) {
			printf("\t\t'%d:command:_command_names -e' \\\n\t\t'*::arguments:_normal' \\\n", n);
			break;
		}
		if (a->repeat)
			printf("\t\t'*:");
		else
			printf("\t\t'%d:", n);
		zsh_text(a->metavar);
		putchar(':');
		zsh_action(a->complete, NULL, a->words);
		fputs("' \\\n", stdout);
	}
	printf("\t\t&& return\n\t\t;;\n");
}

static void completion_zsh(void)
{
	printf("#compdef agentjail\n"
	       "# zsh completion for agentjail, printed by `agentjail completion zsh` from its option\n"
	       "# tables. Installed as share/zsh/vendor-completions/_agentjail; or:\n"
	       "#   source <(agentjail completion zsh)\n\n"
	       "_agentjail_names() {\n"
	       "\tlocal -a names sd\n"
	       "\t(( ${+opt_args[--state-dir]} )) && sd=(--state-dir ${opt_args[--state-dir]})\n"
	       "\tnames=(${(f)\"$(_call_program names agentjail $sd __complete $1 2>/dev/null)\"})\n"
	       "\tcompadd -a names\n"
	       "}\n\n"
	       "_agentjail_verbs() {\n\tlocal -a verbs\n\tverbs=(\n");
	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		if (shown(*v)) {
			printf("\t\t'%s:", (*v)->name);
			zsh_text((*v)->summary);
			printf("'\n");
		}
	printf("\t)\n\t_describe -t commands 'agentjail command' verbs\n}\n\n"
	       "_agentjail() {\n"
	       "\tlocal curcontext=$curcontext state state_descr line\n"
	       "\ttypeset -A opt_args\n"
	       "\t_arguments -C \\\n");
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		zsh_option(NULL, o, NULL);
	printf("\t\t'1:command:_agentjail_verbs' \\\n"
	       "\t\t'*::argument:->args' && return\n"
	       "\tlocal verb=$line[1]\n"
	       "\tif [[ $verb == policy && $line[2] == import-srt ]]; then\n"
	       "\t\tverb=policy/import-srt; shift words; (( CURRENT-- ))\n\tfi\n"
	       "\tcurcontext=${curcontext%%:*}-$verb:\n"
	       "\tcase $verb in\n");
	each_verb(zsh_verb, NULL);
	printf("\tesac\n}\n\n"
	       "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
	       "\t_agentjail \"$@\"\n"
	       "else\n"
	       "\tcompdef _agentjail agentjail\n"
	       "fi\n");
}

/* ---- fish ------------------------------------------------------------------------------------ */

static void fish_text(const char *t)
{
	putchar('\'');
	for (; t && *t; t++) {
		if (*t == '\'' || *t == '\\')
			putchar('\\');
		putchar(*t);
	}
	putchar('\'');
}

static void fish_args(enum aj_complete k, const struct aj_opt_choice *c, const char *const *w)
{
	char words[512];

	switch (k) {
	case AJ_COMP_FILE:
	case AJ_COMP_DIR:
		fputs(" -r -F", stdout);
		break;
	case AJ_COMP_SANDBOX:
		fputs(" -x -a '(__agentjail_names sandboxes)'", stdout);
		break;
	case AJ_COMP_SNAPSHOT:
		fputs(" -x -a '(__agentjail_names snapshots)'", stdout);
		break;
	case AJ_COMP_IMAGE:
		fputs(" -x -a '(__agentjail_names images)'", stdout);
		break;
	case AJ_COMP_COMMAND:
		fputs(" -x -a '(__fish_complete_subcommand --fcs-skip=2)'", stdout);
		break;
	case AJ_COMP_VERB:
		fputs(" -x -a '(__agentjail_verbs)'", stdout);
		break;
	case AJ_COMP_CHOICES:
		words_of(c, w, words, sizeof words);
		printf(" -x -a '%s'", words);
		break;
	case AJ_COMP_NONE:
		fputs(" -x", stdout);
		break;
	}
}

static void fish_option(const struct aj_verb *v, const struct aj_option *o, void *arg)
{
	const char *id = arg;

	(void)v;
	if (id)
		printf("complete -c agentjail -n '__agentjail_verb_is %s'", id);
	else
		printf("complete -c agentjail");
	if (o->short_name)
		printf(" -s %c", o->short_name);
	printf(" -l %s", o->name);
	if (o->metavar)
		fish_args(value_kind(o), o->choices, NULL);
	fputs(" -d ", stdout);
	fish_text(o->help);
	putchar('\n');
}

static void fish_verb(const struct aj_verb *v, const char *id, void *arg)
{
	(void)arg;
	for (const struct aj_option *o = v->options; o && o->name; o++)
		if (!(o->flags & AJ_OPTF_HIDDEN))
			fish_option(v, o, (void *)id);
	for (const struct aj_arg *a = v->args; a && a->metavar; a++) {
		if (a->complete == AJ_COMP_NONE)
			continue;
		printf("complete -c agentjail -n '__agentjail_verb_is %s; and __agentjail_arg_is %d%s'",
		       id, (int)(a - v->args), a->repeat ? " +" : "");
		fish_args(a->complete, NULL, a->words);
		fputs(" -d ", stdout);
		fish_text(a->metavar);
		putchar('\n');
	}
}

static const char fish_head[] =
	"# fish completion for agentjail, printed by `agentjail completion fish` from its\n"
	"# option tables. Installed as share/fish/vendor_completions.d/agentjail.fish; or:\n"
	"#   agentjail completion fish | source\n\n"
	"complete -c agentjail -f\n\n"
	"function __agentjail_names\n"
	"\tset -l sd\n"
	"\tset -l words (commandline -opc)\n"
	"\tif set -l i (contains -i -- --state-dir $words)\n"
	"\t\tset sd --state-dir $words[(math $i + 1)]\n"
	"\tend\n"
	"\tagentjail $sd __complete $argv[1] 2>/dev/null\n"
	"end\n\n"
	"function __agentjail_verbs\n";
static const char fish_functions[] =
	"end\n\n"
	"# The verb (and subcommand) on the line, after the shared options.\n"
	"function __agentjail_verb\n"
	"\tset -l words (commandline -opc)\n"
	"\tset -l skip 0\n"
	"\tset -l verb\n"
	"\tfor w in $words[2..-1]\n"
	"\t\tif test $skip = 1; set skip 0; continue; end\n"
	"\t\tswitch $w\n"
	"\t\tcase --state-dir --log-level; set skip 1\n"
	"\t\tcase '-*'\n"
	"\t\tcase '*'\n"
	"\t\t\tif test -z \"$verb\"; set verb $w\n"
	"\t\t\telse if test \"$verb\" = policy -a \"$w\" = import-srt; set verb policy/import-srt\n"
	"\t\t\telse; break; end\n"
	"\t\tend\n"
	"\tend\n"
	"\techo $verb\n"
	"end\n\n"
	"function __agentjail_verb_is\n\ttest (__agentjail_verb) = $argv[1]\nend\n\n"
	"# __agentjail_arg_is N [+]: the word is the verb's argument N (or later, with +).\n"
	"function __agentjail_arg_is\n"
	"\tset -l words (commandline -opc)\n"
	"\tset -l n 0\n"
	"\tset -l seen 0\n"
	"\tfor w in $words[2..-1]\n"
	"\t\tswitch $w\n\t\tcase '-*'\n"
	"\t\tcase '*'\n\t\t\tif test $seen = 1; set n (math $n + 1); end\n"
	"\t\t\tif test $w = (string split / (__agentjail_verb))[-1]; set seen 1; end\n"
	"\t\tend\n"
	"\tend\n"
	"\tif test \"$argv[2]\" = +; test $n -ge $argv[1]; else; test $n -eq $argv[1]; end\n"
	"end\n\n"
	"complete -c agentjail -n 'test -z (__agentjail_verb)' -a '(__agentjail_verbs)'\n";

static void completion_fish(void)
{
	fputs(fish_head, stdout);
	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		if (shown(*v)) {
			printf("\tprintf '%%s\\t%%s\\n' %s ", (*v)->name);
			fish_text((*v)->summary);
			putchar('\n');
		}
	fputs(fish_functions, stdout);
	for (const struct aj_option *o = aj_cli_options; o->name; o++)
		fish_option(NULL, o, NULL);
	each_verb(fish_verb, NULL);
}

/* ---- the verbs ------------------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
} shells[] = {{"bash", completion_bash}, {"zsh", completion_zsh}, {"fish", completion_fish}};

static int cmd_completion(const struct aj_verb *v, int argc, char **argv)
{
	struct aj_err err;
	char **args;
	int nargs, r;

	aj_err_clear(&err);
	if ((r = aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err)) != 0)
		return r > 0 ? 0 : aj_cli_fail(false, &err);
	for (size_t i = 0; nargs == 1 && i < sizeof shells / sizeof shells[0]; i++)
		if (strcmp(args[0], shells[i].name) == 0) {
			shells[i].fn();
			return 0;
		}
	aj_err_set(&err, AJ_LAYER_USAGE, 0, "completion: expected bash, zsh or fish%s%s%s",
		   nargs ? ", got \"" : "", nargs ? args[0] : "", nargs ? "\"" : "");
	return aj_cli_fail(false, &err);
}

static const char *const shell_words[] = {"bash", "zsh", "fish", NULL};
static const struct aj_arg completion_args[] = {
	AJ_ARG_WORDS("SHELL", shell_words),
	AJ_ARG_END,
};
static const struct aj_option no_options[] = {AJ_OPT_END};
const struct aj_verb aj_verb_completion = {
	.name = "completion",
	.fn = cmd_completion,
	.summary = "print the shell completion script for bash, zsh or fish",
	.synopsis = "completion bash | zsh | fish",
	.help = "Print a completion script generated from agentjail's option tables: commands, "
		"options, their values, and the names of sandboxes, snapshots and images.\n"
		"bash: source <(agentjail completion bash); zsh: source <(agentjail completion zsh); "
		"fish: agentjail completion fish | source.",
	.options = no_options,
	.args = completion_args,
	.flags = AJ_VERB_NO_CONFIG,
};

/* __complete sandboxes|snapshots|images: names, one per line, for the scripts above. */
static int cmd_complete(const struct aj_verb *v, int argc, char **argv)
{
	struct aj_mgr m = {0};
	struct aj_err err;
	char **args;
	int nargs;

	if (aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err) != 0 || nargs != 1 ||
	    aj_cli_open(&m, &err) < 0)
		return 0;
	if (!strcmp(args[0], "sandboxes")) {
		struct aj_sandbox_rec *r = NULL;
		size_t n = 0;
		if (aj_mgr_list(&m, NULL, &r, &n, &err) == 0)
			for (size_t i = 0; i < n; i++)
				printf("%s\n", r[i].name);
		aj_sandbox_recs_free(r, n);
	} else if (!strcmp(args[0], "snapshots")) {
		struct aj_snapshot_rec *s = NULL;
		size_t n = 0;
		if (aj_store_snapshot_list(m.store, NULL, &s, &n, &err) == 0)
			for (size_t i = 0; i < n; i++)
				printf("%s\n", s[i].name);
		aj_snapshot_recs_free(s, n);
	} else if (!strcmp(args[0], "images")) {
		struct aj_image_rec *r = NULL;
		size_t n = 0;
		char name[700];
		if (aj_store_image_list(m.store, m.owner, &r, &n, &err) == 0)
			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < r[i].names.n; j++) {
					struct aj_image_ref ref;
					char why[128];
					if (aj_image_ref_parse(r[i].names.v[j], &ref, why, sizeof why) == 0) {
						aj_image_ref_short(&ref, name, sizeof name);
						printf("%s\n", name);
					}
				}
		aj_image_recs_free(r, n);
	}
	aj_mgr_close(&m);
	return 0;
}

const struct aj_verb aj_verb_complete = {
	.name = "__complete",
	.fn = cmd_complete,
	.summary = "names for the shell completions",
	.synopsis = "__complete sandboxes | snapshots | images",
	.options = no_options,
	.flags = AJ_VERB_HIDDEN,
};
