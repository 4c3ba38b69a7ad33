/* The state directory's own quota-capable filesystem in an image file; see backing.h. */
#include "storage/backing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "storage/quota.h"

/* Each filesystem: its mkfs command line (the image path last) and its mount options. */
struct fs_kind {
	const char *name;
	const char *mkfs[8];
	const char *options;
};

static const struct fs_kind kinds[] = {
	{"btrfs", {"mkfs.btrfs", "-q", NULL}, "loop,nosuid,nodev"},
	{"ext4", {"mkfs.ext4", "-q", "-F", "-O", "quota,project", NULL}, "loop,nosuid,nodev,prjquota"},
	{"xfs", {"mkfs.xfs", "-q", NULL}, "loop,nosuid,nodev,prjquota"},
};

/* The tools run as root with this environment alone, found on this PATH. */
static char *const tool_env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};

static const struct fs_kind *kind_of(const char *name)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

/* Runs argv (found on PATH) to its end; a failure names the program, its exit and the start of
 * what it printed. */
static int run_tool(const char *const *argv, struct aj_err *err)
{
	int pipefd[2], status = 0;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	char out[400];
	ssize_t n, got = 0;
	int r;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	r = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, tool_env);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (r != 0) {
		close(pipefd[0]);
		errno = r;
		return aj_err_sys(err, AJ_LAYER_STATE, "run %s", argv[0]);
	}
	/* Read to the end (what does not fit is dropped), or a chatty tool dies of SIGPIPE. */
	for (;;) {
		char sink[512];
		size_t room = sizeof out - 1 - (size_t)got;
		n = room ? read(pipefd[0], out + got, room) : read(pipefd[0], sink, sizeof sink);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (room)
			got += n;
	}
	out[got] = '\0';
	close(pipefd[0]);
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "wait for %s", argv[0]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	while (got > 0 && (out[got - 1] == '\n' || out[got - 1] == ' '))
		out[--got] = '\0';
	return aj_err_set(err, AJ_LAYER_STATE, 0, "%s failed (%s %d)%s%s", argv[0],
			  WIFEXITED(status) ? "exit" : "signal",
			  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			  got ? ": " : "", out);
}

static bool is_mount_root(const char *path)
{
	struct statx sx;

	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0 &&
	       (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

static int mount_image(const char *image, const char *state, const struct fs_kind *k,
		       struct aj_err *err)
{
	const char *argv[] = {"mount", "-t", k->name, "-o", k->options, image, state, NULL};

	return run_tool(argv, err);
}

static int enable_btrfs_quota(const char *state, struct aj_err *err)
{
	struct btrfs_ioctl_quota_ctl_args q = {.cmd = BTRFS_QUOTA_CTL_ENABLE};
	_cleanup_close_ int fd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || ioctl(fd, BTRFS_IOC_QUOTA_CTL, &q) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "enable btrfs quota groups on \"%s\"", state);
	return 0;
}

static bool dir_empty(const char *path)
{
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *e;

	if (!d)
		return errno == ENOENT;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			return false;
	return true;
}

/* STATE.img.fs, written last: its presence says the image is complete. */
static int write_fs_file(const char *path, const char *fs, struct aj_err *err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				      0600);

	if (fd < 0 || aj_write_all(fd, fs, strlen(fs)) < 0 || fsync(fd) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\"", path);
		unlink(path);
		return -1;
	}
	return 0;
}

/* The state directory's path without trailing slashes, absolute: STATE.img lies beside it. */
static int state_path(const char *given, char *buf, size_t len, struct aj_err *err)
{
	size_t n;

	if (given[0] != '/')
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "the state directory \"%s\" is not an absolute path", given);
	if (snprintf(buf, len, "%s", given) >= (int)len)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the state directory's path");
	for (n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--)
		buf[n - 1] = '\0';
	if (!strcmp(buf, "/"))
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "the state directory cannot be \"/\"");
	return 0;
}

/* The image and its marker are root's regular files, writable by root alone: anything else
 * (a link to a device, a file another user put there) is not mounted as root. */
static int trusted_file(const char *path, struct aj_err *err)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "\"%s\"", path);
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return aj_err_set(err, AJ_LAYER_STATE, 0,
				  "\"%s\" is not a regular file of root's that only root may write; "
				  "not mounting it",
				  path);
	return 0;
}

