#include "build/builder.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build/dockerfile.h"
#include "build/ignore.h"
#include "build/layer.h"
#include "build/stack.h"
#include "build/step.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"
#include "host/subids.h"
#include "image/digest.h"
#include "image/import.h"
#include "image/manifest.h"
#include "image/ref.h"
#include "policy/plan.h"
#include "policy/users.h"
#include "supervisor/events.h"

#define DOC_MAX (8u << 20)
#define AJ_BUILD_MAX_EXPANDED (16u << 20)

struct stage {
	char *name;               /* FROM ... AS name; NULL */
	json_t *doc;              /* the image config document */
	struct aj_strv layers;    /* layer blob digests, bottom first */
	struct aj_strv shell;     /* SHELL */
	struct aj_strv args;      /* ARGs in force: "NAME=VALUE" */
	char key[AJ_DIGEST_SIZE]; /* the cache chain so far */
	char root[AJ_DIGEST_SIZE]; /* an image of the stage as it is; "" when it changed since */
	/* STATE/images/runs/<id>/lock, held, naming the stage's image as `image prune` reads it:
	 * what the stage stacks is in use while it builds (image/root.h) */
	char run_dir[4200];
	int run_lock;
};

struct build {
	const struct aj_build_opts *o;
	struct aj_images *im;
	struct aj_dockerfile df;
	bool df_borrowed;        /* o->dockerfile's */
	const char *owner;       /* o->owner, "" for none */
	struct aj_ignore ignore;
	int ctx;                 /* the context directory */
	const char *file;        /* the Dockerfile's name in messages */
	struct aj_strv meta;     /* ARGs before the first FROM: "NAME=VALUE" */
	struct stage *st;
	size_t n_st;
	size_t step, steps;
	size_t expanded; /* bytes all expansions made: a budget for the host's memory */
	struct aj_events ev; /* o->events_path */
	bool cached;         /* the current step hit the cache */
	char work[4200];         /* STATE/images/runs/<random>: steps' system layers, under */
	int work_lock;           /* its lock, held: gc removes it once the build is gone */
	struct aj_err *err;
};

/* An event of the build: into the store's event log under the build's id (its work
 * directory's name, 16 hex digits: `agentjail events ID`), and into --events' file. */
static void build_event(struct build *b, const char *type, json_t *fields)
{
	const char *id = strrchr(b->work, '/');
	_cleanup_free_ char *text = fields ? json_dumps(fields, JSON_COMPACT) : NULL;
	struct aj_err err;

	if (id && b->im->db && text)
		(void)aj_store_event_add(b->im->db, id + 1, type, text, &err);
	aj_events_emit(&b->ev, type, fields);
}

/* A RUN sandbox's events (its start, egress decisions, limits, end), which it wrote to the
 * step's file: into the store under the build's id, and appended to --events' file. */
static void step_events(struct build *b, const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	const char *id = strrchr(b->work, '/');
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while (f && (n = getline(&line, &cap, f)) > 0) {
		/* a line cut by a step that died mid-write is no event */
		json_t *j = line[n - 1] == '\n' ? json_loadb(line, (size_t)n, 0, NULL) : NULL;
		const char *ev = json_string_value(json_object_get(j, "event"));
		_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
		struct aj_err err;
		if (ev && text && id && b->im->db)
			(void)aj_store_event_add(b->im->db, id + 1, ev, text, &err);
		if (j && b->ev.fd >= 0)
			(void)!aj_write_all(b->ev.fd, line, (size_t)n);
		json_decref(j);
	}
	free(line);
	unlink(path);
}

/* ---- small things ----------------------------------------------------------------------- */

static const char *env_get(const struct aj_strv *v, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = v->n; i-- > 0;)
		if (!strncmp(v->v[i], name, n) && v->v[i][n] == '=')
			return v->v[i] + n + 1;
	return NULL;
}

/* obj[key], an object (or with `array`, an array), made (replacing what else is there)
 * when missing: an image config's members, which a base may lack. */
static json_t *member(json_t *obj, const char *key, bool array)
{
	json_t *v = json_object_get(obj, key);

	if (array ? !json_is_array(v) : !json_is_object(v)) {
		v = array ? json_array() : json_object();
		json_object_set_new(obj, key, v);
	}
	return v;
}

static json_t *config_of(struct stage *s)
{
	return member(s->doc, "config", false);
}

/* The config's Env as NAME=VALUE strings (borrowed from the document). */
static const char *config_env(struct stage *s, const char *name)
{
	json_t *env = json_object_get(config_of(s), "Env"), *v;
	size_t n = strlen(name), i;
	const char *found = NULL;

	json_array_foreach(env, i, v) {
		const char *kv = json_string_value(v);
		if (kv && !strncmp(kv, name, n) && kv[n] == '=')
			found = kv + n + 1;
	}
	return found;
}

struct scope {
	struct build *b;
	struct stage *s; /* NULL: before the first FROM */
};

/* ENV wins over ARG, as docker has it. */
static const char *lookup(void *arg, const char *name)
{
	struct scope *sc = arg;
	const char *v;

	if (!sc->s)
		return env_get(&sc->b->meta, name);
	v = config_env(sc->s, name);
	return v ? v : env_get(&sc->s->args, name);
}

static char *expand(struct build *b, struct stage *s, const struct aj_df_insn *in, const char *w)
{
	struct scope sc = {b, s};
	char what[300], *out = NULL;

	snprintf(what, sizeof what, "%s:%u: %s", b->file, in->line, aj_df_kind_name(in->kind));
	if (aj_df_expand(w, b->df.escape, lookup, &sc, &out, what, b->err) < 0)
		return NULL;
	b->expanded += strlen(out);
	if (b->expanded > AJ_BUILD_MAX_EXPANDED) {
		free(out);
		aj_err_set(b->err, AJ_LAYER_USAGE, E2BIG,
			   "%s: the build's variables expand to more than %u MiB in all", what,
			   AJ_BUILD_MAX_EXPANDED >> 20);
		return NULL;
	}
	return out;
}

static int __attribute__((format(printf, 4, 5)))
insn_fail(struct build *b, const struct aj_df_insn *in, int errnum, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return aj_err_set(b->err, AJ_LAYER_USAGE, errnum, "%s:%u: %s: %s", b->file, in->line,
			  aj_df_kind_name(in->kind), msg);
}

/* key = sha256(key "\n" what) */
static void chain(struct stage *s, const char *what)
{
	struct aj_hasher *h = aj_hasher_new();

	aj_hasher_update(h, s->key, strlen(s->key));
	aj_hasher_update(h, "\n", 1);
	aj_hasher_update(h, what, strlen(what));
	aj_hasher_final(h, s->key);
	aj_hasher_free(h);
}

static void set_strings(json_t *obj, const char *key, const struct aj_strv *v)
{
	json_t *a = json_array();

	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->v[i]));
	json_object_set_new(obj, key, a);
}

static void history(struct stage *s, const char *by, bool empty)
{
	json_t *h = member(s->doc, "history", true);
	char ts[40];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_array_append_new(h, json_pack("{s:s, s:s, s:s, s:b}", "created", ts, "created_by", by,
					   "comment", "agentjail build", "empty_layer", empty));
}

/* ---- the cache ---------------------------------------------------------------------------- */

static void cache_path(struct build *b, const char *key, char *buf, size_t len)
{
	snprintf(buf, len, "%s/images/build-cache/%s", b->im->state_dir, aj_digest_hex(key));
}

/* A cached layer blob for key, still in the store with its layer unpacked. */
static bool cache_get(struct build *b, const char *key, char blob[AJ_DIGEST_SIZE],
		      char diff_id[AJ_DIGEST_SIZE])
{
	char path[4300];
	_cleanup_free_ char *text = NULL;
	char a[AJ_DIGEST_SIZE + 8], d[AJ_DIGEST_SIZE + 8];

	if (b->o->no_cache)
		return false;
	cache_path(b, key, path, sizeof path);
	text = aj_read_file(path, 512, NULL);
	if (!text || sscanf(text, "%79s %79s", a, d) != 2 || !aj_digest_valid(a) ||
	    !aj_digest_valid(d) || !aj_blobs_has(&b->im->blobs, a) ||
	    !aj_images_has_layer(b->im, d))
		return false;
	snprintf(blob, AJ_DIGEST_SIZE, "%s", a);
	snprintf(diff_id, AJ_DIGEST_SIZE, "%s", d);
	return true;
}

