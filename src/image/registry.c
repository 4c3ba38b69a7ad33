#include "image/registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "image/auth.h"
#include "image/curl.h"

#define MANIFEST_MAX (4u << 20)
#define TOKEN_MAX (1u << 20)
#define ACCEPT_MANIFESTS                                                                           \
	"Accept: application/vnd.oci.image.index.v1+json, "                                        \
	"application/vnd.docker.distribution.manifest.list.v2+json, "                              \
	"application/vnd.oci.image.manifest.v1+json, "                                             \
	"application/vnd.docker.distribution.manifest.v2+json"

struct aj_registry {
	const struct aj_curl *c;
	struct aj_registry_opts o;
	char base[300]; /* "https://host:port" */
	char repo[256];
	char host[256];  /* as auth files name it */
	char auth[4200]; /* "Authorization: ..." once known; "" anonymous */
	struct aj_creds creds;
	bool creds_looked;
};

/* One response's head and (for small bodies) its bytes. */
struct resp {
	long status;
	char ctype[128];
	char www_auth[2048];
	char *body;
	size_t len, max;
	bool too_big;
	/* a blob: written to its writer instead of body */
	struct aj_blob_writer *w;
	struct aj_err *werr;
	bool werr_set;
};

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct resp *rs = arg;
	size_t len = size * n, k;
	char line[2048];

	k = len < sizeof line - 1 ? len : sizeof line - 1;
	memcpy(line, buf, k);
	line[k] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (!strncmp(line, "HTTP/", 5)) { /* a new response (after a redirect or 100) */
		rs->ctype[0] = rs->www_auth[0] = '\0';
	} else if (!strncasecmp(line, "content-type:", 13)) {
		const char *v = line + 13 + strspn(line + 13, " \t");
		snprintf(rs->ctype, sizeof rs->ctype, "%.*s", (int)strcspn(v, "; "), v);
	} else if (!strncasecmp(line, "www-authenticate:", 17)) {
		snprintf(rs->www_auth, sizeof rs->www_auth, "%s",
			 line + 17 + strspn(line + 17, " \t"));
	}
	return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
	struct resp *rs = arg;
	size_t len = size * n;
	long status = 0;

	(void)status;
	if (rs->w) {
		if (aj_blob_write(rs->w, buf, len, rs->werr) < 0) {
			rs->werr_set = true;
			return 0;
		}
		return len;
	}
	if (rs->len + len > rs->max) {
		rs->too_big = true;
		return 0;
	}
	rs->body = aj_xrealloc(rs->body, rs->len + len + 1);
	memcpy(rs->body + rs->len, buf, len);
	rs->len += len;
	rs->body[rs->len] = '\0';
	return len;
}

static void setup(struct aj_registry *r, CURL *h, const char *url, struct curl_slist *hdrs,
		  struct resp *rs)
{
	const struct aj_curl *c = r->c;

	c->easy_setopt(h, CURLOPT_URL, url);
	c->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	c->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	c->easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	c->easy_setopt(h, CURLOPT_PROTOCOLS_STR, r->o.insecure ? "http,https" : "https");
	c->easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, r->o.insecure ? "http,https" : "https");
	c->easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	/* A stalled transfer ends after a minute below one byte a second. */
	c->easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	c->easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	c->easy_setopt(h, CURLOPT_USERAGENT, "agentjail");
	c->easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	c->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	c->easy_setopt(h, CURLOPT_HEADERDATA, rs);
	c->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	c->easy_setopt(h, CURLOPT_WRITEDATA, rs);
	if (r->o.ca_file)
		c->easy_setopt(h, CURLOPT_CAINFO, r->o.ca_file);
	if (r->o.insecure) {
		c->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		c->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

static bool transient(CURLcode cc, long status)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR ||
	       cc == CURLE_PARTIAL_FILE || cc == CURLE_OPERATION_TIMEDOUT ||
	       cc == CURLE_GOT_NOTHING || (cc == CURLE_OK && (status == 429 || status >= 500));
}

static void backoff(unsigned attempt)
{
	struct timespec ts = {0, (long)(250000000L << (attempt < 3 ? attempt : 3))};

	nanosleep(&ts, NULL);
}

/* One GET into rs, retried on transient failures; extra is one more header line or NULL. */
static int get(struct aj_registry *r, const char *url, const char *extra, struct resp *rs,
	       struct aj_err *err)
{
	const struct aj_curl *c = r->c;
	struct curl_slist *hdrs = NULL;
	unsigned tries = r->o.retries ? r->o.retries : 3;
	CURLcode cc = CURLE_OK;
	CURL *h = c->easy_init();

