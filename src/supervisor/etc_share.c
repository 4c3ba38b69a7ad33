#include "supervisor/etc_share.h"

/* SHA256_Init and friends: libcrypto's SHA-256 itself. Its EVP interface (image/digest.h)
 * loads the default provider on first use, 2.5 ms and 140 KiB of heap in every supervisor
 * (bench/run-persistent.sh density); these run the same code without it. */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "storage/shared_dir.h"

/* Part of every key: a change to how the directory is written makes new ones. */
#define SHARE_FORMAT "agentjail etc 1"

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

/* The plan's entries below /etc, the fill of a new shared directory. */
struct fill_arg {
	const struct aj_plan *plan;
	size_t at;
	const signed char *entries;
};

static int fill(int dir, void *arg, struct aj_err *err)
{
	const struct fill_arg *a = arg;

	for (size_t i = a->at + 1; i < a->plan->n_ops; i++)
		if (a->entries[i] > 0 && write_entry(dir, &a->plan->ops[i], a->entries[i]) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\" into the shared /etc",
					  a->plan->ops[i].dst);
	return 0;
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

int aj_sv_etc_share(struct aj_plan *plan, const char *state_dir, const char *owner_name,
		    struct aj_err *err)
{
	size_t at = SIZE_MAX;
	signed char *entries = NULL;
	SHA256_CTX h;
	unsigned char md[SHA256_DIGEST_LENGTH];
	char key[2 * SHA256_DIGEST_LENGTH + 1], owner[32], parent[4200], path[4300];
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
	/* Files are the writer's: one key per user that writes them (a state directory has
	 * one). And one per owner of the sandbox: the API's tenants share nothing, not even
	 * the times of a directory another's sandbox wrote first. */
	snprintf(owner, sizeof owner, "%u", (unsigned)geteuid());
	SHA256_Update(&h, owner, strlen(owner) + 1);
	SHA256_Update(&h, owner_name, strlen(owner_name) + 1);
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
	snprintf(parent, sizeof parent, "%s/%s", state_dir, AJ_SHARED_ETC_DIR);
	fd = aj_shared_dir_open(parent, key, fill,
				&(struct fill_arg){.plan = plan, .at = at, .entries = entries}, path,
				sizeof path, err);
	if (fd >= 0)
		rewrite(plan, at, entries, path);
out:
	free(entries);
	return fd;
}
