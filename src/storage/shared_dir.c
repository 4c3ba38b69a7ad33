#include "storage/shared_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tree.h"

/* A temporary directory this old is a crashed writer's (a live one writes in seconds, and
 * its writes keep the directory's mtime fresh). */
#define STALE_TMP_S 600

static int open_dir_at(int at, const char *name)
{
	return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* parent/key, locked shared; -1 with errno ENOENT if it does not exist, or went while the
 * lock was awaited. */
static int lock_key(int base, const char *key)
{
	struct stat a, b;
	int fd = open_dir_at(base, key);

	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_SH) < 0 || fstat(fd, &a) < 0) {
		close(fd);
		return -1;
	}
	if (fstatat(base, key, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(fd);
		errno = ENOENT;
		return -1;
	}
	return fd;
}

static bool stale_tmp(int base, const char *name, time_t now)
{
	struct stat st;

	return strncmp(name, ".tmp-", 5) == 0 &&
	       fstatat(base, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime + STALE_TMP_S < now;
}

static unsigned prune_at(int base, const char *keep)
{
	int dup_fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	struct dirent *de;
	struct aj_err ignored;
	time_t now = time(NULL);
	unsigned gone_n = 0;

	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return 0;
	}
	while ((de = readdir(d))) {
		char gone[128];
		_cleanup_close_ int fd = -1;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (keep && strcmp(de->d_name, keep) == 0))
			continue;
		if (de->d_name[0] == '.') {
			if (stale_tmp(base, de->d_name, now) &&
			    aj_tree_remove_at(base, de->d_name, &ignored) == 0)
				gone_n++;
			continue;
		}
		fd = open_dir_at(base, de->d_name);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		snprintf(gone, sizeof gone, ".tmp-gone-%d-%.64s", (int)getpid(), de->d_name);
		if (renameat(base, de->d_name, base, gone) == 0) {
			aj_close_fd(&fd);
			if (aj_tree_remove_at(base, gone, &ignored) == 0)
				gone_n++;
		}
	}
	closedir(d);
	return gone_n;
}

/* Writes parent/key under a temporary name and renames it; returns a descriptor of it that
 * holds the shared lock, taken before the rename so that no prune can remove it in between;
 * -2 if another writer's came first, -1 with err set on failure. */
static int write_key(int base, const char *key, aj_shared_dir_fill fill, void *arg,
		     struct aj_err *err)
{
	char tmp[128];
	_cleanup_close_ int dir = -1;
	struct aj_err ignored;

	snprintf(tmp, sizeof tmp, ".tmp-%d-%.64s", (int)getpid(), key);
	aj_tree_remove_at(base, tmp, &ignored);
	/* 0755 whatever the umask: every holder's users read it. */
	if (mkdirat(base, tmp, 0755) < 0 || (dir = open_dir_at(base, tmp)) < 0 ||
	    fchmod(dir, 0755) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", tmp);
		goto fail;
	}
	if (fill(dir, arg, err) < 0)
		goto fail;
	/* On disk before it has its name: no holder may read a directory a crash emptied. */
	if (syncfs(dir) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "sync \"%s\"", tmp);
		goto fail;
	}
	if (flock(dir, LOCK_SH) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s\"", tmp);
		goto fail;
	}
	if (renameat(base, tmp, base, key) < 0) {
		if (errno != EEXIST && errno != ENOTEMPTY) {
			aj_err_sys(err, AJ_LAYER_STATE, "rename \"%s\" to \"%s\"", tmp, key);
			goto fail;
		}
		aj_tree_remove_at(base, tmp, &ignored); /* another writer's came first */
		return -2;
	}
	fsync(base);
	prune_at(base, key);
	return aj_steal_fd(&dir);
fail:
	aj_tree_remove_at(base, tmp, &ignored);
	return -1;
}

int aj_shared_dir_open(const char *parent, const char *key, aj_shared_dir_fill fill, void *arg,
		       char *path, size_t len, struct aj_err *err)
{
	_cleanup_close_ int base = -1;
	int fd;

	/* 0700: the key directories are reached through the descriptors their holders open
	 * (the sandboxes' binds), and nobody else may take a lock there that holds starts up. */
	if ((mkdir(parent, 0700) < 0 && errno != EEXIST) ||
	    (base = open_dir_at(AT_FDCWD, parent)) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", parent);
	for (int tries = 0; tries < 3; tries++) {
		fd = lock_key(base, key);
		if (fd >= 0) {
			snprintf(path, len, "%s/%s", parent, key);
			return fd;
		}
		if (errno != ENOENT)
			return aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s/%s\"", parent, key);
		fd = write_key(base, key, fill, arg, err);
		if (fd >= 0) {
			snprintf(path, len, "%s/%s", parent, key);
			return fd;
		}
		if (fd == -1)
			return -1;
	}
	return aj_err_set(err, AJ_LAYER_STATE, ENOENT, "\"%s/%s\" was removed each time it was written",
			  parent, key);
}

unsigned aj_shared_dir_prune(const char *parent, const char *keep)
{
	_cleanup_close_ int base = open_dir_at(AT_FDCWD, parent);

	return base < 0 ? 0 : prune_at(base, keep);
}