	if (!h)
		aj_oom(0);
	if (extra)
		hdrs = c->slist_append(hdrs, extra);
	if (r->auth[0])
		hdrs = c->slist_append(hdrs, r->auth);
	for (unsigned attempt = 0; attempt <= tries; attempt++) {
		free(rs->body);
		rs->body = NULL;
		rs->len = 0;
		rs->status = 0;
		c->easy_reset(h);
		setup(r, h, url, hdrs, rs);
		cc = c->easy_perform(h);
		c->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &rs->status);
		if (!transient(cc, rs->status) || attempt == tries)
			break;
		backoff(attempt);
	}
	c->slist_free_all(hdrs);
	c->easy_cleanup(h);
	if (cc == CURLE_WRITE_ERROR && rs->too_big)
		return aj_err_set(err, AJ_LAYER_IMAGE, EFBIG,
				  "%s: the answer is larger than %zu "
				  "bytes",
				  url, rs->max);
	if (cc != CURLE_OK)
		return aj_err_set(err, AJ_LAYER_IMAGE, 0, "GET %s: %s", url, c->easy_strerror(cc)),
		       aj_err_hint(err, r->o.insecure ? "is the registry up?"
						      : "is the registry up? A registry without "
							"TLS needs --insecure");
	return 0;
}

static void url_escape_into(char *out, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s && n + 4 < len; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch))
			out[n++] = (char)ch;
		else
			n += (size_t)snprintf(out + n, len - n, "%%%02X", ch);
	}
	out[n] = '\0';
}

static int load_creds(struct aj_registry *r, struct aj_err *err)
{
	if (r->creds_looked)
		return 0;
	r->creds_looked = true;
	if (r->o.anonymous)
		return 0;
	return aj_creds_lookup(r->o.authfile, r->host, &r->creds, err);
}

static void basic_header(const struct aj_creds *cr, char *out, size_t len)
{
	char pair[1300], b64[1800];
	size_t n = (size_t)snprintf(pair, sizeof pair, "%s:%s", cr->user, cr->password);

	aj_base64_encode(pair, n, b64);
	snprintf(out, len, "Authorization: Basic %s", b64);
	explicit_bzero(pair, sizeof pair);
	explicit_bzero(b64, sizeof b64);
}

/* A bearer token for the challenge: GET realm?service=&scope=, with the credentials if any. */
static int fetch_token(struct aj_registry *r, const struct aj_challenge *ch, struct aj_err *err)
{
	char url[2400], svc[600], scope[800], basic[2048] = "";
	struct resp rs = {.max = TOKEN_MAX};
	char token[4096];
	int ret;

	url_escape_into(svc, sizeof svc, ch->service);
	if (ch->scope[0])
		url_escape_into(scope, sizeof scope, ch->scope);
	else {
		char s[400];
		snprintf(s, sizeof s, "repository:%s:pull", r->repo);
		url_escape_into(scope, sizeof scope, s);
	}
	snprintf(url, sizeof url, "%s%cservice=%s&scope=%s", ch->realm,
		 strchr(ch->realm, '?') ? '&' : '?', svc, scope);
	if (r->creds.have)
		basic_header(&r->creds, basic, sizeof basic);
	r->auth[0] = '\0';
	ret = get(r, url, basic[0] ? basic : NULL, &rs, err);
	explicit_bzero(basic, sizeof basic);
	if (ret == 0 && rs.status != 200) {
		ret = aj_err_set(err, AJ_LAYER_IMAGE, EACCES,
				 "the token service %s answered %ld for %s", ch->realm, rs.status,
				 r->repo);
		if (rs.status == 401)
			aj_err_hint(err, r->creds.have ? "check the auth file's credentials for %s"
						       : "log in with podman login or docker login "
							 "(or pass --authfile) for %s",
				    r->host);
	}
	if (ret == 0)
		ret = aj_token_parse(rs.body, rs.len, ch->realm, token, sizeof token, err);
	if (ret == 0)
		snprintf(r->auth, sizeof r->auth, "Authorization: Bearer %s", token);
	explicit_bzero(token, sizeof token);
	if (rs.body)
		explicit_bzero(rs.body, rs.len);
	free(rs.body);
	return ret;
}