static void cache_put(struct build *b, const char *key, const char *blob, const char *diff_id)
{
	char path[4300], tmp[4400];
	_cleanup_free_ char *text = aj_xasprintf("%s %s\n", blob, diff_id);
	_cleanup_close_ int fd = -1;

	cache_path(b, key, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || aj_write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0)
		unlink(tmp); /* a cache that cannot be written is a cache that misses */
}

/* ---- images ------------------------------------------------------------------------------- */

/* The stage's layer directories, bottom first. */
static void layer_dirs(struct build *b, struct stage *s, struct aj_strv *out)
{
	json_t *ids = json_object_get(json_object_get(s->doc, "rootfs"), "diff_ids"), *v;
	size_t i;
	char path[4200];

	json_array_foreach(ids, i, v) {
		aj_images_layer_path(b->im, json_string_value(v), path, sizeof path);
		aj_strv_push(out, path);
	}
}

/* The stage as an image of the store (unnamed; the root of a RUN, or the result). */
static void stage_run_mark(struct stage *s)
{
	if (s->run_lock >= 0 && ftruncate(s->run_lock, 0) == 0)
		(void)!pwrite(s->run_lock, s->root, strlen(s->root), 0);
}

/* The stage's run directory and its lock, naming what it stacks (as a one-shot run's does). */
static int stage_run_begin(struct build *b, struct stage *s)
{
	char id[17];
	_cleanup_close_ int dfd = -1;

	int r = 0;

	s->run_lock = -1;
	aj_random_hex(id, 8);
	snprintf(s->run_dir, sizeof s->run_dir, "%s/images/runs/%s", b->im->state_dir, id);
	/* Under the store's lock, as a run makes its directory: gc takes a directory without a
	 * held lock for a dead run's. */
	if (aj_images_lock(b->im, b->err) < 0)
		return -1;
	if (aj_mkdir_p(s->run_dir, 0700) < 0 ||
	    (dfd = open(s->run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (s->run_lock = openat(dfd, "lock", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 ||
	    flock(s->run_lock, LOCK_EX) < 0)
		r = aj_err_sys(b->err, AJ_LAYER_IMAGE, "create \"%s\"", s->run_dir);
	if (r == 0)
		stage_run_mark(s);
	aj_images_unlock(b->im);
	return r;
}


/* The stage as an image of the store (unnamed; the root of a RUN, or the result); under
 * the store's lock, which the caller holds. */
static int commit_locked(struct build *b, struct stage *s, const char *name,
			 struct aj_image_rec *out)
{
	_cleanup_free_ char *text = NULL;
	struct aj_image_rec rec = {.layers = AJ_STRV_INIT, .names = AJ_STRV_INIT};

	if (s->root[0] && !name && !out)
		return 0;
	text = json_dumps(s->doc, JSON_COMPACT | JSON_SORT_KEYS);
	if (aj_image_commit(b->im, text, &s->layers, "agentjail build", b->owner, name, &rec,
			    b->err) < 0)
		return -1;
	snprintf(s->root, sizeof s->root, "%s", rec.digest);
	stage_run_mark(s);
	if (out)
		*out = rec;
	else
		aj_image_rec_free(&rec);
	return 0;
}

static int commit(struct build *b, struct stage *s, const char *name, struct aj_image_rec *out)
{
	int r;

	if (aj_images_lock(b->im, b->err) < 0)
		return -1;
	r = commit_locked(b, s, name, out);
	aj_images_unlock(b->im);
	return r;
}

/* A base whose history lists fewer layers than it has (an image made without one) gets an
 * entry per layer missing, first: builders on top check the two agree. */
static void complete_history(struct stage *s)
{
	json_t *h = member(s->doc, "history", true), *v;
	size_t i, filled = 0;

	json_array_foreach(h, i, v)
		filled += !json_is_true(json_object_get(v, "empty_layer"));
	for (; filled < s->layers.n; filled++)
		json_array_insert_new(h, 0, json_pack("{s:s}", "created_by",
						       "(a layer of the base image)"));
}

static int from_image(struct build *b, struct stage *s, const char *ref,
		      const struct aj_df_insn *in)
{
	_cleanup_image_rec_ struct aj_image_rec rec = {0};
	_cleanup_free_ char *ctext = NULL, *mtext = NULL;
	_cleanup_manifest_ struct aj_manifest m = {0};
	size_t clen, mlen;
	struct aj_err perr;

	int found = b->owner[0] ? aj_images_find(b->im, b->owner, ref, &rec, NULL, &perr) : -1;

	/* An owner's names first, then the local owner's (the host's images are everyone's
	 * bases, as for sandboxes); a digest only through a name of either. */
	if (found == 0 && rec.names.n == 0) {
		aj_image_rec_free(&rec);
		found = -1;
	}
	if (found < 0)
		found = aj_images_find(b->im, "", ref, &rec, NULL, &perr);
	if (found == 0 && b->owner[0] && rec.names.n == 0) {
		aj_image_rec_free(&rec);
		aj_err_set(&perr, AJ_LAYER_IMAGE, ENOENT, "no image \"%s\" in the store", ref);
		aj_err_class(&perr, AJ_ERRC_NOT_FOUND);
		found = -1;
	}
	if (found < 0) {
		if (perr.cls != AJ_ERRC_NOT_FOUND) {
			*b->err = perr;
			return -1;
		}
		fprintf(b->o->out, "  pulling %s\n", ref);
		if (aj_image_pull(b->im, ref, b->o->pull, &rec, &perr) < 0) {
			*b->err = perr;
			return aj_err_prefix(b->err, "%s:%u: FROM %s: not in the store, and the pull "
					     "failed",
					     b->file, in->line, ref);
		}
	}
	ctext = aj_blobs_read(&b->im->blobs, rec.config, DOC_MAX, &clen, b->err);
	mtext = aj_blobs_read(&b->im->blobs, rec.digest, DOC_MAX, &mlen, b->err);
	if (!ctext || !mtext || aj_manifest_parse(mtext, mlen, "manifest", &m, b->err) < 0)
		return -1;
	s->doc = json_loadb(ctext, clen, 0, NULL);
	if (!json_is_object(s->doc))
		return aj_err_set(b->err, AJ_LAYER_IMAGE, EINVAL, "image %s: its config is not a "
				  "JSON object", ref);
	for (size_t i = 0; i < m.layers.n; i++)
		aj_strv_push(&s->layers, m.layers.v[i].digest);
	complete_history(s);
	snprintf(s->key, sizeof s->key, "%s", rec.digest);
	snprintf(s->root, sizeof s->root, "%s", rec.digest);
	return 0;
}

static void from_scratch(struct stage *s)
{
	char platform[96];

	aj_image_host_platform(platform, sizeof platform);
	s->doc = json_pack("{s:s, s:s, s:{}, s:{s:s, s:[]}}", "architecture",
			   strchr(platform, '/') + 1, "os", "linux", "config", "rootfs", "type",
			   "layers", "diff_ids");
	snprintf(s->key, sizeof s->key, "scratch");
	s->root[0] = '\0';
}

static struct stage *stage_named(struct build *b, const char *name)
{
	for (size_t i = 0; i < b->n_st; i++)
		if (b->st[i].name && !strcasecmp(b->st[i].name, name))
			return &b->st[i];
	return NULL;
}

static void stage_copy(struct stage *dst, const struct stage *src)
{
	dst->doc = json_deep_copy(src->doc);
	aj_strv_copy(&dst->layers, &src->layers);
	aj_strv_copy(&dst->shell, &src->shell);
	memcpy(dst->key, src->key, sizeof dst->key);
	memcpy(dst->root, src->root, sizeof dst->root);
}

static int do_from(struct build *b, const struct aj_df_insn *in)
{
	struct scope sc = {b, NULL};
	_cleanup_free_ char *ref = NULL;
	struct stage *s, *prev;
	char what[300];

	snprintf(what, sizeof what, "%s:%u: FROM", b->file, in->line);
	if (aj_df_expand(in->args.v[0], b->df.escape, lookup, &sc, &ref, what, b->err) < 0)
		return -1;
	if (!*ref)
		return insn_fail(b, in, EINVAL, "%s", "the image is empty (an unset ARG?)");
	b->st = aj_xrealloc(b->st, (b->n_st + 1) * sizeof *b->st);
	s = &b->st[b->n_st++];
	memset(s, 0, sizeof *s);
	s->run_lock = -1;
	s->layers = s->shell = s->args = (struct aj_strv)AJ_STRV_INIT;
	if (in->args.n > 1)
		s->name = aj_xstrdup(in->args.v[1]);
	prev = stage_named(b, ref);
	if (prev && prev != s) {
		stage_copy(s, prev);
	} else if (!strcmp(ref, "scratch")) {
		from_scratch(s);
	} else if (from_image(b, s, ref, in) < 0) {
		return -1;
	}
	if (s->shell.n == 0) {
		aj_strv_push(&s->shell, "/bin/sh");
		aj_strv_push(&s->shell, "-c");
	}
	return stage_run_begin(b, s);
}

/* ---- config instructions ------------------------------------------------------------------- */

static void env_set(struct stage *s, const char *name, const char *value)
{
	json_t *env = member(config_of(s), "Env", true), *v;
	size_t n = strlen(name), i;

	json_array_foreach(env, i, v) {
		const char *kv = json_string_value(v);
		if (kv && !strncmp(kv, name, n) && kv[n] == '=') {
			json_array_set_new(env, i, json_sprintf("%s=%s", name, value));
			return;
		}
	}
	json_array_append_new(env, json_sprintf("%s=%s", name, value));
}

/* "k=v" words: expanded, split at the first '='. */
static int pairs(struct build *b, struct stage *s, const struct aj_df_insn *in, json_t *labels)
{
	for (size_t i = 0; i < in->args.n; i++) {
		_cleanup_free_ char *kv = expand(b, s, in, in->args.v[i]);
		char *eq;

		if (!kv)
			return -1;
		eq = strchr(kv, '=');
		if (!eq || eq == kv)
			return insn_fail(b, in, EINVAL, "\"%s\" is not key=value", kv);
		*eq = '\0';
		if (labels)
			json_object_set_new(labels, kv, json_string(eq + 1));
		else
			env_set(s, kv, eq + 1);
	}
	return 0;
}

static int do_arg(struct build *b, struct stage *s, const struct aj_df_insn *in, struct aj_strv *into)
{
	for (size_t i = 0; i < in->args.n; i++) {
		_cleanup_free_ char *w = s ? expand(b, s, in, in->args.v[i]) : NULL;
		struct scope sc = {b, NULL};
		char *eq, what[64];
		const char *v;

		snprintf(what, sizeof what, "%s:%u: ARG", b->file, in->line);
		if (!s && aj_df_expand(in->args.v[i], b->df.escape, lookup, &sc, &w, what, b->err) < 0)
			return -1;
		if (!s && (b->expanded += strlen(w)) > AJ_BUILD_MAX_EXPANDED)
			return insn_fail(b, in, E2BIG, "%s", "the build's variables expand too far");
		if (!w)
			return -1;
		eq = strchr(w, '=');
		if (eq)
			*eq = '\0';
		if (!*w)
			return insn_fail(b, in, EINVAL, "%s", "a name is empty");
		/* --build-arg, else the default given, else the meta ARG of that name. */
		v = env_get(b->o->build_args, w);
		if (!v)
			v = eq ? eq + 1 : s ? env_get(&b->meta, w) : NULL;
		if (v)
			aj_strv_pushf(into, "%s=%s", w, v);
		if (s) {
			char *c = aj_xasprintf("ARG %s=%s", w, v ? v : "");
			chain(s, c);
			free(c);
		}
	}
	return 0;
}

/* CMD, ENTRYPOINT: the exec form as it is, the shell form under the SHELL. */
static void command_of(struct stage *s, const struct aj_df_insn *in, struct aj_strv *out)
{
	if (in->exec_form) {
		aj_strv_copy(out, &in->args);
		return;
	}
	aj_strv_copy(out, &s->shell);
	aj_strv_push(out, in->args.v[0]);
}

static int add_layer(struct build *b, struct stage *s, const char *blob, const char *diff_id,
		     const char *by);
static int image_stat(struct build *b, struct stage *s, const char *rel, struct stat *st,
		      bool *found);
static int parents(struct build *b, struct stage *s, struct aj_layer_writer *lw,
		   const char *dest, bool self, uid_t uid, gid_t gid);
static char *clean_dest(const char *path);

/* WORKDIR makes its directory (root's, 0755) when the image lacks it, as docker does: a
 * layer of that directory and the new ones above it. */
static int make_workdir(struct build *b, struct stage *s, const char *path)
{
	_cleanup_free_ char *rel = clean_dest(path);
	struct aj_layer_writer lw;
	struct stat st;
	char blob[AJ_DIGEST_SIZE];
	bool found = false;

	if (!*rel)
		return 0;
	if (image_stat(b, s, rel, &st, &found) < 0)
		return -1;
	if (found)
		return 0;
	if (aj_layer_begin(&lw, &b->im->blobs, b->err) < 0)
		return -1;
	if (parents(b, s, &lw, rel, true, 0, 0) < 0) {
		aj_layer_abort(&lw);
		return -1;
	}
	if (aj_layer_commit(&lw, blob) < 0)
		return -1;
	return add_layer(b, s, blob, NULL, "the WORKDIR's directory");
}

static int do_config(struct build *b, struct stage *s, const struct aj_df_insn *in)
{
	json_t *c = config_of(s);
	_cleanup_strv_ struct aj_strv cmd = AJ_STRV_INIT;
	_cleanup_free_ char *w = NULL;

	switch (in->kind) {
	case AJ_DF_ENV:
		return pairs(b, s, in, NULL);
	case AJ_DF_LABEL:
		return pairs(b, s, in, member(c, "Labels", false));
	case AJ_DF_WORKDIR: {
		const char *old = json_string_value(json_object_get(c, "WorkingDir"));
		_cleanup_free_ char *path = NULL;
		if (!(w = expand(b, s, in, in->args.v[0])))
			return -1;
		path = w[0] == '/' ? aj_xstrdup(w)
				   : aj_xasprintf("%s/%s", old && *old ? old : "", w);
		json_object_set_new(c, "WorkingDir", json_string(path));
		return make_workdir(b, s, path);
	}
	case AJ_DF_USER:
		if (!(w = expand(b, s, in, in->args.v[0])))
			return -1;
		json_object_set_new(c, "User", json_string(w));
		return 0;
	case AJ_DF_EXPOSE: {
		json_t *ports = member(c, "ExposedPorts", false);
		for (size_t i = 0; i < in->args.n; i++) {
			_cleanup_free_ char *p = expand(b, s, in, in->args.v[i]);
			_cleanup_free_ char *key = NULL;
			if (!p)
				return -1;
			key = strchr(p, '/') ? aj_xstrdup(p) : aj_xasprintf("%s/tcp", p);
			json_object_set_new(ports, key, json_object());
		}
		return 0;
	}
	case AJ_DF_VOLUME: {
		json_t *vols = member(c, "Volumes", false);
		for (size_t i = 0; i < in->args.n; i++) {
			_cleanup_free_ char *p = expand(b, s, in, in->args.v[i]);
			if (!p)
				return -1;
			json_object_set_new(vols, p, json_object());
		}
		return 0;
	}
	case AJ_DF_STOPSIGNAL:
		if (!(w = expand(b, s, in, in->args.v[0])))
			return -1;
		json_object_set_new(c, "StopSignal", json_string(w));
		return 0;
	case AJ_DF_CMD:
		command_of(s, in, &cmd);
		set_strings(c, "Cmd", &cmd);
		return 0;
	case AJ_DF_ENTRYPOINT:
		command_of(s, in, &cmd);
		set_strings(c, "Entrypoint", &cmd);
		/* docker: a new ENTRYPOINT clears the Cmd inherited from the base */
		json_object_del(c, "Cmd");
		return 0;
	case AJ_DF_SHELL:
		aj_strv_clear(&s->shell);
		aj_strv_copy(&s->shell, &in->args);
		return 0;
	case AJ_DF_FROM:
	case AJ_DF_RUN:
	case AJ_DF_COPY:
	case AJ_DF_ADD:
	case AJ_DF_ARG:
		break;
	}
	return 0;
}

/* ---- layers -------------------------------------------------------------------------------- */

/* A layer blob made by a step: unpacked into the store, added to the stage. */
static int add_layer(struct build *b, struct stage *s, const char *blob, const char *diff_id,
		     const char *by)
{
	char learned[AJ_DIGEST_SIZE];
	json_t *rootfs = json_object_get(s->doc, "rootfs"), *ids;
	int r;

	if (s->layers.n + 1 >= AJ_OVL_MAX_LOWERS)
		return aj_err_set(b->err, AJ_LAYER_USAGE, E2BIG,
				  "a stage of more than %d layers (a sandbox stacks at most %d)",
				  AJ_OVL_MAX_LOWERS - 2, AJ_OVL_MAX_LOWERS);
	/* The layer, and an image of the stage that stacks it, under one hold of the store's
	 * lock: `image prune` never sees the layer unused. */
	if (aj_images_lock(b->im, b->err) < 0)
		return -1;
	if (!diff_id) {
		if (aj_images_layer_add(b->im, blob, NULL, by, learned, b->err) < 0) {
			aj_images_unlock(b->im);
			return -1;
		}
		diff_id = learned;
	} else if (!aj_images_has_layer(b->im, diff_id) || !aj_blobs_has(&b->im->blobs, blob)) {
		aj_images_unlock(b->im);
		return aj_err_set(b->err, AJ_LAYER_IMAGE, ENOENT,
				  "%s %s went from the store meanwhile (image prune?)", by, blob);
	}
	if (!json_is_object(rootfs)) {
		rootfs = member(s->doc, "rootfs", false);
		json_object_set_new(rootfs, "type", json_string("layers"));
	}
	ids = member(rootfs, "diff_ids", true);
	json_array_append_new(ids, json_string(diff_id));
	aj_strv_push(&s->layers, blob);
	s->root[0] = '\0';
	r = commit_locked(b, s, NULL, NULL);
	aj_images_unlock(b->im);
	return r;
}

/* The diff_id of a layer blob the stage stacks: its config says (same position). */
static const char *diff_id_of(struct stage *s, size_t i)
{
	return json_string_value(json_array_get(
		json_object_get(json_object_get(s->doc, "rootfs"), "diff_ids"), i));
}

static char *join_json(const struct aj_strv *v)
{
	json_t *a = json_array();
	char *s;

	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->v[i]));
	s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

static int do_run(struct build *b, struct stage *s, const struct aj_df_insn *in)
{
	_cleanup_strv_ struct aj_strv argv = AJ_STRV_INIT;
	_cleanup_free_ char *what = NULL, *args = NULL, *dir = NULL, *scratch = NULL;
	_cleanup_free_ char *in_force = join_json(&s->args), *events = NULL;
	json_t *c = config_of(s);
	const char *user = json_string_value(json_object_get(c, "User"));
	const char *cwd = json_string_value(json_object_get(c, "WorkingDir"));
	/* This RUN's own user, not the stage's: only instructions build/template.c makes have
	 * it (the parser refuses flags on RUN). */
	const char *as = aj_df_flag(in, "user");
	char blob[AJ_DIGEST_SIZE], diff_id[AJ_DIGEST_SIZE], id[17];
	int code = 0, r;

	if (in->exec_form) {
		aj_strv_copy(&argv, &in->args);
	} else {
		aj_strv_copy(&argv, &s->shell);
		aj_strv_push(&argv, in->args.v[0]);
	}
	args = join_json(&argv);
	what = aj_xasprintf("RUN %s ARGS %s%s%s", args, in_force, as ? " USER " : "", as ? as : "");
	chain(s, what);
	if (cache_get(b, s->key, blob, diff_id)) {
		fprintf(b->o->out, "  --> cached\n");
		b->cached = true;
		return add_layer(b, s, blob, diff_id, "the cached layer");
	}
	if (commit(b, s, NULL, NULL) < 0)
		return -1;
	aj_random_hex(id, 8);
	dir = aj_xasprintf("%s/%s", b->work, id);
	scratch = aj_xasprintf("%s/%s.ws", b->work, id);
	events = aj_xasprintf("%s/%s.events", b->work, id);
	if (mkdir(dir, 0700) < 0 || mkdir(scratch, 0755) < 0)
		return aj_err_sys(b->err, AJ_LAYER_IMAGE, "create the step's directory in \"%s\"",
				  b->work);
	struct aj_build_step st = {
		.state_dir = b->im->state_dir,
		.owner = b->owner,
		.image = s->root,
		.dir = dir,
		.scratch = scratch,
		.user = as && *as ? as : user && *user ? user : "root",
		.cwd = cwd && *cwd ? cwd : "/",
		.argv = &argv,
		.env = &s->args,
		.policy = b->o->policy,
		.events_path = events,
		.tty = b->o->tty ? b->o->out : NULL,
	};
	r = aj_build_step_run(&st, &code, b->err);
	step_events(b, events);
	if (r < 0)
		return aj_err_prefix(b->err, "%s:%u: RUN", b->file, in->line);
	if (code != 0)
		return aj_err_set(b->err, AJ_LAYER_USAGE, 0,
				  "%s:%u: RUN %s: the command exited with %d", b->file, in->line,
				  in->exec_form ? args : in->args.v[0], code);
	if (aj_build_upper_blob(b->im, dir, blob, b->err) < 0 ||
	    add_layer(b, s, blob, NULL, "the RUN's layer") < 0)
		return -1;
	cache_put(b, s->key, blob, diff_id_of(s, s->layers.n - 1));
	return 0;
}

/* ---- COPY and ADD ------------------------------------------------------------------------- */

/* The store's ids to the image's, for a caller outside the store's user namespace. */
static void image_ids(struct build *b, struct stat *st)
{
	if (b->im->subid_layers && geteuid() != 0) {
		const struct aj_subids *x = &b->im->subids;
		st->st_uid = st->st_uid == x->uid ? 0 : st->st_uid - x->sub_uid + 1;
		st->st_gid = st->st_gid == x->gid ? 0 : st->st_gid - x->sub_gid + 1;
	} else if (!b->im->set_owners && !b->im->subid_layers) {
		st->st_uid = 0;
		st->st_gid = 0;
	}
}

/* A path's entry in the stage's image as its root shows it (build/stack.h): *found, and its
 * stat with the image's ids. -1 when a layer cannot be read. */
static int image_stat(struct build *b, struct stage *s, const char *rel, struct stat *st,
		      bool *found)
{
	_cleanup_strv_ struct aj_strv dirs = AJ_STRV_INIT;
	struct aj_stack_entry e;

	layer_dirs(b, s, &dirs);
	if (aj_stack_lookup(&dirs, rel, &e, b->err) < 0)
		return -1;
	*found = e.found;
	if (e.found) {
		*st = e.st;
		image_ids(b, st);
	}
	aj_stack_entry_close(&e);
	return 0;
}

/* The directories above dest (and dest when `self`), as the image has them, or new (0755,
 * root's; dest itself uid:gid): a layer that lists them keeps their modes and owners. */
static int parents(struct build *b, struct stage *s, struct aj_layer_writer *lw,
		   const char *dest, bool self, uid_t uid, gid_t gid)
{
	char buf[4096];

	if (strlen(dest) >= sizeof buf)
		return aj_err_set(b->err, AJ_LAYER_USAGE, ENAMETOOLONG,
				  "the destination is longer than %zu bytes", sizeof buf - 1);
	snprintf(buf, sizeof buf, "%s", dest);
	for (char *c = buf; *c;) {
		char *slash = strchr(c, '/');
		struct stat st;
		bool found;

		if (!slash && !self)
			break;
		if (slash)
			*slash = '\0';
		if (image_stat(b, s, buf, &st, &found) < 0)
			return -1;
		if (found && S_ISLNK(st.st_mode))
			return aj_err_set(b->err, AJ_LAYER_USAGE, ENOTDIR,
					  "the destination \"/%s\" goes through the image's symlink "
					  "\"/%s\": name the path it leads to",
					  dest, buf);
		if (found && S_ISDIR(st.st_mode)) {
			if (aj_layer_dir(lw, buf, st.st_mode, st.st_uid, st.st_gid,
					 st.st_mtim.tv_sec) < 0)
				return -1;
		} else if (aj_layer_dir(lw, buf, 0755, slash ? 0 : uid, slash ? 0 : gid, 0) < 0) {
			/* time 0: the same files make the same layer, and hit the cache */
			return -1;
		}
		if (!slash)
			break;
		*slash = '/';
		c = slash + 1;
	}
	return 0;
}

struct skip_ctx {
	struct build *b;
	const char *prefix; /* the source's path in the context ("" its top) */
};

static bool skip_ignored(void *arg, const char *path, bool dir)
{
	struct skip_ctx *k = arg;
	char full[4200];

	(void)dir;
	snprintf(full, sizeof full, "%s%s%s", k->prefix, *k->prefix ? "/" : "", path);
	return aj_ignore_match(&k->b->ignore, full);
}

/* path cleaned: no leading '/', no "." or empty components; ".." taking one off when
 * `dotdot`, else making it refused (-1). "" is the top. */
static int clean_path(const char *path, bool dotdot, char **out)
{
	_cleanup_strv_ struct aj_strv parts = AJ_STRV_INIT;
	_cleanup_free_ char *copy = aj_xstrdup(path);
	char *save = NULL, *o = aj_xmalloc(strlen(path) + 1);
	size_t len = 0;

	for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, "..")) {
			if (!dotdot) {
				free(o);
				return -1;
			}
			if (parts.n) {
				free(parts.v[--parts.n]);
				parts.v[parts.n] = NULL;
			}
			continue;
		}
		aj_strv_push(&parts, tok);
	}
	o[0] = '\0';
	for (size_t i = 0; i < parts.n; i++) {
		size_t n = strlen(parts.v[i]);
		if (i)
			o[len++] = '/';
		memcpy(o + len, parts.v[i], n + 1);
		len += n;
	}
	*out = o;
	return 0;
}

