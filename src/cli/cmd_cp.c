/* agentjail cp SRC DST, one side NAME:PATH: copies through the sandbox's boundary.
 *
 * Inside the sandbox, every path is opened by the sandbox's init, as the sandbox user, under
 * its mount tree and Landlock rules: a symlink there resolves inside the sandbox, never to a
 * host path. Copying out, symlinks are followed inside the sandbox and their content copied:
 * a link recreated on the host would point at host files (a link to /etc/shadow made in the
 * sandbox names the host's once it is on the host). On the host side, paths below the destination are created relative to an open
 * directory with O_NOFOLLOW and names checked to be single components, so a hostile name or a
 * symlink in the sandbox cannot steer a write outside the destination.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/cleanup.h"
#include "common/strv.h"
#include "common/util.h"
#include "control/fsops.h"

#define MAX_DEPTH 64

struct cp_ctx {
	int ctl;
	struct aj_err *err;
	unsigned files;
	uint64_t bytes;
};

static int sb_open(struct cp_ctx *x, const char *path, enum aj_fs_mode mode, int perm,
		   struct aj_fs_file *f)
{
	return aj_fs_file_open(x->ctl, path, mode, perm, f, x->err);
}

/* Directories keep their mode, except that their owner may always fill them (as a later
 * copy into them would need). */
static int sb_mkdir(struct cp_ctx *x, const char *path, mode_t mode)
{
	return aj_fs_mkdir_mode(x->ctl, path, true, (int)((mode & 0777) | 0700), x->err);
}

/* Host file in -> the sandbox's file out; out is closed, checked (its last write may fail
 * only there). */
static int copy_in(struct cp_ctx *x, int in, struct aj_fs_file *out, const char *what)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return aj_err_sys(x->err, AJ_LAYER_IO, "read %s", what);
		if (n == 0)
			return aj_fs_file_close(out, x->err);
		if (aj_fs_file_write(out, buf, (size_t)n, x->err) < 0)
			return -1;
		x->bytes += (uint64_t)n;
	}
}

/* The sandbox's file in -> host file out. */
static int copy_out(struct cp_ctx *x, struct aj_fs_file *in, int out, const char *what)
{
	char buf[65536];

	for (;;) {
		ssize_t n = aj_fs_file_read(in, buf, sizeof buf, x->err);
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (aj_write_all(out, buf, (size_t)n) < 0)
			return aj_err_sys(x->err, AJ_LAYER_IO, "write %s", what);
		x->bytes += (uint64_t)n;
	}
}

/* ---- host -> sandbox ------------------------------------------------------------------- */

static int put_tree(struct cp_ctx *x, int hdir, const char *name, const char *dst, int depth,
		    mode_t mode);

