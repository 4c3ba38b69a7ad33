/* The option engine of the command line (src/cli/args.c): every parsing form, every value
 * type, the ranges, and the errors with their suggestions, on a table made for the test and on
 * the real verbs' tables. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/policy_flags.h"
#include "common/strv.h"
#include "unit.h"

enum color { C_NONE = 0, C_RED, C_GREEN, C_BLUE };

struct ctx {
	struct aj_pflags pf; /* first, for the policy rows */
	bool all, tty, interactive;
	const char *name;
	char *owned;
	struct aj_strv list;
	enum color color;
	uint64_t size, ms, count, cpus;
	unsigned workers;
	int seconds;
	size_t body;
};

static const struct aj_opt_choice colors[] = {
	{"red", C_RED}, {"green", C_GREEN}, {"blue", C_BLUE}, {NULL, 0}};

#define F(field) .off = offsetof(struct ctx, field)
static const struct aj_option table[] = {
	{AJ_OPT("all", 'a', AJ_OPT_SWITCH), F(all), .help = "all"},
	{AJ_OPT("tty", 't', AJ_OPT_SWITCH), F(tty), .help = "tty"},
	{AJ_OPT("interactive", 'i', AJ_OPT_SWITCH), F(interactive), .help = "stdin"},
	{AJ_OPT("name", 'n', AJ_OPT_STRING), F(name), .metavar = "NAME", .help = "name"},
	{AJ_OPT("owned", 0, AJ_OPT_STRDUP), F(owned), .metavar = "S", .help = "copy"},
	{AJ_OPT("item", 'e', AJ_OPT_LIST), F(list), .metavar = "X", .help = "list"},
	{AJ_OPT("color", 0, AJ_OPT_CHOICE), F(color), .metavar = "C", .choices = colors,
	 .help = "color"},
	{AJ_OPT("memory", 'm', AJ_OPT_SIZE), F(size), .metavar = "SIZE", .flags = AJ_OPTF_NONE_OK,
	 .help = "size"},
	{AJ_OPT("wait", 0, AJ_OPT_DURATION), F(ms), .metavar = "D", .help = "duration"},
	{AJ_OPT("count", 0, AJ_OPT_COUNT), F(count), .metavar = "N", .help = "count"},
	{AJ_OPT("cpus", 0, AJ_OPT_CPUS), F(cpus), .metavar = "N", .help = "cpus"},
	{AJ_OPT("workers", 0, AJ_OPT_COUNT), F(workers), .metavar = "N", .min = 1, .max = 256,
	 .store = AJ_STORE_UINT, .help = "1 to 256"},
	{AJ_OPT("interval", 0, AJ_OPT_DURATION), F(seconds), .metavar = "D", .min = 1000,
	 .max = 86400000, .scale = 1000, .store = AJ_STORE_INT, .flags = AJ_OPTF_ZERO_OK,
	 .help = "seconds"},
	{AJ_OPT("body", 0, AJ_OPT_SIZE), F(body), .metavar = "SIZE", .min = 1,
	 .max = (uint64_t)1 << 40, .store = AJ_STORE_SIZE, .help = "size_t"},
	{AJ_OPT("pids", 0, AJ_OPT_COUNT), AJ_PF(limits.pids), .metavar = "N",
	 .flags = AJ_OPTF_NONE_OK, .help = "deferred"},
	{AJ_OPT("help", 'h', AJ_OPT_SWITCH), .to = AJ_TO_GLOBAL, .off = offsetof(struct aj_cli, help),
	 .help = "help"},
	AJ_OPT_END,
};

static const struct aj_verb verb = {.name = "test", .synopsis = "test [OPTIONS] ARG...", .summary = "a verb for the test",
				    .options = table};
static const struct aj_verb verb_first = {.name = "test", .synopsis = "test CMD...",
					  .options = table, .flags = AJ_VERB_OPTS_FIRST};

static struct ctx c;
static struct aj_err err;
static char **args;
static int nargs;

