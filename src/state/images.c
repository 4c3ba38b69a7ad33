/* The image tables: an image's record (its manifest digest is its id), the layers it stacks
 * (diff_ids, bottom first) and the names owners give it. A name belongs to one owner; the
 * image and its layers are shared by every owner whose names point at it (content-addressed:
 * the same bytes are stored once). */
#include "state/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "state/internal.h"

#define IMAGE_COLS "digest, config, platform, source, created_ms, size_bytes"

static void read_image(sqlite3_stmt *st, struct aj_image_rec *r)
{
	memset(r, 0, sizeof *r);
	state_col_copy(st, 0, r->digest, sizeof r->digest);
	state_col_copy(st, 1, r->config, sizeof r->config);
	state_col_copy(st, 2, r->platform, sizeof r->platform);
	state_col_copy(st, 3, r->source, sizeof r->source);
	r->created_ms = sqlite3_column_int64(st, 4);
	r->size_bytes = sqlite3_column_int64(st, 5);
}

/* Its layers and the owner's names for it. */
static int load_image(struct aj_store *s, struct aj_image_rec *r, const char *owner,
		      struct aj_err *err)
{
	if (state_load_strv(s,
			    "SELECT diff_id FROM image_layers WHERE digest = ?1 ORDER BY "
			    "position",
			    r->digest, NULL, &r->layers, err) < 0)
		return -1;
	return state_load_strv(s,
			       "SELECT name FROM image_names WHERE digest = ?1 AND (?2 IS "
			       "NULL OR owner = ?2) ORDER BY name",
			       r->digest, owner, &r->names, err);
}

int aj_store_image_put(struct aj_store *s, const struct aj_image_rec *r, struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(s,
				      "INSERT OR IGNORE INTO images (" IMAGE_COLS ") VALUES "
				      "(?1, ?2, ?3, ?4, ?5, ?6)",
				      err);

	if (!st)
		return -1;
	state_bind_text(st, 1, r->digest);
	state_bind_text(st, 2, r->config);
	state_bind_text(st, 3, r->platform);
	state_bind_text(st, 4, r->source);
	sqlite3_bind_int64(st, 5, r->created_ms);
	sqlite3_bind_int64(st, 6, r->size_bytes);
	if (state_run(s, st, "add the image", err) < 0)
		return -1;
	for (size_t i = 0; i < r->layers.n; i++) {
		_cleanup_stmt_ sqlite3_stmt *ls =
			state_prep(s,
				   "INSERT OR REPLACE INTO image_layers (digest, position, diff_id) "
				   "VALUES (?1, ?2, ?3)",
				   err);
		if (!ls)
			return -1;
		state_bind_text(ls, 1, r->digest);
		sqlite3_bind_int64(ls, 2, (sqlite3_int64)i);
		state_bind_text(ls, 3, r->layers.v[i]);
		if (state_run(s, ls, "add the image's layers", err) < 0)
			return -1;
	}
	return 0;
}

int aj_store_image_tag(struct aj_store *s, const char *owner, const char *name, const char *digest,
		       struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = state_prep(s,
				      "INSERT OR REPLACE INTO image_names (owner, name, "
				      "digest) VALUES (?1, ?2, ?3)",
				      err);

	if (!st)
		return -1;
	state_bind_text(st, 1, owner);
	state_bind_text(st, 2, name);
	state_bind_text(st, 3, digest);
	return state_run(s, st, "name the image", err);
}

int aj_store_image_untag(struct aj_store *s, const char *owner, const char *name,
			 struct aj_err *err)
{
	_cleanup_stmt_ sqlite3_stmt *st =
		state_prep(s, "DELETE FROM image_names WHERE owner = ?1 AND name = ?2", err);

	if (!st)
		return -1;
	state_bind_text(st, 1, owner);
	state_bind_text(st, 2, name);
	if (state_run(s, st, "remove the image's name", err) < 0)
		return -1;
	if (sqlite3_changes(s->db) == 0)
		return state_not_found(err, "image", name);
	return 0;
}

/* ref: a name of the owner's, a whole digest, or the first 12+ hex digits of one the owner
 * names (ids as `image ls` shows them). */
