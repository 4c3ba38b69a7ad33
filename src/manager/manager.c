#include "manager/manager.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "build/job.h"
#include "cgroup/cgroup.h"
#include "common/alloc.h"
#include "common/util.h"
#include "image/store.h"
#include "manager/internal.h"
#include "state/names.h"
#include "state/secrets.h"
#include "storage/backing.h"
#include "storage/quota.h"
#include "storage/shared_dir.h"
#include "storage/volumes.h"
#include "workspace/layers.h"

int aj_mgr_open(struct aj_mgr *m, const char *state_dir, const char *owner,
		struct aj_err *err)
{
	bool attached;

	memset(m, 0, sizeof *m);
	if (state_dir)
		snprintf(m->state, sizeof m->state, "%s", state_dir);
	else if (aj_state_dir_default(m->state, sizeof m->state) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, 0, "no state directory: set HOME or pass "
							  "--state-dir");
	snprintf(m->owner, sizeof m->owner, "%s", owner ? owner : "");
	m->any_owner = owner == NULL;
	if (aj_backing_attach(m->state, &attached, err) < 0)
		return -1;
	return aj_store_open(m->state, &m->store, err);
}

void aj_mgr_close(struct aj_mgr *m)
{
	aj_store_close(m->store);
	m->store = NULL;
}

static const char *owner_filter(const struct aj_mgr *m)
{
	return m->any_owner ? NULL : m->owner;
}

bool aj_mgr_name_ok(const char *name)
{
	size_t n = strlen(name);
	bool all_hex = true;

	if (n == 0 || n > 63 || name[0] == '-' || name[0] == '.')
		return false;
	for (const char *c = name; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			return false;
		all_hex = all_hex && ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'));
	}
	/* A name that looks like an id would shadow another sandbox's id. */
	return !(all_hex && n == 16);
}

