/* agentjail policy SUBCOMMAND: work with policy files.
 *
 *   agentjail policy import-srt FILE [-o OUT] [-w DIR]
 *
 * import-srt converts an Anthropic sandbox-runtime (srt) settings file into a policy
 * (src/policy/import_srt.c holds the conversion; this file gives it the host: the home, the
 * workspace, path resolution, and where the notes and the result go).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "policy/import_srt.h"

struct import_cli {
	const char *out, *workspace;
	bool help;
};

static int set_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct import_cli *c = vctx;

	(void)err;
	if (strcmp(name, "output") == 0)
		c->out = v;
	else if (strcmp(name, "workspace") == 0)
		c->workspace = v;
	else
		c->help = true;
	return 0;
}

static const struct aj_option import_options[] = {
	{"output", 'o', "OUT", set_opt, "write the policy to OUT instead of stdout"},
	{"workspace", 'w', "DIR",
	 set_opt, "the directory srt would run in (default: the current one): relative paths and "
		  "\".\" resolve against it, and it becomes filesystem.workspace"},
	{"help", 'h', NULL, set_opt, "show this help"},
	{NULL, 0, NULL, NULL, NULL},
};

/* The canonical form of a path, as srt's own resolution has it (realpath when the path
 * exists; otherwise its deepest existing ancestor resolved and the rest appended).
 * /proc and /dev are left alone: their links point at this process's own descriptors. */
static char *resolve_path(const char *path, bool *exists, void *opaque)
{
	char anc[PATH_MAX], real[PATH_MAX], out[2 * PATH_MAX + 2];
	char *slash;
	struct stat st;

	(void)opaque;
	*exists = lstat(path, &st) == 0;
	if (aj_path_within(path, "/proc") || aj_path_within(path, "/dev"))
		return strdup(path);
	if (realpath(path, real))
		return strdup(real);
	snprintf(anc, sizeof anc, "%s", path);
	while ((slash = strrchr(anc, '/')) && slash != anc) {
		*slash = '\0';
		if (realpath(anc, real)) {
			snprintf(out, sizeof out, "%s%s", strcmp(real, "/") == 0 ? "" : real,
				 path + strlen(anc));
			return strdup(out);
		}
	}
	return strdup(path);
}

static void print_note(const char *msg, void *opaque)
{
	(void)opaque;
	fprintf(stderr, "agentjail: note: %s\n", msg);
}

/* srt takes the home from the environment first (Node's os.homedir()), then the password
 * database. */
static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h && h[0] == '/')
		return h;
	pw = getpwuid(getuid());
	return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

/* The policy and a final newline, to OUT or stdout. */
static int write_out(const char *file, const char *text, struct aj_err *err)
{
	_cleanup_close_ int fd = -1;

	if (!file) {
		if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
			return aj_err_sys(err, AJ_LAYER_IO, "writing the policy to stdout");
		return 0;
	}
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || aj_write_all(fd, text, strlen(text)) < 0 || aj_write_all(fd, "\n", 1) < 0 ||
	    fsync(fd) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", file);
	return 0;
}

static json_t *load_settings(const char *file, struct aj_err *err)
{
	json_error_t jerr;
	json_t *srt = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);

	if (srt)
		return srt;
	if (jerr.line < 1)
		aj_err_set(err, AJ_LAYER_POLICY, 0, "srt settings \"%s\": %s", file, jerr.text);
	else
		aj_err_set(err, AJ_LAYER_POLICY, 0, "srt settings \"%s\", line %d column %d: %s",
			   file, jerr.line, jerr.column, jerr.text);
	return NULL;
}

static int import_file(const struct import_cli *c, const char *file, struct aj_err *err)
{
	_cleanup_free_ char *ws = NULL, *text = NULL;
	struct aj_srt_ctx ctx = {home_dir(), NULL, resolve_path, print_note, NULL};
	json_t *srt, *doc;
	struct stat st;

	ws = realpath(c->workspace ? c->workspace : ".", NULL);
	if (!ws)
		return aj_err_sys(err, AJ_LAYER_USAGE, "--workspace \"%s\"",
				  c->workspace ? c->workspace : ".");
	if (stat(ws, &st) < 0 || !S_ISDIR(st.st_mode))
		return aj_err_set(err, AJ_LAYER_USAGE, ENOTDIR, "--workspace \"%s\"", ws);
	ctx.workspace = ws;
	srt = load_settings(file, err);
	if (!srt)
		return -1;
	doc = aj_policy_import_srt(srt, &ctx, err);
	json_decref(srt);
	if (!doc)
		return aj_err_prefix(err, "srt settings \"%s\"", file);
	text = json_dumps(doc, JSON_INDENT(2));
	json_decref(doc);
	if (!text)
		return aj_err_sys(err, AJ_LAYER_POLICY, "formatting the policy");
	return write_out(c->out, text, err);
}

static int cmd_import_srt(int argc, char **argv)
{
	struct import_cli c = {NULL, NULL, false};
	const char *file = NULL;
	struct aj_err err;
	int pos = 1;

	aj_err_clear(&err);
	if (aj_args_parse(import_options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (pos < argc)
		file = argv[pos++];
	if (aj_args_parse(import_options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (c.help) {
		aj_args_usage(stdout, "agentjail policy import-srt FILE [-o OUT] [-w DIR]",
			      "Convert an Anthropic sandbox-runtime (srt) settings file into an "
			      "agentjail policy.\nWhat has no equivalent is refused (exit 125) naming "
			      "its field; dropped settings get a note on stderr.",
			      import_options);
		return 0;
	}
	if (!file || pos < argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "policy import-srt: %s",
			   file ? "one settings file only" : "which settings file? (FILE)");
		aj_err_hint(&err, "agentjail policy import-srt FILE [-o OUT]");
		goto fail;
	}
	if (import_file(&c, file, &err) == 0)
		return 0;
fail:
	aj_err_print(&err, stderr);
	return 125;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} subcommands[] = {
	{"import-srt", cmd_import_srt,
	 "convert a sandbox-runtime (srt) settings file into a policy"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: agentjail policy SUBCOMMAND [OPTIONS]\n\nsubcommands:\n");
	for (size_t i = 0; i < AJ_ARRAY_SIZE(subcommands); i++)
		fprintf(f, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(f, "\nagentjail policy SUBCOMMAND --help shows its options; docs/policy.md "
		   "documents the policy format.\n");
}

int aj_cmd_policy(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 125;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < AJ_ARRAY_SIZE(subcommands); i++)
		if (strcmp(argv[1], subcommands[i].name) == 0)
			return subcommands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "agentjail: [usage] policy: unknown subcommand \"%s\"\n", argv[1]);
	usage(stderr);
	return 125;
}
