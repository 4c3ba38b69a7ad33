#include "supervisor/etc_share.h"

/* SHA256_Init and friends: libcrypto's SHA-256 itself. Its EVP interface (image/digest.h)
 * loads the default provider on first use, 2.5 ms and 140 KiB of heap in every supervisor
 * (bench/run-persistent.sh density); these run the same code without it. */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"

/* Part of every key: a change to how the directory is written makes new ones. */
#define SHARE_FORMAT "agentjail etc 1"
/* A half-written directory this old is a crashed writer's (a live one writes in seconds). */
#define STALE_TMP_S 600

/* What an operation below /etc puts in the shared directory. */
enum entry {
	E_UNSHARED = -1, /* something the directory cannot hold: the sandbox keeps its tmpfs */
	E_NONE = 0,      /* nothing: a mask, a seal, an optional bind of a missing path */
	E_FILE = 'f',
	E_LINK = 'l',
	E_DIR = 'd',        /* a directory, or the mount point of a directory bind */
	E_MOUNT_FILE = 'm', /* the empty file a file bind is mounted on */
};

static enum entry entry_of(const struct aj_op *op)
{
	struct stat st;
	int r;

	if (strcmp(op->dst, "/etc") == 0)
		return op->kind == AJ_OP_SEAL ? E_NONE : E_UNSHARED;
	switch (op->kind) {
	case AJ_OP_FILE:
		return op->src ? E_FILE : E_UNSHARED; /* no content yet: written at launch */
	case AJ_OP_SYMLINK:
		return E_LINK;
	case AJ_OP_DIR:
		return op->flags & AJ_OPF_OWNED ? E_UNSHARED : E_DIR;
	case AJ_OP_BIND:
		if (op->flags & AJ_OPF_SELF)
			return E_UNSHARED;
		/* The mount point's kind, as the sandbox's launch would make it. */
		r = op->flags & AJ_OPF_NOFOLLOW ? lstat(op->src, &st) : stat(op->src, &st);
		if (r < 0)
			return errno == ENOENT && (op->flags & AJ_OPF_OPTIONAL) ? E_NONE : E_UNSHARED;
		return S_ISDIR(st.st_mode) ? E_DIR : E_MOUNT_FILE;
	case AJ_OP_MASK:
	case AJ_OP_SEAL:
		return E_NONE;
	case AJ_OP_TMPFS: /* a filesystem of its own below /etc */
	case AJ_OP_PROC:
	case AJ_OP_DEVPTS:
	case AJ_OP_OVERLAY:
	case AJ_OP_MOUNT:
	case AJ_OP_ALLOW: /* the landlock tier's */
	case AJ_OP_DENY:
	default:
		return E_UNSHARED;
	}
}

static bool in_etc(const struct aj_op *op)
{
	return strncmp(op->dst, "/etc", 4) == 0 && (op->dst[4] == '/' || op->dst[4] == '\0');
}

static void hash_entry(SHA256_CTX *h, const struct aj_op *op, enum entry e)
{
	char head[64];
	int n = snprintf(head, sizeof head, "%c %o %zu", (char)e, (unsigned)op->mode,
			 e == E_FILE ? op->len : 0);

	SHA256_Update(h, head, (size_t)n + 1);
	SHA256_Update(h, op->dst, strlen(op->dst) + 1);
	if (e == E_FILE)
		SHA256_Update(h, op->src, op->len);
	else if (e == E_LINK)
		SHA256_Update(h, op->src, strlen(op->src) + 1);
}