int aj_mgr_new_id(char *buf, struct aj_err *err)
{
	if (aj_random_hex(buf, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "getrandom");
	return 0;
}

int aj_mgr_reread(struct aj_mgr *m, struct aj_sandbox_rec *r, struct aj_err *err)
{
	char id[sizeof r->id];

	snprintf(id, sizeof id, "%s", r->id);
	aj_sandbox_rec_free(r);
	return aj_mgr_get(m, id, r, err);
}

int aj_mgr_lock(struct aj_mgr *m, const char *id, bool wait, struct aj_err *err)
{
	char path[4200];
	int fd;

	if (aj_ws_path(path, sizeof path, m->state, "sandboxes", id, "lock") < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "sandbox directory of %s", id);
	/* rm and gc remove the directory, lock file included, while they hold the lock. */
	fd = aj_ws_lock_path(path, true, wait, err);
	if (fd < 0 && err && err->errnum == EWOULDBLOCK)
		aj_err_set(err, AJ_LAYER_STATE, EWOULDBLOCK,
			   "sandbox %s is busy with another operation", id);
	return fd;
}

int aj_mgr_discard_creating(struct aj_mgr *m, const char *id, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_sandbox_delete(m->store, id, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	/* Record first: a crash before the files go leaves a directory gc removes. */
	if (aj_store_commit(m->store, err) < 0)
		return -1;
	return aj_ws_sandbox_remove(m->state, id, err);
}

int aj_mgr_save(struct aj_mgr *m, const struct aj_sandbox_rec *rec, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_sandbox_update(m->store, rec, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_store_commit(m->store, err);
}

int aj_mgr_wrong_state(struct aj_err *err, const struct aj_sandbox_rec *rec, const char *want)
{
	aj_err_set(err, AJ_LAYER_STATE, EBUSY, "sandbox \"%s\" is %s; it must be %s", rec->name,
		   aj_sandbox_state_name(rec->state), want);
	return aj_err_class(err, AJ_ERRC_WRONG_STATE);
}

void aj_mgr_refresh(struct aj_mgr *m, struct aj_sandbox_rec *rec)
{
	char name[64];

	if (rec->state != AJ_ST_RUNNING && rec->state != AJ_ST_PAUSED)
		return;
	if (aj_proc_alive((pid_t)rec->supervisor_pid, (uint64_t)rec->supervisor_start))
		return;
	/* The supervisor died (killed, crashed): its init died with it (parent-death signal);
	 * the workspace is on disk untouched. */
	rec->state = AJ_ST_STOPPED;
	snprintf(rec->error, sizeof rec->error, "the supervisor (pid %lld) died",
		 (long long)rec->supervisor_pid);
	rec->stopped_ms = rec->updated_ms = (int64_t)aj_now_realtime_ms();
	if (rec->socket[0])
		unlink(rec->socket);
	rec->socket[0] = '\0';
	aj_names_withdraw(m->state, rec->name, rec->id);
	rec->supervisor_pid = rec->supervisor_start = 0;
	aj_mgr_save(m, rec, NULL);
	aj_store_event_add(m->store, rec->id, "stop", "{\"reason\":\"the supervisor died\"}", NULL);
	snprintf(name, sizeof name, "sb-%s", rec->id);
	aj_cgroup_sweep(aj_cgroup_detect(NULL, NULL), name, 0);
}

int aj_mgr_get(struct aj_mgr *m, const char *ref, struct aj_sandbox_rec *out,
	       struct aj_err *err)
{
	if (aj_store_sandbox_get(m->store, ref, owner_filter(m), out, err) < 0)
		return -1;
	aj_mgr_refresh(m, out);
	return 0;
}

int aj_mgr_list(struct aj_mgr *m, const struct aj_strv *labels, struct aj_sandbox_rec **out,
		size_t *n, struct aj_err *err)
{
	if (aj_store_sandbox_list(m->store, owner_filter(m), labels, out, n, err) < 0)
		return -1;
	for (size_t i = 0; i < *n; i++)
		aj_mgr_refresh(m, &(*out)[i]);
	return 0;
}

/* A credential's secret comes from this variable: it is read by the supervisor at each
 * start and must never be captured into the stored policy (the state store) by the
 * allowlist. */
static bool secret_source(const struct aj_policy *pol, const char *name)
{
	for (size_t i = 0; i < pol->n_creds; i++)
		if (pol->creds[i].from_env && strcmp(pol->creds[i].from_env, name) == 0)
			return true;
	return false;
}

/* The stored policy is self-contained: host variables the allowlist lets in are captured
 * now, so that a later start (from another shell, by the daemon) sees the same ones. */
static char *materialize_policy(struct aj_policy *pol, struct aj_err *err)
{
	extern char **environ;
	_cleanup_json_ json_t *j = NULL;
	char *text;

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];
		bool allowed = false;
		if (!eq || (size_t)(eq - *e) >= sizeof name)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
		for (size_t i = 0; i < pol->env_allow.n && !allowed; i++) {
			const char *pat = pol->env_allow.v[i];
			size_t pl = strlen(pat);
			allowed = pl && pat[pl - 1] == '*' ? strncmp(name, pat, pl - 1) == 0
							   : strcmp(name, pat) == 0;
		}
		if (allowed && !secret_source(pol, name) &&
		    aj_strv_find_env(&pol->env_set, name, strlen(name)) < 0)
			aj_strv_setenv(&pol->env_set, name, eq + 1);
	}
	aj_strv_clear(&pol->env_allow);
	pol->managed = true;
	if (aj_policy_validate(pol, err) < 0)
		return NULL;
	j = aj_policy_to_json(pol);
	text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text)
		aj_err_sys(err, AJ_LAYER_POLICY, "store the policy");
	return text;
}

/* KEY=VALUE each, every key once: the store keeps one value per key, and a second one would
 * otherwise surface as a constraint failure after the record was begun. */
static int check_labels(const struct aj_strv *labels, struct aj_err *err)
{
	for (size_t i = 0; labels && i < labels->n; i++) {
		const char *kv = labels->v[i], *eq = strchr(kv, '=');
		if (!eq || eq == kv)
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
					  "label \"%s\": expected KEY=VALUE", kv);
		for (size_t k = 0; k < i; k++)
			if (!strncmp(labels->v[k], kv, (size_t)(eq - kv) + 1))
				return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
						  "label key \"%.*s\" is given more than once",
						  (int)(eq - kv), kv);
	}
	return 0;
}

