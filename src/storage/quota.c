/* Disk quotas by project quotas (ext4, XFS) or btrfs quota groups; see quota.h. */
#include "storage/quota.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/btrfs.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/quota.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif

/* The inode number of a btrfs subvolume's root directory. */
#define BTRFS_SUBVOL_ROOT_INO 256

const char *aj_quota_kind_name(enum aj_quota_kind kind)
{
	switch (kind) {
	case AJ_QUOTA_PROJECT: return "project quota";
	case AJ_QUOTA_BTRFS: return "btrfs qgroup";
	case AJ_QUOTA_NONE: break;
	}
	return "none";
}

static int quotactl_fd(int fd, int cmd, int type, uint32_t id, void *addr)
{
	return (int)syscall(SYS_quotactl_fd, fd, QCMD(cmd, type), id, addr);
}

static const char *fs_name(unsigned long type)
{
	switch (type) {
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case TMPFS_MAGIC: return "tmpfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlay";
	default: return "other";
	}
}

static int open_dir(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* btrfs: the sysfs directory of the filesystem holding fd, "/sys/fs/btrfs/<fsid>". */
static int btrfs_sysfs(int fd, char *buf, size_t len)
{
	struct btrfs_ioctl_fs_info_args fi;
	char uuid[40];
	const unsigned char *u = fi.fsid;

	memset(&fi, 0, sizeof fi);
	if (ioctl(fd, BTRFS_IOC_FS_INFO, &fi) < 0)
		return -1;
	snprintf(uuid, sizeof uuid,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
		 u[15]);
	snprintf(buf, len, "/sys/fs/btrfs/%s", uuid);
	return 0;
}

static void probe_btrfs(int fd, struct aj_quota_probe *q)
{
	char sys[96], path[160];

	if (btrfs_sysfs(fd, sys, sizeof sys) < 0) {
		snprintf(q->why, sizeof q->why, "btrfs: reading the filesystem's id failed: %s",
			 strerror(errno));
		return;
	}
	snprintf(path, sizeof path, "%s/qgroups", sys);
	if (access(path, F_OK) < 0) {
		snprintf(q->why, sizeof q->why,
			 "quota groups are off on this btrfs; enable them with `btrfs quota enable "
			 "MOUNTPOINT`");
		return;
	}
	q->kind = AJ_QUOTA_BTRFS;
}

static void probe_project(int fd, struct aj_quota_probe *q)
{
	struct fs_quota_statv st;

	memset(&st, 0, sizeof st);
	st.qs_version = FS_QSTATV_VERSION1;
	if (quotactl_fd(fd, Q_XGETQSTATV, PRJQUOTA, 0, &st) < 0) {
		if (errno == ENOSYS)
			snprintf(q->why, sizeof q->why,
				 "this kernel was built without quota support (CONFIG_QUOTA); make "
				 "the state directory a btrfs with `agentjail storage init --fs btrfs`");
		else
			snprintf(q->why, sizeof q->why,
				 "project quotas are off on this %s (%s); mount it with prjquota, or "
				 "run `agentjail storage init`",
				 q->fs, strerror(errno));
		return;
	}
	if (!(st.qs_flags & FS_QUOTA_PDQ_ENFD)) {
		snprintf(q->why, sizeof q->why,
			 "project quotas are counted but not enforced on this %s; mount it with "
			 "prjquota",
			 q->fs);
		return;
	}
	q->kind = AJ_QUOTA_PROJECT;
}

static void probe_fd(int fd, const char *dir, struct aj_quota_probe *q)
{
	struct statfs sf;

	memset(q, 0, sizeof *q);
	if (fd < 0 || fstatfs(fd, &sf) < 0) {
		snprintf(q->why, sizeof q->why, "\"%s\": %s", dir, strerror(errno));
		return;
	}
	snprintf(q->fs, sizeof q->fs, "%s", fs_name((unsigned long)sf.f_type));
	if (geteuid() != 0) {
		snprintf(q->why, sizeof q->why,
			 "setting a disk quota needs root (CAP_SYS_ADMIN on the host); rootless "
			 "sandboxes have no disk limit");
		return;
	}
	switch ((unsigned long)sf.f_type) {
	case BTRFS_SUPER_MAGIC: probe_btrfs(fd, q); break;
	case EXT4_SUPER_MAGIC:
	case XFS_SUPER_MAGIC: probe_project(fd, q); break;
	default:
		snprintf(q->why, sizeof q->why,
			 "the state directory is on %s, which has no quotas agentjail can use; make it "
			 "a quota-capable filesystem with `agentjail storage init`",
			 q->fs);
	}
}

bool aj_quota_project_supported(char *why, size_t len)
{
	struct fs_quota_statv st = {.qs_version = FS_QSTATV_VERSION1};
	_cleanup_close_ int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && quotactl_fd(fd, Q_XGETQSTATV, PRJQUOTA, 0, &st) < 0 && errno == ENOSYS) {
		snprintf(why, len, "this kernel was built without quota support (CONFIG_QUOTA); "
				   "use --fs btrfs");
		return false;
	}
	return true;
}