/* Parses a space-separated command line (argv[0] "test") into a fresh context. */
static int parse(const struct aj_verb *v, const char *line)
{
	static char buf[512];
	static char *argv[64];
	int argc = 0;

	aj_strv_free(&c.list);
	free(c.owned);
	memset(&c, 0, sizeof c);
	aj_cli.help = false;
	aj_err_clear(&err);
	snprintf(buf, sizeof buf, "test %s", line);
	for (char *p = strtok(buf, " "); p && argc < 63; p = strtok(NULL, " "))
		argv[argc++] = strcmp(p, "''") == 0 ? (char *)"" : p;
	argv[argc] = NULL;
	return aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err);
}

static void forms(void)
{
	CHECK(parse(&verb, "--name web") == 0 && c.name && !strcmp(c.name, "web"), "--opt value");
	CHECK(parse(&verb, "--name=web") == 0 && c.name && !strcmp(c.name, "web"), "--opt=value");
	CHECK(parse(&verb, "--name=") == 0 && c.name && !strcmp(c.name, ""), "--opt= is empty");
	CHECK(parse(&verb, "-n web") == 0 && c.name && !strcmp(c.name, "web"), "-x value");
	CHECK(parse(&verb, "-nweb") == 0 && c.name && !strcmp(c.name, "web"), "-xVALUE");
	CHECK(parse(&verb, "-m512MiB") == 0 && c.size == 512u << 20, "-m512MiB");
	CHECK(parse(&verb, "-it") == 0 && c.interactive && c.tty, "-it: two switches");
	CHECK(parse(&verb, "-ati") == 0 && c.all && c.interactive && c.tty, "-ati");
	CHECK(parse(&verb, "-itn web") == 0 && c.tty && c.name && !strcmp(c.name, "web"),
	      "-itn VALUE: the last letter takes the next argument");
	CHECK(parse(&verb, "--name -dash") == 0 && !strcmp(c.name, "-dash"),
	      "a value that starts with a dash is the value");
	CHECK(parse(&verb, "--item a -e b --item=c") == 0 && c.list.n == 3 &&
		      !strcmp(c.list.v[2], "c"),
	      "a list option repeats");
	CHECK(parse(&verb, "--owned x --owned y") == 0 && c.owned && !strcmp(c.owned, "y"),
	      "a copied value replaces the previous one");
}

static void positionals(void)
{
	CHECK(parse(&verb, "one --all two -n x three") == 0 && nargs == 3 && c.all &&
		      !strcmp(args[0], "one") && !strcmp(args[2], "three"),
	      "options between positionals; positionals in order");
	CHECK(parse(&verb, "one -- --all -n") == 0 && nargs == 3 && !c.all &&
		      !strcmp(args[1], "--all"),
	      "-- ends the options");
	CHECK(parse(&verb, "- x") == 0 && nargs == 2 && !strcmp(args[0], "-"), "- is a positional");
	CHECK(parse(&verb_first, "-a cmd --all -x") == 0 && c.all && nargs == 3 &&
		      !strcmp(args[1], "--all"),
	      "OPTS_FIRST: what follows the first positional is the command's");
	CHECK(parse(&verb_first, "-- --all") == 0 && !c.all && nargs == 1,
	      "OPTS_FIRST: -- before the command");
	/* The usage goes to stdout: away from the TAP lines. */
	fflush(stdout);
	int saved = dup(1), null = open("/dev/null", O_WRONLY);
	dup2(null, 1);
	int r = parse(&verb, "--help x");
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(null);
	CHECK(r == 1 && nargs == 1, "--help returns 1 (usage printed)");
}

