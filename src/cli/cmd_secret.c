/* agentjail secret create|update|ls|inspect|rm: the secret store of the state directory
 * (state/secrets.h, docs/policy.md "credentials"), the local owner's secrets. A value comes
 * from standard input (typed without echo on a terminal) or --from-file, never from the
 * command line, where other users' `ps` would see it; nothing prints it back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "state/secrets.h"

struct secret_cli {
	const char *from_file;
};

#define SC(field) .off = offsetof(struct secret_cli, field)
static const struct aj_option value_options[] = {
	{AJ_OPT("from-file", 0, AJ_OPT_STRING), SC(from_file), .metavar = "FILE",
	 .help = "read the value from FILE (default: standard input)"},
	AJ_OPT_END,
};
static const struct aj_option no_options[] = {
	AJ_OPT_END,
};
#undef SC

/* The value, its trailing newlines dropped (echo and editors end files with one); wiped by
 * the caller. */
static char *read_value(const struct secret_cli *c, size_t *len, struct aj_err *err)
{
	_cleanup_close_ int fd = -1;
	struct termios old, quiet;
	bool tty = false;
	char *buf;
	ssize_t n;

	if (c->from_file) {
		fd = open(c->from_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return aj_err_sys(err, AJ_LAYER_USAGE, "--from-file: open \"%s\"", c->from_file),
			       NULL;
	} else if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0) {
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tty = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
		fprintf(stderr, "value (not shown; end with Enter): ");
	}
	buf = calloc(1, AJ_SECRET_VALUE_MAX + 2);
	if (!buf)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "the value"), NULL;
	if (tty) { /* one line */
		n = read(STDIN_FILENO, buf, AJ_SECRET_VALUE_MAX + 1);
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	} else {
		n = aj_read_full(fd >= 0 ? fd : STDIN_FILENO, buf, AJ_SECRET_VALUE_MAX + 1);
	}
	if (n < 0) {
		free(buf);
		return aj_err_sys(err, AJ_LAYER_USAGE, "read the value"), NULL;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	*len = (size_t)n;
	return buf;
}

static void wipe(char *v, size_t cap)
{
	if (v) {
		explicit_bzero(v, cap);
		free(v);
	}
}

static void print_secret(const struct aj_secret *s)
{
	if (aj_cli.json)
		aj_cli_print_json(aj_secret_json(s));
	else
		printf("%s\n", s->name);
}

static int put(const struct aj_verb *v, int argc, char **argv, bool create)
{
	struct secret_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_secret s;
	struct aj_err err;
	char **args, *value = NULL;
	size_t len = 0;
	int nargs, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 1, 1, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (!(value = read_value(&c, &len, &err)))
		return aj_cli_fail(aj_cli.json, &err);
	r = aj_secret_put(m.state, "", args[0], value, len, NULL, create, &s, &err);
	wipe(value, AJ_SECRET_VALUE_MAX + 2);
	if (r < 0)
		return aj_cli_fail(aj_cli.json, &err);
	print_secret(&s);
	aj_secret_free(&s);
	return 0;
}

static int cmd_create(const struct aj_verb *v, int argc, char **argv)
{
	return put(v, argc, argv, true);
}

static int cmd_update(const struct aj_verb *v, int argc, char **argv)
{
	return put(v, argc, argv, false);
}

static int cmd_ls(const struct aj_verb *v, int argc, char **argv)
{
	struct secret_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_secret *list = NULL;
	struct aj_err err;
	size_t n = 0;
	char **args;
	int nargs, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 0, 0, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 || aj_secret_list(m.state, "", &list, &n, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, aj_secret_json(&list[i]));
		aj_cli_print_json(a);
	} else {
		printf("%-32s %-28s %7s  %s\n", "NAME", "ID", "VERSION", "UPDATED");
		for (size_t i = 0; i < n; i++) {
			char ts[40];
			aj_format_time_ms((uint64_t)list[i].updated_ms, ts, sizeof ts);
			printf("%-32s %-28s %7lld  %s\n", list[i].name, list[i].id,
			       (long long)list[i].version, ts);
		}
	}
	aj_secrets_free(list, n);
	return 0;
}

