/* An image root's plan (docs/images.md, "Image roots"): whom the command runs as, read from
 * the image's own /etc/passwd and /etc/group; the operations that make the root; and the
 * process defaults of the image's config (the command, the working directory, the
 * environment it starts from).
 *
 * The layers are data someone else wrote, read here by agentjail (root, in privileged mode):
 * every file is opened beneath its layer without following symlinks and only if it is a
 * regular file, and whiteouts and opaque directories hide what lower layers hold, as
 * overlayfs will once the root is mounted. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"
#include "policy/plan_internal.h"
#include "policy/users.h"
#include "rules/landlock.h"

#define ID_FILE_MAX (1u << 20)

static bool is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

static bool is_opaque(int dirfd)
{
	char v[4];
	ssize_t n = fgetxattr(dirfd, AJ_OVL_OPAQUE_XATTR, v, sizeof v);

	return n == 1 && v[0] == 'y';
}

static char *read_regular(int fd, size_t max)
{
	struct stat st;
	char *buf;
	size_t len = 0;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max)
		return NULL;
	buf = aj_xmalloc((size_t)st.st_size + 1);
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

/* One layer's say on `rel` ("etc/passwd"): its content, or NULL with *decided when the layer
 * hides it (a whiteout at it or on its way, an opaque directory on its way that lacks it, a
 * symlink or something else than a regular file there), or NULL without: look lower. */
