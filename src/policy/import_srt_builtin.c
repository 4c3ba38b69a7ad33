/* What srt enforces beyond its settings file, and the importer must therefore add or refuse:
 *
 *  - its mandatory write denials (the names of sandbox-utils.ts): files and directories that
 *    run code or configure tools outside the sandbox stay read-only even where writes are
 *    allowed. srt's Linux backend (linuxGetMandatoryDenyPaths) looks for them in the directory
 *    it runs in and, with a search, up to three levels below; its macOS backend matches them
 *    anywhere. The importer protects those at the top of every writable area (the workspace,
 *    each grant), wherever srt runs; copies deeper down are not looked for;
 *  - its unix socket block: srt's seccomp filter refuses socket(AF_UNIX), so its sandbox
 *    reaches no host socket at all, while an agentjail sandbox can connect to a socket file it
 *    sees (connect() is not a write, and a read-only bind does not stop it).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h" /* AJ_ARRAY_SIZE */
#include "common/util.h"
#include "policy/import_srt_internal.h"

/* srt's DANGEROUS_FILES, getDangerousDirectories() and the two parts of a .git directory it
 * denies (hooks always, config unless allowGitConfig, which the importer refuses). */
static const char *const srt_protected[] = {
	".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile",
	".profile", ".ripgreprc", ".mcp.json", ".vscode", ".idea", ".claude/commands",
	".claude/agents", ".git/hooks", ".git/config",
};

static bool is_git_part(const char *name)
{
	return strncmp(name, ".git/", 5) == 0;
}

/* The protected name path is or lies inside, matched at component boundaries and in any
 * case (srt matches them with ripgrep's --iglob), or NULL. */
static const char *protected_part(const char *path)
{
	for (const char *p = path; (p = strchr(p, '/')); p++)
		for (size_t i = 0; i < AJ_ARRAY_SIZE(srt_protected); i++) {
			size_t n = strlen(srt_protected[i]);
			if (strncasecmp(p + 1, srt_protected[i], n) == 0 &&
			    (p[1 + n] == '/' || p[1 + n] == '\0'))
				return srt_protected[i];
		}
	return NULL;
}

/* A write grant srt would keep read-only as a whole grants nothing there; agentjail could
 * only grant it, so it is refused rather than made writable. */
int srt_refuse_protected(const struct srt_path *e, struct aj_err *err)
{
	const char *name = protected_part(e->path);

	if (!name)
		return 0;
	return refuse(err,
		      "%s: \"%s\" is inside \"%s\", which srt keeps read-only even where writes "
		      "are allowed (its mandatory write denials); agentjail does not grant it",
		      e->field, e->text, name);
}

static bool ends_with_part(const char *dir, const char *part, size_t n)
{
	size_t len = strlen(dir);

	return len > n && dir[len - n - 1] == '/' && strncmp(dir + len - n, part, n) == 0;
}

static int keep_read_only(struct srt_import *im, const char *path, struct aj_err *err)
{
	bool exists;
	char *real = srt_resolve(im, path, &exists);

	if (!real)
		return aj_err_sys(err, AJ_LAYER_POLICY, "\"%s\"", path);
	if (exists && aj_path_is_clean_abs(real) && srt_writable_at(im, real))
		srt_push_unique(&im->read_only, real);
	free(real);
	return 0;
}

/* The protected paths in one writable area that exist now become read-only entries (on their
 * target, where srt's deny binds land too). A name the area's own path begins (the area is a
 * .git directory: its hooks) counts as well as one below it. */
static int protect_area(struct srt_import *im, const char *area, bool git, struct aj_err *err)
{
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < AJ_ARRAY_SIZE(srt_protected); i++) {
		const char *name = srt_protected[i], *tail = name;

		if (!git && is_git_part(name))
			continue;
		for (;;) {
			size_t head = tail == name ? 0 : (size_t)(tail - name - 1);
			const char *slash = strchr(tail, '/');

			if (head == 0 || ends_with_part(area, name, head)) {
				snprintf(path, sizeof path, "%s/%s", strcmp(area, "/") ? area : "",
					 tail);
				if (keep_read_only(im, path, err) < 0)
					return -1;
			}
			if (!slash)
				break;
			tail = slash + 1;
		}
	}
	return 0;
}