static void values(void)
{
	CHECK(parse(&verb, "--color green") == 0 && c.color == C_GREEN, "choice");
	CHECK(parse(&verb, "--color pink") < 0, "unknown choice refused");
	CHECK_STR(err.msg, "--color: expected red, green or blue, got \"pink\"",
		  "the choice error lists the values");
	CHECK(parse(&verb, "--memory none") == 0 && c.size == 0, "none is 0 with NONE_OK");
	CHECK(parse(&verb, "--memory 2GiB") == 0 && c.size == 2ull << 30, "size");
	CHECK(parse(&verb, "--memory lots") < 0 && err.layer == AJ_LAYER_POLICY, "bad size");
	CHECK_CONTAINS(err.msg, "--memory: expected a size", "the size error names the option");
	CHECK(parse(&verb, "--wait 90s") == 0 && c.ms == 90000, "duration in ms");
	CHECK(parse(&verb, "--wait none") < 0, "none without NONE_OK is refused");
	CHECK(parse(&verb, "--count 7") == 0 && c.count == 7, "count");
	CHECK(parse(&verb, "--cpus 0.5") == 0 && c.cpus == 500, "cpus in thousandths");
	CHECK(parse(&verb, "--workers 256") == 0 && c.workers == 256, "count at the top of the range");
	CHECK(parse(&verb, "--workers 0") < 0, "count below the range");
	CHECK_STR(err.msg, "--workers: expected 1 to 256", "the range is in the message");
	CHECK(parse(&verb, "--interval 2m") == 0 && c.seconds == 120, "scaled to seconds");
	CHECK(parse(&verb, "--interval 0") == 0 && c.seconds == 0, "0 with ZERO_OK");
	CHECK(parse(&verb, "--interval 500ms") < 0, "under the range but not 0");
	CHECK_STR(err.msg, "--interval: expected 0 or 1s to 24h", "the duration range as text");
	CHECK(parse(&verb, "--body 1KiB") == 0 && c.body == 1024, "size_t destination");
	CHECK(parse(&verb, "--body 2TiB") < 0, "size over the range");
	CHECK_STR(err.msg, "--body: expected 1 byte to 1TiB", "the size range as text");
}

static void deferred(void)
{
	struct aj_policy pol;

	CHECK(parse(&verb, "--pids 12 --pids none --pids 64") == 0 && c.pf.n_pending == 3,
	      "policy rows are recorded, not applied");
	aj_policy_init(&pol);
	CHECK(aj_pflags_load(&c.pf, &pol, &err) == 0 && pol.limits.pids == 64,
	      "they are applied in order after the policy file");
	aj_policy_free(&pol);
	CHECK(parse(&verb, "--pids many") == 0, "a bad policy value is only seen when applied");
	aj_policy_init(&pol);
	CHECK(aj_pflags_load(&c.pf, &pol, &err) < 0 && err.layer == AJ_LAYER_POLICY,
	      "... where it fails as a policy error");
	CHECK_CONTAINS(err.msg, "--pids: expected a non-negative whole number", "naming --pids");
	aj_policy_free(&pol);
}

static void errors(void)
{
	CHECK(parse(&verb, "--bogus") < 0 && err.layer == AJ_LAYER_USAGE, "unknown long option");
	CHECK_STR(err.msg, "unknown option \"--bogus\"", "the message names it");
	CHECK_CONTAINS(err.hint, "see --help", "the hint points at --help");
	CHECK(parse(&verb, "--memroy 1G") < 0, "a misspelt option");
	CHECK_CONTAINS(err.hint, "did you mean --memory?", "suggests the nearest (a transposition)");
	CHECK(parse(&verb, "--colour red") < 0, "another spelling");
	CHECK_CONTAINS(err.hint, "did you mean --color?", "suggests --color");
	CHECK(parse(&verb, "--interv 5s") < 0, "a beginning is not accepted as the option");
	CHECK_CONTAINS(err.hint, "did you mean --interval?", "... but suggested");
	CHECK(parse(&verb, "--zzzzzz") < 0 && !strstr(err.hint, "did you mean"),
	      "nothing near: no suggestion");
	CHECK(parse(&verb, "--stopped") < 0, "an option of other verbs");
	CHECK_CONTAINS(err.hint, "--stopped is an option of create", "names the verbs that take it");
	CHECK(parse(&verb, "-name x") < 0, "a long option with one dash");
	CHECK_CONTAINS(err.hint, "did you mean --name?", "suggests two dashes");
	CHECK(parse(&verb, "-z") < 0, "unknown short option");
	CHECK_STR(err.msg, "unknown option \"-z\"", "names it");
	CHECK(parse(&verb, "-itz") < 0, "unknown letter in a cluster");
	CHECK_STR(err.msg, "unknown option \"-z\" in \"-itz\"", "names the letter and the cluster");
	CHECK(parse(&verb, "-tni") < 0, "a value-taking letter inside a cluster");
	CHECK_CONTAINS(err.msg, "-n takes a value (NAME): in \"-tni\"", "is refused as ambiguous");
	CHECK(parse(&verb, "--name") < 0, "missing value");
	CHECK_STR(err.msg, "--name needs a value (NAME)", "names the option and the metavar");
	CHECK(parse(&verb, "-n") < 0, "missing value, short");
	CHECK_STR(err.msg, "-n needs a value (NAME)", "names -n");
	CHECK(parse(&verb, "-it -n") < 0, "missing value after a cluster");
	CHECK(parse(&verb, "--all=yes") < 0, "a value for a switch");
	CHECK_STR(err.msg, "--all takes no value", "is refused");
}