static int open_dir_at(int at, const char *name)
{
	return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* mkdir with mode 0755 whatever the umask; an existing directory is kept. */
static int make_dir_at(int at, const char *name)
{
	_cleanup_close_ int fd = -1;

	if (mkdirat(at, name, 0755) < 0 && errno != EEXIST)
		return -1;
	fd = open_dir_at(at, name);
	return fd < 0 || fchmod(fd, 0755) < 0 ? -1 : 0;
}

static int make_parents(int root, const char *rel)
{
	char buf[4096];

	if (snprintf(buf, sizeof buf, "%s", rel) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = strchr(buf, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (make_dir_at(root, buf) < 0)
			return -1;
		*s = '/';
	}
	return 0;
}

/* One entry, as the launch would have made it in the tmpfs (the same modes, a later file
 * over an earlier one). */
static int write_entry(int root, const struct aj_op *op, enum entry e)
{
	const char *rel = op->dst + 5; /* below "/etc/" */
	_cleanup_close_ int fd = -1;

	if (make_parents(root, rel) < 0)
		return -1;
	switch (e) {
	case E_LINK:
		return symlinkat(op->src, root, rel);
	case E_DIR:
		return make_dir_at(root, rel);
	case E_MOUNT_FILE:
		fd = openat(root, rel, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		return fd < 0 || fchmod(fd, 0644) < 0 ? -1 : 0;
	case E_FILE:
		fd = openat(root, rel, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			    op->mode);
		return fd < 0 || aj_write_all(fd, op->src, op->len) < 0 || fchmod(fd, op->mode) < 0
			       ? -1
			       : 0;
	case E_NONE:
	case E_UNSHARED:
	default:
		return 0;
	}
}

/* The key's directory, locked shared; -1 with errno ENOENT if it does not exist (or was
 * being removed when the lock came). */
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

/* Directories no running sandbox holds (an earlier content of /etc), and the leftovers of
 * writers that crashed. Best effort: what cannot go now goes at the next write. */
static void prune(int base, const char *keep)
{
	int dup_fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	struct dirent *de;
	struct aj_err ignored;
	time_t now = time(NULL);

	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	while ((de = readdir(d))) {
		char gone[128];
		struct stat st;
		_cleanup_close_ int fd = -1;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, keep) == 0)
			continue;
		if (de->d_name[0] == '.') {
			if (strncmp(de->d_name, ".tmp-", 5) == 0 &&
			    fstatat(base, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_mtime + STALE_TMP_S < now)
				aj_tree_remove_at(base, de->d_name, &ignored);
			continue;
		}
		fd = open_dir_at(base, de->d_name);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		/* Renamed under the lock: a supervisor that opened it meanwhile finds its name
		 * gone once it has its lock, and writes the current one. */
		snprintf(gone, sizeof gone, ".tmp-gone-%d-%.64s", (int)getpid(), de->d_name);
		if (renameat(base, de->d_name, base, gone) == 0) {
			aj_close_fd(&fd);
			aj_tree_remove_at(base, gone, &ignored);
		}
	}
	closedir(d);
}

static int write_key(int base, const char *key, const struct aj_plan *plan, size_t at,
		     const signed char *entries, struct aj_err *err)
{
	char tmp[128];
	_cleanup_close_ int root = -1;
	struct aj_err ignored;
	size_t i = at + 1;

	snprintf(tmp, sizeof tmp, ".tmp-%d-%s", (int)getpid(), key);
	aj_tree_remove_at(base, tmp, &ignored);
	if (make_dir_at(base, tmp) < 0 || (root = open_dir_at(base, tmp)) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "create the shared /etc \"%s\"", tmp);
		goto fail;
	}
	for (; i < plan->n_ops; i++)
		if (entries[i] > 0 && write_entry(root, &plan->ops[i], entries[i]) < 0) {
			aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\" into the shared /etc",
				   plan->ops[i].dst);
			goto fail;
		}
	/* On disk before it has its name: no sandbox may bind a directory a crash emptied. */
	if (syncfs(root) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "sync the shared /etc");
		goto fail;
	}
	if (renameat(base, tmp, base, key) < 0) {
		if (errno != EEXIST && errno != ENOTEMPTY) {
			aj_err_sys(err, AJ_LAYER_STATE, "name the shared /etc \"%s\"", key);
			goto fail;
		}
		aj_tree_remove_at(base, tmp, &ignored); /* another supervisor's came first */
		return 0;
	}
	fsync(base);
	prune(base, key);
	return 0;
fail:
	aj_tree_remove_at(base, tmp, &ignored);
	return -1;
}