/* agentjail keeps the protected names that exist in each writable area read-only; a writable
 * workspace's .git/hooks and .git/config are filesystem.protect_git's, which also creates
 * them when missing and pins .git. */
int srt_builtin_denies(struct srt_import *im, struct aj_err *err)
{
	size_t before = im->read_only.n, grants = im->read_write.n;

	if (im->ws_write && protect_area(im, im->ctx->workspace, false, err) < 0)
		return -1;
	for (size_t i = 0; i < grants; i++)
		if (protect_area(im, im->read_write.v[i], true, err) < 0)
			return -1;
	if (!im->ws_write && grants == 0)
		return 0;
	srt_note(im, "of srt's built-in write protections, agentjail keeps %zu existing path(s) "
		 "in what is writable read-only%s; it cannot stop those that are missing from "
		 "being created, nor a symlinked one from being replaced (srt's list: .bashrc, "
		 ".mcp.json, .vscode, .claude/commands, .git/hooks, ...), nor protect copies in "
		 "subdirectories",
		 im->read_only.n - before,
		 im->ws_write ? ", and the workspace's .git/hooks and .git/config "
				"(filesystem.protect_git)"
			      : "");
	return 0;
}

/* ---- unix sockets -------------------------------------------------------------------------- */

static const char *field_of(const struct srt_paths *l, const char *path, const char *dflt)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].path, path) == 0)
			return l->v[i].field;
	return dflt;
}

static bool inside_another(const struct aj_strv *sv, size_t i)
{
	for (size_t j = 0; j < sv->n; j++)
		if (j != i && strcmp(sv->v[i], sv->v[j]) != 0 && aj_path_within(sv->v[i], sv->v[j]))
			return true;
	return false;
}

static int refuse_socket(struct srt_import *im, const char *field, const char *grant,
			 struct aj_err *err)
{
	char found[PATH_MAX + 128] = "";

	switch (im->ctx->find_socket(grant, found, sizeof found, im->ctx->opaque)) {
	case AJ_SRT_SOCK_NONE:
		return 0;
	case AJ_SRT_SOCK_FOUND:
		return refuse(err,
			      "%s: \"%s\" %s \"%s\": srt's sandbox cannot connect to host "
			      "unix sockets (it may not create one), an agentjail sandbox can "
			      "connect to those it sees; grant a path without sockets",
			      field, grant,
			      strcmp(found, grant) ? "holds a unix socket," : "is a unix socket,",
			      found);
	case AJ_SRT_SOCK_UNCHECKED:
		break;
	}
	return refuse(err,
		      "%s: \"%s\" could not be checked for unix sockets (%s): srt's sandbox cannot "
		      "connect to host unix sockets, an agentjail sandbox can connect to those it "
		      "sees; grant a smaller path",
		      field, grant, found);
}

/* Checked once the grants are final, on each outermost one: read_write grants (allowWrite)
 * and read_only grants outside what is writable (allowRead; the other read_only entries lie
 * in writable areas, checked with them). The workspace is not checked: see docs/policy.md. */
int srt_refuse_sockets(struct srt_import *im, struct aj_err *err)
{
	if (!im->ctx->find_socket)
		return 0;
	for (size_t i = 0; i < im->read_write.n; i++) {
		const char *g = im->read_write.v[i];
		if (!inside_another(&im->read_write, i) &&
		    refuse_socket(im, field_of(&im->allow_write, g, "filesystem.read_write"), g,
				  err) < 0)
			return -1;
	}
	for (size_t i = 0; i < im->read_only.n; i++) {
		const char *g = im->read_only.v[i];
		if (!srt_writable_at(im, g) && !inside_another(&im->read_only, i) &&
		    refuse_socket(im, field_of(&im->allow_read, g, "filesystem.read_only"), g,
				  err) < 0)
			return -1;
	}
	return 0;
}
