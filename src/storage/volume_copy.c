/* `agentjail volume cp`: files between the host and a volume, never following a link inside the
 * volume (where sandboxes make them): paths in it are resolved beneath its data directory
 * without symlinks, every entry below is opened with O_NOFOLLOW, and links are copied as links.
 */
#include "storage/volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

#define MAX_DEPTH 64

struct copy {
	uid_t uid; /* owner of what is made; (uid_t)-1: the caller's */
	gid_t gid;
	unsigned files, skipped;
	struct aj_err *err;
};

static void own(struct copy *c, int dir, const char *name)
{
	if (c->uid != (uid_t)-1)
		fchownat(dir, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW);
}

static int copy_file(struct copy *c, int sdir, const char *sname, int ddir, const char *dname,
		     mode_t mode)
{
	/* O_NONBLOCK and a regular file on both sides: a FIFO swapped in by a sandbox must not
	 * hold the copy, nor anything but a file be truncated. */
	_cleanup_close_ int in = openat(sdir, sname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
							     O_NONBLOCK);
	_cleanup_close_ int out = -1;
	char buf[65536];
	struct stat si, so;
	ssize_t n;

	if (in < 0 || fstat(in, &si) < 0 || !S_ISREG(si.st_mode))
		return aj_err_sys(c->err, AJ_LAYER_IO, "open \"%s\" (a regular file)", sname);
	out = openat(ddir, dname, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		     mode & 0777);
	if (out < 0 || fstat(out, &so) < 0 || !S_ISREG(so.st_mode))
		return aj_err_sys(c->err, AJ_LAYER_IO, "create \"%s\" (a regular file)", dname);
	if (so.st_dev == si.st_dev && so.st_ino == si.st_ino)
		return aj_err_set(c->err, AJ_LAYER_USAGE, EINVAL, "\"%s\" is its own destination",
				  sname);
	if (fcntl(in, F_SETFL, O_RDONLY) < 0 || fcntl(out, F_SETFL, O_WRONLY) < 0 ||
	    ftruncate(out, 0) < 0)
		return aj_err_sys(c->err, AJ_LAYER_IO, "write \"%s\"", dname);
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (aj_write_all(out, buf, (size_t)n) < 0)
			return aj_err_sys(c->err, AJ_LAYER_IO, "write \"%s\"", dname);
	if (n < 0)
		return aj_err_sys(c->err, AJ_LAYER_IO, "read \"%s\"", sname);
	fchmod(out, mode & 07777 & ~(mode_t)06000);
	own(c, ddir, dname);
	c->files++;
	return 0;
}

static int copy_entry(struct copy *c, int sdir, const char *sname, int ddir, const char *dname,
		      int depth);

static int copy_dir(struct copy *c, int sdir, const char *sname, int ddir, const char *dname,
		    mode_t mode, int depth)
{
	_cleanup_close_ int s = -1, d = -1;
	_cleanup_closedir_ DIR *list = NULL;
	struct dirent *e;

	if (depth > MAX_DEPTH)
		return aj_err_set(c->err, AJ_LAYER_IO, ELOOP, "\"%s\": deeper than %d levels", sname,
				  MAX_DEPTH);
	if (mkdirat(ddir, dname, 0700) < 0 && errno != EEXIST)
		return aj_err_sys(c->err, AJ_LAYER_IO, "create \"%s\"", dname);
	s = openat(sdir, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = openat(ddir, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0 || d < 0)
		return aj_err_sys(c->err, AJ_LAYER_IO, "open \"%s\"", s < 0 ? sname : dname);
	list = fdopendir(dup(s));
	if (!list)
		return aj_err_sys(c->err, AJ_LAYER_IO, "read \"%s\"", sname);
	while ((e = readdir(list)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    copy_entry(c, s, e->d_name, d, e->d_name, depth + 1) < 0)
			return -1;
	fchmod(d, mode & 01777);
	own(c, ddir, dname);
	return 0;
}

static int copy_entry(struct copy *c, int sdir, const char *sname, int ddir, const char *dname,
		      int depth)
{
	struct stat st;
	char target[4096];
	ssize_t n;

	if (fstatat(sdir, sname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return aj_err_sys(c->err, AJ_LAYER_IO, "stat \"%s\"", sname);
	if (S_ISDIR(st.st_mode))
		return copy_dir(c, sdir, sname, ddir, dname, st.st_mode, depth);
	if (S_ISREG(st.st_mode))
		return copy_file(c, sdir, sname, ddir, dname, st.st_mode);
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(sdir, sname, target, sizeof target - 1);
		if (n < 0)
			return aj_err_sys(c->err, AJ_LAYER_IO, "read the link \"%s\"", sname);
		target[n] = '\0';
		unlinkat(ddir, dname, 0);
		if (symlinkat(target, ddir, dname) < 0)
			return aj_err_sys(c->err, AJ_LAYER_IO, "create the link \"%s\"", dname);
		own(c, ddir, dname);
		c->files++;
		return 0;
	}
	c->skipped++; /* devices, FIFOs, sockets */
	return 0;
}

/* Where `path` (of the tree at root_dir, resolved by `open_in`) lands: into it when it is an
 * existing directory (as `name`), else as it, in its parent. */
static int destination(int root, bool in_volume, const char *path, const char *name, int *dir,
		       char *leaf, size_t len, struct aj_err *err)
{
	char parent[4096];
	const char *slash;
	int fd;

	fd = in_volume ? aj_open_beneath(root, path, O_RDONLY | O_DIRECTORY, RESOLVE_NO_XDEV)
		       : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		*dir = fd;
		snprintf(leaf, len, "%s", name);
		return 0;
	}
	slash = strrchr(path, '/');
	snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - path) : 0, path);
	snprintf(leaf, len, "%s", slash ? slash + 1 : path);
	if (!leaf[0] || !strcmp(leaf, ".") || !strcmp(leaf, ".."))
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "\"%s\" names no file", path);
	fd = in_volume ? aj_open_beneath(root, parent, O_RDONLY | O_DIRECTORY, RESOLVE_NO_XDEV)
		       : open(parent[0] ? parent : (path[0] == '/' ? "/" : "."),
			      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_USAGE, "\"%s\"%s", parent[0] ? parent : path,
				  in_volume && (errno == ELOOP || errno == EXDEV)
					  ? " (through a link or out of the volume)"
					  : "");
	*dir = fd;
	return 0;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