void aj_quota_probe(const char *dir, struct aj_quota_probe *q)
{
	_cleanup_close_ int fd = open_dir(dir);

	probe_fd(fd, dir, q);
}

/* --- project quotas --- */

static int get_projid(int fd, uint32_t *projid)
{
	struct fsxattr fx;

	if (ioctl(fd, FS_IOC_FSGETXATTR, &fx) < 0)
		return -1;
	*projid = (fx.fsx_xflags & FS_XFLAG_PROJINHERIT) ? fx.fsx_projid : 0;
	return 0;
}

static int set_projid(int fd, uint32_t projid)
{
	struct fsxattr fx;

	if (ioctl(fd, FS_IOC_FSGETXATTR, &fx) < 0)
		return -1;
	fx.fsx_projid = projid;
	fx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
	return ioctl(fd, FS_IOC_FSSETXATTR, &fx);
}

static int project_limit(int fd, uint32_t projid, uint64_t bytes, uint64_t files)
{
	struct if_dqblk d;

	memset(&d, 0, sizeof d);
	d.dqb_bhardlimit = (bytes + QIF_DQBLKSIZE - 1) / QIF_DQBLKSIZE;
	d.dqb_ihardlimit = files;
	d.dqb_valid = QIF_LIMITS;
	return quotactl_fd(fd, Q_SETQUOTA, PRJQUOTA, projid, &d);
}

/* A project id nothing uses: no usage and no limit recorded. */
static int free_projid(int fd, uint32_t *out)
{
	for (int tries = 0; tries < 64; tries++) {
		uint32_t id;
		struct if_dqblk d;

		if (getrandom(&id, sizeof id, 0) != sizeof id)
			return -1;
		id = (id & 0x3fffffffu) | 0x10000000u;
		memset(&d, 0, sizeof d);
		/* no such quota yet: ESRCH from ext4, ENOENT from XFS */
		if (quotactl_fd(fd, Q_GETQUOTA, PRJQUOTA, id, &d) < 0 && errno != ESRCH &&
		    errno != ENOENT)
			return -1;
		if (!d.dqb_curspace && !d.dqb_curinodes && !d.dqb_bhardlimit && !d.dqb_ihardlimit) {
			*out = id;
			return 0;
		}
	}
	errno = EEXIST;
	return -1;
}

static int mkdir_project(int parent, const char *name, mode_t mode, uint64_t bytes)
{
	_cleanup_close_ int fd = -1;
	uint32_t id;

	if (free_projid(parent, &id) < 0 || mkdirat(parent, name, mode) < 0)
		return -1;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || set_projid(fd, id) < 0 ||
	    project_limit(fd, id, bytes, bytes / AJ_DISK_BYTES_PER_INODE) < 0) {
		int e = errno;
		unlinkat(parent, name, AT_REMOVEDIR);
		errno = e;
		return -1;
	}
	return 0;
}

/* --- btrfs quota groups --- */

static int mkdir_btrfs(int parent, const char *name, mode_t mode, uint64_t bytes)
{
	struct btrfs_ioctl_vol_args va;
	struct btrfs_ioctl_qgroup_limit_args la;
	_cleanup_close_ int fd = -1;

	memset(&va, 0, sizeof va);
	if (strlen(name) >= sizeof va.name) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(va.name, name, strlen(name));
	if (ioctl(parent, BTRFS_IOC_SUBVOL_CREATE, &va) < 0)
		return -1;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	memset(&la, 0, sizeof la);
	la.qgroupid = 0; /* the subvolume fd is in */
	la.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	la.lim.max_rfer = bytes;
	if (fd < 0 || fchmod(fd, mode) < 0 || ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &la) < 0) {
		int e = errno;
		unlinkat(parent, name, AT_REMOVEDIR);
		errno = e;
		return -1;
	}
	return 0;
}

static int btrfs_subvol_id(int fd, uint64_t *id)
{
	struct btrfs_ioctl_ino_lookup_args a;

	memset(&a, 0, sizeof a);
	a.objectid = BTRFS_SUBVOL_ROOT_INO;
	if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a) < 0)
		return -1;
	*id = a.treeid;
	return 0;
}

