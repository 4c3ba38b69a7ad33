/* Deep layer stacks are merged before a start. Every snapshot of a stopped sandbox and every
 * fork adds a layer; overlayfs looks a missing name up in every layer, its option string has
 * a size limit, and the kernel caps the depth. Past AJ_MAX_LAYERS the sandbox's base layers are
 * merged into one layer and its own layers (above the base, see snapshot.c) into another, so
 * that diff keeps its meaning. The layers merged stay as long as anything else uses them.
 *
 * The steps follow snapshot.c's pattern: the new layer's lock; the layer recorded "creating";
 * the merged files published (layers/.tmp-L, then a rename); one transaction making the layer
 * ready and the sandbox's stack use it. A crash before the last step leaves a "creating" layer
 * no stack uses, which recovery settles (a published one becomes ready and unused, and gc
 * removes it). */
#include <stdio.h>
#include <string.h>

#include "manager/internal.h"
#include "workspace/layers.h"

/* Merges layers[from, to) of r's stack into `layer` (published, not yet recorded ready). */
static int merge_range(struct aj_mgr *m, const struct aj_sandbox_rec *r, size_t from, size_t to,
		       const char *layer, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv part = AJ_STRV_INIT;

	for (size_t i = from; i < to; i++)
		aj_strv_push(&part, r->layers.v[i]);
	return aj_ws_layer_squash(m->state, &part, layer, err);
}

struct group {
	size_t from, to;
	char layer[33];
	int lock;
};

static int new_layer(struct aj_mgr *m, struct group *g, struct aj_err *err)
{
	if (aj_mgr_new_id(g->layer, err) < 0 ||
	    (g->lock = aj_ws_layer_lock(m->state, g->layer, true, err)) < 0)
		return -1;
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (aj_store_layer_insert(m->store, g->layer, AJ_SS_CREATING, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_store_commit(m->store, err);
}

/* commit()'s records, inside its transaction. */
static int commit_records(struct aj_mgr *m, const struct aj_sandbox_rec *r,
			  const struct group *g, size_t ng, struct aj_err *err)
{
	for (size_t k = 0; k < ng; k++)
		if (aj_store_layer_set_state(m->store, g[k].layer, AJ_SS_READY, err) < 0)
			return -1;
	return aj_store_sandbox_update(m->store, r, err);
}

/* The new stack: each group's range replaced by its layer; the base shrinks to match. */
static int commit(struct aj_mgr *m, struct aj_sandbox_rec *r, struct group *g, size_t ng,
		  size_t base, struct aj_err *err)
{
	struct aj_strv stack = {0};
	size_t next = 0;
	int64_t new_base = (int64_t)base;

	for (size_t k = 0; k < ng; k++) {
		while (next < g[k].from)
			aj_strv_push(&stack, r->layers.v[next++]);
		aj_strv_push(&stack, g[k].layer);
		next = g[k].to;
		if (g[k].to <= base)
			new_base -= (int64_t)(g[k].to - g[k].from) - 1;
	}
	while (next < r->layers.n)
		aj_strv_push(&stack, r->layers.v[next++]);
	aj_strv_free(&r->layers);
	r->layers = stack;
	if (r->base_depth >= 0 || base)
		r->base_depth = new_base;
	if (aj_store_begin(m->store, err) < 0)
		return -1;
	if (commit_records(m, r, g, ng, err) < 0) {
		aj_store_rollback(m->store);
		return -1;
	}
	return aj_store_commit(m->store, err);
}

int aj_mgr_squash(struct aj_mgr *m, struct aj_sandbox_rec *r, struct aj_err *err)
{
	size_t base = aj_mgr_base_depth(m, r), n = r->layers.n, ng = 0;
	struct group g[2];
	int rc = 0;

	if (n <= AJ_MAX_LAYERS)
		return 0;
	/* Base and own layers apart; a range of one layer needs no merge. */
	if (base > 1)
		g[ng++] = (struct group){.from = 0, .to = base, .lock = -1};
	if (n - base > 1)
		g[ng++] = (struct group){.from = base, .to = n, .lock = -1};
	for (size_t k = 0; rc == 0 && k < ng; k++)
		if (new_layer(m, &g[k], err) < 0 ||
		    merge_range(m, r, g[k].from, g[k].to, g[k].layer, err) < 0)
			rc = -1;
	if (rc == 0)
		rc = commit(m, r, g, ng, base, err);
	if (rc == 0) {
		aj_store_event_add(m->store, r->id, "squash",
				   "{\"reason\":\"layer stack deeper than the limit\"}", NULL);
		aj_mgr_drop_unused_layers(m, NULL, NULL);
	}
	/* Each group's layer lock goes; a failed or interrupted merge is settled first, like a
	 * failed snapshot's layer. */
	for (size_t k = 0; k < ng; k++) {
		if (rc < 0 && g[k].lock >= 0)
			aj_mgr_settle_layer(m, g[k].layer, NULL);
		if (g[k].lock >= 0)
			aj_ws_layer_unlock(m->state, g[k].layer, g[k].lock);
	}
	return rc < 0 ? aj_err_prefix(err, "merge the layers of \"%s\"", r->name) : 0;
}