static char *layer_file(const char *layer, const char *rel, bool *decided)
{
	_cleanup_close_ int dir = open(layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char prefix[256];
	bool opaque = false;

	*decided = false;
	if (dir < 0)
		return NULL;
	for (const char *c = rel;;) {
		const char *slash = strchr(c, '/');
		bool last = !slash;
		_cleanup_close_ int fd = -1;
		struct stat st;

		snprintf(prefix, sizeof prefix, "%.*s", (int)((last ? c + strlen(c) : slash) - rel),
			 rel);
		fd = aj_open_beneath(dir, prefix, O_PATH | O_NOFOLLOW, 0);
		if (fd < 0 && errno == ENOENT) {
			*decided = opaque;
			return NULL;
		}
		if (fd < 0 || fstat(fd, &st) < 0) {
			/* ELOOP (a symlink on the way, which overlayfs would follow into the
			 * image), a device that would not open: unreadable, and it hides lower
			 * layers. */
			*decided = true;
			return NULL;
		}
		if (is_whiteout(&st) || (!last && !S_ISDIR(st.st_mode))) {
			*decided = true;
			return NULL;
		}
		if (last) {
			_cleanup_close_ int rfd = -1;
			*decided = true;
			if (!S_ISREG(st.st_mode))
				return NULL;
			rfd = aj_open_beneath(dir, prefix,
					      O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW, 0);
			return rfd < 0 ? NULL : read_regular(rfd, ID_FILE_MAX);
		}
		{
			_cleanup_close_ int d =
				aj_open_beneath(dir, prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
			opaque = opaque || (d >= 0 && is_opaque(d));
		}
		c = slash + 1;
	}
}

/* The image's `rel` as the mounted root will show it: the topmost layer's say, the
 * sandbox's own system layer first. */
char *aj_root_file(const struct aj_root_spec *r, const char *rel)
{
	char upper[4200];
	bool decided;
	char *s;

	if (r->rw_dir) {
		snprintf(upper, sizeof upper, "%s/upper", r->rw_dir);
		s = layer_file(upper, rel, &decided);
		if (s || decided)
			return s;
	}
	for (size_t i = r->lowers->n; i-- > 0;) {
		s = layer_file(r->lowers->v[i], rel, &decided);
		if (s || decided)
			return s;
	}
	return NULL;
}

/* ---- users and groups ------------------------------------------------------------------ */

/* A user the image's passwd lacks is added to it, with its group and home: written into the
 * sandbox's system layer when the root is built (p->image_passwd, p->image_group), so that
 * tools that look the user up (ssh, sudo, shells' prompts, pip --user) find it. Named
 * user.name unless the image has that name for another uid. */
static void add_user(struct aj_plan *p, struct aj_user *u, const char *passwd, const char *group)
{
	struct aj_user other = {0};
	size_t plen = passwd ? strlen(passwd) : 0, glen = group ? strlen(group) : 0;

	if (aj_passwd_find(passwd, p->policy->user_name, 0, &other))
		snprintf(u->name, sizeof u->name, "u%u", p->uid);
	else
		snprintf(u->name, sizeof u->name, "%s", p->policy->user_name);
	snprintf(u->home, sizeof u->home, "/home/%s", u->name);
	snprintf(u->shell, sizeof u->shell, "/bin/sh");
	p->image_passwd = aj_xasprintf("%s%s%s:x:%u:%u::%s:%s\n", passwd ? passwd : "",
				       plen && passwd[plen - 1] != '\n' ? "\n" : "", u->name,
				       p->uid, p->gid, u->home, u->shell);
	if (!aj_group_has_gid(group, p->gid))
		p->image_group = aj_xasprintf("%s%s%s:x:%u:\n", group ? group : "",
					      glen && group[glen - 1] != '\n' ? "\n" : "",
					      u->name, p->gid);
}

/* Who the command runs as: --user / process.user, else the image's User, else root, read
 * from the image's own /etc/passwd and /etc/group (policy/users.h). */
int aj_plan_image_user(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_root_spec *r = p->image;
	const char *spec = p->policy->process_user, *field = "process.user";
	_cleanup_free_ char *passwd = NULL, *group = NULL;
	struct aj_user u;
	enum aj_user_result res;

	if (!spec) {
		spec = r->user && *r->user ? r->user : "root";
		field = "the image's User";
	}
	passwd = aj_root_file(r, "etc/passwd");
	group = aj_root_file(r, "etc/group");
	res = aj_user_resolve(passwd, group, spec, &u);
	if (res == AJ_USER_NO_USER && strcmp(u.name, p->policy->user_name) == 0 &&
	    !strchr(spec, ':')) {
		/* The sandbox user (user.name, "user" by default: what E2B clients ask for)
		 * is added to an image that lacks it, with user.uid and user.gid. */
		memset(&u, 0, sizeof u);
		u.uid = (uint32_t)p->policy->uid;
		u.gid = (uint32_t)p->policy->gid;
		res = u.uid > 65535 || u.gid > 65535 ? AJ_USER_RANGE : AJ_USER_OK;
	}
	switch (res) {
	case AJ_USER_OK:
		break;
	case AJ_USER_NO_USER:
		aj_err_set(err, AJ_LAYER_POLICY, ENOENT,
			   "%s: \"%s\" is not a user of image %s (its /etc/passwd%s)", field,
			   u.name, r->name, passwd ? "" : " is missing or unreadable");
		return aj_err_hint(err, "name a user the image has, or give UID[:GID]");
	case AJ_USER_NO_GROUP:
		aj_err_set(err, AJ_LAYER_POLICY, ENOENT,
			   "%s: \"%s\" is not a group of image %s (its /etc/group)", field,
			   strchr(spec, ':') + 1, r->name);
		return aj_err_hint(err, "name a group the image has, or give a GID");
	case AJ_USER_RANGE:
		return aj_err_set(err, AJ_LAYER_POLICY, ERANGE,
				  "%s: \"%s\" is beyond ids 0-65535, which a sandbox maps", field,
				  spec);
	}
	p->uid = u.uid;
	p->gid = u.gid;
	p->n_groups = 0;
	for (size_t i = 0; aj_plan_maps_range(p) && i < u.n_groups; i++)
		p->groups[p->n_groups++] = (gid_t)u.groups[i];
	if (!u.found)
		add_user(p, &u, passwd, group);
	free(p->user_name);
	free(p->home);
	free(p->shell);
	p->user_name = aj_xstrdup(u.name);
	p->home = aj_xstrdup(u.home[0] == '/' ? u.home : "/");
	p->shell = aj_xstrdup(u.shell[0] == '/' ? u.shell : "/bin/sh");
	if (p->subids) {
		aj_plan_set_layer(p, AJ_PL_USERNS, AJ_LS_ENFORCED,
				  "sandbox uid %u%s%s%s; the image's ids 0-65535 appear as its own: "
				  "0 maps to the caller's uid %u, 1-65535 to its subordinate uids "
				  "from %u (gids: %u, from %u), by newuidmap and newgidmap",
				  p->uid, u.name[0] ? " (" : "", u.name, u.name[0] ? ")" : "",
				  r->subids->uid, r->subids->sub_uid, r->subids->gid,
				  r->subids->sub_gid);
		return 0;
	}
	if (p->privileged) {
		aj_plan_set_layer(p, AJ_PL_USERNS, AJ_LS_ENFORCED,
				  "sandbox uid %u%s%s%s maps to an unprivileged host uid range "
				  "allocated per sandbox; the image's ids 0-65535 appear as its own",
				  p->uid, u.name[0] ? " (" : "", u.name, u.name[0] ? ")" : "");
		return 0;
	}
	/* Single-id mode: every file appears as the one id mapped. An image whose files have
	 * other owners (a package manager's own user, a service's) needs them to work as
	 * built: failing closed unless the caller accepts the flattening. */
	if (r->flattened) {
		char probe[600];

		snprintf(probe, sizeof probe,
			 "image %s has files of owners other than root and the sandbox maps one "
			 "id (single-id mode: %s), so every file appears as uid %u's and no "
			 "process can switch to another user",
			 r->name, r->ids_why && *r->ids_why ? r->ids_why : "no subordinate ids",
			 p->uid);
		if (aj_plan_need(p, AJ_PL_USERNS, "subids", NULL, AJ_LAYER_USERNS, probe,
				 "install uidmap, give the user 65,535 ids in /etc/subuid and "
				 "/etc/subgid (usermod --add-subuids 100000-165534 "
				 "--add-subgids 100000-165534 USER), and pull the image into a "
				 "store that has no layers yet",
				 err) < 0)
			return -1;
		/* The namespace itself holds; what is given up is the image's owners. */
		aj_plan_set_layer(p, AJ_PL_USERNS, AJ_LS_DEGRADED,
				  "sandbox uid %u maps to the caller's uid, the one id mapped; the "
				  "image's other owners are NOT KEPT (single-id mode, accepted by "
				  "allow_degraded \"subids\"): every file appears as uid %u's",
				  p->uid, p->uid);
		return 0;
	}
	aj_plan_set_layer(p, AJ_PL_USERNS, AJ_LS_ENFORCED,
			  "sandbox uid %u%s%s%s maps to the caller's uid, the one id mapped "
			  "(single-id mode): every file of the image appears as that user's",
			  p->uid, u.name[0] ? " (" : "", u.name, u.name[0] ? ")" : "");
	return 0;
}

/* ---- the root ---------------------------------------------------------------------------- */

/* Files the sandbox's identity needs, bound over the image's (which stay in its layers as
 * they were): what docker and podman bind there too. */
static void over(struct aj_plan *p, const char *dst, char *content, const char *why)
{
	aj_plan_add_file(p, dst, content, strlen(content), why)->flags |= AJ_OPF_OVER;
}

static void host_copy(struct aj_plan *p, const char *path, const char *why)
{
	char *content = aj_read_file(path, 1 << 16, NULL);

	over(p, path, content ? content : aj_xstrdup(""), why);
}

static void identity_files(struct aj_plan *p)
{
	const struct aj_policy *pol = p->policy;

	if (pol->net_mode == AJ_NET_HOST) {
		host_copy(p, "/etc/hosts", "the host's name table (host network)");
		host_copy(p, "/etc/resolv.conf", "the host's resolver (host network)");
	} else {
		over(p, "/etc/hosts",
		     aj_xasprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost "
				  "ip6-loopback\n127.0.1.1\t%s\n",
				  pol->hostname),
		     "loopback names only");
		over(p, "/etc/resolv.conf",
		     aj_xstrdup("# no DNS inside the sandbox: the network is not reachable\n"),
		     "no resolver");
	}
	over(p, "/etc/hostname", aj_xasprintf("%s\n", pol->hostname), "the sandbox's name");
}

int aj_plan_image_rootfs(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_root_spec *r = p->image;
	/* Every right but making device nodes: the root is the sandbox's own overlay. */
	uint64_t rights = aj_landlock_fs_rights(p->features->landlock_abi) &
			  ~(AJ_LL_FS_MAKE_CHAR | AJ_LL_FS_MAKE_BLOCK);

	if (r->lowers->n > AJ_OVL_MAX_LOWERS)
		return aj_err_set(err, AJ_LAYER_POLICY, E2BIG, "image %s: %zu layers (at most %d)",
				  r->name, r->lowers->n, AJ_OVL_MAX_LOWERS);
	p->root.on = true;
	p->root.canonical = true;
	p->root.rw_dir = aj_xstrdup(r->rw_dir);
	for (; p->root.n_lowers < r->lowers->n; p->root.n_lowers++)
		p->root.lowers[p->root.n_lowers] = aj_xstrdup(r->lowers->v[p->root.n_lowers]);
	aj_plan_load_rules(p);
	aj_plan_add_op(p, AJ_OP_DIR, "/", NULL, 0, rights,
		       "the image's layers, read-only, under the sandbox's own system layer: "
		       "nosuid, nodev; writes land in the system layer");
	aj_plan_dev_tree(p);
	identity_files(p);
	if (p->image_passwd) {
		char *text = p->image_passwd;
		p->image_passwd = NULL;
		aj_plan_add_file(p, "/etc/passwd", text, strlen(text),
				 "the image's users and the sandbox user, which it lacked");
		aj_plan_add_op(p, AJ_OP_DIR, p->home, NULL, AJ_OPF_OWNED, 0,
			       "the added user's home");
	}
	if (p->image_group) {
		char *text = p->image_group;
		p->image_group = NULL;
		aj_plan_add_file(p, "/etc/group", text, strlen(text),
				 "the image's groups and the sandbox user's, which it lacked");
	}
	if (aj_plan_user_binds(p, err) < 0)
		return -1;
	aj_plan_egress_files(p);
	/* Last: until /proc is mounted, no path an operation resolves in the image can go
	 * through a magic link (/proc/self/fd/N, /proc/self/root) to the descriptors the
	 * builder holds on the host. */
	aj_plan_procfs(p);
	aj_plan_set_layer(p, AJ_PL_ROOTFS, AJ_LS_ENFORCED,
			  "image %s (%zu layers) under the sandbox's system layer; nosuid, nodev; "
			  "fresh /dev, /proc",
			  r->name, r->lowers->n);
	return 0;
}

/* ---- the process ---------------------------------------------------------------------------- */

/* Entrypoint, then the command given or the image's Cmd (docker's rule); a persistent
 * sandbox's commands come one by one and run as given. The working directory: the policy's
 * cwd, else the image's WorkingDir, else the workspace. */
int aj_plan_image_command(struct aj_plan *p, char *const *argv, struct aj_err *err)
{
	const struct aj_root_spec *r = p->image;
	bool given = argv && argv[0];

	if (!p->persistent) {
		for (size_t i = 0; r->entrypoint && i < r->entrypoint->n; i++)
			aj_strv_push(&p->argv, r->entrypoint->v[i]);
		for (size_t i = 0; given && argv[i]; i++)
			aj_strv_push(&p->argv, argv[i]);
		for (size_t i = 0; !given && r->cmd && i < r->cmd->n; i++)
			aj_strv_push(&p->argv, r->cmd->v[i]);
		if (p->argv.n == 0) {
			aj_err_set(err, AJ_LAYER_USAGE, 0,
				   "image %s has neither an Entrypoint nor a Cmd: name the command "
				   "to run",
				   r->name);
			return aj_err_hint(err, "agentjail run --image %s -- CMD [ARGS...]", r->name);
		}
	}
	p->cwd = aj_xstrdup(p->policy->cwd			? p->policy->cwd
			    : r->workdir && r->workdir[0] == '/' ? r->workdir
								 : p->policy->workspace);
	return 0;
}

/* The image's Env first; HOME (and USER, HOSTNAME) where it sets none. */
void aj_plan_image_env(struct aj_plan *p)
{
	const struct aj_root_spec *r = p->image;

	for (size_t i = 0; r->env && i < r->env->n; i++) {
		const char *kv = r->env->v[i], *eq = strchr(kv, '=');
		char name[256];
		if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof name)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
		aj_strv_setenv(&p->env, name, eq + 1);
	}
	if (aj_strv_find_env(&p->env, "PATH", 4) < 0)
		aj_strv_setenv(&p->env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:"
						"/usr/bin:/sbin:/bin");
	if (aj_strv_find_env(&p->env, "HOME", 4) < 0)
		aj_strv_setenv(&p->env, "HOME", p->home);
	if (p->user_name[0] && aj_strv_find_env(&p->env, "USER", 4) < 0)
		aj_strv_setenv(&p->env, "USER", p->user_name);
	if (aj_strv_find_env(&p->env, "HOSTNAME", 8) < 0)
		aj_strv_setenv(&p->env, "HOSTNAME", p->policy->hostname);
}
