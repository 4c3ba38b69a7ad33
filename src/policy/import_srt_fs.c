/* The filesystem lists of an srt settings file.
 *
 * The two models differ: srt lets the sandbox read everything but denyRead (allowRead
 * re-opening parts of it) and write nothing but allowWrite minus denyWrite; an agentjail
 * sandbox sees only the system directories, an allowlist of /etc, the workspace and granted
 * paths, and writes only the workspace (when rw), read_write grants and its private /tmp and
 * home. So allowWrite becomes the workspace mode and read_write grants, denyWrite read-only
 * binds inside what is writable, allowRead read-only grants, and denyRead masks -- but only
 * where the sandbox would see the path at all; elsewhere agentjail's default already hides it.
 *
 * Symlinks: srt keeps an allow path spelled as written when it resolves outside itself, skips
 * such write paths, and decides whether an allowRead re-opens a denyRead by comparing the
 * spellings it keeps. So allow paths through such links are refused here (agentjail grants
 * only real paths), re-opening is decided on spellings (struct srt_path.lexical), and what is
 * hidden or kept read-only is the target, which is where srt's deny binds land too.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h" /* AJ_ARRAY_SIZE */
#include "common/util.h"
#include "policy/import_srt_internal.h"
#include "policy/policy.h"

/* Host directories whose contents a sandbox sees: the "system" entries of data/rootfs.rules,
 * and /etc, of which an allowlist is copied or bound in. */
static const char *const system_roots[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
};

/* Writable in every agentjail sandbox, privately: its own /tmp (a tmpfs; /var/tmp links to
 * it), /dev/shm, and the devices of its minimal /dev. An allowWrite naming exactly one of
 * these is dropped: the sandbox writes its own, not the host's. A path below one (srt's own
 * default /tmp/claude, say) is the host's directory and becomes a read_write grant like any
 * other. srt adds its defaults (/dev/null, /dev/tty, /tmp/claude, ~/.npm/_logs, ...,
 * getDefaultWritePaths()) itself, not through the settings file: the importer adds none. */
static const char *const private_writable[] = {
	"/tmp", "/var/tmp", "/dev/shm", "/dev/null", "/dev/zero", "/dev/full",
	"/dev/random", "/dev/urandom", "/dev/tty", "/dev/stdout", "/dev/stderr",
};

static bool within_one_of(const char *path, const char *const *dirs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (aj_path_within(path, dirs[i]))
			return true;
	return false;
}

static bool is_one_of(const char *path, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(path, names[i]) == 0)
			return true;
	return false;
}

static bool strv_covers(const struct aj_strv *sv, const char *path)
{
	for (size_t i = 0; i < sv->n; i++)
		if (aj_path_within(path, sv->v[i]))
			return true;
	return false;
}

static void strv_remove(struct aj_strv *sv, size_t i)
{
	free(sv->v[i]);
	memmove(&sv->v[i], &sv->v[i + 1], (sv->n - i) * sizeof sv->v[0]);
	sv->n--;
}

void srt_push_unique(struct aj_strv *sv, const char *path)
{
	if (!aj_strv_contains(sv, path))
		aj_strv_push(sv, path);
}

/* ---- srt's path forms ----------------------------------------------------------------------- */

/* Lexical clean-up of an absolute path: no "//", "." or ".." components, no trailing '/'
 * (".." at the root stays there, as the kernel has it). */