/* A credential's secret of the store is the owner's, and there at create: a name no secret
 * has is a mistake to say now, not when the sandbox first starts. */
static int check_secrets(const struct aj_mgr *m, const struct aj_policy *pol,
			 struct aj_err *err)
{
	for (size_t i = 0; i < pol->n_creds; i++) {
		const char *name = pol->creds[i].from_secret;
		if (name && !aj_secret_exists(m->state, m->owner, name))
			return aj_err_set(err, AJ_LAYER_POLICY, ENOENT,
					  "credentials.%s.from_secret: no secret \"%s\"",
					  pol->creds[i].name, name),
			       aj_err_hint(err, "agentjail secret create %s (or POST /v1/secrets)",
					   name);
	}
	return 0;
}

static int fill_new_record(struct aj_mgr *m, const struct aj_create_opts *o,
			   struct aj_sandbox_rec *r, struct aj_err *err)
{
	int64_t now = (int64_t)aj_now_realtime_ms();

	memset(r, 0, sizeof *r);
	if (aj_mgr_new_id(r->id, err) < 0)
		return -1;
	if (o->name && !aj_mgr_name_ok(o->name))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--name: \"%s\" is not a valid name (1-63 of A-Za-z0-9_.-, not a "
				  "16-digit hex id)",
				  o->name);
	if (check_labels(o->labels, err) < 0 || check_secrets(m, o->policy, err) < 0)
		return -1;
	snprintf(r->name, sizeof r->name, "%s", o->name ? o->name : "");
	if (!o->name)
		snprintf(r->name, sizeof r->name, "sb-%.8s", r->id);
	snprintf(r->owner, sizeof r->owner, "%s", m->owner);
	r->state = AJ_ST_CREATING;
	r->created_ms = r->updated_ms = now;
	r->idle_timeout_ms = o->idle_timeout_ms;
	r->max_lifetime_ms = o->max_lifetime_ms;
	r->retention_ms = o->retention_ms;
	snprintf(r->idle_action, sizeof r->idle_action, "%s",
		 o->idle_action ? o->idle_action : "pause");
	snprintf(r->lifetime_action, sizeof r->lifetime_action, "%s",
		 o->lifetime_action ? o->lifetime_action : "stop");
	if (o->labels)
		aj_strv_copy(&r->labels, o->labels);
	if (!(r->policy = materialize_policy(o->policy, err)))
		return -1;
	return 0;
}

static int base_layers(struct aj_mgr *m, const char *snapshot, struct aj_sandbox_rec *r,
		       struct aj_err *err)
{
	_cleanup_snapshot_rec_ struct aj_snapshot_rec s = AJ_REC_INIT;

	if (!snapshot)
		return 0;
	if (aj_store_snapshot_get(m->store, snapshot, owner_filter(m), &s, err) < 0)
		return -1;
	if (s.state != AJ_SS_READY) {
		aj_err_set(err, AJ_LAYER_STATE, EBUSY, "snapshot \"%s\" is not complete", snapshot);
		return aj_err_class(err, AJ_ERRC_WRONG_STATE);
	}
	if (aj_mgr_snapshot_fits(&s, r->policy, err) < 0)
		return -1;
	snprintf(r->base_snapshot, sizeof r->base_snapshot, "%s", s.id);
	aj_strv_copy(&r->layers, &s.layers);
	r->base_depth = (int64_t)r->layers.n;
	return 0;
}

int aj_mgr_begin_creating(struct aj_mgr *m, const struct aj_sandbox_rec *r, uint64_t disk,
			  struct aj_err *err)
{
	_cleanup_close_ int lock = -1;