/* The shared options: every verb takes them, before or after its arguments. */
static void shared(void)
{
	aj_cli.json = aj_cli.verbose = false;
	aj_cli.state_dir = NULL;
	aj_cli.log_level = AJ_LOG_WARN;
	CHECK(parse(&verb, "x --json --state-dir=/s -v") == 0 && aj_cli.json && aj_cli.verbose &&
		      aj_cli.state_dir && !strcmp(aj_cli.state_dir, "/s") && nargs == 1,
	      "--json, --state-dir, -v on any verb");
	CHECK(aj_cli_level() == AJ_LOG_INFO, "--verbose raises the level to info");
	CHECK(parse(&verb, "--log-level debug") == 0 && aj_cli_level() == AJ_LOG_DEBUG,
	      "--log-level");
	CHECK(parse(&verb, "--log-level loud") < 0, "--log-level checks its value");
	CHECK_STR(err.msg, "--log-level: expected error, warn, info or debug, got \"loud\"",
		  "... naming the levels");
	CHECK(parse(&verb, "-iv") == 0 && c.interactive && aj_cli.verbose,
	      "a cluster mixes the verb's and the shared switches");
	CHECK(parse(&verb, "--jsno") < 0, "a misspelt shared option");
	CHECK_CONTAINS(err.hint, "did you mean --json?", "is suggested too");
	int pos = 1;
	char *argv[] = {(char *)"agentjail", (char *)"--state-dir", (char *)"/d", (char *)"ls",
			(char *)"--all", NULL};
	aj_cli.state_dir = NULL;
	CHECK(aj_args_parse(aj_cli_options, NULL, 5, argv, &pos, &err) == 0 && pos == 3 &&
		      !strcmp(aj_cli.state_dir, "/d"),
	      "before the verb: the shared options, up to the verb");
	char *argv2[] = {(char *)"agentjail", (char *)"--count", (char *)"3", (char *)"fork", NULL};
	pos = 1;
	CHECK(aj_args_parse(aj_cli_options, NULL, 4, argv2, &pos, &err) < 0, "a verb's option before the verb");
	CHECK_CONTAINS(err.hint, "--count is an option of fork: write it after the verb",
		       "says where it goes");
	aj_cli.json = aj_cli.verbose = false;
	aj_cli.state_dir = NULL;
	aj_cli.log_level = AJ_LOG_WARN;
}

/* The real verbs: each table is well formed, and the forms work on them. */
static void real_verbs(void)
{
	int bad = 0;

	for (const struct aj_verb *const *v = aj_verbs; *v; v++)
		for (const struct aj_option *o = (*v)->options; o && o->name; o++) {
			bool value = o->type != AJ_OPT_SWITCH;
			if (!o->help || value != (o->metavar != NULL) ||
			    (o->type == AJ_OPT_CHOICE && !o->choices) ||
			    (o->type == AJ_OPT_FUNC && !o->parse)) {
				printf("# %s --%s is malformed\n", (*v)->name, o->name);
				bad++;
			}
			for (const struct aj_option *p = o + 1; p->name; p++)
				if (!strcmp(p->name, o->name) ||
				    (o->short_name && o->short_name == p->short_name)) {
					printf("# %s: --%s and --%s clash\n", (*v)->name, o->name,
					       p->name);
					bad++;
				}
		}
	CHECK(bad == 0, "every verb's table: help, metavar iff a value, no clashes");
	CHECK(aj_verb_find("run") == &aj_verb_run && !aj_verb_find("nosuch"), "verbs are found");
}

int main(void)
{
	forms();
	positionals();
	values();
	deferred();
	errors();
	shared();
	real_verbs();
	aj_strv_free(&c.list);
	free(c.owned);
	return unit_failures ? 1 : 0;
}