static char *clean_dest(const char *path)
{
	char *out = NULL;

	clean_path(path, true, &out);
	return out;
}

/* A source path, cleaned; ".." refused (it leaves the context, or the stage's root). */
static int clean_source(struct build *b, const struct aj_df_insn *in, const char *src,
			char **out)
{
	if (clean_path(src, false, out) < 0)
		return insn_fail(b, in, EPERM, "\"%s\" leaves the build context", src);
	return 0;
}

/* The context's paths a source names: itself, or what its glob matches in its directory;
 * a path .dockerignore leaves out is not in the context. */
static int expand_glob(struct build *b, const struct aj_df_insn *in, const char *src,
		       struct aj_strv *out)
{
	_cleanup_free_ char *clean = NULL, *dirpart = NULL;
	const char *base;
	_cleanup_close_ int dfd = -1;
	DIR *d;
	struct dirent *de;
	size_t before = out->n;

	if (clean_source(b, in, src, &clean) < 0)
		return -1;
	if (!strpbrk(clean, "*?[")) {
		if (*clean && aj_ignore_match(&b->ignore, clean))
			return insn_fail(b, in, ENOENT,
					 "\"%s\" is left out of the build context by .dockerignore",
					 src);
		aj_strv_push(out, clean);
		return 0;
	}
	base = strrchr(clean, '/');
	dirpart = base ? aj_xstrndup(clean, (size_t)(base - clean)) : aj_xstrdup("");
	base = base ? base + 1 : clean;
	if (strpbrk(dirpart, "*?["))
		return insn_fail(b, in, ENOTSUP,
				 "\"%s\": a pattern in a directory name is not supported", src);
	/* Through no symlink: what .dockerignore names is what is read (a link inside the context
	 * would reach an ignored path by another name). */
	dfd = aj_open_beneath(b->ctx, dirpart, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return insn_fail(b, in, errno,
				 "\"%s\": no such directory in the context (symlinks not followed)",
				 src);
	d = fdopendir(dfd);
	if (!d)
		return insn_fail(b, in, errno, "list \"%s\"", *dirpart ? dirpart : ".");
	dfd = -1; /* the DIR has it */
	while ((de = readdir(d))) {
		char full[4200];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !aj_glob_match(base, de->d_name))
			continue;
		snprintf(full, sizeof full, "%s%s%s", dirpart, *dirpart ? "/" : "", de->d_name);
		if (!aj_ignore_match(&b->ignore, full))
			aj_strv_push(out, full);
	}
	closedir(d);
	if (out->n == before)
		return insn_fail(b, in, ENOENT, "\"%s\" matches nothing in the build context", src);
	if (out->n - before > 1)
		qsort(out->v + before, out->n - before, sizeof *out->v,
		      (int (*)(const void *, const void *))strcmp);
	return 0;
}