int aj_volume_copy(const struct aj_volume *v, const char *vpath, const char *host_arg, bool in,
		   unsigned *files, struct aj_err *err)
{
	char data[4300], leaf[4096], sparent[4096], host[4096];
	_cleanup_close_ int root = -1, ddir = -1, sdir = -1;
	struct copy c = {.uid = (uid_t)-1, .gid = (gid_t)-1, .err = err};
	const char *slash;
	int r;

	/* Without trailing slashes: the name a tree lands under is its last component. */
	if (snprintf(host, sizeof host, "%s", host_arg) >= (int)sizeof host)
		return aj_err_set(err, AJ_LAYER_USAGE, ENAMETOOLONG, "\"%s\"", host_arg);
	for (size_t n = strlen(host); n > 1 && host[n - 1] == '/'; n--)
		host[n - 1] = '\0';
	if (in && (!strcmp(base_of(host), "/") || !strcmp(base_of(host), ".") ||
		   !strcmp(base_of(host), "..")))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "\"%s\": name the directory to copy, not \"/\", \".\" or \"..\"",
				  host_arg);
	if (aj_volume_data(v, data, sizeof data) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the volume's path");
	root = open(data, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open volume \"%s\"", v->name);
	if (in) {
		if (geteuid() == 0)
			c.uid = c.gid = AJ_VOLUME_ROOT_UID;
		slash = strrchr(host, '/');
		snprintf(sparent, sizeof sparent, "%.*s", slash ? (int)(slash - host) : 0, host);
		sdir = open(sparent[0] ? sparent : (host[0] == '/' ? "/" : "."),
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sdir < 0)
			return aj_err_sys(err, AJ_LAYER_USAGE, "\"%s\"", host);
		if (destination(root, true, vpath, base_of(host), &ddir, leaf, sizeof leaf, err) < 0)
			return -1;
		r = copy_entry(&c, sdir, base_of(host), ddir, leaf, 0);
	} else {
		char vp[4096];
		size_t n;
		snprintf(vp, sizeof vp, "%s", vpath);
		for (n = strlen(vp); n > 0 && vp[n - 1] == '/'; n--)
			vp[n - 1] = '\0';
		slash = strrchr(vp, '/');
		if (!vp[0]) {
			sdir = dup(root); /* the volume's root itself */
			snprintf(sparent, sizeof sparent, ".");
		} else {
			snprintf(sparent, sizeof sparent, "%s", slash ? slash + 1 : vp);
			if (slash)
				vp[slash - vp] = '\0';
			sdir = aj_open_beneath(root, slash ? vp : "", O_RDONLY | O_DIRECTORY,
					       RESOLVE_NO_XDEV);
		}
		if (sdir < 0)
			return aj_err_sys(err, AJ_LAYER_USAGE, "%s:%s%s", v->name, vpath,
					  errno == ELOOP || errno == EXDEV
						  ? " (through a link or out of the volume)"
						  : "");
		if (!strcmp(sparent, "..") || (!strcmp(sparent, ".") && vp[0]))
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s:%s names no file", v->name,
					  vpath);
		if (destination(-1, false, host, !strcmp(sparent, ".") ? v->name : sparent, &ddir,
				leaf, sizeof leaf, err) < 0)
			return -1;
		r = copy_entry(&c, sdir, sparent, ddir, leaf, 0);
	}
	if (files)
		*files = c.files;
	return r;
}
