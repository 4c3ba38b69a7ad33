/* Declarative command-line options. Every option of every verb is one row of a table: its
 * names, the type of its value, where the value goes (a field of the verb's context, of the
 * process-wide options in struct aj_cli, or of the policy, deferred), and the range or the
 * allowed values. One engine reads the rows: it parses the command line, converts and checks
 * every value, and names the option in every error; --help, the shell completions and the
 * manual pages are printed from the same rows (help.c, cmd_completion.c, cmd_man.c), so that
 * what a verb accepts and what it documents cannot drift apart.
 *
 * Ownership: rows and tables are static data. A value of type STRING borrows the argument
 * from argv; STRDUP and LIST copy it into memory the destination owns (the policy frees its
 * own fields; a verb frees its lists).
 */
#ifndef AJ_CLI_ARGS_H
#define AJ_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

enum aj_opt_type {
	AJ_OPT_SWITCH,   /* bool: set to true; takes no value */
	AJ_OPT_STRING,   /* const char *: the argument itself */
	AJ_OPT_STRDUP,   /* char *: a copy; the one it replaces is freed */
	AJ_OPT_LIST,     /* struct aj_strv: the value appended (repeatable) */
	AJ_OPT_CHOICE,   /* an enum (int-sized): the value of the entry of .choices named */
	AJ_OPT_SIZE,     /* a size such as 512MiB, in bytes */
	AJ_OPT_DURATION, /* a duration such as 30s, in milliseconds, divided by .scale */
	AJ_OPT_COUNT,    /* a whole number */
	AJ_OPT_CPUS,     /* a number of CPUs such as 0.5, in thousandths */
	AJ_OPT_FUNC,     /* .parse() converts and stores */
};

/* Where a row's .off points. */
enum aj_opt_target {
	AJ_TO_CTX = 0, /* the verb's context, the `ctx` given to the parser */
	AJ_TO_GLOBAL,  /* struct aj_cli (aj_cli below): options every verb shares */
	AJ_TO_POLICY,  /* struct aj_policy: recorded while parsing, applied by aj_pflags_load()
			* after the policy file, in command-line order (policy_flags.h) */
};

/* The C type of a number's destination. */
enum aj_opt_store { AJ_STORE_U64 = 0, AJ_STORE_UINT, AJ_STORE_SIZE, AJ_STORE_INT };

/* What a value (or a positional argument) completes to in a shell. */
enum aj_complete {
	AJ_COMP_NONE = 0,
	AJ_COMP_FILE,
	AJ_COMP_DIR,
	AJ_COMP_SANDBOX,
	AJ_COMP_SNAPSHOT,
	AJ_COMP_IMAGE,   /* a name of the image store's (as `image ls` shows it) */
	AJ_COMP_CHOICES, /* the names of .choices (options) or .words (positionals) */
	AJ_COMP_COMMAND, /* a command, then its arguments as files */
	AJ_COMP_VERB,    /* a verb of agentjail */
};

#define AJ_OPTF_NONE_OK 0x1u /* "none" (and 0) are accepted and stored as 0: no limit */
#define AJ_OPTF_ZERO_OK 0x2u /* 0 is accepted below .min ("0 or 1s to 24h") */
#define AJ_OPTF_HIDDEN 0x4u  /* accepted, not shown by --help or completed */

struct aj_opt_choice {
	const char *name;
	int value;
};

struct aj_option {
	const char *name;  /* long name, without "--" */
	char short_name;   /* 0: none */
	enum aj_opt_type type;
	enum aj_opt_target to;
	size_t off;        /* of the destination in the target */
	const char *metavar; /* what the value is called in --help; NULL for a switch */
	const char *help;
	const struct aj_opt_choice *choices; /* CHOICE: ends with {NULL, 0} */
	uint64_t min, max; /* numbers, before .scale: the range accepted; max 0: unbounded */
	unsigned scale;    /* DURATION: stored as ms / scale (1000: seconds); 0 means 1 */
	enum aj_opt_store store;
	unsigned flags;    /* AJ_OPTF_* */
	enum aj_complete complete; /* the value's completion; AJ_COMP_NONE: from the type */
	/* FUNC: converts value and stores it at base + o->off (base is the target). */
	int (*parse)(void *base, const struct aj_option *o, const char *value, struct aj_err *err);
};

/* Designated-initializer helpers for the rows. */
#define AJ_OPT(n, s, t) .name = (n), .short_name = (s), .type = (t)
#define AJ_OPT_END {.name = NULL}

/* The options every verb shares (`to = AJ_TO_GLOBAL`); main() may fill them from before the
 * verb too. One per process. */
enum aj_log_level { AJ_LOG_ERROR = 0, AJ_LOG_WARN, AJ_LOG_INFO, AJ_LOG_DEBUG };
struct aj_cli {
	const char *state_dir; /* NULL: the environment, the config file, or the default */
	bool json, verbose, help;
	enum aj_log_level log_level;
	bool log_level_given; /* on the command line: the configuration file's does not apply */
};
extern struct aj_cli aj_cli;
/* Their rows: --state-dir, --json, -v/--verbose, --log-level, -h/--help. Accepted before the
 * verb (main) and after it by every verb; a verb's own row of the same name (run's
 * --state-dir, with its own help text) comes first. */
