#include "image/store.h"

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
#include "image/ref.h"
#include "image/root.h"
#include "image/unpack.h"

#define TMP ".tmp-"
#define MANIFEST_MAX (4u << 20)
#define CONFIG_MAX (8u << 20)

#define FLAT ".flat-"

/* A listing of dir (which stays open), or NULL. */
static DIR *listing(int dir)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	return d;
}

static bool layers_empty(int dir)
{
	_cleanup_closedir_ DIR *d = listing(dir);
	struct dirent *e;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			return false;
	return true;
}

/* Rootless: how this store's layers are unpacked (images/idmap, see store.h). A store that
 * has layers and no record predates subordinate ids: "single". */
static int ids_mode(struct aj_images *im, struct aj_err *err)
{
	_cleanup_free_ char *path = aj_xasprintf("%s/images/idmap", im->state_dir);
	_cleanup_free_ char *text = aj_read_file(path, 4096, NULL);
	char want[128];
	bool empty = layers_empty(im->layers_dir);

	aj_subids_probe(&im->subids);
	if (im->subids.on)
		snprintf(want, sizeof want, "subids %u %u %u %u\n", im->subids.uid, im->subids.gid,
			 im->subids.sub_uid, im->subids.sub_gid);
	else
		snprintf(want, sizeof want, "single\n");
	if (text && !empty) {
		im->subid_layers = strncmp(text, "subids ", 7) == 0;
		if (im->subid_layers && strcmp(text, want) != 0 && im->subids.on) {
			im->subids.on = false;
			snprintf(im->subids.why, sizeof im->subids.why,
				 "the layers were unpacked with the map \"%.*s\", this caller's "
				 "ranges now give \"%.*s\"",
				 (int)strcspn(text, "\n"), text, (int)strcspn(want, "\n"), want);
		}
		return 0;
	}
	if (!text && !empty)
		snprintf(want, sizeof want, "single\n");
	im->subid_layers = strncmp(want, "subids ", 7) == 0;
	if (!text || strcmp(text, want) != 0) {
		/* Written aside and renamed: a reader sees the old record or the new. */
		_cleanup_free_ char *tmp = aj_xasprintf("%s/images/" TMP "idmap-%d", im->state_dir,
							(int)getpid());

		_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
							   O_NOFOLLOW, 0600);

		if (fd < 0 || aj_write_all(fd, want, strlen(want)) < 0 || rename(tmp, path) < 0) {
			aj_err_sys(err, AJ_LAYER_IMAGE, "write \"%s\"", path);
			unlink(tmp);
			return -1;
		}
	}
	return 0;
}

int aj_images_check_subids(const struct aj_images *im, struct aj_err *err)
{
	if (!im->subid_layers || im->subids.on)
		return 0;
	aj_err_set(err, AJ_LAYER_USERNS, EPERM,
		   "the image store's layers are owned by subordinate ids, which cannot be "
		   "mapped now: %s",
		   im->subids.why);
	return aj_err_hint(err, "restore the ranges in /etc/subuid and /etc/subgid (and the uidmap "
				"package), or use another --state-dir");
}

int aj_images_open(const char *state_dir, struct aj_store *db, struct aj_images *im,
		   struct aj_err *err)
{
	_cleanup_free_ char *layers = aj_xasprintf("%s/images/layers", state_dir);

