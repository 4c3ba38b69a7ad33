/* agentjail policy SUBCOMMAND: work with policy files.
 *
 *   agentjail policy import-srt FILE [-o OUT] [-w DIR]
 *
 * import-srt converts an Anthropic sandbox-runtime (srt) settings file into a policy
 * (src/policy/import_srt.c holds the conversion; this file gives it the host: the home, the
 * workspace, path resolution, the look for host unix sockets, and where the notes and the
 * result go).
 */
#include <dirent.h>
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
#include "cli/common.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "policy/import_srt.h"

struct import_cli {
	const char *out, *workspace;
};

static const struct aj_option import_options[] = {
	{AJ_OPT("output", 'o', AJ_OPT_STRING), .off = offsetof(struct import_cli, out),
	 .metavar = "OUT", .complete = AJ_COMP_FILE,
	 .help = "write the policy to OUT instead of stdout"},
	{AJ_OPT("workspace", 'w', AJ_OPT_STRING), .off = offsetof(struct import_cli, workspace),
	 .metavar = "DIR", .complete = AJ_COMP_DIR,
	 .help = "the directory srt would run in (default: the current one): relative paths and "
		 "\".\" resolve against it, and it becomes filesystem.workspace"},
	AJ_OPT_END,
};

/* The canonical form of a path: what the kernel reaches through it (realpath when the path
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

/* The look for host unix sockets in a grant is bounded: a grant too large to look through is
 * refused (with this reason) rather than half-checked. */
#define SOCK_WALK_ENTRIES 200000
#define SOCK_WALK_DEPTH 64

struct sock_walk {
	char path[PATH_MAX]; /* the directory being read, then the entry */
	size_t entries;
	char *found;
	size_t len;
};

static enum aj_srt_sock walk_gave_up(struct sock_walk *w, const char *what, int e)
{
	snprintf(w->found, w->len, "%s \"%s\": %s", what, w->path, strerror(e));
	return AJ_SRT_SOCK_UNCHECKED;
}

/* One entry of the directory dfd; w->path names the entry. */
static enum aj_srt_sock walk_entry(struct sock_walk *w, int dfd, const char *name,
				   unsigned char type, unsigned depth);

/* Reads the directory dfd (closed here), named w->path. Symlinks are not followed: in the
 * sandbox one leads only where it can see anyway. */
static enum aj_srt_sock walk_dir(struct sock_walk *w, int dfd, unsigned depth)
{
	size_t plen = strlen(w->path);
	enum aj_srt_sock r = AJ_SRT_SOCK_NONE;
	struct dirent *e;
	DIR *d = fdopendir(dfd);

	if (!d) {
		int saved = errno;
		close(dfd);
		return walk_gave_up(w, "cannot read", saved);
	}
	while (r == AJ_SRT_SOCK_NONE) {
		errno = 0;
		e = readdir(d);
		if (!e) {
			if (errno)
				r = walk_gave_up(w, "cannot read", errno);
			break;
		}
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (++w->entries > SOCK_WALK_ENTRIES) {
			snprintf(w->found, w->len, "more than %d entries", SOCK_WALK_ENTRIES);
			r = AJ_SRT_SOCK_UNCHECKED;
			break;
		}
		if (plen + 1 + strlen(e->d_name) >= sizeof w->path) {
			r = walk_gave_up(w, "a path too long below", ENAMETOOLONG);
			break;
		}
		snprintf(w->path + plen, sizeof w->path - plen, "/%s", e->d_name);
		r = walk_entry(w, dirfd(d), e->d_name, e->d_type, depth);
		if (r == AJ_SRT_SOCK_NONE)
			w->path[plen] = '\0';
	}
	closedir(d);
	return r;
}