	if (aj_ws_sandbox_dir(m->state, r->id, disk, err) < 0)
		return -1;
	lock = aj_mgr_lock(m, r->id, true, err);
	if (lock < 0) {
		aj_ws_sandbox_remove(m->state, r->id, NULL);
		return -1;
	}
	/* The lock (which makes the directory) comes before the record: a "creating" record
	 * whose lock is free is one nobody will finish, which recovery removes. */
	if (aj_store_begin(m->store, err) == 0) {
		if (aj_store_sandbox_insert(m->store, r, err) == 0 && aj_store_commit(m->store, err) == 0)
			return aj_steal_fd(&lock);
		aj_store_rollback(m->store);
	}
	aj_ws_sandbox_remove(m->state, r->id, NULL);
	return -1;
}

/* An image sandbox's policy names its image by digest (docs/images.md), so that a later pull
 * of the same name does not change what it starts from. Resolved under the image store's
 * lock, which the caller holds until the record exists: `image rm`, under the same lock, then
 * sees the sandbox using the image. A token owner uses its own images and the local owner's
 * (the host's administrator provides images as templates); a digest neither names is not
 * its. */
static int pin_image(struct aj_mgr *m, struct aj_policy *pol, struct aj_images *im,
		     struct aj_err *err)
{
	struct aj_image_rec rec = {.layers = AJ_STRV_INIT, .names = AJ_STRV_INIT};
	const char *owners[] = {m->owner, ""};
	int r = -1;

	if (!pol->rootfs_image)
		return 0;
	if (aj_images_open(m->state, m->store, im, err) < 0 || aj_images_lock(im, err) < 0)
		return -1;
	for (size_t i = 0; i < (m->owner[0] ? 2 : 1) && r < 0; i++) {
		r = aj_images_find(im, owners[i], pol->rootfs_image, &rec, NULL, err);
		if (r == 0 && owners[i][0] == '\0' && m->owner[0] && rec.names.n == 0) {
			aj_image_rec_free(&rec);
			r = -1;
		} else if (r == 0 && owners[i][0] && rec.names.n == 0) {
			aj_image_rec_free(&rec);
			r = -1; /* found by digest: look for the local owner's name for it */
		}
	}
	if (r < 0) {
		aj_err_set(err, AJ_LAYER_IMAGE, ENOENT, "no image \"%s\" in the store",
			   pol->rootfs_image);
		aj_err_hint(err, "agentjail image pull %s, or image import", pol->rootfs_image);
		return aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	free(pol->rootfs_image);
	pol->rootfs_image = aj_xstrdup(rec.digest);
	aj_image_rec_free(&rec);
	return 0;
}

/* create --from a snapshot of an image sandbox, with no image named: the snapshot's (its
 * layers are that image's system changes). */
static int snapshot_image(struct aj_mgr *m, const struct aj_create_opts *o, struct aj_err *err)
{
	_cleanup_snapshot_rec_ struct aj_snapshot_rec s = AJ_REC_INIT;

	if (!o->from_snapshot || o->policy->rootfs_image)
		return 0;
	if (aj_store_snapshot_get(m->store, o->from_snapshot, owner_filter(m), &s, err) < 0)
		return -1;
	if (s.image[0])
		o->policy->rootfs_image = aj_xstrdup(s.image);
	return 0;
}

/* The record and the directories under the new sandbox's lock, which goes when it returns;
 * started if asked. An image sandbox's writable layer is its whole root's: its top directory
 * is root's, the workspace a directory in it. */
/* A default is not a request, so it does not fail closed. */
void aj_mgr_resolve_disk(struct aj_mgr *m, struct aj_policy *pol)
{
	struct aj_quota_probe q;

	if (pol->limits.disk != AJ_DISK_DEFAULT)
		return;
	aj_quota_probe(m->state, &q);
	pol->limits.disk = q.kind ? AJ_DISK_PERSISTENT : 0;
}

uint64_t aj_mgr_disk_used(struct aj_mgr *m, const char *id)
{
	struct aj_quota_use u;

	return aj_ws_sandbox_usage(m->state, id, &u) < 0 ? 0 : u.bytes;
}

/* limits.disk fails closed at create, before anything is kept: the sandbox's directory got
 * its quota, or the caller accepted running without one. */
static int check_disk(struct aj_mgr *m, const struct aj_policy *pol, const char *id,
		      struct aj_err *err)
{
	struct aj_quota_probe q;
	char dir[4096];