	memset(im, 0, sizeof *im);
	im->layers_dir = im->lock_fd = im->blobs.dir = -1;
	im->db = db;
	im->set_owners = geteuid() == 0;
	snprintf(im->state_dir, sizeof im->state_dir, "%s", state_dir);
	if (aj_mkdir_p(layers, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s\"", layers);
	im->layers_dir = open(layers, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (im->layers_dir < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", layers);
	if (!im->set_owners && ids_mode(im, err) < 0)
		return -1;
	return aj_blobs_open(state_dir, &im->blobs, err);
}

void aj_images_close(struct aj_images *im)
{
	aj_images_unlock(im);
	aj_blobs_close(&im->blobs);
	if (im->layers_dir >= 0)
		close(im->layers_dir);
	im->layers_dir = -1;
}

int aj_images_lock(struct aj_images *im, struct aj_err *err)
{
	_cleanup_free_ char *path = aj_xasprintf("%s/images/lock", im->state_dir);

	if (im->lock_fd >= 0)
		return 0;
	im->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (im->lock_fd < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", path);
	while (flock(im->lock_fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			aj_err_sys(err, AJ_LAYER_IMAGE, "lock \"%s\"", path);
			aj_images_unlock(im);
			return -1;
		}
	return 0;
}

void aj_images_unlock(struct aj_images *im)
{
	if (im->lock_fd >= 0)
		close(im->lock_fd);
	im->lock_fd = -1;
}

void aj_images_layer_path(const struct aj_images *im, const char *diff_id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/images/layers/%s", im->state_dir, aj_digest_hex(diff_id));
}

bool aj_images_has_layer(const struct aj_images *im, const char *diff_id)
{
	struct stat st;

	return aj_digest_valid(diff_id) &&
	       fstatat(im->layers_dir, aj_digest_hex(diff_id), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

bool aj_images_layer_flattened(const struct aj_images *im, const char *diff_id)
{
	char name[100];

	snprintf(name, sizeof name, FLAT "%s", aj_digest_hex(diff_id));
	return faccessat(im->layers_dir, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Unpacks blob (fd) into layers/tmp and publishes it under its diff_id. -1 leaves tmp for
 * the caller to remove. */
static int unpack_into(struct aj_images *im, int fd, const char *tmp, const char *diff_id,
		       const char *what, char learned[AJ_DIGEST_SIZE], struct aj_err *err)
{
	char path[4200];
	struct aj_unpack_opts o = {.set_owners = im->set_owners || im->subid_layers,
				   .subids = im->subid_layers ? &im->subids : NULL,
				   .what = what};
	struct aj_unpack_result res;

	if (aj_images_check_subids(im, err) < 0)
		return -1;

	snprintf(path, sizeof path, "%s/images/layers/%s", im->state_dir, tmp);
	if (aj_image_unpack(fd, path, &o, &res, err) < 0)
		return -1;
	if (diff_id && strcmp(res.diff_id, diff_id) != 0)
		return aj_err_set(err, AJ_LAYER_IMAGE, EIO,
				  "%s: its content has the diff_id %s, the config says %s: refused",
				  what, res.diff_id, diff_id);
	if (learned)
		memcpy(learned, res.diff_id, AJ_DIGEST_SIZE);
	/* Learnt only now: the same layer may be there already. */
	if (!diff_id && aj_images_has_layer(im, res.diff_id)) {
		aj_tree_remove_at(im->layers_dir, tmp, NULL);
		return 0;
	}
	/* Before the layer is there: a crash in between leaves a mark of no layer, not a
	 * flattened layer without its mark. */
	if (!o.set_owners && res.other_owners) {
		char flat[100];
		_cleanup_close_ int mark = -1;

		snprintf(flat, sizeof flat, FLAT "%s", aj_digest_hex(res.diff_id));
		mark = openat(im->layers_dir, flat, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			      0600);
		if (mark < 0)
			return aj_err_sys(err, AJ_LAYER_IMAGE, "mark %s as flattened", what);
	}
	if (renameat(im->layers_dir, tmp, im->layers_dir, aj_digest_hex(res.diff_id)) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "publish %s", what);
	return 0;
}

int aj_images_layer_add(struct aj_images *im, const char *blob, const char *diff_id,
			const char *what, char learned[AJ_DIGEST_SIZE], struct aj_err *err)
{
	char id[33], tmp[64];
	_cleanup_close_ int fd = -1;

	if (diff_id && !aj_digest_valid(diff_id))
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
				  "%s: the diff_id \"%s\" is not a "
				  "sha256 digest",
				  what, diff_id);
	if (diff_id && aj_images_has_layer(im, diff_id))
		return 0;
	fd = aj_blobs_open_blob(&im->blobs, blob, err);
	if (fd < 0)
		return -1;
	aj_random_hex(id, 16);
	snprintf(tmp, sizeof tmp, TMP "%s", id);
	if (mkdirat(im->layers_dir, tmp, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create a layer directory");
	if (unpack_into(im, fd, tmp, diff_id, what, learned, err) < 0) {
		aj_tree_remove_at(im->layers_dir, tmp, NULL);
		return -1;
	}
	return 0;
}

/* The canonical name of what the user typed ("busybox" -> "docker.io/library/busybox:latest"). */
static int canonical(const char *name, char *out, size_t len, struct aj_err *err)
{
	struct aj_image_ref r;
	char why[256];

	if (aj_image_ref_parse(name, &r, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "image name \"%s\": %s", name, why);
	if (r.digest[0] && !r.tag[0]) {
		snprintf(out, len, "%s", r.digest);
		return 0;
	}
	r.digest[0] = '\0';
	aj_image_ref_format(&r, out, len);
	return 0;
}

int aj_images_canonical(const char *name, char *out, size_t len, struct aj_err *err)
{
	return canonical(name, out, len, err);
}

int aj_images_tag(struct aj_images *im, const char *owner, const char *name, const char *digest,
		  struct aj_err *err)
{
	char canon[700];

	if (canonical(name, canon, sizeof canon, err) < 0)
		return -1;
	return aj_store_image_tag(im->db, owner, canon, digest, err);
}

int aj_images_untag(struct aj_images *im, const char *owner, const char *name,
		    struct aj_err *err)
{
	char canon[700];

	if (canonical(name, canon, sizeof canon, err) < 0)
		return -1;
	return aj_store_image_untag(im->db, owner, canon, err);
}

int aj_images_register(struct aj_images *im, const char *manifest_digest,
		       const struct aj_manifest *m, const struct aj_image_config *c,
		       const char *source, const char *owner, const char *name, uint64_t size,
		       struct aj_image_rec *out, struct aj_err *err)
{
	struct aj_image_rec r;
	char canon[700];

	memset(&r, 0, sizeof r);
	if (c->diff_ids.n != m->layers.n)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
				  "image %s: the config lists %zu layers, the manifest %zu",
				  manifest_digest, c->diff_ids.n, m->layers.n);
	if (name && canonical(name, canon, sizeof canon, err) < 0)
		return -1;
	snprintf(r.digest, sizeof r.digest, "%s", manifest_digest);
	snprintf(r.config, sizeof r.config, "%s", m->config.digest);
	snprintf(r.platform, sizeof r.platform, "%s/%s%s%s", c->os ? c->os : "linux",
		 c->arch ? c->arch : "?", c->variant ? "/" : "", c->variant ? c->variant : "");
	snprintf(r.source, sizeof r.source, "%s", source ? source : "");
	r.created_ms = (int64_t)aj_now_realtime_ms();
	r.size_bytes = (int64_t)size;
	r.layers = c->diff_ids; /* borrowed for the insert */
	if (aj_store_begin(im->db, err) < 0)
		return -1;
	if (aj_store_image_put(im->db, &r, err) < 0 ||
	    (name && aj_store_image_tag(im->db, owner, canon, r.digest, err) < 0)) {
		aj_store_rollback(im->db);
		return -1;
	}
	if (aj_store_commit(im->db, err) < 0)
		return -1;
	return out ? aj_store_image_get(im->db, owner, r.digest, out, err) : 0;
}

int aj_images_find(struct aj_images *im, const char *owner, const char *ref,
		   struct aj_image_rec *rec, struct aj_image_config *config, struct aj_err *err)
{
	char canon[700], what[120];
	_cleanup_free_ char *text = NULL;
	size_t len;
	bool hexish = strspn(ref, "0123456789abcdef") == strlen(ref) && strlen(ref) >= 12;

	if (aj_digest_valid(ref) || hexish)
		snprintf(canon, sizeof canon, "%s", ref);
	else if (canonical(ref, canon, sizeof canon, err) < 0)
		return -1;
	if (aj_store_image_get(im->db, owner, canon, rec, err) < 0) {
		if (err->cls == AJ_ERRC_NOT_FOUND) {
			aj_err_set(err, AJ_LAYER_IMAGE, ENOENT, "no image \"%s\" in the store", ref);
			aj_err_class(err, AJ_ERRC_NOT_FOUND);
			aj_err_hint(err, "agentjail image pull %s, or image import", ref);
		}
		return -1;
	}
	if (!config)
		return 0;
	snprintf(what, sizeof what, "config %s", rec->config);
	text = aj_blobs_read(&im->blobs, rec->config, CONFIG_MAX, &len, err);
	if (!text || aj_config_parse(text, len, what, config, err) < 0) {
		aj_image_rec_free(rec);
		return -1;
	}
	return 0;
}

/* Every blob some image refers to: its manifest, its config and its layers' blobs. */
static int blobs_in_use(struct aj_images *im, struct aj_strv *keep, struct aj_err *err)
{
	struct aj_image_rec *v = NULL;
	size_t n = 0;

	if (aj_store_image_list(im->db, NULL, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *text = NULL;
		struct aj_manifest m;
		size_t len;

		aj_strv_push(keep, v[i].digest);
		aj_strv_push(keep, v[i].config);
		text = aj_blobs_read(&im->blobs, v[i].digest, MANIFEST_MAX, &len, NULL);
		if (text && aj_manifest_parse(text, len, "manifest", &m, NULL) == 0) {
			for (size_t k = 0; k < m.layers.n; k++)
				aj_strv_push(keep, m.layers.v[k].digest);
			aj_manifest_free(&m);
		}
	}
	aj_image_recs_free(v, n);
	return 0;
}

static void sweep_dir(int dir, bool (*drop)(const char *name, void *arg), void *arg,
		      unsigned *removed)
{
	_cleanup_closedir_ DIR *d = listing(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || !strncmp(e->d_name, TMP, strlen(TMP)))
			if (drop(e->d_name, arg) && aj_tree_remove_at(dir, e->d_name, NULL) == 0 &&
			    removed)
				(*removed)++;
}

struct keep {
	const struct aj_strv *names; /* hex digests to keep; NULL: keep all but .tmp */
};

static bool drop_unkept(const char *name, void *arg)
{
	const struct keep *k = arg;

	if (!strncmp(name, TMP, strlen(TMP)))
		return true;
	return k->names && !aj_strv_contains(k->names, name);
}

/* .flat-<hex> marks whose layer is gone (removed, or never published). */
static void drop_orphan_marks(struct aj_images *im)
{
	_cleanup_closedir_ DIR *d = listing(im->layers_dir);
	struct dirent *e;
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, FLAT, strlen(FLAT)) &&
		    fstatat(im->layers_dir, e->d_name + strlen(FLAT), &st, AT_SYMLINK_NOFOLLOW) < 0)
			unlinkat(im->layers_dir, e->d_name, 0);
}

int aj_images_gc(struct aj_images *im, bool unused, unsigned *removed, uint64_t *bytes,
		 struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv layers = AJ_STRV_INIT, blobs = AJ_STRV_INIT;
	_cleanup_strv_ struct aj_strv hex_layers = AJ_STRV_INIT, hex_blobs = AJ_STRV_INIT;
	struct keep kl = {NULL}, kb = {NULL};
	bool run_used;
	int blob_dir;

	(void)bytes;
	if (aj_images_lock(im, err) < 0)
		return -1;
	if (unused) {
		if (aj_store_image_layers_used(im->db, &layers, err) < 0 ||
		    blobs_in_use(im, &blobs, err) < 0)
			return -1;
		for (size_t i = 0; i < layers.n; i++)
			aj_strv_push(&hex_layers, aj_digest_hex(layers.v[i]));
		for (size_t i = 0; i < blobs.n; i++)
			if (aj_digest_valid(blobs.v[i]))
				aj_strv_push(&hex_blobs, aj_digest_hex(blobs.v[i]));
		kl.names = &hex_layers;
		kb.names = &hex_blobs;
	}
	if (aj_image_runs_using(im, NULL, &run_used, err) < 0)
		return -1;
	sweep_dir(im->layers_dir, drop_unkept, &kl, removed);
	drop_orphan_marks(im);
	if (aj_blobs_sweep(&im->blobs, true, removed, err) < 0)
		return -1;
	blob_dir = openat(im->blobs.dir, "sha256", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (blob_dir >= 0) {
		sweep_dir(blob_dir, drop_unkept, &kb, removed);
		close(blob_dir);
	}
	return 0;
}
