/* Snapshots, forks, diffs, and recovery of the ones a crash interrupted.
 *
 * A snapshot freezes a sandbox's writable layer into a new immutable layer. Each step is
 * recorded before it is done, so that a crash at any point is either rolled back (the layer
 * never became a directory) or forward (it did):
 *   1. one transaction: layer L "creating", snapshot "creating" (stack: lowers + L) and, when
 *      the sandbox is stopped, the sandbox's own stack already lowers + L;
 *   2. the files: a stopped sandbox's upper is renamed into layers/L (constant time); a
 *      running one's is copied, paused meanwhile, through layers/.tmp-L and a rename;
 *   3. one transaction: L and the snapshot "ready".
 * aj_mgr_recover() finishes or undoes step 1 records whose step 3 never happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "control/client.h"
#include "manager/internal.h"
#include "workspace/layers.h"
#include "workspace/tree.h"

static const char *owner_of(const struct aj_mgr *m)
{
	return m->any_owner ? NULL : m->owner;
}

static bool running(const struct aj_sandbox_rec *r)
{
	return !strcmp(r->state, AJ_ST_RUNNING) || !strcmp(r->state, AJ_ST_PAUSED);
}

/* Step 1: the intent, in one transaction. */
static int record_intent(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *layer,
			 struct aj_snapshot_rec *snap, bool move, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_layer_insert(m->store, layer, "creating", err) < 0 ||
	    (snap && aj_store_snapshot_insert(m->store, snap, err) < 0))
		goto fail;
	if (move) {
		aj_strv_push(&r->layers, layer);
		if (aj_store_sandbox_update(m->store, r, err) < 0)
			goto fail;
	}
	return aj_store_commit(m->store, err);
fail:
	aj_store_rollback(m->store);
	return -1;
}

/* Step 3. */
static int record_done(struct aj_mgr *m, const char *layer, const char *snapshot_id,
		       uint64_t bytes, struct aj_err *err)
{
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_layer_set_state(m->store, layer, "ready", err) < 0 ||
	    (snapshot_id &&
	     aj_store_snapshot_set_state(m->store, snapshot_id, "ready", (int64_t)bytes, err) < 0)) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_store_commit(m->store, err);
}

/* Step 2 for a running sandbox: its processes are frozen while the upper is copied, so the
 * layer is a consistent picture of one moment. */
static int copy_live(struct aj_mgr *m, const struct aj_sandbox_rec *r, const char *layer,
		     uid_t uid, gid_t gid, uint64_t *bytes, struct aj_err *err)
{
	bool was_paused = !strcmp(r->state, AJ_ST_PAUSED);
	int ctl = -1, rc;

	/* The pause is leased to this connection: if we are killed while copying, the
	 * supervisor sees the connection close and resumes the sandbox itself. */
	if (!was_paused &&
	    ((ctl = aj_ctl_connect(r->socket, err)) < 0 ||
	     aj_ctl_call(ctl, json_pack("{s:s, s:b}", "op", "pause", "lease", 1), NULL, 0, NULL,
			 NULL, NULL, 30000, err) < 0)) {
		if (ctl >= 0)
			close(ctl);
		return -1;
	}
	rc = aj_ws_layer_from_upper(m->state, r->id, layer, false, uid, gid, bytes, err);
	if (!was_paused) {
		aj_ctl_call(ctl, json_pack("{s:s}", "op", "resume"), NULL, 0, NULL, NULL, NULL,
			    30000, rc < 0 ? NULL : err);
		close(ctl);
	}
	return rc;
}

/* Makes the sandbox's current state a new layer (steps 1-3). */
static int freeze_layer(struct aj_mgr *m, struct aj_sandbox_rec *r, const char *layer,
			struct aj_snapshot_rec *snap, uint64_t *bytes, struct aj_err *err)
{
	bool move = !running(r);
	uid_t uid;
	gid_t gid;
	struct stat st;
	char upper[4200];