static int put_entry(struct cp_ctx *x, int hdir, const char *name, const char *dst, int depth)
{
	struct stat st;
	_cleanup_close_ int in = -1;
	_cleanup_fs_file_ struct aj_fs_file out = AJ_FS_FILE_INIT;

	if (fstatat(hdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return aj_err_sys(x->err, AJ_LAYER_IO, "stat \"%s\"", name);
	if (S_ISDIR(st.st_mode))
		return put_tree(x, hdir, name, dst, depth + 1, st.st_mode);
	if (!S_ISREG(st.st_mode)) {
		aj_cli_log(AJ_LOG_WARN, "cp: skipping \"%s\" (not a regular file)", name);
		return 0;
	}
	in = openat(hdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return aj_err_sys(x->err, AJ_LAYER_IO, "open \"%s\"", name);
	if (sb_open(x, dst, AJ_FS_WRITE, (int)(st.st_mode & 0777), &out) < 0)
		return -1;
	x->files++;
	return copy_in(x, in, &out, dst);
}

static int put_tree(struct cp_ctx *x, int hdir, const char *name, const char *dst, int depth,
		    mode_t mode)
{
	_cleanup_close_ int d = openat(hdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dp;
	struct dirent *e;
	int r = 0;

	if (depth > MAX_DEPTH)
		return aj_err_set(x->err, AJ_LAYER_IO, ELOOP, "deeper than %d levels", MAX_DEPTH);
	if (d < 0)
		return aj_err_sys(x->err, AJ_LAYER_IO, "open directory \"%s\"", name);
	if (sb_mkdir(x, dst, mode) < 0)
		return -1;
	if (!(dp = fdopendir(dup(d))))
		return aj_err_sys(x->err, AJ_LAYER_IO, "read \"%s\"", name);
	while (r == 0 && (e = readdir(dp))) {
		char child[4200];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(child, sizeof child, "%s/%s", dst, e->d_name);
		r = put_entry(x, d, e->d_name, child, depth);
	}
	closedir(dp);
	return r;
}

/* ---- sandbox -> host ------------------------------------------------------------------- */

static bool safe_name(const char *n)
{
	return n[0] && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..");
}

static int get_tree(struct cp_ctx *x, const char *src, int hparent, const char *name, int depth,
		    mode_t mode);

static int get_entry(struct cp_ctx *x, const char *src, int hparent, const char *name, int depth)
{
	_cleanup_fs_file_ struct aj_fs_file pf = AJ_FS_FILE_INIT, in = AJ_FS_FILE_INIT;
	_cleanup_close_ int out = -1;

	if (sb_open(x, src, AJ_FS_FOLLOW, 0, &pf) < 0) {
		if (depth == 0 || x->err->errnum != ENOENT)
			return -1;
		aj_cli_log(AJ_LOG_WARN, "cp: skipping \"%s\" (a dangling link)", src);
		aj_err_clear(x->err);
		return 0;
	}
	if (S_ISDIR(pf.st.st_mode))
		return get_tree(x, src, hparent, name, depth + 1, pf.st.st_mode);
	if (!S_ISREG(pf.st.st_mode))
		return 0;
	if (sb_open(x, src, AJ_FS_READ, 0, &in) < 0)
		return -1;
	out = openat(hparent, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		     pf.st.st_mode & 0777);
	if (out < 0)
		return aj_err_sys(x->err, AJ_LAYER_IO, "create \"%s\" on the host (an existing "
						       "symlink there is never followed)",
				  name);
	x->files++;
	return copy_out(x, &in, out, name);
}

static int add_name(void *arg, const struct aj_fs_entry *e)
{
	if (safe_name(e->name))
		aj_strv_push(arg, e->name);
	return 0;
}

static int get_tree(struct cp_ctx *x, const char *src, int hparent, const char *name, int depth,
		    mode_t mode)
{
	_cleanup_strv_ struct aj_strv names = AJ_STRV_INIT;
	_cleanup_close_ int hd = -1;
	int r = 0;

	if (depth > MAX_DEPTH)
		return aj_err_set(x->err, AJ_LAYER_IO, ELOOP, "deeper than %d levels", MAX_DEPTH);
	/* The names first, through init (a listing holds nothing open while they are copied). */
	if (aj_fs_list(x->ctl, src, add_name, &names, x->err) < 0)
		return -1;
	if (mkdirat(hparent, name, (mode & 0777) | 0700) < 0 && errno != EEXIST)
		return aj_err_sys(x->err, AJ_LAYER_IO, "create \"%s\" on the host", name);
	hd = openat(hparent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hd < 0)
		return aj_err_sys(x->err, AJ_LAYER_IO, "open \"%s\" on the host", name);
	for (size_t i = 0; r == 0 && i < names.n; i++) {
		char child[4200];
		snprintf(child, sizeof child, "%s/%s", src, names.v[i]);
		r = get_entry(x, child, hd, names.v[i], depth);
	}
	return r;
}

/* ---- command ----------------------------------------------------------------------------- */

static char *split_remote(char *arg)
{
	char *colon = strchr(arg, ':');

	if (!colon || arg[0] == '/' || arg[0] == '.')
		return NULL;
	*colon = '\0';
	return colon + 1;
}

static int run_cp(struct cp_ctx *x, char *src_path, char *dst_path, bool to_sandbox)
{
	char dstbuf[4200], namebuf[4096];
	struct stat st;
	_cleanup_close_ int pd = -1;
	struct stat probe;

	snprintf(namebuf, sizeof namebuf, "%s", src_path);
	if (to_sandbox) {
		/* Into an existing directory: keep the source's name, as cp does. */
		snprintf(dstbuf, sizeof dstbuf, "%s", dst_path);
		if (aj_fs_stat(x->ctl, dst_path, true, &probe, x->err) == 0 && S_ISDIR(probe.st_mode))
			snprintf(dstbuf, sizeof dstbuf, "%s/%s", dst_path, basename(namebuf));
		aj_err_clear(x->err);
		snprintf(namebuf, sizeof namebuf, "%s", src_path);
		pd = open(dirname(namebuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(namebuf, sizeof namebuf, "%s", src_path);
		if (pd < 0)
			return aj_err_sys(x->err, AJ_LAYER_IO, "open \"%s\"", src_path);
		return put_entry(x, pd, basename(namebuf), dstbuf, 0);
	}
	if (stat(dst_path, &st) == 0 && S_ISDIR(st.st_mode)) {
		pd = open(dst_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(namebuf, sizeof namebuf, "%s", basename(src_path));
	} else {
		snprintf(dstbuf, sizeof dstbuf, "%s", dst_path);
		pd = open(dirname(dstbuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(dstbuf, sizeof dstbuf, "%s", dst_path);
		snprintf(namebuf, sizeof namebuf, "%s", basename(dstbuf));
	}
	if (pd < 0)
		return aj_err_sys(x->err, AJ_LAYER_IO, "open the destination \"%s\"", dst_path);
	if (!safe_name(namebuf))
		return aj_err_set(x->err, AJ_LAYER_USAGE, EINVAL, "cp: bad destination \"%s\"",
				  dst_path);
	return get_entry(x, src_path, pd, namebuf, 0);
}

static const struct aj_option cp_options[] = {AJ_OPT_END};

static void cp_ctx_close(struct cp_ctx *x)
{
	aj_close_fd(&x->ctl);
}

static int cmd_cp(const struct aj_verb *v, int argc, char **argv)
{
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_sandbox_rec rec;
	struct aj_err err;
	__attribute__((cleanup(cp_ctx_close))) struct cp_ctx x = {.ctl = -1, .err = &err};
	char *src, *dst, *rsrc, *rdst;
	char **args;
	int nargs, r;

	aj_err_clear(&err);
	if ((r = aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err)) != 0)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs != 2) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "cp: expected SRC and DST, one as NAME:PATH");
		return aj_cli_fail(aj_cli.json, &err);
	}
	src = args[0];
	dst = args[1];
	rsrc = split_remote(src);
	rdst = split_remote(dst);
	if (!!rsrc == !!rdst || (rsrc ? rsrc : rdst)[0] != '/') {
		aj_err_set(&err, AJ_LAYER_USAGE, 0,
			   "cp: exactly one side must be NAME:/absolute/path in the sandbox");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_cli_open(&m, &err) < 0 ||
	    (x.ctl = aj_mgr_connect(&m, rsrc ? src : dst, &rec, &err)) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	aj_sandbox_rec_free(&rec);
	if ((rsrc ? run_cp(&x, rsrc, dst, false) : run_cp(&x, src, rdst, true)) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(json_pack("{s:i, s:I}", "files", x.files, "bytes", (json_int_t)x.bytes));
	return 0;
}

static const struct aj_arg cp_args[] = {
	AJ_ARG("SRC", AJ_COMP_FILE),
	AJ_ARG("DST", AJ_COMP_FILE),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_cp = {
	.name = "cp",
	.fn = cmd_cp,
	.summary = "copy files between the host and a sandbox",
	.synopsis = "cp [OPTIONS] SRC DST",
	.help = "Copy files or directories between the host and a running sandbox; one of SRC and "
		"DST is NAME:/PATH.",
	.options = cp_options,
	.args = cp_args,
};