	if (!pol->limits.disk || aj_ws_sandbox_disk(m->state, id) ||
	    aj_strv_contains(&pol->allow_degraded, "disk"))
		return 0;
	snprintf(dir, sizeof dir, "%s/sandboxes", m->state);
	aj_quota_probe(dir, &q);
	aj_err_set(err, AJ_LAYER_STATE, 0,
		   "the disk layer is needed but cannot be enforced: no disk quota on \"%s\": %s",
		   dir, q.kind ? "making one failed" : q.why);
	return aj_err_hint(err, "put the state directory on a quota-capable filesystem "
				"(`agentjail storage init`); or accept running without it: "
				"--allow-degraded disk");
}

/* filesystem.volumes names the owner's volumes: each must exist at create (and again at each
 * start, where the supervisor mounts them). */
static int check_volumes(struct aj_mgr *m, const struct aj_policy *pol, struct aj_err *err)
{
	struct aj_volume_entry e;
	struct aj_volume v;
	char why[200];

	for (size_t i = 0; i < pol->volumes.n; i++) {
		if (aj_volume_entry_parse(pol->volumes.v[i], &e, why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "filesystem.volumes[%zu]: %s", i,
					  why);
		if (!e.host && aj_volume_get(m->state, m->owner, e.source, &v, err) < 0)
			return aj_err_prefix(err, "filesystem.volumes[%zu]", i);
	}
	return 0;
}

int aj_mgr_policy_text(struct aj_mgr *m, const struct aj_policy *pol, char **out,
			struct aj_err *err)
{
	_cleanup_policy_ struct aj_policy cp;
	_cleanup_json_ json_t *j = aj_policy_to_json(pol);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct aj_images im = {.layers_dir = -1, .lock_fd = -1, .blobs.dir = -1};
	int rc;

	*out = NULL;
	aj_policy_init(&cp);
	if (!text)
		return aj_err_set(err, AJ_LAYER_POLICY, ENOMEM, "copy the policy");
	if (aj_policy_load_text(&cp, text, err) < 0)
		return -1;
	cp.managed = pol->managed;
	aj_mgr_resolve_disk(m, &cp);
	rc = pin_image(m, &cp, &im, err);
	aj_images_close(&im);
	if (rc < 0)
		return -1;
	*out = materialize_policy(&cp, err);
	return *out ? 0 : -1;
}

static int create_locked(struct aj_mgr *m, const struct aj_create_opts *o,
			 struct aj_sandbox_rec *r, struct aj_err *err)
{
	_cleanup_close_ int lock = -1;
	struct aj_images im = {.layers_dir = -1, .lock_fd = -1, .blobs.dir = -1};
	bool image;
	int rc;

	if (snapshot_image(m, o, err) < 0 || check_volumes(m, o->policy, err) < 0)
		return -1;
	aj_mgr_resolve_disk(m, o->policy);
	image = o->policy->rootfs_image != NULL;
	rc = pin_image(m, o->policy, &im, err);
	if (rc == 0 && (fill_new_record(m, o, r, err) < 0 ||
			base_layers(m, o->from_snapshot, r, err) < 0 ||
			(lock = aj_mgr_begin_creating(m, r, o->policy->limits.disk, err)) < 0))
		rc = -1;
	aj_images_close(&im);
	if (rc < 0)
		return -1;
	if (aj_ws_sandbox_create(m->state, r->id, image ? 0 : (uid_t)o->policy->uid,
				 image ? 0 : (gid_t)o->policy->gid, err) < 0 ||
	    check_disk(m, o->policy, r->id, err) < 0) {
		aj_mgr_discard_creating(m, r->id, NULL);
		return -1;
	}
	r->state = AJ_ST_STOPPED;
	if (aj_mgr_save(m, r, err) < 0) {
		aj_mgr_discard_creating(m, r->id, NULL);
		return -1;
	}
	aj_store_event_add(m->store, r->id, "create", NULL, NULL);
	return o->start ? aj_mgr_spawn(m, r, err) : 0;
}

int aj_mgr_create(struct aj_mgr *m, const struct aj_create_opts *o, struct aj_sandbox_rec *out,
		  struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;

	if (create_locked(m, o, &r, err) < 0)
		return -1;
	return out ? aj_mgr_get(m, r.id, out, err) : 0;
}

int aj_mgr_remove(struct aj_mgr *m, const char *ref, bool force, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_close_ int lock = -1;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (r.state != AJ_ST_STOPPED && r.state != AJ_ST_CREATING && !force)
		return aj_mgr_wrong_state(err, &r, "stopped (or use rm -f)");
	if (force && (r.state == AJ_ST_RUNNING || r.state == AJ_ST_PAUSED) &&
	    aj_mgr_stop(m, r.id, err) < 0)
		return -1;
	if ((lock = aj_mgr_lock(m, r.id, true, err)) < 0)
		return -1;
	/* Record first, files after: a crash between leaves files gc finds unreferenced. The
	 * event says the record went, which is what "removed" means to a client. */
	if (aj_store_begin(m->store, err) < 0 || aj_store_sandbox_delete(m->store, r.id, err) < 0 ||
	    aj_store_commit(m->store, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	aj_store_event_add(m->store, r.id, "remove", NULL, NULL);
	if (aj_ws_sandbox_remove(m->state, r.id, err) < 0 ||
	    aj_mgr_drop_unused_layers(m, NULL, err) < 0)
		return -1;
	return 0;
}

/* Removes one ready layer if it is still unused, under its lock. Record first, in a
 * statement that checks the stacks: once it is gone no stack can name the layer (the stacks'
 * foreign key), and a crash before the files go leaves a directory gc removes. */
static int drop_layer(struct aj_mgr *m, const char *id, unsigned *n, struct aj_err *err)
{
	bool deleted = false;
	int lock = aj_ws_layer_lock(m->state, id, false, NULL), r = 0;

	if (lock < 0)
		return 0; /* being made (a fork not done yet) or removed by someone else */
	if (aj_store_begin(m->store, err) < 0)
		r = -1;
	else if (aj_store_layer_delete_unused(m->store, id, &deleted, err) < 0 ||
		 aj_store_commit(m->store, err) < 0) {
		aj_store_rollback(m->store);
		r = -1;
	}
	if (r == 0 && deleted) {
		r = aj_ws_layer_discard(m->state, id, err);
		if (r == 0 && n)
			(*n)++;
	}
	aj_ws_layer_unlock(m->state, id, lock);
	return r;
}

int aj_mgr_drop_unused_layers(struct aj_mgr *m, unsigned *n, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv ids = AJ_STRV_INIT;
	int r = aj_store_layers_unused(m->store, &ids, err);

	/* Layers still "creating" are their creator's or crash recovery's business. */
	for (size_t i = 0; r == 0 && i < ids.n; i++)
		r = drop_layer(m, ids.v[i], n, err);
	return r;
}

static bool layer_entry_exists(struct aj_mgr *m, const char *prefix, const char *id)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/layers/%s%s", m->state, prefix, id);
	return access(path, F_OK) == 0;
}

/* Directories under layers/ the store does not know (a crash between a layer's record going
 * and its files), and lock files left by dead holders. Each under the layer's lock, checked
 * again with it held: a creator takes the lock before its record exists. "creating" layers
 * are left to recovery, which has run before. */
static int sweep_layer_dirs(struct aj_mgr *m, unsigned *n, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv ids = AJ_STRV_INIT;
	int r = aj_ws_dir_ids(m->state, "layers", &ids, err);

	for (size_t i = 0; r == 0 && i < ids.n; i++) {
		const char *id = ids.v[i];
		enum aj_store_state st = AJ_SS_READY;
		int lock, known = aj_store_layer_get(m->store, id, &st, err);
		if (known < 0 || (known && (st == AJ_SS_CREATING ||
					    !layer_entry_exists(m, ".lock-", id)))) {
			r = known < 0 ? -1 : 0;
			continue;
		}
		if ((lock = aj_ws_layer_lock(m->state, id, false, NULL)) < 0)
			continue; /* in use */
		known = aj_store_layer_get(m->store, id, &st, err);
		if (known < 0)
			r = -1;
		else if (!known && aj_ws_layer_discard(m->state, id, err) < 0)
			r = -1;
		else if (!known && n)
			(*n)++;
		if (known > 0 && st == AJ_SS_CREATING)
			close(lock); /* became one meanwhile: its lock file is its creator's */
		else
			aj_ws_layer_unlock(m->state, id, lock);
	}
	return r;
}

/* False only if the store says there is no such sandbox (not on a read error). */
static bool sandbox_known(struct aj_mgr *m, const char *id)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec rec = AJ_REC_INIT;
	struct aj_err e;

	if (aj_store_sandbox_get(m->store, id, NULL, &rec, &e) < 0)
		return e.cls != AJ_ERRC_NOT_FOUND;
	return true;
}

/* Sandbox directories with no record (create or rm interrupted), under the sandbox's lock and
 * checked again with it held: a maker takes the lock before its record exists. */
static int sweep_sandbox_dirs(struct aj_mgr *m, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv ids = AJ_STRV_INIT;
	int r = aj_ws_dir_ids(m->state, "sandboxes", &ids, err);

	for (size_t i = 0; r == 0 && i < ids.n; i++) {
		_cleanup_close_ int lock = -1;
		if (sandbox_known(m, ids.v[i]) || (lock = aj_mgr_lock(m, ids.v[i], false, NULL)) < 0)
			continue;
		if (!sandbox_known(m, ids.v[i]))
			r = aj_ws_sandbox_remove(m->state, ids.v[i], err);
	}
	return r;
}

int aj_mgr_gc(struct aj_mgr *m, struct aj_gc_report *rep, struct aj_err *err)
{
	struct aj_sandbox_rec *v = NULL;
	struct aj_snapshot_rec *s = NULL;
	size_t n = 0, ns = 0;
	int64_t now = (int64_t)aj_now_realtime_ms();

	memset(rep, 0, sizeof *rep);
	if (aj_mgr_recover(m, &rep->recovered, err) < 0 ||
	    aj_store_sandbox_list(m->store, owner_filter(m), NULL, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		bool was_live = v[i].state == AJ_ST_RUNNING || v[i].state == AJ_ST_PAUSED;
		aj_mgr_refresh(m, &v[i]);
		rep->marked_stopped += was_live && v[i].state == AJ_ST_STOPPED;
		if (v[i].state == AJ_ST_STOPPED && v[i].retention_ms &&
		    v[i].stopped_ms + v[i].retention_ms <= now &&
		    aj_mgr_remove(m, v[i].id, false, NULL) == 0)
			rep->sandboxes_deleted++;
	}
	aj_sandbox_recs_free(v, n);
	if (aj_store_snapshot_list(m->store, owner_filter(m), &s, &ns, err) < 0)
		return -1;
	for (size_t i = 0; i < ns; i++)
		if (s[i].retention_ms && s[i].created_ms + s[i].retention_ms <= now &&
		    aj_mgr_snapshot_remove(m, s[i].id, NULL) == 0)
			rep->snapshots_deleted++;
	aj_snapshot_recs_free(s, ns);
	aj_cgroup_sweep(aj_cgroup_detect(NULL, NULL), "run-", 10);
	if (aj_mgr_drop_unused_layers(m, &rep->layers_deleted, err) < 0 ||
	    sweep_layer_dirs(m, &rep->layers_deleted, err) < 0)
		return -1;
	if (!m->owner[0]) {
		char etc[4200];
		rep->builds_deleted = aj_job_gc(m->state); /* every owner's: by age only */
		/* the shared /etc directories no running sandbox holds (supervisor/etc_share.h) */
		snprintf(etc, sizeof etc, "%s/%s", m->state, AJ_SHARED_ETC_DIR);
		aj_shared_dir_prune(etc, NULL);
	}
	return sweep_sandbox_dirs(m, err);
}
