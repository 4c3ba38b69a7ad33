#include "image/root.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"
#include "storage/quota.h"

#define RUNS "images/runs"
#define INIT "images/init-2"

/* The init layer, above every image's own (as docker's "-init" layer): the mount points an
 * image root needs (/dev, /proc, the files bound over /etc's, and /.agentjail/gvisor, where
 * the gvisor tier puts its init), so that they are not made in the sandbox's writable layer,
 * where they would show in its diff and snapshots. Made once per store, atomically: in a
 * temporary directory renamed into place; its name changes with its content (init-1 had no
 * /.agentjail). */
static const char *const init_dirs[] = {"dev",	      "proc",	     "sys",
					"etc",	      "etc/agentjail", ".agentjail",
					".agentjail/gvisor"};
static const char *const init_files[] = {"etc/hosts", "etc/hostname", "etc/resolv.conf",
					 "etc/agentjail/ca-bundle.crt",
					 "etc/agentjail/egress-ca.crt"};

static int init_layer(const char *state_dir, char *path, size_t len, struct aj_err *err)
{
	char tmp[4200], id[17];
	struct stat st;

	snprintf(path, len, "%s/" INIT, state_dir);
	if (stat(path, &st) == 0)
		return 0;
	/* Made by whoever needs it first, complete in a directory of its own renamed into
	 * place; of two makers at once, the second removes its copy. */
	if (aj_random_hex(id, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "getrandom");
	snprintf(tmp, sizeof tmp, "%s/images/.tmp-init-%s", state_dir, id);
	if (mkdir(tmp, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s\"", tmp);
	_cleanup_close_ int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fchmod(dfd, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", tmp);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(init_dirs); i++)
		if (mkdirat(dfd, init_dirs[i], 0755) < 0)
			return aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s/%s\"", tmp,
					  init_dirs[i]);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(init_files); i++) {
		_cleanup_close_ int f = openat(dfd, init_files[i],
					       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (f < 0)
			return aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s/%s\"", tmp,
					  init_files[i]);
	}
	/* Its entries on disk before its name: a crash never leaves a partial init layer. */
	if (fsync(dfd) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "fsync \"%s\"", tmp);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(init_dirs); i++) {
		_cleanup_close_ int d = openat(dfd, init_dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d < 0 || fsync(d) < 0)
			return aj_err_sys(err, AJ_LAYER_IMAGE, "fsync \"%s/%s\"", tmp, init_dirs[i]);
	}
	if (rename(tmp, path) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "rename \"%s\"", tmp);
	aj_tree_remove_at(AT_FDCWD, tmp, NULL); /* another process made it first */
	snprintf(tmp, sizeof tmp, "%s/images", state_dir);
	_cleanup_close_ int parent = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent >= 0)
		fsync(parent);
	return 0;
}

int aj_image_root_open(struct aj_images *im, const char *owner, const char *ref,
		       struct aj_image_root *r, struct aj_err *err)
{
	char path[4200];
	bool flattened = false;

	memset(r, 0, sizeof *r);
	r->lock_fd = -1;
	snprintf(r->name, sizeof r->name, "%s", ref);
	if (aj_images_check_subids(im, err) < 0 ||
	    aj_images_find(im, owner, ref, &r->rec, &r->config, err) < 0)
		return -1;
	for (size_t i = 0; i < r->rec.layers.n; i++) {
		if (!aj_images_has_layer(im, r->rec.layers.v[i])) {
			aj_err_set(err, AJ_LAYER_IMAGE, ENOENT,
				   "image %s: layer %zu/%zu (%s) is missing from the store", ref,
				   i + 1, r->rec.layers.n, r->rec.layers.v[i]);
			return aj_err_hint(err, "pull or import the image again");
		}
		aj_images_layer_path(im, r->rec.layers.v[i], path, sizeof path);
		aj_strv_push(&r->lowers, path);
		flattened = flattened || aj_images_layer_flattened(im, r->rec.layers.v[i]);
	}
	r->subids = im->subids;
	if (!im->set_owners && !im->subid_layers)
		snprintf(r->ids_why, sizeof r->ids_why, "%s",
			 im->subids.on ? "the store's layers were unpacked before this caller had "
					 "subordinate ids"
				       : im->subids.why);
	if (init_layer(im->state_dir, path, sizeof path, err) < 0)
		return -1;
	aj_strv_push(&r->lowers, path);
	r->spec = (struct aj_root_spec){
		.lowers = &r->lowers,
		.env = &r->config.env,
		.entrypoint = &r->config.entrypoint,
		.cmd = &r->config.cmd,
		.user = r->config.user,
		.workdir = r->config.workdir,
		.name = r->name,
		.digest = r->rec.digest,
		.subids = im->subid_layers ? &r->subids : NULL,
		.flattened = flattened,
		.ids_why = r->ids_why,
	};
	return 0;
}

static int make_layer_dirs(int dfd, const char *dir, struct aj_err *err)
{
	if ((mkdirat(dfd, "upper", 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(dfd, "work", 0700) < 0 && errno != EEXIST))
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create the system layer in \"%s\"", dir);
	return 0;
}

int aj_image_root_layer_at(struct aj_image_root *r, const char *dir, struct aj_err *err)
{
	_cleanup_close_ int dfd = -1;

	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s\"", dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", dir);
	if (make_layer_dirs(dfd, dir, err) < 0)
		return -1;
	snprintf(r->rw_dir, sizeof r->rw_dir, "%s", dir);
	r->spec.rw_dir = r->rw_dir;
	return 0;
}