static enum aj_srt_sock walk_entry(struct sock_walk *w, int dfd, const char *name,
				   unsigned char type, unsigned depth)
{
	struct stat st;
	int fd;

	if (type == DT_UNKNOWN) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? AJ_SRT_SOCK_NONE
					       : walk_gave_up(w, "cannot stat", errno);
		type = S_ISSOCK(st.st_mode) ? DT_SOCK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
	}
	if (type == DT_SOCK) {
		snprintf(w->found, w->len, "%s", w->path);
		return AJ_SRT_SOCK_FOUND;
	}
	if (type != DT_DIR)
		return AJ_SRT_SOCK_NONE;
	if (depth >= SOCK_WALK_DEPTH) {
		snprintf(w->found, w->len, "more than %d directory levels", SOCK_WALK_DEPTH);
		return AJ_SRT_SOCK_UNCHECKED;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? AJ_SRT_SOCK_NONE : walk_gave_up(w, "cannot read", errno);
	return walk_dir(w, fd, depth + 1);
}

/* struct aj_srt_ctx.find_socket: srt's sandbox may not create unix sockets, so it reaches no
 * host socket; an agentjail sandbox can connect to one in a grant. */
static enum aj_srt_sock find_socket(const char *path, char *found, size_t len, void *opaque)
{
	struct sock_walk w = {.found = found, .len = len};
	struct stat st;
	int fd;

	(void)opaque;
	snprintf(w.path, sizeof w.path, "%s", path);
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? AJ_SRT_SOCK_NONE : walk_gave_up(&w, "cannot stat", errno);
	if (S_ISSOCK(st.st_mode)) {
		snprintf(found, len, "%s", path);
		return AJ_SRT_SOCK_FOUND;
	}
	if (!S_ISDIR(st.st_mode))
		return AJ_SRT_SOCK_NONE;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return walk_gave_up(&w, "cannot read", errno);
	return walk_dir(&w, fd, 0);
}

static void print_note(const char *msg, void *opaque)
{
	(void)opaque;
	aj_cli_log(AJ_LOG_WARN, "note: %s", msg);
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
	struct aj_srt_ctx ctx = {
		.home = home_dir(),
		.resolve = resolve_path,
		.find_socket = find_socket,
		.note = print_note,
	};
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

static int cmd_import_srt(const struct aj_verb *v, int argc, char **argv)
{
	struct import_cli c = {NULL, NULL};
	struct aj_err err;
	char **args;
	int nargs, r;

	aj_err_clear(&err);
	if ((r = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) > 0)
		return 0;
	if (r == 0 && nargs != 1) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "policy import-srt: %s",
			   nargs ? "one settings file only" : "which settings file? (FILE)");
		r = aj_err_hint(&err, "agentjail policy import-srt FILE [-o OUT]");
	}
	if (r == 0 && import_file(&c, args[0], &err) == 0)
		return 0;
	aj_err_print(&err, stderr);
	return 125;
}

static const struct aj_arg import_args[] = {
	AJ_ARG("FILE", AJ_COMP_FILE),
	AJ_ARG_END,
};
static const struct aj_verb import_srt = {
	.name = "import-srt",
	.fn = cmd_import_srt,
	.summary = "convert a sandbox-runtime (srt) settings file into a policy",
	.synopsis = "policy import-srt FILE [-o OUT] [-w DIR]",
	.help = "Convert an Anthropic sandbox-runtime (srt) settings file into an agentjail "
		"policy.\nWhat has no equivalent is refused (exit 125) naming its field; dropped "
		"settings get a note on stderr.",
	.options = import_options,
	.args = import_args,
};
static const struct aj_verb *const subcommands[] = {&import_srt, NULL};

static int cmd_policy(const struct aj_verb *v, int argc, char **argv)
{
	return aj_verb_run_sub(v, "docs/policy.md documents the policy format.", argc, argv);
}

static const char *const policy_words[] = {"import-srt", NULL};
static const struct aj_arg policy_args[] = {
	AJ_ARG_WORDS("SUBCOMMAND", policy_words),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_policy = {
	.name = "policy",
	.fn = cmd_policy,
	.summary = "work with policy files (import an srt settings file)",
	.synopsis = "policy SUBCOMMAND [OPTIONS]",
	.help = "Work with policy files; docs/policy.md documents the format.",
	.args = policy_args,
	.flags = AJ_VERB_OWN_ARGS,
	.subs = subcommands,
};