/* After a 401: authenticates as the challenge asks. 0 when there is something new to try. */
static int authenticate(struct aj_registry *r, const char *www_auth, struct aj_err *err)
{
	struct aj_challenge ch;

	if (aj_challenge_parse(www_auth, &ch) < 0)
		return aj_err_set(
			err, AJ_LAYER_IMAGE, EACCES,
			"%s answered 401 without a challenge agentjail knows (\"%.200s\")", r->base,
			www_auth);
	if (load_creds(r, err) < 0)
		return -1;
	if (ch.scheme == AJ_AUTH_BEARER)
		return fetch_token(r, &ch, err);
	if (!r->creds.have)
		return aj_err_set(err, AJ_LAYER_IMAGE, EACCES,
				  "%s asks for a user and password, and no auth file has them",
				  r->host),
		       aj_err_hint(err, "log in with podman login or docker login, or pass "
					"--authfile");
	basic_header(&r->creds, r->auth, sizeof r->auth);
	return 0;
}

/* A GET that authenticates once on 401. */
static int get_authed(struct aj_registry *r, const char *url, const char *extra, struct resp *rs,
		      struct aj_err *err)
{
	if (get(r, url, extra, rs, err) < 0)
		return -1;
	if (rs->status != 401)
		return 0;
	if (r->auth[0] && !strncmp(r->auth, "Authorization: Basic", 20))
		return aj_err_set(err, AJ_LAYER_IMAGE, EACCES, "%s refused the credentials for %s",
				  r->host, r->repo);
	if (authenticate(r, rs->www_auth, err) < 0)
		return -1;
	if (get(r, url, extra, rs, err) < 0)
		return -1;
	if (rs->status == 401 && !strncmp(r->auth, "Authorization: Basic", 20))
		return aj_err_set(err, AJ_LAYER_IMAGE, EACCES, "%s refused the credentials for %s",
				  r->host, r->repo),
		       aj_err_hint(err, "check the auth file's credentials for %s", r->host);
	if (rs->status == 401)
		return aj_err_set(err, AJ_LAYER_IMAGE, EACCES, "%s refused access to %s", r->host,
				  r->repo),
		       aj_err_hint(err, "check the credentials of the auth file");
	return 0;
}

int aj_registry_open(const struct aj_image_ref *ref, const struct aj_registry_opts *o,
		     struct aj_registry **out, struct aj_err *err)
{
	const struct aj_curl *c = aj_curl_load(err);
	struct aj_registry *r;
	const char *host = ref->registry;

	*out = NULL;
	if (!c)
		return -1;
	r = aj_xcalloc(1, sizeof *r);
	r->c = c;
	r->o = *o;
	snprintf(r->repo, sizeof r->repo, "%s", ref->repo);
	snprintf(r->host, sizeof r->host, "%s", ref->registry);
	if (!strcmp(host, AJ_REF_DOCKER_HUB))
		host = o->mirror ? o->mirror : "registry-1.docker.io";
	snprintf(r->base, sizeof r->base, "%s://%s", o->insecure ? "http" : "https", host);
	*out = r;
	return 0;
}

void aj_registry_close(struct aj_registry *r)
{
	if (!r)
		return;
	aj_creds_wipe(&r->creds);
	explicit_bzero(r->auth, sizeof r->auth);
	free(r);
}

static int status_error(struct aj_registry *r, const char *what, long status, struct aj_err *err)
{
	aj_err_set(err, AJ_LAYER_IMAGE, status == 404 ? ENOENT : EIO, "%s: %s answered %ld", what,
		   r->host, status);
	if (status == 404)
		aj_err_class(err, AJ_ERRC_NOT_FOUND);
	return -1;
}

/* A reply's body, freed with the variable unless taken. */
static void resp_freep(struct resp *rs)
{
	free(rs->body);
}

int aj_registry_manifest(struct aj_registry *r, const char *reference, char **body, size_t *len,
			 char media_type[128], char digest[AJ_DIGEST_SIZE], struct aj_err *err)
{
	char url[800], what[600];
	__attribute__((cleanup(resp_freep))) struct resp rs = {.max = MANIFEST_MAX};

	snprintf(url, sizeof url, "%s/v2/%s/manifests/%s", r->base, r->repo, reference);
	snprintf(what, sizeof what, "manifest %s:%s", r->repo, reference);
	if (get_authed(r, url, ACCEPT_MANIFESTS, &rs, err) < 0)
		return -1;
	if (rs.status != 200)
		return status_error(r, what, rs.status, err);
	aj_digest_of(rs.body ? rs.body : "", rs.len, digest);
	if (aj_digest_valid(reference) && strcmp(reference, digest) != 0)
		return aj_err_set(err, AJ_LAYER_IMAGE, EIO,
				  "%s: the registry sent a manifest whose digest "
				  "is %s: refused",
				  what, digest);
	snprintf(media_type, 128, "%s", rs.ctype);
	*body = rs.body ? aj_steal_ptr(&rs.body) : aj_xstrdup("");
	*len = rs.len;
	return 0;
}