static int clean_path(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (const char *p = in; *p;) {
		const char *seg;
		size_t sl;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		sl = (size_t)(p - seg);
		if (sl == 0 || (sl == 1 && seg[0] == '.'))
			continue;
		if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			n -= n > 0;
			continue;
		}
		if (n + sl + 2 > len)
			return -1;
		out[n++] = '/';
		memcpy(out + n, seg, sl);
		n += sl;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* srt's path forms (sandbox-utils.ts, normalizePathForSandbox and expandTilde): "~" and
 * "~/..." are the home; any other path not starting with '/' is relative to the directory
 * srt runs in; a trailing '/', or a trailing '/' and two stars, names the directory itself.
 * srt reads "~bob/x" as a relative path named "~bob", which is never what its author meant:
 * refused. Globs are refused too: agentjail binds and masks name concrete paths, and srt's
 * Linux backend expands denyRead globs only at launch (later matches are not covered either
 * way) and skips them in the write lists. */
static int expand(const struct srt_import *im, const char *field, const char *text, char *out,
		  size_t len, struct aj_err *err)
{
	char raw[PATH_MAX], joined[2 * PATH_MAX + 2];
	size_t n = strlen(text);

	if (n == 0)
		return refuse(err, "%s: an empty path", field);
	if (n >= sizeof raw)
		return refuse(err, "%s: the path is longer than %d bytes", field, PATH_MAX - 1);
	memcpy(raw, text, n + 1);
	if (n >= 3 && strcmp(raw + n - 3, "/**") == 0)
		raw[n - 2] = '\0';
	if (strpbrk(raw, "*?[]"))
		return refuse(err,
			      "%s: \"%s\" is a glob pattern; agentjail names concrete paths "
			      "(list them, or name the directory that holds them)",
			      field, text);
	if (raw[0] == '~' && raw[1] != '\0' && raw[1] != '/')
		return refuse(err,
			      "%s: \"%s\": srt expands only \"~\" and \"~/\" and would read this as "
			      "a relative path; write the absolute path",
			      field, text);
	if (raw[0] == '~' && !im->ctx->home)
		return refuse(err, "%s: \"%s\" names the home directory, and HOME is not set", field,
			      text);
	if (raw[0] == '~')
		snprintf(joined, sizeof joined, "%s/%s", im->ctx->home, raw + 1);
	else if (raw[0] != '/')
		snprintf(joined, sizeof joined, "%s/%s", im->ctx->workspace, raw);
	else
		snprintf(joined, sizeof joined, "%s", raw);
	if (clean_path(joined, out, len) < 0)
		return refuse(err, "%s: \"%s\" expands to a path longer than %d bytes", field, text,
			      PATH_MAX - 1);
	return 0;
}

/* The canonical form through the context's hook (agentjail's validation insists on canonical
 * grants): malloc'd, NULL when the hook fails. */
char *srt_resolve(const struct srt_import *im, const char *path, bool *exists)
{
	if (im->ctx->resolve)
		return im->ctx->resolve(path, exists, im->ctx->opaque);
	*exists = true;
	return aj_xstrdup(path);
}

static void path_free(struct srt_path *e)
{
	free(e->text);
	free(e->lexical);
	free(e->path);
}

int srt_add_path(struct srt_import *im, struct srt_paths *l, const char *field, const char *text,
		 struct aj_err *err)
{
	char clean[PATH_MAX];
	struct srt_path *e;

	if (expand(im, field, text, clean, sizeof clean, err) < 0)
		return -1;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		l->v = aj_xrealloc(l->v, l->cap * sizeof *l->v);
	}
	e = &l->v[l->n];
	memset(e, 0, sizeof *e);
	snprintf(e->field, sizeof e->field, "%s", field);
	e->text = aj_xstrdup(text);
	e->lexical = aj_xstrdup(clean);
	e->path = srt_resolve(im, clean, &e->exists);
	if (!e->path) {
		path_free(e);
		return aj_err_sys(err, AJ_LAYER_POLICY, "%s", field);
	}
	if (!aj_path_is_clean_abs(e->path)) {
		refuse(err, "%s: \"%s\" resolves to \"%s\", which is not a clean absolute path",
		       field, text, e->path);
		path_free(e);
		return -1;
	}
	l->n++;
	return 0;
}