int aj_image_root_run_layer(struct aj_image_root *r, struct aj_images *im, uint64_t disk,
			    struct aj_err *err)
{
	char id[17];
	_cleanup_close_ int dfd = -1;
	bool limited;

	if (aj_random_hex(id, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "getrandom");
	snprintf(r->run_dir, sizeof r->run_dir, "%s/" RUNS, im->state_dir);
	if (aj_mkdir_p(r->run_dir, 0700) < 0) {
		aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s\"", r->run_dir);
		r->run_dir[0] = '\0';
		return -1;
	}
	snprintf(r->run_dir, sizeof r->run_dir, "%s/" RUNS "/%s", im->state_dir, id);
	if (aj_quota_mkdir(r->run_dir, 0700, disk, &limited, err) < 0) {
		r->run_dir[0] = '\0';
		return -1;
	}
	dfd = open(r->run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", r->run_dir);
	/* The lock first: a directory without a held lock is a dead run's. */
	r->lock_fd = openat(dfd, "lock", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (r->lock_fd < 0 || flock(r->lock_fd, LOCK_EX) < 0 ||
	    aj_write_all(r->lock_fd, r->rec.digest, strlen(r->rec.digest)) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "lock \"%s/lock\"", r->run_dir);
	if (make_layer_dirs(dfd, r->run_dir, err) < 0)
		return -1;
	snprintf(r->rw_dir, sizeof r->rw_dir, "%s", r->run_dir);
	r->spec.rw_dir = r->rw_dir;
	return 0;
}

/* Removes a run directory: its tree, the lock last of all. */
static void remove_run(int runs, const char *name)
{
	aj_quota_remove_at(runs, name, NULL);
}

void aj_image_root_close(struct aj_image_root *r)
{
	if (r->run_dir[0]) {
		char *slash = strrchr(r->run_dir, '/');
		*slash = '\0';
		_cleanup_close_ int runs = open(r->run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (runs >= 0)
			remove_run(runs, slash + 1);
		r->run_dir[0] = '\0';
	}
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	r->lock_fd = -1;
	aj_strv_free(&r->lowers);
	aj_image_rec_free(&r->rec);
	aj_config_free(&r->config);
}

int aj_image_runs_using(struct aj_images *im, const char *digest, bool *used, struct aj_err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int runs = -1;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;

	*used = false;
	path = aj_xasprintf("%s/" RUNS, im->state_dir);
	runs = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (runs < 0)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", path);
	d = fdopendir(dup(runs));
	if (!d)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "read \"%s\"", path);
	while ((e = readdir(d))) {
		char lock[4200], held[80] = "";
		_cleanup_close_ int fd = -1;
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(lock, sizeof lock, "%s/lock", e->d_name);
		fd = openat(runs, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT)
			return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s/%s\"", path, lock);
		if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0) {
			if (errno != EWOULDBLOCK)
				return aj_err_sys(err, AJ_LAYER_IMAGE, "lock \"%s/%s\"", path, lock);
			n = read(fd, held, sizeof held - 1);
			held[n > 0 ? n : 0] = '\0';
			*used = *used || (digest && strcmp(held, digest) == 0);
			continue;
		}
		/* No lock file (a run killed while making its directory, which it did under
		 * the store's lock, held here), or one nobody holds: its run is gone. */
		remove_run(runs, e->d_name);
	}
	return 0;
}

int aj_images_used_by(struct aj_images *im, const char *digest, char *who, size_t len,
		      struct aj_err *err)
{
	struct aj_sandbox_rec *v = NULL;
	size_t n = 0;
	bool run = false;

	who[0] = '\0';
	if (aj_image_runs_using(im, digest, &run, err) < 0)
		return -1;
	if (run) {
		snprintf(who, len, "a running agentjail run");
		return 0;
	}
	if (aj_store_sandbox_list(im->db, NULL, NULL, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && !who[0]; i++) {
		_cleanup_free_ char *image = aj_policy_text_image(v[i].policy);
		if (image && strcmp(image, digest) == 0)
			snprintf(who, len, "sandbox %s", v[i].name);
	}
	aj_sandbox_recs_free(v, n);
	return 0;
}

int aj_images_drop_unnamed(struct aj_images *im, unsigned *removed, struct aj_err *err)
{
	struct aj_image_rec *v = NULL;
	size_t n = 0;
	int r;

	if ((r = aj_images_lock(im, err)) < 0 ||
	    (r = aj_store_image_list(im->db, NULL, &v, &n, err)) < 0)
		return -1;
	for (size_t i = 0; i < n && r == 0; i++) {
		_cleanup_strv_ struct aj_strv names = AJ_STRV_INIT;
		char who[200] = "";
		r = aj_store_image_names_all(im->db, v[i].digest, &names, err);
		if (r == 0 && names.n == 0)
			r = aj_images_used_by(im, v[i].digest, who, sizeof who, err);
		if (r == 0 && names.n == 0 && !who[0]) {
			r = aj_store_image_delete(im->db, v[i].digest, err);
			if (r == 0 && removed)
				(*removed)++;
		}
	}
	for (size_t i = 0; i < n; i++)
		aj_image_rec_free(&v[i]);
	free(v);
	return r;
}