/* --chown=USER[:GROUP] in the stage's image (names from its passwd and group). */
static int chown_ids(struct build *b, struct stage *s, const struct aj_df_insn *in, uid_t *uid,
		     gid_t *gid)
{
	const char *flag = aj_df_flag(in, "chown");
	_cleanup_free_ char *spec = NULL, *passwd = NULL, *group = NULL;
	_cleanup_strv_ struct aj_strv dirs = AJ_STRV_INIT;
	struct aj_root_spec r = {.lowers = &dirs};
	struct aj_user u;

	*uid = 0;
	*gid = 0;
	if (!flag)
		return 0;
	if (!(spec = expand(b, s, in, flag)))
		return -1;
	layer_dirs(b, s, &dirs);
	passwd = aj_root_file(&r, "etc/passwd");
	group = aj_root_file(&r, "etc/group");
	switch (aj_user_resolve(passwd, group, spec, &u)) {
	case AJ_USER_OK:
		break;
	case AJ_USER_NO_USER:
		return insn_fail(b, in, ENOENT, "--chown=%s: no such user in the image", spec);
	case AJ_USER_NO_GROUP:
		return insn_fail(b, in, ENOENT, "--chown=%s: no such group in the image", spec);
	case AJ_USER_RANGE:
	default:
		return insn_fail(b, in, ERANGE, "--chown=%s: beyond ids 0-65535", spec);
	}
	*uid = u.uid;
	*gid = u.gid;
	return 0;
}