static int cmd_inspect(const struct aj_verb *v, int argc, char **argv)
{
	struct secret_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_secret s;
	struct aj_err err;
	char **args;
	int nargs, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 1, 1, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 || aj_secret_get(m.state, "", args[0], &s, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	aj_cli_print_json(aj_secret_json(&s));
	aj_secret_free(&s);
	return 0;
}

static int cmd_rm(const struct aj_verb *v, int argc, char **argv)
{
	struct secret_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_err err;
	char **args;
	int nargs, failed = 0, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 1, 1 << 20, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	for (int i = 0; i < nargs; i++) {
		if (aj_secret_remove(m.state, "", args[i], &err) < 0)
			failed = aj_cli_fail(aj_cli.json, &err);
		else if (!aj_cli.json)
			printf("%s\n", args[i]);
	}
	return failed;
}

static const struct aj_arg name_arg[] = {AJ_ARG("NAME", AJ_COMP_NONE), AJ_ARG_END};
static const struct aj_arg names_arg[] = {AJ_ARG_REST("NAME", AJ_COMP_NONE), AJ_ARG_END};

static const struct aj_verb subs[] = {
	{.name = "create",
	 .fn = cmd_create,
	 .summary = "store a new secret",
	 .synopsis = "secret create [--from-file FILE] NAME",
	 .help = "Store a secret under NAME (1 to 128 letters, digits, '_' and '-', without "
		 "case), its value read from standard input or FILE (trailing newlines dropped). "
		 "A policy's credential names it with \"from_secret\"; the value goes only to the "
		 "egress proxy.",
	 .options = value_options,
	 .args = name_arg},
	{.name = "update",
	 .fn = cmd_update,
	 .summary = "give a secret a new value",
	 .synopsis = "secret update [--from-file FILE] NAME",
	 .help = "Replace the value of the secret NAME (or its id), which gets the next version; "
		 "sandboxes read it when they next start.",
	 .options = value_options,
	 .args = name_arg},
	{.name = "ls",
	 .fn = cmd_ls,
	 .summary = "list the secrets",
	 .synopsis = "secret ls [--json]",
	 .help = "The secrets' names, ids, versions and times (never their values).",
	 .options = no_options},
	{.name = "inspect",
	 .fn = cmd_inspect,
	 .summary = "show a secret's metadata",
	 .synopsis = "secret inspect NAME",
	 .help = "A secret's id, name, version, times and metadata, as JSON (never its value).",
	 .options = no_options,
	 .args = name_arg},
	{.name = "rm",
	 .fn = cmd_rm,
	 .summary = "remove secrets",
	 .synopsis = "secret rm NAME...",
	 .help = "Remove the secrets (by name or id); a sandbox whose policy names one no longer "
		 "starts.",
	 .options = no_options,
	 .args = names_arg},
};
static const struct aj_verb *const sub_list[] = {&subs[0], &subs[1], &subs[2], &subs[3],
						 &subs[4], NULL};

static int cmd_secret(const struct aj_verb *v, int argc, char **argv)
{
	return aj_verb_run_sub(v, "docs/policy.md (\"credentials\") says how policies use them.", argc, argv);
}

static const char *const secret_words[] = {"create", "update", "ls", "inspect", "rm", NULL};
static const struct aj_arg secret_args[] = {AJ_ARG_WORDS("SUBCOMMAND", secret_words),
					    AJ_ARG_END};
const struct aj_verb aj_verb_secret = {
	.name = "secret",
	.fn = cmd_secret,
	.summary = "secrets for credentials: create, update, list, inspect, remove",
	.synopsis = "secret SUBCOMMAND [OPTIONS]",
	.help = "The secret store of the state directory: values a policy's credentials name "
		"with \"from_secret\", which only the egress proxy reads (docs/policy.md).",
	.args = secret_args,
	.flags = AJ_VERB_OWN_ARGS,
	.subs = sub_list,
};