/* The key's directory, written if missing, locked shared. */
static int open_shared(const char *state_dir, const char *key, const struct aj_plan *plan,
		       size_t at, const signed char *entries, char *path, size_t len,
		       struct aj_err *err)
{
	_cleanup_close_ int base = -1;
	int fd;

	snprintf(path, len, "%s/etc", state_dir);
	if ((mkdir(path, 0755) < 0 && errno != EEXIST) || (base = open_dir_at(AT_FDCWD, path)) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", path);
	for (int tries = 0; tries < 3; tries++) {
		fd = lock_key(base, key);
		if (fd >= 0) {
			snprintf(path, len, "%s/etc/%s", state_dir, key);
			return fd;
		}
		if (errno != ENOENT)
			return aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s/%s\"", path, key);
		if (write_key(base, key, plan, at, entries, err) < 0)
			return -1;
	}
	return aj_err_set(err, AJ_LAYER_STATE, ENOENT,
			  "the shared /etc \"%s/%s\" was removed each time it was written", path,
			  key);
}

/* The tmpfs becomes a bind of dir; what the directory holds leaves the plan. */
static void rewrite(struct aj_plan *plan, size_t at, const signed char *entries,
		    const char *dir)
{
	struct aj_op *t = &plan->ops[at];
	size_t w = at + 1;

	free(t->src);
	free(t->opts);
	t->kind = AJ_OP_BIND;
	t->src = aj_xstrdup(dir);
	t->opts = NULL;
	/* Privileged: idmapped, so that the files root wrote are root's inside. */
	t->flags = AJ_OPF_RO | AJ_OPF_HIDE_SRC |
		   (plan->privileged ? AJ_OPF_FROM_PARENT | AJ_OPF_CANONICAL : 0);
	t->why = "only the /etc entries programs need, shared read-only with the persistent "
		 "sandboxes whose /etc is the same";
	for (size_t i = at + 1; i < plan->n_ops; i++) {
		struct aj_op *op = &plan->ops[i];
		if (entries[i] == E_FILE || entries[i] == E_LINK ||
		    (entries[i] == E_DIR && op->kind == AJ_OP_DIR)) {
			free(op->src);
			free(op->dst);
			free(op->opts);
			continue;
		}
		plan->ops[w++] = *op;
	}
	plan->n_ops = w;
}

int aj_sv_etc_share(struct aj_plan *plan, const char *state_dir, struct aj_err *err)
{
	size_t at = SIZE_MAX;
	signed char *entries = NULL;
	SHA256_CTX h;
	unsigned char md[SHA256_DIGEST_LENGTH];
	char key[2 * SHA256_DIGEST_LENGTH + 1], owner[32], path[4200];
	int fd = -2;

	if (plan->tier != AJ_TIER_NAMESPACES || plan->image)
		return -2;
	for (size_t i = 0; i < plan->n_ops && at == SIZE_MAX; i++)
		if (plan->ops[i].kind == AJ_OP_TMPFS && strcmp(plan->ops[i].dst, "/etc") == 0)
			at = i;
	if (at == SIZE_MAX)
		return -2;
	entries = aj_xcalloc(plan->n_ops, 1);
	SHA256_Init(&h);
	SHA256_Update(&h, SHARE_FORMAT, sizeof SHARE_FORMAT);
	/* Files are the writer's: one key per owner (a state directory has one). */
	snprintf(owner, sizeof owner, "%u", (unsigned)geteuid());
	SHA256_Update(&h, owner, strlen(owner) + 1);
	for (size_t i = at + 1; i < plan->n_ops; i++) {
		enum entry e = in_etc(&plan->ops[i]) ? entry_of(&plan->ops[i]) : E_NONE;
		if (e == E_UNSHARED)
			goto out;
		entries[i] = (signed char)e;
		if (e != E_NONE)
			hash_entry(&h, &plan->ops[i], e);
	}
	SHA256_Final(md, &h);
	for (size_t i = 0; i < sizeof md; i++)
		snprintf(key + 2 * i, 3, "%02x", md[i]);
	fd = open_shared(state_dir, key, plan, at, entries, path, sizeof path, err);
	if (fd >= 0)
		rewrite(plan, at, entries, path);
out:
	free(entries);
	return fd;
}
