/* The root filesystem part of the plan: an empty tmpfs root into which the system
 * directories, a chosen part of /etc, generated identity files, a minimal /dev, a fresh /proc,
 * private tmpfs areas, the workspace and the policy's extra paths are placed, in an order in
 * which deeper mounts land on top of shallower ones. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "policy/plan_internal.h"
#include "rules/landlock.h"
#include "storage/volumes.h"

#define ADD aj_plan_add_op

/* A tmpfs, devpts or the like with its mount options. */
static void add_fs(struct aj_plan *p, enum aj_op_kind kind, const char *dst, uint64_t landlock,
		   const char *opts, const char *why)
{
	ADD(p, kind, dst, NULL, 0, landlock, why)->opts = aj_xstrdup(opts);
}

/* A regular file with the given content (taken over). */
struct aj_op *aj_plan_add_file(struct aj_plan *p, const char *dst, char *content, size_t len,
			       const char *why)
{
	struct aj_op *op = ADD(p, AJ_OP_FILE, dst, NULL, 0, 0, why);

	op->src = content;
	op->len = len;
	op->mode = 0644;
	return op;
}

#define add_file aj_plan_add_file

static void copy_etc_file(struct aj_plan *p, const char *path, const struct stat *st,
			  const char *why);

/* Recreates a host symlink, copies a small /etc file, or binds the host path read-only;
 * skips what is missing. */
static void add_host_entry(struct aj_plan *p, const char *path, uint64_t rights,
			   const char *why)
{
	struct stat st;
	char target[4096];
	ssize_t n;

	if (lstat(path, &st) < 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(path, target, sizeof target - 1);
		if (n < 0)
			return;
		target[n] = '\0';
		ADD(p, AJ_OP_SYMLINK, path, target, 0, 0, why);
		return;
	}
	/* Past a few pages, writing a copy into tmpfs costs more than a bind. */
	if (S_ISREG(st.st_mode) && st.st_size <= 16384 && strncmp(path, "/etc/", 5) == 0) {
		copy_etc_file(p, path, &st, why);
		return;
	}
	ADD(p, AJ_OP_BIND, path, path,
	    AJ_OPF_RO | AJ_OPF_OPTIONAL | (strncmp(path, "/etc/", 5) == 0 ? AJ_OPF_SEALED : 0),
	    rights, why);
}

static void add_generated(struct aj_plan *p, const char *dst, char *content, const char *why)
{
	add_file(p, dst, content, strlen(content), why);
}

/* Small world-readable /etc files are copied into the sandbox's /etc rather than bound: a
 * copy costs the child one small write, a bind a mount-table operation, and /etc holds dozens
 * of them. Files the sandbox user could not read on the host are never copied (the copy is
 * made by agentjail, which may be root).
 *
 * Each is read into a buffer of the size lstat saw: a page of heap per file otherwise, touched
 * before the sandbox's clone, is a page fault and a page table entry the clone copies (a file
 * that grew since gets a larger one). O_NOFOLLOW: the file lstat saw, not what a symlink put
 * there since would name. */
static void copy_etc_file(struct aj_plan *p, const char *path, const struct stat *st,
			  const char *why)
{
	_cleanup_close_ int fd = -1;
	char *content;
	size_t len = 0;

	if (!(st->st_mode & S_IROTH) || st->st_size > (1 << 20))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	/* One byte more than lstat saw: end-of-file is then read without growing the buffer. */
	content = fd < 0 ? NULL : aj_read_fd(fd, (size_t)st->st_size + 1, 1 << 20, &len);
	if (content) /* vanished or unreadable: treated as absent */
		add_file(p, path, content, len, why);
}