static int read_u64(const char *path, uint64_t *v)
{
	char buf[32];
	ssize_t n;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || (n = read(fd, buf, sizeof buf - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	*v = strtoull(buf, NULL, 10);
	return 0;
}

static int usage_btrfs(int fd, struct aj_quota_use *u)
{
	char sys[96], path[200];
	uint64_t id;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	if (st.st_ino != BTRFS_SUBVOL_ROOT_INO) {
		errno = ENODATA;
		return -1;
	}
	if (btrfs_subvol_id(fd, &id) < 0 || btrfs_sysfs(fd, sys, sizeof sys) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/qgroups/0_%" PRIu64 "/referenced", sys, id);
	if (read_u64(path, &u->bytes) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/qgroups/0_%" PRIu64 "/max_referenced", sys, id);
	if (read_u64(path, &u->limit) < 0)
		return -1;
	u->kind = AJ_QUOTA_BTRFS;
	return 0;
}

/* A quota directory's own project id; 0 for one it inherited (an administrator's project on a
 * directory above, which is not agentjail's to measure or release). */
static int own_projid(int fd, uint32_t *id)
{
	uint32_t above = 0;
	_cleanup_close_ int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (get_projid(fd, id) < 0 || up < 0 || get_projid(up, &above) < 0)
		return -1;
	if (*id == above)
		*id = 0;
	return 0;
}

static int usage_project(int fd, struct aj_quota_use *u)
{
	uint32_t id;
	struct if_dqblk d;

	if (own_projid(fd, &id) < 0)
		return -1;
	if (!id) {
		errno = ENODATA;
		return -1;
	}
	memset(&d, 0, sizeof d);
	if (quotactl_fd(fd, Q_GETQUOTA, PRJQUOTA, id, &d) < 0)
		return -1;
	u->kind = AJ_QUOTA_PROJECT;
	u->bytes = d.dqb_curspace;
	u->limit = d.dqb_bhardlimit * QIF_DQBLKSIZE;
	u->files = d.dqb_curinodes;
	u->file_limit = d.dqb_ihardlimit;
	return 0;
}

static int usage_fd(int fd, bool sync, struct aj_quota_use *u)
{
	struct statfs sf;

	memset(u, 0, sizeof *u);
	if (fstatfs(fd, &sf) < 0)
		return -1;
	/* btrfs counts qgroups at each commit; a project's figures include what is reserved. */
	if (sync && (unsigned long)sf.f_type == BTRFS_SUPER_MAGIC)
		syncfs(fd);
	switch ((unsigned long)sf.f_type) {
	case BTRFS_SUPER_MAGIC: return usage_btrfs(fd, u);
	case EXT4_SUPER_MAGIC:
	case XFS_SUPER_MAGIC: return usage_project(fd, u);
	default: errno = ENODATA; return -1;
	}
}

int aj_quota_usage(const char *path, bool sync, struct aj_quota_use *u)
{
	_cleanup_close_ int fd = open_dir(path);

	memset(u, 0, sizeof *u);
	return fd < 0 ? -1 : usage_fd(fd, sync, u);
}

bool aj_quota_reached(const struct aj_quota_use *u)
{
	uint64_t margin = u->limit / 32 > (256u << 10) ? u->limit / 32 : (256u << 10);

	if (u->file_limit && u->files >= u->file_limit)
		return true;
	return u->limit && u->bytes + margin >= u->limit;
}

/* The parent directory of path, opened, and the last component. */
static int open_parent(const char *path, char *name, size_t len)
{
	char parent[4096];
	char *slash;

	if (snprintf(parent, sizeof parent, "%s", path) >= (int)sizeof parent) {
		errno = ENAMETOOLONG;
		return -1;
	}
	slash = strrchr(parent, '/');
	if (!slash || !slash[1]) {
		errno = EINVAL;
		return -1;
	}
	snprintf(name, len, "%s", slash + 1);
	if (slash == parent)
		return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*slash = '\0';
	return open_dir(parent);
}

int aj_quota_mkdir(const char *path, mode_t mode, uint64_t bytes, bool *limited,
		   struct aj_err *err)
{
	_cleanup_close_ int parent = -1;
	char name[256];
	struct aj_quota_probe q;
	int r;

	*limited = false;
	parent = open_parent(path, name, sizeof name);
	if (parent < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open the directory above \"%s\"", path);
	if (bytes)
		probe_fd(parent, path, &q);
	else
		q.kind = AJ_QUOTA_NONE;
	switch (q.kind) {
	case AJ_QUOTA_BTRFS: r = mkdir_btrfs(parent, name, mode, bytes); break;
	case AJ_QUOTA_PROJECT: r = mkdir_project(parent, name, mode, bytes); break;
	case AJ_QUOTA_NONE:
	default: r = mkdirat(parent, name, mode); break;
	}
	/* Root without CAP_SYS_ADMIN on the host (in a container): no quota, which the plan
	 * refuses or, accepted degraded, reports. */
	if (r < 0 && q.kind && (errno == EPERM || errno == EACCES)) {
		q.kind = AJ_QUOTA_NONE;
		r = mkdirat(parent, name, mode);
	}
	if (r < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"%s%s", path,
				  q.kind ? " with a " : "", q.kind ? aj_quota_kind_name(q.kind) : "");
	*limited = q.kind != AJ_QUOTA_NONE;
	return 0;
}

/* bytes > 0; files 0: one per AJ_DISK_BYTES_PER_INODE of bytes (project quotas). */
static int set_limit_fd(int fd, uint64_t bytes, uint64_t files)
{
	struct aj_quota_use u;
	struct btrfs_ioctl_qgroup_limit_args la;
	uint32_t projid;

	if (usage_fd(fd, false, &u) < 0)
		return -1;
	if (u.kind == AJ_QUOTA_PROJECT)
		return own_projid(fd, &projid) < 0
			       ? -1
			       : project_limit(fd, projid, bytes,
					       files ? files : bytes / AJ_DISK_BYTES_PER_INODE);
	memset(&la, 0, sizeof la);
	la.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	la.lim.max_rfer = bytes;
	return ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &la);
}

int aj_quota_set_limit(const char *path, uint64_t bytes, struct aj_err *err)
{
	_cleanup_close_ int fd = open_dir(path);

	if (!bytes) {
		errno = EINVAL;
		return aj_err_sys(err, AJ_LAYER_STATE, "set the disk quota of \"%s\" to 0", path);
	}
	if (fd < 0 || set_limit_fd(fd, bytes, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "set the disk quota of \"%s\"", path);
	return 0;
}

int aj_quota_headroom(const char *path)
{
	_cleanup_close_ int fd = open_dir(path);
	struct aj_quota_use u;

	if (fd < 0 || usage_fd(fd, true, &u) < 0 || !aj_quota_reached(&u))
		return 0;
	/* Never below the limit; for files too, when those ran out. */
	if (set_limit_fd(fd, (u.bytes > u.limit ? u.bytes : u.limit) + AJ_QUOTA_HEADROOM,
			 u.file_limit ? (u.files > u.file_limit ? u.files : u.file_limit) + 1024
				      : 0) < 0)
		return 0;
	return 1;
}

int aj_quota_mark_shared(const char *dir)
{
	_cleanup_close_ int fd = open_dir(dir);
	struct statfs sf;

	if (fd < 0 || fstatfs(fd, &sf) < 0)
		return -1;
	if ((unsigned long)sf.f_type != EXT4_SUPER_MAGIC &&
	    (unsigned long)sf.f_type != XFS_SUPER_MAGIC)
		return 0;
	return set_projid(fd, 0) < 0 && errno != ENOTTY && errno != EOPNOTSUPP ? -1 : 0;
}

int aj_quota_remove(const char *path, struct aj_err *err)
{
	_cleanup_close_ int parent = -1;
	char name[256];

	parent = open_parent(path, name, sizeof name);
	if (parent < 0)
		return errno == ENOENT ? 0
				       : aj_err_sys(err, AJ_LAYER_STATE, "open the directory above "
									  "\"%s\"",
						    path);
	return aj_quota_remove_at(parent, name, err);
}

int aj_quota_remove_at(int parent, const char *name, struct aj_err *err)
{
	struct aj_quota_use u;
	uint32_t projid = 0;
	uint64_t subvol = 0;
	_cleanup_close_ int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
							      O_CLOEXEC);

	if (fd >= 0 && usage_fd(fd, false, &u) == 0) {
		if (u.kind == AJ_QUOTA_PROJECT)
			own_projid(fd, &projid);
		else if (u.kind == AJ_QUOTA_BTRFS)
			btrfs_subvol_id(fd, &subvol);
	}
	if (aj_tree_remove_at(parent, name, err) < 0)
		return -1;
	/* Releasing is tidiness, not safety: the directory and its files are gone. */
	if (projid)
		project_limit(parent, projid, 0, 0);
	if (subvol) {
		struct btrfs_ioctl_qgroup_create_args c = {.create = 0, .qgroupid = subvol};
		ioctl(parent, BTRFS_IOC_QGROUP_CREATE, &c);
	}
	return 0;
}