static int chmod_of(struct build *b, struct stage *s, const struct aj_df_insn *in, int *mode)
{
	const char *flag = aj_df_flag(in, "chmod");
	_cleanup_free_ char *v = NULL;
	char *end;
	long m;

	*mode = -1;
	if (!flag)
		return 0;
	if (!(v = expand(b, s, in, flag)))
		return -1;
	m = strtol(v, &end, 8);
	if (!*v || *end || m < 0 || m > 07777)
		return insn_fail(b, in, EINVAL, "--chmod=%s: expected an octal mode", v);
	*mode = (int)m;
	return 0;
}

/* The destination: absolute, or relative to WORKDIR; *is_dir when it must be a directory (a
 * trailing '/'; copy_job_run() also makes it one when the image has a directory there). */
static char *destination(struct build *b, struct stage *s, const struct aj_df_insn *in,
			 bool *is_dir)
{
	_cleanup_free_ char *d = expand(b, s, in, in->args.v[in->args.n - 1]);
	_cleanup_free_ char *full = NULL;
	const char *wd = json_string_value(json_object_get(config_of(s), "WorkingDir"));
	char *out;
	size_t n;

	if (!d)
		return NULL;
	n = strlen(d);
	*is_dir = n == 0 || d[n - 1] == '/' || !strcmp(d, ".") ||
		  (n >= 2 && !strcmp(d + n - 2, "/."));
	full = d[0] == '/' ? aj_xstrdup(d) : aj_xasprintf("%s/%s", wd && *wd ? wd : "", d);
	out = clean_dest(full);
	if (!*out)
		*is_dir = true;
	return out;
}

/* A layer name a COPY cannot give: ".wh." names are whiteouts in a layer. */
static int check_name(struct build *b, const struct aj_df_insn *in, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, ".wh.", 4))
		return insn_fail(b, in, EINVAL,
				 "\"%s\": a name starting with \".wh.\" is a whiteout in an image "
				 "layer, not a file",
				 path);
	return 0;
}

/* What one COPY or ADD writes: its sources (in the context, or in a stage), where, as what. */
struct copy_job {
	struct build *b;
	struct stage *s, *from;
	const struct aj_df_insn *in;
	const struct aj_strv *srcs;
	const char *dest;
	bool dest_dir, archives;
	int src_dir; /* where the sources are: the context (-1), or ADD's downloads */
	struct aj_layer_tree t;
	/* results */
	char blob[AJ_DIGEST_SIZE], content[AJ_DIGEST_SIZE];
};