static void identity_files(struct aj_plan *p)
{
	const struct aj_policy *pol = p->policy;
	char *passwd, *group;

	if (p->uid == 0)
		passwd = aj_xasprintf("%s:x:0:%u::%s:%s\nnobody:x:65534:65534:nobody:/nonexistent:"
				      "/usr/sbin/nologin\n",
				      p->user_name, p->gid, p->home, p->shell);
	else
		passwd = aj_xasprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n"
				      "%s:x:%u:%u::%s:%s\n"
				      "nobody:x:65534:65534:nobody:/nonexistent:"
				      "/usr/sbin/nologin\n",
				      p->user_name, p->uid, p->gid, p->home, p->shell);
	if (p->gid == 0)
		group = aj_xasprintf("%s:x:0:\nnogroup:x:65534:\n", p->user_name);
	else
		group = aj_xasprintf("root:x:0:\n%s:x:%u:\nnogroup:x:65534:\n", p->user_name,
				     p->gid);
	add_generated(p, "/etc/passwd", passwd, "the sandbox's users only");
	add_generated(p, "/etc/group", group, "the sandbox's groups only");
	if (pol->net_mode == AJ_NET_HOST)
		add_host_entry(p, "/etc/hosts", AJ_LL_RO, "the host's name table (host network)");
	else
		add_generated(p, "/etc/hosts",
			      aj_xasprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost "
					   "ip6-loopback\n127.0.1.1\t%s\n",
					   pol->hostname),
			      "loopback names only");
	add_generated(p, "/etc/hostname", aj_xasprintf("%s\n", pol->hostname),
		      "the sandbox's name");
	add_generated(p, "/etc/nsswitch.conf",
		      aj_xstrdup("passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
				 "networks: files\nprotocols: files\nservices: files\n"),
		      "files only: no host directory services are reachable");
	if (pol->net_mode == AJ_NET_HOST)
		add_host_entry(p, "/etc/resolv.conf", AJ_LL_RO,
			       "the host's resolver (host network)");
	else
		add_generated(p, "/etc/resolv.conf",
			      aj_xstrdup("# no DNS inside the sandbox: the network is not "
					 "reachable\n"),
			      "no resolver");
	ADD(p, AJ_OP_SYMLINK, "/etc/mtab", "../proc/self/mounts", 0, 0, "classic mount table");
}

/* Applies data/rootfs.rules: "system PATH", "etc NAME", "proc-mask PATH". */
static void rules_section(struct aj_plan *p, const char *kind)
{
	for (char *line = p->rootfs_text; line && *line; line += strlen(line) + 1) {
		char *sp = strchr(line, ' '), *dash = strstr(line, " -- ");
		char path[512];
		size_t klen = sp ? (size_t)(sp - line) : 0;

		if (!sp || !dash || strlen(kind) != klen || strncmp(line, kind, klen) != 0)
			continue;
		snprintf(path, sizeof path, "%.*s", (int)(dash - sp - 1), sp + 1);
		if (strcmp(kind, "system") == 0) {
			add_host_entry(p, path, AJ_LL_RX, dash + 4);
		} else if (strcmp(kind, "etc") == 0) {
			char full[600];
			snprintf(full, sizeof full, "/etc/%s", path);
			add_host_entry(p, full, AJ_LL_RO, dash + 4);
		} else {
			ADD(p, AJ_OP_MASK, path, NULL, AJ_OPF_OPTIONAL | AJ_OPF_SEALED, 0, dash + 4);
		}
	}
}

/* Copies the embedded rules into NUL-separated lines, comments dropped, so that `why`
 * pointers into it stay valid for the plan's lifetime. */
void aj_plan_load_rules(struct aj_plan *p)
{
	size_t len = strlen(aj_rootfs_rules);
	char *out = aj_xmalloc(len + 2), *w = out;

	for (const char *line = aj_rootfs_rules; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		if (n && line[0] != '#') {
			memcpy(w, line, n);
			w += n;
			*w++ = '\0';
		}
		line += n + (nl ? 1 : 0);
	}
	*w = '\0';
	p->rootfs_text = out;
}