int aj_backing_init(const char *given, uint64_t size, const char *fs, struct aj_err *err)
{
	char state[4096];
	const struct fs_kind *k = kind_of(fs);
	char image[4200], fsfile[4300];
	const char *argv[10];
	size_t n = 0;
	bool made_dir = false, mounted = false;
	struct aj_quota_probe q;
	char why[200];
	_cleanup_close_ int fd = -1;

	if (!k)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "--fs: \"%s\" is not a filesystem storage init makes (expected "
				  "btrfs, ext4 or xfs)",
				  fs);
	if (state_path(given, state, sizeof state, err) < 0)
		return -1;
	if (size < AJ_BACKING_MIN)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--size: at least 512MiB");
	if (geteuid() != 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EPERM,
				  "storage init: needs root (it makes and mounts a filesystem)");
	snprintf(image, sizeof image, "%s.img", state);
	snprintf(fsfile, sizeof fsfile, "%s.img.fs", state);
	if (is_mount_root(state))
		return aj_err_set(err, AJ_LAYER_STATE, 0,
				  "the state directory \"%s\" is a mount point already", state);
	if (strcmp(fs, "btrfs") && !aj_quota_project_supported(why, sizeof why))
		return aj_err_set(err, AJ_LAYER_STATE, 0, "--fs %s: %s", fs, why);
	if (!dir_empty(state))
		return aj_err_set(err, AJ_LAYER_STATE, 0,
				  "the state directory \"%s\" holds data, which the new filesystem "
				  "would hide; move it away first, or choose another --state-dir",
				  state);
	if (mkdir(state, 0700) == 0)
		made_dir = true;
	else if (errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", state);
	fd = open(image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", image);
		goto undo_dir;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "size \"%s\"", image);
		goto undo;
	}
	for (; k->mkfs[n]; n++)
		argv[n] = k->mkfs[n];
	argv[n++] = image;
	argv[n] = NULL;
	if (run_tool(argv, err) < 0 || mount_image(image, state, k, err) < 0)
		goto undo;
	mounted = true;
	if ((!strcmp(fs, "btrfs") && enable_btrfs_quota(state, err) < 0))
		goto undo;
	if (chmod(state, 0700) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "chmod \"%s\"", state);
		goto undo;
	}
	aj_quota_probe(state, &q);
	if (!q.kind) {
		aj_err_set(err, AJ_LAYER_STATE, 0, "disk limits are not enforceable on the new %s: %s",
			   fs, q.why);
		goto undo;
	}
	if (write_fs_file(fsfile, fs, err) < 0)
		goto undo;
	return 0;
undo:
	if (mounted) {
		const char *um[] = {"umount", state, NULL};
		/* Still mounted: the image stays, or what was written there would go with it. */
		if (run_tool(um, NULL) < 0)
			return aj_err_prefix(err, "(\"%s\" stays mounted from \"%s\"; umount it by "
						  "hand)",
					     state, image);
	}
	unlink(image);
undo_dir:
	if (made_dir)
		rmdir(state);
	return -1;
}

int aj_backing_attach(const char *given, bool *attached, struct aj_err *err)
{
	char state[4096], image[4200], fsfile[4300], fs[16];
	const struct fs_kind *k;
	_cleanup_close_ int lock = -1;
	ssize_t n;

	*attached = false;
	if (geteuid() != 0 || given[0] != '/' || state_path(given, state, sizeof state, NULL) < 0)
		return 0;
	snprintf(fsfile, sizeof fsfile, "%s.img.fs", state);
	if (access(fsfile, F_OK) < 0)
		return 0;
	snprintf(image, sizeof image, "%s.img", state);
	if (trusted_file(fsfile, err) < 0 || trusted_file(image, err) < 0)
		return -1;
	lock = open(fsfile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s\"", fsfile);
	n = pread(lock, fs, sizeof fs - 1, 0);
	fs[n > 0 ? n : 0] = '\0';
	k = kind_of(fs);
	if (!k)
		return aj_err_set(err, AJ_LAYER_STATE, 0, "\"%s\": an unknown filesystem \"%s\"",
				  fsfile, fs);
	if (is_mount_root(state))
		return 0;
	if (mkdir(state, 0700) < 0 && errno != EEXIST)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", state);
	if (!dir_empty(state))
		return aj_err_set(err, AJ_LAYER_STATE, 0,
				  "the state directory \"%s\" is not mounted from \"%s\" but holds "
				  "files; mount it by hand, or move them away",
				  state, image);
	if (mount_image(image, state, k, err) < 0)
		return aj_err_prefix(err, "mount the state directory's filesystem");
	*attached = true;
	return 0;
}