/* A source of another stage: its entry in the stage's layers, written as t says. */
static int copy_from_stage(struct copy_job *j, struct aj_layer_writer *lw, const char *src)
{
	struct build *b = j->b;
	_cleanup_strv_ struct aj_strv dirs = AJ_STRV_INIT;
	_cleanup_free_ char *at = NULL;
	struct aj_layer_tree t = j->t;
	struct aj_stack_entry e;
	const char *base = strrchr(src, '/');
	int r;

	layer_dirs(b, j->from, &dirs);
	if (aj_stack_lookup(&dirs, src, &e, b->err) < 0)
		return -1;
	if (!e.found) {
		aj_stack_entry_close(&e);
		return insn_fail(b, j->in, ENOENT, "\"/%s\": no such file in the stage %s", src,
				 j->from->name ? j->from->name : "");
	}
	base = base ? base + 1 : src;
	if (S_ISDIR(e.st.st_mode)) {
		struct stat st = e.st;

		image_ids(b, &st);
		t.dest = j->dest;
		r = parents(b, j->s, lw, j->dest, false, 0, 0);
		if (r == 0 && *j->dest)
			r = aj_layer_dir(lw, j->dest, st.st_mode & 07777, t.uid, t.gid,
					 st.st_mtim.tv_sec);
		if (r == 0)
			r = aj_layer_merged(lw, e.dirs, e.n_dirs, &t);
	} else {
		at = j->dest_dir ? (*j->dest ? aj_xasprintf("%s/%s", j->dest, base)
					     : aj_xstrdup(base))
				 : aj_xstrdup(j->dest);
		t.dest = at;
		r = parents(b, j->s, lw, at, false, 0, 0);
		if (r == 0)
			r = aj_layer_tree(lw, e.parent, e.name, &t);
	}
	aj_stack_entry_close(&e);
	return r;
}