int aj_store_image_get(struct aj_store *s, const char *owner, const char *ref,
		       struct aj_image_rec *out, struct aj_err *err)
{
	sqlite3_stmt *st = state_prep(
		s,
		"SELECT " IMAGE_COLS " FROM images WHERE digest = ?1 OR digest IN (SELECT digest "
		"FROM image_names WHERE owner = ?2 AND name = ?1) OR (length(?1) >= 12 AND "
		"substr(digest, 8, length(?1)) = ?1 AND digest IN (SELECT digest FROM image_names "
		"WHERE owner = ?2)) LIMIT 2",
		err);
	int rc, n = 0;

	if (!st)
		return -1;
	state_bind_text(st, 1, ref);
	state_bind_text(st, 2, owner);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n++ == 0)
		read_image(st, out);
	state_stmt_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return state_db_error(s, err, "find the image");
	if (n == 0)
		return state_not_found(err, "image", ref);
	if (n > 1)
		return aj_err_set(err, AJ_LAYER_STATE, EINVAL,
				  "\"%s\" names more than one image: give more of the digest", ref);
	if (load_image(s, out, owner, err) < 0) {
		aj_image_rec_free(out);
		return -1;
	}
	return 0;
}

/* The owner's named images (owner NULL: every image, named or not), newest first. */
int aj_store_image_list(struct aj_store *s, const char *owner, struct aj_image_rec **out, size_t *n,
			struct aj_err *err)
{
	sqlite3_stmt *st = state_prep(s,
				      "SELECT " IMAGE_COLS " FROM images WHERE ?1 IS NULL OR "
				      "digest IN (SELECT digest FROM image_names WHERE owner = "
				      "?1) ORDER BY created_ms DESC, digest",
				      err);
	struct aj_image_rec *v = NULL;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	if (owner)
		state_bind_text(st, 1, owner);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			v = aj_xrealloc(v, cap * sizeof *v);
		}
		read_image(st, &v[(*n)++]);
	}
	state_stmt_done(st);
	if (rc != SQLITE_DONE) {
		aj_image_recs_free(v, *n);
		return state_db_error(s, err, "list the images");
	}
	for (size_t i = 0; i < *n; i++)
		if (load_image(s, &v[i], owner, err) < 0) {
			aj_image_recs_free(v, *n);
			*n = 0;
			return -1;
		}
	*out = v;
	return 0;
}

/* The image's record and its layers' rows go; names pointing at it must be gone first. */
int aj_store_image_delete(struct aj_store *s, const char *digest, struct aj_err *err)
{
	static const char *const sql[] = {"DELETE FROM image_layers WHERE digest = ?1",
					  "DELETE FROM images WHERE digest = ?1"};

	for (size_t i = 0; i < 2; i++) {
		_cleanup_stmt_ sqlite3_stmt *st = state_prep(s, sql[i], err);
		if (!st)
			return -1;
		state_bind_text(st, 1, digest);
		if (state_run(s, st, "remove the image", err) < 0)
			return -1;
	}
	return 0;
}

/* Names (of any owner) that point at the image. */
int aj_store_image_names_all(struct aj_store *s, const char *digest, struct aj_strv *names,
			     struct aj_err *err)
{
	return state_load_strv(s,
			       "SELECT CASE owner WHEN '' THEN name ELSE owner || '/' || name "
			       "END FROM image_names WHERE digest = ?1 ORDER BY owner, name",
			       digest, NULL, names, err);
}

/* Every layer (diff_id) some image stacks. */
int aj_store_image_layers_used(struct aj_store *s, struct aj_strv *diff_ids, struct aj_err *err)
{
	return state_load_strv(s, "SELECT DISTINCT diff_id FROM image_layers ORDER BY diff_id",
			       NULL, NULL, diff_ids, err);
}

void aj_image_rec_free(struct aj_image_rec *r)
{
	aj_strv_free(&r->layers);
	aj_strv_free(&r->names);
}

void aj_image_recs_free(struct aj_image_rec *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		aj_image_rec_free(&r[i]);
	free(r);
}