	aj_ws_path(upper, sizeof upper, m->state, "sandboxes", r->id, "upper");
	if (stat(upper, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "upper layer of \"%s\"", r->name);
	uid = st.st_uid;
	gid = st.st_gid;
	if (snap) {
		aj_strv_copy(&snap->layers, &r->layers);
		aj_strv_push(&snap->layers, layer);
	}
	if (record_intent(m, r, layer, snap, move, err) < 0)
		return -1;
	if ((move ? aj_ws_layer_from_upper(m->state, r->id, layer, true, uid, gid, bytes, err)
		  : copy_live(m, r, layer, uid, gid, bytes, err)) < 0) {
		unsigned n;
		aj_mgr_recover(m, &n, NULL); /* undoes step 1 */
		return -1;
	}
	return record_done(m, layer, snap ? snap->id : NULL, bytes ? *bytes : 0, err);
}

int aj_mgr_snapshot(struct aj_mgr *m, const char *ref, const char *name, int64_t retention_ms,
		    struct aj_snapshot_rec *out, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	struct aj_snapshot_rec s;
	char layer[33];
	uint64_t bytes = 0;
	int lock, rc = -1;

	if (name && !aj_mgr_name_ok(name))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "snapshot name \"%s\" is not valid",
				  name);
	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if ((lock = aj_mgr_lock(m, r.id, true, err)) < 0)
		goto out;
	memset(&s, 0, sizeof s);
	if (aj_mgr_new_id(s.id, err) < 0 || aj_mgr_new_id(layer, err) < 0)
		goto unlock;
	snprintf(s.name, sizeof s.name, "%s", name ? name : "");
	if (!name)
		snprintf(s.name, sizeof s.name, "%s-%.8s", r.name, s.id);
	snprintf(s.owner, sizeof s.owner, "%s", r.owner);
	snprintf(s.source, sizeof s.source, "%s", r.id);
	snprintf(s.state, sizeof s.state, "creating");
	s.created_ms = (int64_t)aj_now_realtime_ms();
	s.retention_ms = retention_ms;
	if (freeze_layer(m, &r, layer, &s, &bytes, err) == 0) {
		aj_store_event_add(m->store, r.id, "snapshot", NULL, NULL);
		rc = out ? aj_store_snapshot_get(m->store, s.id, NULL, out, err) : 0;
	}
	aj_snapshot_rec_free(&s);
unlock:
	close(lock);
out:
	aj_sandbox_rec_free(&r);
	return rc;
}

int aj_mgr_snapshot_remove(struct aj_mgr *m, const char *ref, struct aj_err *err)
{
	struct aj_snapshot_rec s;
	struct aj_strv users = {0};
	int rc = -1;

	if (aj_store_snapshot_get(m->store, ref, owner_of(m), &s, err) < 0)
		return -1;
	if (aj_store_snapshot_users(m->store, s.id, &users, err) < 0)
		goto out;
	if (users.n) {
		aj_err_set(err, AJ_LAYER_STATE, EBUSY,
			   "snapshot \"%s\" is in use by sandbox \"%s\"%s", s.name, users.v[0],
			   users.n > 1 ? " and others" : "");
		goto out;
	}
	if (aj_store_begin(m->store, err) < 0)
		goto out;
	if (aj_store_snapshot_delete(m->store, s.id, err) < 0) {
		aj_store_rollback(m->store);
		goto out;
	}
	rc = aj_store_commit(m->store, err) == 0 ? aj_mgr_drop_unused_layers(m, NULL, err) : -1;
out:
	aj_strv_free(&users);
	aj_snapshot_rec_free(&s);
	return rc;
}

static int make_fork(struct aj_mgr *m, const struct aj_sandbox_rec *src, const char *name,
		     bool start, struct aj_err *err)
{
	struct aj_sandbox_rec f = *src;
	int rc = -1;

	/* Same policy, labels, TTLs and layers; its own id, name, upper and compute. */
	memset(&f.labels, 0, sizeof f.labels);
	memset(&f.layers, 0, sizeof f.layers);
	if (aj_mgr_new_id(f.id, err) < 0)
		return -1;
	snprintf(f.name, sizeof f.name, "%s", name);
	snprintf(f.state, sizeof f.state, "%s", AJ_ST_CREATING);
	f.generation = 0;
	f.created_ms = f.updated_ms = (int64_t)aj_now_realtime_ms();
	f.started_ms = f.stopped_ms = f.supervisor_pid = f.supervisor_start = 0;
	f.socket[0] = f.error[0] = '\0';
	f.policy = strdup(src->policy);
	aj_strv_copy(&f.labels, &src->labels);
	aj_strv_copy(&f.layers, &src->layers);
	if (!f.policy || aj_store_begin(m->store, err) < 0)
		goto out;
	if (aj_store_sandbox_insert(m->store, &f, err) < 0 || aj_store_commit(m->store, err) < 0) {
		aj_store_rollback(m->store);
		goto out;
	}
	{
		char upper[4200];
		struct stat st;
		aj_ws_path(upper, sizeof upper, m->state, "sandboxes", src->id, "upper");
		if (stat(upper, &st) < 0 ||
		    aj_ws_sandbox_create(m->state, f.id, st.st_uid, st.st_gid, err) < 0)
			goto out;
	}
	snprintf(f.state, sizeof f.state, "%s", AJ_ST_STOPPED);
	if (aj_mgr_save(m, &f, err) < 0)
		goto out;
	aj_store_event_add(m->store, f.id, "create", NULL, NULL);
	rc = start ? aj_mgr_spawn(m, &f, err) : 0;
out:
	free(f.policy);
	aj_strv_free(&f.labels);
	aj_strv_free(&f.layers);
	return rc;
}