/* A source of the context, beneath it. */
static int copy_from_context(struct copy_job *j, struct aj_layer_writer *lw, const char *src)
{
	struct build *b = j->b;
	int dir = j->src_dir >= 0 ? j->src_dir : b->ctx;
	_cleanup_close_ int fd = aj_open_beneath(dir, src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	_cleanup_free_ char *at = NULL, *pdir = NULL;
	struct aj_layer_tree t = j->t;
	struct skip_ctx sk = {b, src};
	const char *base = strrchr(src, '/');
	struct stat st;

	if (fd < 0 && errno == ELOOP)
		/* the source itself a symlink: copied as a link, from its directory */
		fd = aj_open_beneath(dir, src, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0) {
		if (errno == EXDEV || errno == ELOOP)
			return insn_fail(b, j->in, EPERM,
					 "\"%s\" goes through a symlink (a source's path is taken as "
					 "written, in the build context)",
					 src);
		return insn_fail(b, j->in, errno, "\"%s\": no such file in the build context",
				 src);
	}
	if (fstat(fd, &st) < 0)
		return aj_err_sys(b->err, AJ_LAYER_IMAGE, "stat \"%s\"", src);
	base = base ? base + 1 : src;
	if (S_ISDIR(st.st_mode)) {
		t.dest = j->dest;
		t.skip = skip_ignored;
		t.skip_arg = &sk;
		if (parents(b, j->s, lw, j->dest, false, 0, 0) < 0)
			return -1;
		return aj_layer_tree(lw, fd, NULL, &t);
	}
	at = j->dest_dir ? (*j->dest ? aj_xasprintf("%s/%s", j->dest, base) : aj_xstrdup(base))
			 : aj_xstrdup(j->dest);
	if (check_name(b, j->in, at) < 0)
		return -1;
	if (j->archives && S_ISREG(st.st_mode) && aj_layer_is_archive(fd)) {
		t.dest = j->dest;
		if (parents(b, j->s, lw, j->dest, true, t.uid, t.gid) < 0)
			return -1;
		t.own = aj_df_flag(j->in, "chown") != NULL;
		return aj_layer_archive(lw, fd, src, &t);
	}
	t.dest = at;
	pdir = base == src ? aj_xstrdup("") : aj_xstrndup(src, (size_t)(base - 1 - src));
	{
		_cleanup_close_ int pd = aj_open_beneath(dir, pdir, O_RDONLY | O_DIRECTORY, 0);

		if (pd < 0)
			return aj_err_sys(b->err, AJ_LAYER_IMAGE, "open \"%s\"", pdir);
		if (parents(b, j->s, lw, at, false, 0, 0) < 0)
			return -1;
		return aj_layer_tree(lw, pd, base, &t);
	}
}

/* The layer of a COPY or ADD, written into a blob; its content digest for the cache. */
static int copy_job_run(void *arg, struct aj_err *err)
{
	struct copy_job *j = arg;
	struct aj_layer_writer lw;
	struct aj_err *saved = j->b->err;
	int r = 0;

	j->b->err = err;
	if (!j->dest_dir && *j->dest) {
		struct stat st;
		bool found = false;

		if (image_stat(j->b, j->s, j->dest, &st, &found) < 0) {
			j->b->err = saved;
			return -1;
		}
		j->dest_dir = found && S_ISDIR(st.st_mode);
	}
	if (aj_layer_begin(&lw, &j->b->im->blobs, err) < 0) {
		j->b->err = saved;
		return -1;
	}
	for (size_t i = 0; r == 0 && i < j->srcs->n; i++)
		r = j->from ? copy_from_stage(j, &lw, j->srcs->v[i])
			    : copy_from_context(j, &lw, j->srcs->v[i]);
	if (r == 0) {
		aj_layer_content(&lw, j->content);
		r = aj_layer_commit(&lw, j->blob);
	} else {
		aj_layer_abort(&lw);
	}
	j->b->err = saved;
	return r;
}

/* ADD's URLs: each downloaded by the host's curl in a sandbox of its own with the build
 * policy's network (none unless hosts are allowed: the proxy decides), into
 * DIR/<i>/<the URL's last path component>, which become the sources. */
static int fetch_urls(struct build *b, const struct aj_df_insn *in, const struct aj_strv *urls,
		      char *dir, size_t dir_len, struct aj_strv *srcs)
{
	char id[17];

	aj_random_hex(id, 8);
	snprintf(dir, dir_len, "%s/fetch-%s", b->work, id);
	if (mkdir(dir, 0700) < 0)
		return aj_err_sys(b->err, AJ_LAYER_IMAGE, "create \"%s\"", dir);
	for (size_t i = 0; i < urls->n; i++) {
		const char *u = urls->v[i], *path = strstr(u, "://") + 3, *slash;
		_cleanup_free_ char *name = NULL, *sub = NULL, *scratch = NULL;
		_cleanup_free_ char *events = aj_xasprintf("%s.%zu.events", dir, i);
		_cleanup_strv_ struct aj_strv argv = AJ_STRV_INIT;
		size_t n;
		int code = 0;

		if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
			return insn_fail(b, in, ENOTSUP, "\"%s\": ADD takes http:// and https:// URLs",
					 u);
		n = strcspn(path, "?#");
		slash = memrchr(path, '/', n);
		name = slash ? aj_xstrndup(slash + 1, n - (size_t)(slash + 1 - path)) : NULL;
		if (!name || !*name || !strcmp(name, ".") || !strcmp(name, "..") ||
		    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-+%~") !=
			    strlen(name)) {
			free(name);
			name = aj_xstrdup("download");
		}
		sub = aj_xasprintf("%zu", i);
		scratch = aj_xasprintf("%s/%s", dir, sub);
		if (mkdir(scratch, 0755) < 0)
			return aj_err_sys(b->err, AJ_LAYER_IMAGE, "create \"%s\"", scratch);
		aj_strv_push(&argv, "curl");
		aj_strv_push(&argv, "-q"); /* first: no .curlrc */
		aj_strv_push(&argv, "-fsSL");
		aj_strv_push(&argv, "--globoff");
		aj_strv_push(&argv, "--max-time");
		aj_strv_push(&argv, "1800");
		aj_strv_push(&argv, "--proto");
		aj_strv_push(&argv, "=http,https");
		aj_strv_push(&argv, "--proto-redir");
		aj_strv_push(&argv, "=http,https");
		/* the proxy for every host: no_proxy inside names the sandbox's own loopback */
		aj_strv_push(&argv, "--noproxy");
		aj_strv_push(&argv, "");
		aj_strv_push(&argv, "--max-filesize");
		aj_strv_push(&argv, "4294967296");
		aj_strv_push(&argv, "-o");
		aj_strv_push(&argv, name);
		aj_strv_push(&argv, u);
		fprintf(b->o->out, "  fetching %s\n", u);
		fflush(b->o->out);
		struct aj_build_step st = {
			.state_dir = b->im->state_dir,
			.owner = b->owner,
			.image = NULL,
			.scratch = scratch,
			.argv = &argv,
			.policy = b->o->policy,
			.events_path = events,
		};
		int r = aj_build_step_run(&st, &code, b->err);
		step_events(b, events);
		if (r < 0)
			return aj_err_prefix(b->err, "%s:%u: ADD %s", b->file, in->line, u);
		if (code != 0) {
			insn_fail(b, in, EIO, "\"%s\": the download failed (curl exited %d%s)", u,
				  code, code == 127 ? ": ADD of a URL needs curl on the host" : "");
			if (b->o->policy->net_mode != AJ_NET_PROXY)
				aj_err_hint(b->err, "the build's network is none: --allow-host HOST "
						    "lets the proxy reach the URL's host");
			return -1;
		}
		aj_strv_push_owned(srcs, aj_xasprintf("%s/%s", sub, name));
	}
	return 0;
}

static int do_copy(struct build *b, struct stage *s, const struct aj_df_insn *in)
{
	const char *from_flag = in->kind == AJ_DF_COPY ? aj_df_flag(in, "from") : NULL;
	_cleanup_strv_ struct aj_strv srcs = AJ_STRV_INIT;
	_cleanup_free_ char *dest = NULL, *from = NULL, *what = NULL;
	struct copy_job *j;
	struct stage *other = NULL;
	bool dest_dir = false;
	int r;
	char cached[AJ_DIGEST_SIZE], diff_id[AJ_DIGEST_SIZE];
	struct aj_layer_tree t = {.own = true, .chmod = -1, .self = (uid_t)-1};
	_cleanup_strv_ struct aj_strv urls = AJ_STRV_INIT;
	char fetched[4300] = "";
	_cleanup_close_ int fetched_fd = -1;

	if (chown_ids(b, s, in, &t.uid, &t.gid) < 0 || chmod_of(b, s, in, &t.chmod) < 0)
		return -1;
	if (!(dest = destination(b, s, in, &dest_dir)))
		return -1;
	if (from_flag) {
		if (!(from = expand(b, s, in, from_flag)))
			return -1;
		other = stage_named(b, from);
		for (size_t i = 0; !other && i + 1 < b->n_st; i++) {
			char idx[16];
			snprintf(idx, sizeof idx, "%zu", i);
			if (!strcmp(idx, from))
				other = &b->st[i];
		}
		if (!other || other == s)
			return insn_fail(b, in, ENOENT, "--from=%s: no earlier stage of that name",
					 from);
	}
	for (size_t i = 0; i + 1 < in->args.n; i++) {
		_cleanup_free_ char *src = expand(b, s, in, in->args.v[i]);

		if (!src)
			return -1;
		if (in->kind == AJ_DF_ADD && !strncmp(src, "git@", 4))
			return insn_fail(b, in, ENOTSUP,
					 "\"%s\": ADD of a git repository is not supported; clone it "
					 "in a RUN with --allow-host",
					 src);
		if (in->kind == AJ_DF_ADD && strstr(src, "://")) {
			aj_strv_push(&urls, src);
			continue;
		}
		if (urls.n) {
			aj_strv_push(&srcs, src); /* refused below */
		} else if (other) {
			char *clean = NULL;
			if (clean_source(b, in, src, &clean) < 0)
				return -1;
			aj_strv_push_owned(&srcs, clean);
		} else if (expand_glob(b, in, src, &srcs) < 0) {
			return -1;
		}
	}
	if (urls.n && srcs.n)
		return insn_fail(b, in, EINVAL, "%s", "an ADD takes URLs or files of the context, "
				 "not both");
	if (urls.n) {
		if (fetch_urls(b, in, &urls, fetched, sizeof fetched, &srcs) < 0) {
			if (fetched[0])
				aj_tree_remove_at(AT_FDCWD, fetched, NULL);
			return -1;
		}
		fetched_fd = open(fetched, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fetched_fd < 0)
			return aj_err_sys(b->err, AJ_LAYER_IMAGE, "open \"%s\"", fetched);
		if (t.chmod < 0)
			t.chmod = 0600; /* a downloaded file's mode, as docker gives it */
	}
	if (srcs.n > 1 || in->args.n > 2)
		dest_dir = true;
	/* Shared with the process that writes the layer in the store's user namespace when it
	 * has subordinate ids: the image's directories of other ids are not the caller's to
	 * read, nor a stage's files. */
	j = mmap(NULL, sizeof *j, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (j == MAP_FAILED)
		return aj_err_sys(b->err, AJ_LAYER_INTERNAL, "map memory for a COPY");
	*j = (struct copy_job){.b = b, .s = s, .from = other, .in = in, .srcs = &srcs,
			       .dest = dest, .dest_dir = dest_dir,
			       .archives = in->kind == AJ_DF_ADD && !urls.n, .src_dir = fetched_fd,
			       .t = t};
	r = b->im->subid_layers ? aj_subids_run(&b->im->subids, copy_job_run, j, b->err)
				: copy_job_run(j, b->err);
	if (fetched[0])
		aj_tree_remove_at(AT_FDCWD, fetched, NULL);
	if (r < 0) {
		munmap(j, sizeof *j);
		return -1;
	}
	/* The key: the instruction as expanded and what it copies (names, modes, owners, data;
	 * not times: a touched file is the same file). */
	what = aj_xasprintf("%s %s %s uid=%u gid=%u mode=%d from=%s content=%s",
			    aj_df_kind_name(in->kind), dest, j->dest_dir ? "dir" : "file",
			    (unsigned)t.uid, (unsigned)t.gid, t.chmod, from ? from : "", j->content);
	chain(s, what);
	if (cache_get(b, s->key, cached, diff_id)) {
		/* the blob just written stays for prune: content-addressed, it may be another
		 * image's */
		fprintf(b->o->out, "  --> cached\n");
		b->cached = true;
		r = add_layer(b, s, cached, diff_id, "the cached layer");
	} else {
		r = add_layer(b, s, j->blob, NULL, "the copied files");
		if (r == 0)
			cache_put(b, s->key, j->blob, diff_id_of(s, s->layers.n - 1));
	}
	munmap(j, sizeof *j);
	return r;
}

/* ---- the build ----------------------------------------------------------------------------- */

static int step(struct build *b, const struct aj_df_insn *in)
{
	struct stage *s = b->n_st ? &b->st[b->n_st - 1] : NULL;
	struct timespec t0, t1;
	int r;

	if (!s && in->kind != AJ_DF_FROM && in->kind != AJ_DF_ARG)
		return aj_err_set(b->err, AJ_LAYER_USAGE, EINVAL, "%s:%u: %s before FROM", b->file,
				  in->line, aj_df_kind_name(in->kind)); /* the parser refuses it */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	b->step++;
	b->cached = false;
	build_event(b, "build.step",
		       json_pack("{s:I, s:I, s:s, s:I, s:s}", "step", (json_int_t)b->step, "of",
				 (json_int_t)b->steps, "file", b->file, "line", (json_int_t)in->line,
				 "instruction", in->text));
	fprintf(b->o->out, "STEP %zu/%zu: %s\n", b->step, b->steps, in->text);
	fflush(b->o->out);
	switch (in->kind) {
	case AJ_DF_FROM:
		r = do_from(b, in);
		break;
	case AJ_DF_ARG:
		r = s ? do_arg(b, s, in, &s->args) : do_arg(b, NULL, in, &b->meta);
		break;
	case AJ_DF_RUN:
		r = do_run(b, s, in);
		if (r == 0)
			history(s, in->text, false);
		break;
	case AJ_DF_COPY:
	case AJ_DF_ADD:
		r = do_copy(b, s, in);
		if (r == 0)
			history(s, in->text, false);
		break;
	case AJ_DF_ENV:
	case AJ_DF_WORKDIR:
	case AJ_DF_USER:
	case AJ_DF_LABEL:
	case AJ_DF_EXPOSE:
	case AJ_DF_CMD:
	case AJ_DF_ENTRYPOINT:
	case AJ_DF_SHELL:
	case AJ_DF_VOLUME:
	case AJ_DF_STOPSIGNAL:
	default: {
		size_t layers = s->layers.n;

		r = do_config(b, s, in);
		if (r == 0) {
			_cleanup_free_ char *cfg =
				json_dumps(json_object_get(s->doc, "config"), JSON_COMPACT | JSON_SORT_KEYS);
			char *what;

			/* the store reads configs of at most 8 MiB */
			if (cfg && strlen(cfg) > (4u << 20))
				return insn_fail(b, in, E2BIG, "%s",
						 "the image config would pass 4 MiB");
			what = aj_xasprintf("%s %s", in->text, cfg ? cfg : "");
			chain(s, what);
			free(what);
			s->root[0] = '\0';
			/* a WORKDIR that made its directory made a layer */
			history(s, in->text, s->layers.n == layers);
		}
		break;
	}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = b->n_st ? &b->st[b->n_st - 1] : NULL;
	{
		double secs =
			(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

		if (r == 0) {
			fprintf(b->o->out, "  --> %.2fs\n", secs);
			build_event(b, "build.step.end",
				       json_pack("{s:I, s:f, s:b, s:s?}", "step", (json_int_t)b->step,
						 "seconds", secs, "cached", b->cached, "layer",
						 s && s->layers.n ? s->layers.v[s->layers.n - 1] : NULL));
		} else {
			build_event(b, "build.step.failed",
				       json_pack("{s:I, s:f, s:s}", "step", (json_int_t)b->step,
						 "seconds", secs, "error", b->err->msg));
		}
	}
	fflush(b->o->out);
	return r;
}

static void build_free(struct build *b)
{
	for (size_t i = 0; b->st && i < b->n_st; i++) {
		/* the tree first, the lock last: a directory without a held lock is a dead
		 * build's, which `image prune` removes */
		if (b->st[i].run_dir[0])
			aj_tree_remove_at(AT_FDCWD, b->st[i].run_dir, NULL);
		if (b->st[i].run_lock >= 0)
			close(b->st[i].run_lock);
		free(b->st[i].name);
		json_decref(b->st[i].doc);
		aj_strv_free(&b->st[i].layers);
		aj_strv_free(&b->st[i].shell);
		aj_strv_free(&b->st[i].args);
	}
	free(b->st);
	aj_strv_free(&b->meta);
	aj_ignore_free(&b->ignore);
	if (!b->df_borrowed)
		aj_dockerfile_free(&b->df);
	if (b->ctx >= 0)
		close(b->ctx);
	if (b->work[0])
		aj_tree_remove_at(AT_FDCWD, b->work, NULL);
	if (b->work_lock >= 0)
		close(b->work_lock);
	aj_events_close(&b->ev);
}

/* A regular file of the context (no symlink, no FIFO), at most max bytes; NULL with errno. */
static char *read_context_file(int ctx, const char *name, size_t max, size_t *len)
{
	_cleanup_close_ int fd =
		aj_open_beneath(ctx, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	struct stat st;
	char *buf;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size >= max) {
		errno = fd >= 0 && S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		return NULL;
	}
	buf = aj_xmalloc((size_t)st.st_size + 1);
	n = aj_read_full(fd, buf, (size_t)st.st_size);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	return buf;
}

static int load(struct build *b, struct aj_err *err)
{
	const struct aj_build_opts *o = b->o;
	_cleanup_free_ char *path = NULL, *text = NULL, *ignore = NULL, *cache = NULL;
	char id[17];
	size_t len;

	b->ctx = open(o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->ctx < 0)
		return aj_err_sys(err, AJ_LAYER_USAGE, "the build context \"%s\"", o->context);
	/* -f names a file of the caller's choosing; the context's own Dockerfile and
	 * .dockerignore are the context's: beneath it, regular files, no symlink. */
	b->file = o->file ? o->file : "Dockerfile";
	if (o->dockerfile) {
		b->df = *o->dockerfile;
		b->df_borrowed = true;
	} else {
		path = o->file ? aj_xstrdup(o->file) : aj_xasprintf("%s/Dockerfile", o->context);
		text = o->file ? aj_read_file(path, AJ_DF_MAX_BYTES + 1, &len)
			       : read_context_file(b->ctx, "Dockerfile", AJ_DF_MAX_BYTES + 1, &len);
		if (!text)
			return aj_err_sys(err, AJ_LAYER_USAGE,
					  "read the Dockerfile \"%s\" (a regular file%s)", path,
					  o->file ? "" : " in the context, not a symlink");
		if (aj_dockerfile_parse(text, len, b->file, &b->df, err) < 0)
			return -1;
	}
	ignore = read_context_file(b->ctx, ".dockerignore", 1 << 20, NULL);
	if (!ignore && errno != ENOENT)
		return aj_err_sys(err, AJ_LAYER_USAGE,
				  "read the context's .dockerignore (a regular file, not a symlink)");
	aj_ignore_parse(&b->ignore, ignore);
	b->steps = b->df.n;
	cache = aj_xasprintf("%s/images/build-cache", b->im->state_dir);
	aj_random_hex(id, 8);
	snprintf(b->work, sizeof b->work, "%s/images/runs/%s", b->im->state_dir, id);
	if (aj_mkdir_p(cache, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s\"", cache);
	/* Under the store's lock, as stage_run_begin() */
	if (aj_images_lock(b->im, err) < 0)
		return -1;
	{
		_cleanup_free_ char *lock = aj_xasprintf("%s/lock", b->work);
		int r = 0;

		if (aj_mkdir_p(b->work, 0700) < 0) {
			r = aj_err_sys(err, AJ_LAYER_IMAGE, "create \"%s\"", b->work);
			b->work[0] = '\0';
		} else {
			b->work_lock = open(lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					    0600);
			if (b->work_lock < 0 || flock(b->work_lock, LOCK_EX) < 0)
				r = aj_err_sys(err, AJ_LAYER_IMAGE, "lock \"%s\"", lock);
		}
		aj_images_unlock(b->im);
		return r;
	}
}

static bool target_in(const struct aj_dockerfile *df, const char *target)
{
	for (size_t i = 0; i < df->n; i++)
		if (df->v[i].kind == AJ_DF_FROM && df->v[i].args.n > 1 &&
		    !strcasecmp(df->v[i].args.v[1], target))
			return true;
	return false;
}

int aj_build(struct aj_images *im, const struct aj_build_opts *o, struct aj_image_rec *out,
	     struct aj_err *err)
{
	struct build b = {.o = o, .im = im, .ctx = -1, .work_lock = -1, .err = err,
			  .meta = AJ_STRV_INIT, .ev = {.fd = -1}, .owner = o->owner ? o->owner : ""};
	struct stage *target;
	int r = load(&b, err);

	if (r == 0) {
		const char *id = strrchr(b.work, '/');

		r = aj_events_open(&b.ev, o->events_path, id ? id + 1 : "", err);
		if (r == 0)
			build_event(&b, "build.start",
				       json_pack("{s:s, s:s, s:s?}", "context", o->context, "file",
						 b.file, "tag", o->tag));
	}
	if (r == 0 && o->target && !target_in(&b.df, o->target))
		r = aj_err_set(err, AJ_LAYER_USAGE, ENOENT,
			       "--target %s: the Dockerfile has no stage of that name (FROM ... AS %s)",
			       o->target, o->target);
	for (size_t i = 0; r == 0 && i < b.df.n; i++) {
		/* The stages after the target's cannot be the target's: they are not built. */
		if (o->target && b.df.v[i].kind == AJ_DF_FROM && b.n_st &&
		    b.st[b.n_st - 1].name && !strcasecmp(b.st[b.n_st - 1].name, o->target))
			break;
		if (o->on_step)
			o->on_step(o->on_step_arg, i);
		r = step(&b, &b.df.v[i]);
	}
	if (r == 0) {
		target = o->target ? stage_named(&b, o->target) : &b.st[b.n_st - 1];
		if (!target)
			r = aj_err_set(err, AJ_LAYER_USAGE, ENOENT, "--target %s: no stage of that "
				       "name", o->target);
		else {
			json_t *labels = member(config_of(target), "Labels", false);

			for (size_t i = 0; o->labels && i < o->labels->n; i++) {
				const char *kv = o->labels->v[i], *eq = strchr(kv, '=');
				char *k = aj_xstrndup(kv, eq ? (size_t)(eq - kv) : strlen(kv));

				json_object_set_new(labels, k, json_string(eq ? eq + 1 : ""));
				free(k);
			}
			if (o->labels && o->labels->n)
				target->root[0] = '\0'; /* the image is not the stage's any more */
			r = commit(&b, target, o->tag, out);
		}
	}
	build_event(&b, "build.end",
		       json_pack("{s:b, s:s?, s:s?}", "ok", r == 0, "image",
				 r == 0 && out ? out->digest : NULL, "error", r == 0 ? NULL : err->msg));
	build_free(&b);
	return r;
}