void aj_plan_dev_tree(struct aj_plan *p)
{
	static const char *const nodes[] = {"/dev/null", "/dev/zero", "/dev/full",
					    "/dev/random", "/dev/urandom", "/dev/tty"};
	char opts[64];

	add_fs(p, AJ_OP_TMPFS, "/dev", AJ_LL_FS_READ_DIR, "mode=0755,size=64k",
	       "minimal /dev: no host devices beyond the harmless ones");
	for (size_t i = 0; i < AJ_ARRAY_SIZE(nodes); i++) {
		struct stat st;
		if (stat(nodes[i], &st) < 0 || !S_ISCHR(st.st_mode))
			continue;
		ADD(p, AJ_OP_BIND, nodes[i], nodes[i], AJ_OPF_DEV | AJ_OPF_SEALED,
		    strcmp(nodes[i], "/dev/tty") ? AJ_LL_DEV : AJ_LL_TTY, "harmless device");
	}
	add_fs(p, AJ_OP_DEVPTS, "/dev/pts", AJ_LL_TTY | AJ_LL_FS_READ_DIR,
	       "newinstance,ptmxmode=0666,mode=0620",
	       "private pseudo-terminals: host terminals stay out of reach");
	ADD(p, AJ_OP_SYMLINK, "/dev/ptmx", "pts/ptmx", 0, 0, "pty multiplexer of the private devpts");
	ADD(p, AJ_OP_SYMLINK, "/dev/fd", "/proc/self/fd", 0, 0, "descriptor links");
	ADD(p, AJ_OP_SYMLINK, "/dev/stdin", "/proc/self/fd/0", 0, 0, "descriptor links");
	ADD(p, AJ_OP_SYMLINK, "/dev/stdout", "/proc/self/fd/1", 0, 0, "descriptor links");
	ADD(p, AJ_OP_SYMLINK, "/dev/stderr", "/proc/self/fd/2", 0, 0, "descriptor links");
	snprintf(opts, sizeof opts, "mode=1777,size=%lu",
		 (unsigned long)p->policy->limits.tmpfs_size);
	add_fs(p, AJ_OP_TMPFS, "/dev/shm", AJ_LL_RW, opts, "private shared memory, size-limited");
	ADD(p, AJ_OP_SEAL, "/dev", NULL, AJ_OPF_NOEXEC, 0,
	    "/dev and the devices bound into it: nosuid, noexec");
}

static void scratch_areas(struct aj_plan *p)
{
	const struct aj_policy *pol = p->policy;
	char opts[128];

	snprintf(opts, sizeof opts, "mode=1777,size=%lu", (unsigned long)pol->limits.tmpfs_size);
	add_fs(p, AJ_OP_TMPFS, "/tmp", AJ_LL_RW, opts,
	       "private /tmp, size-limited, gone with the sandbox");
	ADD(p, AJ_OP_DIR, "/var", NULL, 0, 0, "parent of /var/tmp");
	ADD(p, AJ_OP_SYMLINK, "/var/tmp", "/tmp", 0, 0, "programs expect /var/tmp");
	if (aj_path_within(pol->home, pol->workspace))
		return; /* the home lives in the workspace */
	snprintf(opts, sizeof opts, "mode=0755,uid=%u,gid=%u,size=%lu", p->uid, p->gid,
		 (unsigned long)pol->limits.tmpfs_size);
	add_fs(p, AJ_OP_TMPFS, pol->home, AJ_LL_RW, opts,
	       "the sandbox user's home, size-limited, gone with the sandbox");
}

static size_t depth(const char *path)
{
	size_t d = 0;
	for (; *path; path++)
		d += *path == '/';
	return d;
}

static void protect(struct aj_plan *p, const char *path, unsigned flags, const char *why)
{
	ADD(p, AJ_OP_BIND, path, path, AJ_OPF_SELF | AJ_OPF_NOFOLLOW | flags, 0, why);
}

/* One git directory's executable parts: hooks and config are read-only; missing ones are
 * created (empty), as git init would, so the sandbox cannot create them either. */