/* ---- blobs ------------------------------------------------------------------------------ */

struct xfer {
	struct aj_blob_want *want;
	struct aj_blob_writer w;
	struct resp rs;
	struct aj_err werr;
	CURL *h;
	struct curl_slist *hdrs;
	char url[800];
	unsigned attempt;
	uint64_t resumed_from;
	curl_off_t now, total;
	bool done;
};

struct fetch {
	struct aj_registry *r;
	struct aj_blobs *store;
	struct xfer *x;
	size_t n, next, active, finished;
	unsigned lines; /* progress lines drawn on a terminal */
};

static void human(uint64_t n, char *buf, size_t len)
{
	if (n >= 1u << 30)
		snprintf(buf, len, "%.1f GiB", (double)n / (1u << 30));
	else if (n >= 1u << 20)
		snprintf(buf, len, "%.1f MiB", (double)n / (1u << 20));
	else if (n >= 1u << 10)
		snprintf(buf, len, "%.1f KiB", (double)n / (1u << 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)n);
}

static void progress_line(const struct xfer *x, char *buf, size_t len)
{
	char got[32], all[32], bar[25];
	uint64_t have = x->resumed_from + (uint64_t)x->now;
	int64_t size = x->want->size;
	unsigned fill = size > 0 ? (unsigned)(have * 24 / (uint64_t)size) : 0;

	human(have, got, sizeof got);
	human(size > 0 ? (uint64_t)size : have, all, sizeof all);
	memset(bar, '#', fill > 24 ? 24 : fill);
	memset(bar + (fill > 24 ? 24 : fill), '.', 24 - (fill > 24 ? 24 : fill));
	bar[24] = '\0';
	snprintf(buf, len, "%-12s %.19s [%s] %s / %s%s", x->want->label ? x->want->label : "blob",
		 x->want->digest, bar, got, all, x->done ? " done" : "");
}

/* On a terminal: one line per blob, redrawn in place. */
static void draw(struct fetch *f)
{
	FILE *out = f->r->o.progress;
	char line[200];

	if (!out || !f->r->o.progress_tty)
		return;
	if (f->lines)
		fprintf(out, "\033[%uA", f->lines);
	f->lines = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->x[i].want->have && !f->x[i].h && !f->x[i].done)
			continue;
		progress_line(&f->x[i], line, sizeof line);
		fprintf(out, "\r\033[K%s\n", line);
		f->lines++;
	}
	fflush(out);
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = arg;

	(void)ultotal;
	(void)ulnow;
	x->now = dlnow;
	x->total = dltotal;
	return 0;
}