int aj_mgr_fork(struct aj_mgr *m, const char *ref, unsigned count, const char *prefix,
		bool start, struct aj_strv *names, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	char layer[33], name[160];
	int lock, rc = -1;

	if (count == 0 || count > 1000)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "fork: --count must be 1 to 1000");
	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if ((lock = aj_mgr_lock(m, r.id, true, err)) < 0)
		goto out;
	/* The source's state becomes a shared layer once; every fork starts on it with an
	 * empty upper of its own: constant work per fork, whatever the workspace's size. */
	if (aj_mgr_new_id(layer, err) < 0 || freeze_layer(m, &r, layer, NULL, NULL, err) < 0)
		goto unlock;
	if (running(&r)) /* the stack a running source's forks share */
		aj_strv_push(&r.layers, layer);
	for (unsigned i = 1; i <= count; i++) {
		if (prefix)
			snprintf(name, sizeof name, "%.100s-%u", prefix, i);
		else
			snprintf(name, sizeof name, "%.40s-fork-%.6s-%u", r.name, layer, i);
		if (make_fork(m, &r, name, start, err) < 0)
			goto unlock;
		if (names)
			aj_strv_push(names, name);
	}
	aj_store_event_add(m->store, r.id, "fork", NULL, NULL);
	rc = 0;
unlock:
	close(lock);
out:
	aj_sandbox_rec_free(&r);
	return rc;
}

int aj_mgr_diff(struct aj_mgr *m, const char *ref,
		int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	struct aj_strv lowers = {0};
	char path[4200];
	int rc;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	for (size_t i = r.layers.n; i-- > 0;) { /* top first */
		aj_ws_path(path, sizeof path, m->state, "layers", r.layers.v[i], NULL);
		aj_strv_push(&lowers, path);
	}
	aj_ws_path(path, sizeof path, m->state, "sandboxes", r.id, "upper");
	rc = aj_ws_diff(path, &lowers, fn, arg, err);
	aj_strv_free(&lowers);
	aj_sandbox_rec_free(&r);
	return rc;
}

/* Layers left "creating" by an interrupted fork or snapshot of a stopped sandbox (step 1 put
 * them on the sandbox's stack): the upper was renamed (forward) or not (back off the stack). */
static int recover_layers(struct aj_mgr *m, unsigned *recovered, struct aj_err *err)
{
	struct aj_strv layers = {0};

	if (aj_store_layers_in_state(m->store, "creating", &layers, err) < 0)
		return -1;
	for (size_t i = 0; i < layers.n; i++) {
		struct aj_strv users = {0};
		char dir[4200], tmp[4300];
		bool done, locked_all = true;
		int locks[8], nl = 0;

		aj_store_layer_sandboxes(m->store, layers.v[i], &users, NULL);
		for (size_t u = 0; u < users.n && nl < 8; u++) {
			locks[nl] = aj_mgr_lock(m, users.v[u], false, NULL);
			locked_all = locked_all && locks[nl] >= 0;
			nl++;
		}
		aj_ws_path(dir, sizeof dir, m->state, "layers", layers.v[i], NULL);
		snprintf(tmp, sizeof tmp, "%s/layers/.tmp-%s", m->state, layers.v[i]);
		done = access(dir, F_OK) == 0;
		if (locked_all && users.n <= 8 && (users.n || !done)) {
			if (done) {
				record_done(m, layers.v[i], NULL, 0, NULL);
			} else {
				for (size_t u = 0; u < users.n; u++)
					aj_store_sandbox_drop_layer(m->store, users.v[u], layers.v[i], NULL);
				aj_store_layer_delete(m->store, layers.v[i], NULL);
				char *slash = strrchr(tmp, '/');
				*slash = '\0';
				int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (dfd >= 0) {
					char name[64];
					snprintf(name, sizeof name, ".tmp-%s", layers.v[i]);
					aj_tree_remove_at(dfd, name, NULL);
					close(dfd);
				}
			}
			(*recovered)++;
		}
		for (int k = 0; k < nl; k++)
			if (locks[k] >= 0)
				close(locks[k]);
		aj_strv_free(&users);
	}
	aj_strv_free(&layers);
	return 0;
}

/* Finishes or undoes snapshots and forks a crash interrupted (see the top of this file), for
 * the sandboxes whose lock is free. */
int aj_mgr_recover(struct aj_mgr *m, unsigned *recovered, struct aj_err *err)
{
	struct aj_snapshot_rec *s = NULL;
	size_t n = 0;

	*recovered = 0;
	if (aj_store_snapshot_list(m->store, NULL, &s, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char dir[4200];
		const char *top;
		int lock;
		if (strcmp(s[i].state, "creating") || !s[i].layers.n)
			continue;
		lock = aj_mgr_lock(m, s[i].source, false, NULL);
		if (lock < 0)
			continue; /* in progress right now */
		top = s[i].layers.v[s[i].layers.n - 1];
		aj_ws_path(dir, sizeof dir, m->state, "layers", top, NULL);
		if (access(dir, F_OK) == 0)
			record_done(m, top, s[i].id, 0, NULL); /* the files made it: forward */
		else if (aj_store_begin(m->store, NULL) == 0) {
			if (aj_store_snapshot_delete(m->store, s[i].id, NULL) == 0)
				aj_store_commit(m->store, NULL);
			else
				aj_store_rollback(m->store);
		}
		(*recovered)++;
		close(lock);
	}
	aj_snapshot_recs_free(s, n);
	return recover_layers(m, recovered, err);
}