static int protect_gitdir(struct aj_plan *p, const char *gitdir, bool modules,
			  struct aj_err *err)
{
	static const struct {
		const char *name;
		int type; /* S_IFDIR or S_IFREG */
		bool create;
		const char *why;
	} parts[] = {
		{"hooks", S_IFDIR, true, "git hooks run on the host: read-only"},
		{"config", S_IFREG, true, "git config can name hooks, filters and fsmonitor: read-only"},
		{"commondir", S_IFREG, false, "commondir redirects git to another config: read-only"},
		{"worktrees", S_IFDIR, false, "other worktrees' git directories: read-only"},
	};
	char path[4300];
	struct stat st;

	for (size_t i = 0; i < AJ_ARRAY_SIZE(parts); i++) {
		snprintf(path, sizeof path, "%s/%s", gitdir, parts[i].name);
		if (lstat(path, &st) < 0) {
			if (errno != ENOENT)
				return aj_err_sys(err, AJ_LAYER_POLICY, "protect \"%s\"", path);
			if (!parts[i].create || modules)
				continue;
			protect(p, path,
				AJ_OPF_RO | AJ_OPF_MKSRC |
					(parts[i].type == S_IFDIR ? 0 : AJ_OPF_MKFILE),
				parts[i].why);
			continue;
		}
		if ((st.st_mode & S_IFMT) != (mode_t)parts[i].type)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "\"%s\" is not a plain %s (a symlink left by an earlier "
					  "run?); agentjail protects it and will not follow it",
					  path, parts[i].type == S_IFDIR ? "directory" : "file"),
			       aj_err_hint(err, "inspect and repair the repository, or run with "
						"protect_git off");
		protect(p, path, AJ_OPF_RO, parts[i].why);
	}
	return 0;
}

/* The workspace's git metadata runs code on the host the next time the user runs git there.
 * .git itself is bound onto itself so that it cannot be renamed away and rebuilt; submodule
 * git directories get the same protection. */
static int protect_git(struct aj_plan *p, struct aj_err *err)
{
	const char *ws = p->policy->workspace;
	char git[4200], mod[4300];
	struct stat st;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;

	snprintf(git, sizeof git, "%s/.git", ws);
	if (lstat(git, &st) < 0)
		return 0; /* not a repository (yet): what the agent creates is its own */
	if (S_ISLNK(st.st_mode))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "\"%s\" is a symlink (left by an earlier run?); agentjail protects "
				  ".git and will not follow it",
				  git);
	if (S_ISREG(st.st_mode)) {
		protect(p, git, AJ_OPF_RO, "a gitdir file: where git finds the repository");
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	p->git_dir = aj_xstrdup(git);
	snprintf(mod, sizeof mod, "%s/commondir", git);
	p->had_commondir = lstat(mod, &st) == 0;
	protect(p, git, 0, "pinned: a mount point cannot be renamed away");
	if (protect_gitdir(p, git, false, err) < 0)
		return -1;
	snprintf(mod, sizeof mod, "%s/modules", git);
	d = opendir(mod);
	while (d && (e = readdir(d))) {
		char sub[4600];
		if (e->d_name[0] == '.' || e->d_type != DT_DIR)
			continue;
		snprintf(sub, sizeof sub, "%s/%s", mod, e->d_name);
		if (protect_gitdir(p, sub, true, err) < 0)
			return -1;
	}
	return 0;
}

/* The workspace, its .git protections and the policy's extra paths, shallowest first so that
 * a deeper bind lands on top of the one containing it. Read-only grants keep their host
 * ownership (the sandbox user reads them as anyone else would); the workspace and read-write
 * grants show their owner as the sandbox user, or the sandbox could not write them. */
/* filesystem.volumes: a volume's files keep the ids the sandbox sees (idmapped through the
 * sandbox's whole range as root; rootless, the subordinate ids every sandbox of the user
 * shares), so every sandbox that mounts one sees the same owners; a host directory is bound as
 * a read_only or read_write grant would be. */