static int start_xfer(struct fetch *f, struct xfer *x, struct aj_err *err)
{
	const struct aj_curl *c = f->r->c;

	if (!x->w.hash && aj_blob_resume(f->store, x->want->digest, &x->w, err) < 0)
		return -1;
	free(x->rs.body);
	memset(&x->rs, 0, sizeof x->rs);
	x->rs.w = &x->w;
	x->rs.werr = &x->werr;
	x->resumed_from = x->w.size;
	x->now = 0;
	if (!x->h && !(x->h = c->easy_init()))
		aj_oom(0);
	c->easy_reset(x->h);
	setup(f->r, x->h, x->url, x->hdrs, &x->rs);
	c->easy_setopt(x->h, CURLOPT_PRIVATE, x);
	c->easy_setopt(x->h, CURLOPT_NOPROGRESS, 0L);
	c->easy_setopt(x->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	c->easy_setopt(x->h, CURLOPT_XFERINFODATA, x);
	if (x->w.size)
		c->easy_setopt(x->h, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->w.size);
	return 0;
}

static void report_done(struct fetch *f, struct xfer *x)
{
	char line[200];

	if (!f->r->o.progress || f->r->o.progress_tty)
		return;
	progress_line(x, line, sizeof line);
	fprintf(f->r->o.progress, "%s\n", line);
}

/* A transfer ended: commit, retry, or fail. 1: added again (retry), 0: done, -1: error. */
static int finish_xfer(struct fetch *f, struct xfer *x, CURLcode cc, struct aj_err *err)
{
	const struct aj_curl *c = f->r->c;
	char got[AJ_DIGEST_SIZE];
	long status = 0;

	c->easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	if (x->rs.werr_set) {
		*err = x->werr;
		return -1;
	}
	/* A server that ignored the range sent the whole blob: start it over without one. */
	if (cc == CURLE_RANGE_ERROR || (cc == CURLE_OK && status == 200 && x->resumed_from)) {
		if (aj_blob_restart(&x->w, err) < 0)
			return -1;
		return start_xfer(f, x, err) < 0 ? -1 : 1;
	}
	if (transient(cc, status) && x->attempt++ < (f->r->o.retries ? f->r->o.retries : 3)) {
		backoff(x->attempt);
		return start_xfer(f, x, err) < 0 ? -1 : 1;
	}
	if (cc != CURLE_OK)
		return aj_blob_abort(&x->w, true),
		       aj_err_set(err, AJ_LAYER_IMAGE, EIO,
				  "blob %s: %s (what arrived is kept for "
				  "the next pull to resume)",
				  x->want->digest, c->easy_strerror(cc));
	if (status != 200 && status != 206)
		return aj_blob_abort(&x->w, false),
		       status_error(f->r, x->want->digest, status, err);
	if (aj_blob_commit(&x->w, x->want->size, got, err) < 0)
		return -1;
	x->done = x->want->have = true;
	report_done(f, x);
	return 0;
}

static int add_next(struct fetch *f, CURLM *m, struct aj_err *err)
{
	while (f->next < f->n) {
		struct xfer *x = &f->x[f->next++];
		if (x->want->have)
			continue;
		if (start_xfer(f, x, err) < 0)
			return -1;
		f->r->c->multi_add_handle(m, x->h);
		f->active++;
		return 0;
	}
	return 0;
}

static int run_multi(struct fetch *f, CURLM *m, struct aj_err *err)
{
	const struct aj_curl *c = f->r->c;
	unsigned parallel = f->r->o.parallel ? f->r->o.parallel : 3;
	int running = 0, msgs;
	CURLMsg *msg;

	for (unsigned i = 0; i < parallel; i++)
		if (add_next(f, m, err) < 0)
			return -1;
	while (f->active) {
		c->multi_perform(m, &running);
		while ((msg = c->multi_info_read(m, &msgs))) {
			struct xfer *x = NULL;
			int r;
			if (msg->msg != CURLMSG_DONE)
				continue;
			c->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			c->multi_remove_handle(m, x->h);
			r = finish_xfer(f, x, msg->data.result, err);
			if (r < 0)
				return -1;
			if (r == 1) {
				c->multi_add_handle(m, x->h);
				continue;
			}
			f->active--;
			if (add_next(f, m, err) < 0)
				return -1;
		}
		draw(f);
		if (f->active)
			c->multi_poll(m, NULL, 0, 200, NULL);
	}
	return 0;
}

/* A blob fetch needs the authorisation a manifest request earned; a first 401 gets it. */
static int ensure_auth(struct aj_registry *r, struct aj_err *err)
{
	char url[600];
	struct resp rs = {.max = 1 << 16};
	int ret;

	if (r->auth[0])
		return 0;
	snprintf(url, sizeof url, "%s/v2/", r->base);
	ret = get(r, url, NULL, &rs, err);
	if (ret == 0 && rs.status == 401)
		ret = authenticate(r, rs.www_auth, err);
	free(rs.body);
	return ret;
}

int aj_registry_blobs(struct aj_registry *r, struct aj_blobs *store, struct aj_blob_want *w,
		      size_t n, struct aj_err *err)
{
	const struct aj_curl *c = r->c;
	struct fetch f = {.r = r, .store = store, .n = n};
	CURLM *m;
	int ret;

	for (size_t i = 0; i < n; i++)
		w[i].have = aj_blobs_has(store, w[i].digest);
	if (ensure_auth(r, err) < 0)
		return -1;
	f.x = aj_xcalloc(n ? n : 1, sizeof *f.x);
	for (size_t i = 0; i < n; i++) {
		f.x[i].want = &w[i];
		f.x[i].w.fd = -1;
		snprintf(f.x[i].url, sizeof f.x[i].url, "%s/v2/%s/blobs/%s", r->base, r->repo,
			 w[i].digest);
		if (r->auth[0])
			f.x[i].hdrs = c->slist_append(NULL, r->auth);
	}
	if (!(m = c->multi_init()))
		aj_oom(0);
	ret = run_multi(&f, m, err);
	for (size_t i = 0; i < n; i++) {
		if (f.x[i].h) {
			c->multi_remove_handle(m, f.x[i].h);
			c->easy_cleanup(f.x[i].h);
		}
		if (f.x[i].w.hash)
			aj_blob_abort(&f.x[i].w, true);
		c->slist_free_all(f.x[i].hdrs);
		free(f.x[i].rs.body);
	}
	c->multi_cleanup(m);
	free(f.x);
	return ret;
}