extern const struct aj_option aj_cli_options[];
extern const struct aj_opt_choice aj_cli_log_levels[];
/* The log level in effect: --log-level, raised to info by --verbose. */
enum aj_log_level aj_cli_level(void);

/* A positional argument of a verb, for --help, completions and manual pages. */
struct aj_arg {
	const char *metavar;       /* NULL ends a list */
	enum aj_complete complete;
	const char *const *words;  /* AJ_COMP_CHOICES: the words it may be, NULL-terminated */
	bool repeat;               /* any number of them */
};

#define AJ_ARG(m, c) {.metavar = (m), .complete = (c)}
#define AJ_ARG_REST(m, c) {.metavar = (m), .complete = (c), .repeat = true}
#define AJ_ARG_WORDS(m, w) {.metavar = (m), .complete = AJ_COMP_CHOICES, .words = (w)}
#define AJ_ARG_END {.metavar = NULL}

#define AJ_VERB_HIDDEN 0x1u     /* not listed, not completed, no manual page */
#define AJ_VERB_OWN_ARGS 0x2u   /* parses its own arguments (oci: runc's command line) */
#define AJ_VERB_OPTS_FIRST 0x4u /* options end at the first positional: a command follows */
#define AJ_VERB_NO_CONFIG 0x8u  /* does not read the configuration file (version, oci) */

/* A verb: the row of `agentjail --help`, and everything its --help, completion and manual
 * page say. Each cmd_*.c defines its verbs; verbs.c lists them. */
struct aj_verb {
	const char *name;
	int (*fn)(const struct aj_verb *v, int argc, char **argv); /* argv[0] is the verb */
	const char *summary;  /* one line */
	const char *synopsis; /* usage lines after "agentjail ", separated by '\n' */
	const char *help;     /* the paragraph --help prints under the synopsis */
	const struct aj_option *options;
	const struct aj_arg *args;
	unsigned flags;       /* AJ_VERB_* */
	const char *alias_of; /* another verb this one is a form of (ps: ls) */
	const void *data;     /* the verb's own: what a function shared by several verbs does */
	const struct aj_verb *const *subs; /* its subcommands (policy import-srt), NULL-ended */
};
extern const struct aj_verb *const aj_verbs[]; /* NULL-terminated, in --help order */
const struct aj_verb *aj_verb_find(const char *name);
/* A verb of subcommands (v->subs): runs the one argv[1] names, or prints their list (with
 * `footer`, a sentence naming the docs) for --help, and for a missing or unknown one with
 * exit 125. */
int aj_verb_run_sub(const struct aj_verb *v, const char *footer, int argc, char **argv);

/* Parses a verb's command line (argv[0] is the verb): options anywhere before "--" (with
 * AJ_VERB_OPTS_FIRST only before the first positional, after which everything is the
 * command's), combined short switches ("-it"), "-xVALUE", "--name=VALUE" and "--name VALUE".
 * The positionals are left in *args (*nargs of them; pointers into argv, which it may reorder).
 * With --help it prints the verb's usage to stdout and returns 1; 0 on success; -1 with err
 * naming the option (and a hint with the nearest one) otherwise. */
int aj_verb_parse(const struct aj_verb *v, void *ctx, int argc, char **argv, char ***args,
		  int *nargs, struct aj_err *err);
/* aj_verb_parse() of a verb that takes min to max positionals: fewer is its usage, more names
 * the first one too many; both -1 with err. */
int aj_verb_parse_n(const struct aj_verb *v, void *ctx, int argc, char **argv, char ***args,
		    int *nargs, int min, int max, struct aj_err *err);
/* The verb's usage, as --help prints it. */
void aj_verb_usage(FILE *f, const struct aj_verb *v);

/* Parses options from argv[*pos] on, stopping at "--" (consumed), at the first non-option
 * argument, or at the end. *pos is left on the first unparsed argument. */
int aj_args_parse(const struct aj_option *table, void *ctx, int argc, char **argv, int *pos,
		  struct aj_err *err);
/* Converts value as row o says and stores it at base + o->off; for AJ_TO_POLICY rows this is
 * how aj_pflags_load() applies them. The error names "--NAME". */
int aj_args_apply(const struct aj_option *o, void *base, const char *value, struct aj_err *err);
/* The row of `table` with long name `name` (length n), NULL if none. */
const struct aj_option *aj_args_find(const struct aj_option *table, const char *name, size_t n);
/* The name of names[] nearest to name (length n) for a "did you mean" hint, NULL if none is
 * near enough. */
const char *aj_args_nearest(const char *const *names, size_t count, const char *name, size_t n);
/* The name of the entry of `choices` with `value`, NULL if none. */
const char *aj_args_choice_name(const struct aj_opt_choice *choices, int value);
/* The range of a number row as text ("1 to 256", "0 or 1s to 24h"), "" if unbounded. */
void aj_args_range_text(const struct aj_option *o, char *buf, size_t len);

#endif