static int volume_binds(struct aj_plan *p, unsigned parent, struct aj_err *err)
{
	const struct aj_policy *pol = p->policy;
	struct aj_volume_entry e;
	char why[200];

	if (pol->volumes.n && p->volume_dirs.n != pol->volumes.n)
		return aj_err_set(err, AJ_LAYER_INTERNAL, 0,
				  "filesystem.volumes: %zu entries, %zu resolved", pol->volumes.n,
				  p->volume_dirs.n);
	for (size_t i = 0; i < pol->volumes.n; i++) {
		unsigned ro = 0;
		if (aj_volume_entry_parse(pol->volumes.v[i], &e, why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "filesystem.volumes[%zu]: %s", i,
					  why);
		ro = e.ro ? AJ_OPF_RO : 0;
		if (e.host)
			ADD(p, AJ_OP_BIND, e.target, p->volume_dirs.v[i],
			    parent | AJ_OPF_NOFOLLOW | AJ_OPF_SAFE_DST | ro |
				    (e.ro ? AJ_OPF_NOIDMAP : 0),
			    e.ro ? AJ_LL_RX : AJ_LL_RW,
			    e.ro ? "a host directory bound read-only (--volume), host ownership kept"
				 : "a host directory bound read-write (--volume)");
		else
			ADD(p, AJ_OP_BIND, e.target, p->volume_dirs.v[i],
			    (parent ? parent | AJ_OPF_CANONICAL : 0) | AJ_OPF_NOFOLLOW |
				    AJ_OPF_SAFE_DST | ro,
			    e.ro ? AJ_LL_RX : AJ_LL_RW,
			    e.ro ? "a volume, read-only (shared with other sandboxes)"
				 : "a volume (shared with other sandboxes, outlives them)");
	}
	return 0;
}

static int user_binds(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_policy *pol = p->policy;
	size_t first = p->n_ops;
	unsigned parent = p->privileged ? AJ_OPF_FROM_PARENT : 0;
	bool ro = pol->workspace_mode == AJ_WS_RO;

	if (p->no_workspace) {
		/* a build step: the image root alone */
	} else if (p->image && pol->managed) {
		/* The root's overlay holds the workspace: a directory of the sandbox user's. */
		ADD(p, AJ_OP_DIR, pol->workspace, NULL, AJ_OPF_OWNED, ro ? AJ_LL_RX : AJ_LL_RW,
		    "the sandbox's workspace, in its root (persists across stop/start)");
	} else if (p->ovl.on) {
		ADD(p, AJ_OP_OVERLAY, pol->workspace, NULL, parent | (ro ? AJ_OPF_RO : 0),
		    ro ? AJ_LL_RX : AJ_LL_RW,
		    pol->managed ? "the sandbox's layered workspace (persists across stop/start)"
				 : "the workspace as an overlay: changes are kept apart from the "
				   "host directory");
	} else {
		ADD(p, AJ_OP_BIND, pol->workspace, pol->workspace, parent | (ro ? AJ_OPF_RO : 0),
		    ro ? AJ_LL_RX : AJ_LL_RW, ro ? "the workspace, read-only" : "the workspace");
	}
	if (pol->protect_git && !ro && !pol->managed && !p->no_workspace && protect_git(p, err) < 0)
		return -1;
	for (size_t i = 0; i < pol->read_only.n; i++)
		ADD(p, AJ_OP_BIND, pol->read_only.v[i], pol->read_only.v[i],
		    parent | AJ_OPF_RO | AJ_OPF_NOIDMAP | AJ_OPF_NOFOLLOW, AJ_LL_RX,
		    "granted read-only by the policy, host ownership kept");
	for (size_t i = 0; i < pol->read_write.n; i++)
		ADD(p, AJ_OP_BIND, pol->read_write.v[i], pol->read_write.v[i],
		    parent | AJ_OPF_NOFOLLOW, AJ_LL_RW, "granted read-write by the policy");
	if (volume_binds(p, parent, err) < 0)
		return -1;
	/* Stable insertion sort by depth over the ops just added. */
	for (size_t i = first + 1; i < p->n_ops; i++) {
		struct aj_op tmp = p->ops[i];
		size_t j = i;
		while (j > first && depth(p->ops[j - 1].dst) > depth(tmp.dst)) {
			p->ops[j] = p->ops[j - 1];
			j--;
		}
		p->ops[j] = tmp;
	}
	return 0;
}

static bool in_writable_area(const struct aj_policy *pol, const char *path)
{
	if (pol->workspace_mode == AJ_WS_RW && aj_path_within(path, pol->workspace))
		return true;
	for (size_t i = 0; i < pol->read_write.n; i++)
		if (aj_path_within(path, pol->read_write.v[i]))
			return true;
	return false;
}

/* A mask inside a writable area can be moved away between runs (rename its directory): its
 * target missing there means the secret may sit under another name now, so the run is
 * refused rather than the mask silently skipped. */
static int masks(struct aj_plan *p, struct aj_err *err)
{
	for (size_t i = 0; i < p->policy->mask.n; i++) {
		const char *m = p->policy->mask.v[i];
		bool writable = in_writable_area(p->policy, m);
		struct stat st;

		if (writable && lstat(m, &st) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, ENOENT,
					  "filesystem.mask[%zu]: \"%s\" is missing inside a writable "
					  "area; it may have been moved by an earlier run",
					  i, m),
			       aj_err_hint(err, "find where the masked data went, or drop the mask");
		ADD(p, AJ_OP_MASK, m, NULL, writable ? AJ_OPF_NOFOLLOW : AJ_OPF_OPTIONAL, 0,
		    "masked by the policy");
	}
	return 0;
}

void aj_plan_procfs(struct aj_plan *p)
{
	ADD(p, AJ_OP_PROC, "/proc", NULL, 0, AJ_LL_RO,
	    "fresh procfs: only the sandbox's processes");
	rules_section(p, "proc-mask");
	ADD(p, AJ_OP_SEAL, "/proc", NULL, AJ_OPF_RO | AJ_OPF_NODEV | AJ_OPF_NOEXEC, 0,
	    "procfs and its masks: read-only, nosuid, nodev, noexec");
}

int aj_plan_user_binds(struct aj_plan *p, struct aj_err *err)
{
	return user_binds(p, err) < 0 || masks(p, err) < 0 ? -1 : 0;
}

int aj_plan_rootfs(struct aj_plan *p, struct aj_err *err)
{
	aj_plan_load_rules(p);
	/* Listing directories anywhere is harmless: only what is mounted in can be listed. */
	ADD(p, AJ_OP_DIR, "/", NULL, 0, AJ_LL_FS_READ_DIR, "the sandbox root (a tmpfs)");
	rules_section(p, "system");
	add_fs(p, AJ_OP_TMPFS, "/etc", AJ_LL_RO, "mode=0755,size=8m",
	       "only the /etc entries programs need");
	rules_section(p, "etc");
	identity_files(p);
	aj_plan_dev_tree(p);
	aj_plan_procfs(p);
	scratch_areas(p);
	if (aj_plan_user_binds(p, err) < 0)
		return -1;
	aj_plan_egress_files(p);
	/* Last, so that grants and masks under /etc can still be placed. */
	ADD(p, AJ_OP_SEAL, "/etc", NULL, AJ_OPF_RO | AJ_OPF_NODEV, 0,
	    "/etc and everything bound into it: read-only, nosuid, nodev");
	aj_plan_set_layer(p, AJ_PL_ROOTFS, AJ_LS_ENFORCED,
			  "tmpfs root, read-only; %zu operations; system directories read-only, "
			  "nosuid, nodev; workspace %s",
			  p->n_ops, p->policy->workspace_mode == AJ_WS_RO ? "read-only" : "writable");
	return 0;
}