void srt_paths_free(struct srt_paths *l)
{
	for (size_t i = 0; i < l->n; i++)
		path_free(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* srt's isSymlinkOutsideBoundary (sandbox-utils.ts), as it decides on Linux: a path whose
 * resolution is neither itself nor below itself points "outside expected boundaries"; srt
 * then keeps the path unresolved, and generateFilesystemArgs (linux-sandbox-utils.ts) skips
 * such a write path altogether. Granting the target instead would open what the file never
 * named: a cloned repository's "build -> ../.." is the whole home. */
static int refuse_through_symlink(const struct srt_import *im, const struct srt_path *e,
				  const char *srt_does, struct aj_err *err)
{
	char parent[PATH_MAX], *slash, *real;
	bool exists, leaf;

	if (aj_path_within(e->path, e->lexical))
		return 0;
	snprintf(parent, sizeof parent, "%s", e->lexical);
	slash = strrchr(parent, '/');
	slash[slash == parent] = '\0';
	real = srt_resolve(im, parent, &exists);
	if (!real)
		return aj_err_sys(err, AJ_LAYER_POLICY, "%s", e->field);
	leaf = strcmp(real, parent) == 0;
	free(real);
	if (leaf)
		return refuse(err, "%s: \"%s\" is a symlink to \"%s\"; %s", e->field, e->text,
			      e->path, srt_does);
	return refuse(err, "%s: \"%s\" lies below a symlink and resolves to \"%s\"; %s",
		      e->field, e->text, e->path, srt_does);
}

/* ---- writes --------------------------------------------------------------------------------- */

bool srt_writable_at(const struct srt_import *im, const char *path)
{
	return (im->ws_write && aj_path_within(path, im->ctx->workspace)) ||
	       strv_covers(&im->read_write, path);
}

static void note_missing(struct srt_import *im, const struct srt_path *e, const char *what)
{
	if (!e->exists)
		srt_note(im, "%s: \"%s\" does not exist now; `agentjail run` refuses to start until it "
			 "does (%s)",
			 e->field, e->path, what);
}

static int allow_write(struct srt_import *im, const struct srt_path *e, struct aj_err *err)
{
	const char *ws = im->ctx->workspace, *y = e->path;
	bool private = is_one_of(y, private_writable, AJ_ARRAY_SIZE(private_writable));

	if (refuse_through_symlink(im, e,
				   "srt ignores such entries (it makes nothing writable through a "
				   "symlink that leads outside the path); name the real path if "
				   "that is what is meant",
				   err) < 0)
		return -1;
	/* srt binds the path as it spells it: the spelling decides about the workspace. */
	if (aj_path_within(ws, e->lexical)) {
		im->ws_write = true;
		if (strcmp(e->lexical, ws) == 0)
			return 0;
		if (private) {
			srt_note(im, "%s: \"%s\": the workspace in it becomes writable; the rest is "
				 "the sandbox's own, not the host's",
				 e->field, y);
			return 0;
		}
	} else if (private) {
		srt_note(im, "%s: \"%s\" dropped: every agentjail sandbox can write its own, "
			 "private one",
			 e->field, y);
		return 0;
	}
	if (!aj_policy_path_may_be_writable(y))
		return refuse(err,
			      "%s: \"%s\" is a host system directory, inside one, or a parent of "
			      "one; agentjail never makes those writable",
			      e->field, y);
	if (srt_refuse_protected(e, err) < 0)
		return -1;
	srt_push_unique(&im->read_write, y);
	return 0;
}

/* srt: denyWrite wins over allowWrite. Whatever writable area the path contains loses its
 * write access; inside a writable area it becomes a read-only bind. */
static int deny_write(struct srt_import *im, const struct srt_path *e, struct aj_err *err)
{
	const char *ws = im->ctx->workspace, *x = e->path;
	bool changed = false;

	if (im->ws_write && aj_path_within(ws, x)) {
		im->ws_write = false;
		changed = true;
		srt_note(im, "%s: \"%s\" contains the workspace, which becomes read-only", e->field, x);
	}
	for (size_t i = 0; i < im->read_write.n;) {
		if (!aj_path_within(im->read_write.v[i], x)) {
			i++;
			continue;
		}
		srt_note(im, "%s: \"%s\" is not granted writable after all", e->field,
			 im->read_write.v[i]);
		strv_remove(&im->read_write, i);
		changed = true;
	}
	if (srt_writable_at(im, x)) {
		srt_push_unique(&im->read_only, x);
		return 0;
	}
	if (!changed)
		srt_note(im, "%s: \"%s\" dropped: the sandbox cannot write there anyway", e->field, x);
	return 0;
}

/* Grants the writable workspace already holds, and read-only binds left outside anything
 * writable by a later denyWrite, change nothing but would have to exist at launch. */
static void prune_writes(struct srt_import *im)
{
	for (size_t i = 0; i < im->read_write.n;) {
		if (im->ws_write && aj_path_within(im->read_write.v[i], im->ctx->workspace))
			strv_remove(&im->read_write, i);
		else
			i++;
	}
	for (size_t i = 0; i < im->read_only.n;) {
		if (!srt_writable_at(im, im->read_only.v[i]))
			strv_remove(&im->read_only, i);
		else
			i++;
	}
}

/* Said once the grants are final, so that a grant pruned again is not reported. */
static void note_missing_kept(struct srt_import *im, const struct srt_paths *l,
			      const struct aj_strv *kept, const char *what)
{
	for (size_t i = 0; i < l->n; i++)
		if (aj_strv_contains(kept, l->v[i].path))
			note_missing(im, &l->v[i], what);
}

/* ---- reads ---------------------------------------------------------------------------------- */

/* True if the sandbox sees this host path. */
static bool visible(const struct srt_import *im, const char *path)
{
	return within_one_of(path, system_roots, AJ_ARRAY_SIZE(system_roots)) ||
	       aj_path_within(path, im->ctx->workspace) || strv_covers(&im->read_write, path) ||
	       strv_covers(&im->read_only, path);
}

static bool own_tree(const char *path)
{
	return aj_path_within(path, "/proc") || aj_path_within(path, "/dev");
}

/* srt: allowRead re-opens reading inside a denyRead. Outside what agentjail shows, it is an
 * explicit "the sandbox may read this": a read-only grant. */
static int allow_read(struct srt_import *im, const struct srt_path *e, struct aj_err *err)
{
	const char *y = e->path;

	if (refuse_through_symlink(im, e,
				   "srt does not resolve such entries and compares them with "
				   "denyRead as spelled, and agentjail grants only real paths; "
				   "name the real path if that is what is meant",
				   err) < 0)
		return -1;
	if (visible(im, y))
		return 0;
	if (own_tree(y) || is_one_of(y, private_writable, AJ_ARRAY_SIZE(private_writable))) {
		srt_note(im, "%s: \"%s\" dropped: the sandbox has its own, not the host's", e->field,
			 y);
		return 0;
	}
	if (strcmp(y, "/") == 0)
		return refuse(err, "%s: \"/\" would show the whole host to the sandbox", e->field);
	note_missing(im, e, "a read_only grant must exist");
	srt_push_unique(&im->read_only, y);
	return 0;
}

/* An allowRead strictly inside path: a mask of path would hide it. */
static const struct srt_path *allow_read_inside(const struct srt_import *im, const char *path)
{
	for (size_t i = 0; i < im->allow_read.n; i++) {
		const char *y = im->allow_read.v[i].path;
		if (strcmp(y, path) != 0 && aj_path_within(y, path))
			return &im->allow_read.v[i];
	}
	return NULL;
}

/* srt re-opens a denied path for an allowRead that names it, comparing the spellings it
 * keeps (readAllowPaths.includes() for a file, the re-bind of pushReadDenyDirMounts for a
 * directory). A denyRead spelled through a symlink is therefore re-opened only by the same
 * spelling, never by its target's: which agentjail refuses in allowRead anyway. */
static const struct srt_path *reopens(const struct srt_import *im, const struct srt_path *d)
{
	for (size_t i = 0; i < im->allow_read.n; i++)
		if (strcmp(im->allow_read.v[i].lexical, d->lexical) == 0)
			return &im->allow_read.v[i];
	return NULL;
}

/* srt hides a denied directory with a tmpfs and binds back the allowRead paths inside it
 * (pushReadDenyDirMounts): what lies in such an allowRead stays readable. An allowRead
 * above the denied directory re-opens nothing below it. */
static const struct srt_path *reopened_below(const struct srt_import *im,
					     const struct srt_path *d, const char *path)
{
	for (size_t i = 0; i < im->allow_read.n; i++) {
		const struct srt_path *y = &im->allow_read.v[i];
		if (aj_path_within(path, y->path) && aj_path_within(y->lexical, d->lexical))
			return y;
	}
	return NULL;
}

/* A mask hides its whole tree: an allowRead below it cannot be honoured. */
static int mask(struct srt_import *im, const struct srt_path *e, const char *target, bool exists,
		struct aj_err *err)
{
	const struct srt_path *y = allow_read_inside(im, target);

	if (y)
		return refuse(err,
			      "%s: \"%s\" re-opens a path inside \"%s\" (%s), which agentjail can "
			      "only hide as a whole: a mask cannot be re-opened below",
			      y->field, y->path, target, e->field);
	if (!exists && srt_writable_at(im, target))
		srt_note(im, "%s: \"%s\" does not exist now; `agentjail run` refuses to start until "
			 "it does (a mask inside a writable area must find its target)",
			 e->field, target);
	srt_push_unique(&im->mask, target);
	return 0;
}

/* A denied path the sandbox does not see can still contain things it sees: each of those
 * becomes a mask of its own, unless an allowRead inside the denied path re-opens it. */
static int hide_below(struct srt_import *im, const struct srt_path *e, struct aj_err *err)
{
	const struct aj_strv *grants[] = {&im->read_write, &im->read_only};
	_cleanup_strv_ struct aj_strv roots = AJ_STRV_INIT;
	size_t hidden = 0, reopened = 0;
	int r = 0;

	for (size_t i = 0; i < AJ_ARRAY_SIZE(system_roots); i++)
		aj_strv_push(&roots, system_roots[i]);
	aj_strv_push(&roots, im->ctx->workspace);
	for (size_t g = 0; g < AJ_ARRAY_SIZE(grants); g++)
		for (size_t i = 0; i < grants[g]->n; i++)
			aj_strv_push(&roots, grants[g]->v[i]);
	for (size_t i = 0; r == 0 && i < roots.n; i++) {
		const char *root = roots.v[i];
		if (!aj_path_within(root, e->path))
			continue;
		if (reopened_below(im, e, root)) {
			reopened++;
			continue;
		}
		srt_note(im, "%s: \"%s\" hides \"%s\", which the sandbox would see", e->field,
			 e->path, root);
		r = mask(im, e, root, true, err);
		hidden++;
	}
	if (r == 0 && hidden == 0)
		srt_note(im, "%s: \"%s\" dropped: %s", e->field, e->path,
			 reopened ? "allowRead re-opens what the sandbox sees in it"
				  : "the sandbox does not see it anyway");
	return r;
}

static int deny_read(struct srt_import *im, const struct srt_path *e, struct aj_err *err)
{
	const struct srt_path *y;

	if (own_tree(e->path))
		return refuse(err,
			      "%s: \"%s\": agentjail builds a /proc and a /dev of its own for each "
			      "sandbox; the importer cannot hide paths in them",
			      e->field, e->path);
	y = reopens(im, e);
	if (y) {
		/* srt: allowRead wins over a denyRead of the same path, not of a deeper one. */
		srt_note(im, "%s: \"%s\" dropped: %s re-opens it", e->field, e->path, y->field);
		return 0;
	}
	if (visible(im, e->path))
		return mask(im, e, e->path, e->exists, err);
	return hide_below(im, e, err);
}

/* A mask inside another is hidden by it and would fail at launch for want of its target. */
static void prune_masks(struct srt_import *im)
{
	for (size_t i = 0; i < im->mask.n;) {
		bool nested = false;
		for (size_t j = 0; j < im->mask.n && !nested; j++)
			nested = j != i && strcmp(im->mask.v[i], im->mask.v[j]) != 0 &&
				 aj_path_within(im->mask.v[i], im->mask.v[j]);
		if (nested)
			strv_remove(&im->mask, i);
		else
			i++;
	}
}

/* Order matters: writes first (they decide what is writable, which decides how a denied
 * write and a denied read are expressed), reads last (they must see every grant). */
int srt_convert_fs(struct srt_import *im, struct aj_err *err)
{
	for (size_t i = 0; i < im->allow_write.n; i++)
		if (allow_write(im, &im->allow_write.v[i], err) < 0)
			return -1;
	for (size_t i = 0; i < im->deny_write.n; i++)
		if (deny_write(im, &im->deny_write.v[i], err) < 0)
			return -1;
	prune_writes(im);
	note_missing_kept(im, &im->allow_write, &im->read_write, "a read_write grant must exist");
	note_missing_kept(im, &im->deny_write, &im->read_only,
			  "agentjail keeps an existing path read-only but cannot stop a missing one "
			  "from being created");
	if (srt_builtin_denies(im, err) < 0)
		return -1;
	for (size_t i = 0; i < im->allow_read.n; i++)
		if (allow_read(im, &im->allow_read.v[i], err) < 0)
			return -1;
	for (size_t i = 0; i < im->deny_read.n; i++)
		if (deny_read(im, &im->deny_read.v[i], err) < 0)
			return -1;
	prune_masks(im);
	return srt_refuse_sockets(im, err);
}
