#include "image/auth.h"

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/jfields.h"
#include "common/util.h"

#define MAX_AUTH_FILE (1 << 20)

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A token (RFC 7230) into out; the position after it, or NULL when there is none. */
static const char *token(const char *p, char *out, size_t cap)
{
	size_t n = 0;

	while (*p && !strchr(" \t,=\"", *p)) {
		if (n + 1 < cap)
			out[n++] = *p;
		p++;
	}
	out[n] = '\0';
	return n ? p : NULL;
}

/* A value: a token or a quoted string with backslash escapes. */
static const char *value(const char *p, char *out, size_t cap)
{
	size_t n = 0;

	if (*p != '"')
		return token(p, out, cap);
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
		if (n + 1 < cap)
			out[n++] = *p;
	}
	out[n] = '\0';
	return *p == '"' ? p + 1 : NULL;
}

static void set_param(struct aj_challenge *c, const char *key, const char *val)
{
	if (!strcasecmp(key, "realm"))
		snprintf(c->realm, sizeof c->realm, "%s", val);
	else if (!strcasecmp(key, "service"))
		snprintf(c->service, sizeof c->service, "%s", val);
	else if (!strcasecmp(key, "scope"))
		snprintf(c->scope, sizeof c->scope, "%s", val);
}

int aj_challenge_parse(const char *p, struct aj_challenge *c)
{
	char scheme[32], key[64], val[1024];

	memset(c, 0, sizeof *c);
	while (*(p = skip_space(p))) {
		enum aj_auth_scheme s;
		if (!(p = token(p, scheme, sizeof scheme)))
			return -1;
		s = !strcasecmp(scheme, "bearer")  ? AJ_AUTH_BEARER
		    : !strcasecmp(scheme, "basic") ? AJ_AUTH_BASIC
						   : AJ_AUTH_NONE;
		/* Parameters: key=value pairs separated by commas, up to the next scheme. */
		for (;;) {
			const char *q = skip_space(p), *after;
			if (*q == ',')
				q = skip_space(q + 1);
			after = token(q, key, sizeof key);
			if (!after || *(after = skip_space(after)) != '=')
				break;
			if (!(p = value(skip_space(after + 1), val, sizeof val)))
				return -1;
			if (s != AJ_AUTH_NONE && !c->scheme)
				set_param(c, key, val);
		}
		if (s != AJ_AUTH_NONE && !c->scheme)
			c->scheme = s;
		p = skip_space(p);
		if (*p == ',')
			p++;
		if (c->scheme)
			return c->scheme == AJ_AUTH_BEARER && !c->realm[0] ? -1 : 0;
	}
	return -1;
}

void aj_creds_wipe(struct aj_creds *c)
{
	explicit_bzero(c, sizeof *c);
}

static int decode_auth(const char *b64, const char *what, const char *host, struct aj_creds *c,
		       struct aj_err *err)
{
	size_t len = strlen(b64);
	_cleanup_free_ unsigned char *raw = aj_xmalloc(len / 4 * 3 + 4);
	long n = aj_base64_decode(b64, len, raw);
	char *colon;

	if (n < 0 || !(colon = memchr(raw, ':', (size_t)n)) ||
	    (size_t)(colon - (char *)raw) >= sizeof c->user ||
	    (size_t)((char *)raw + n - colon - 1) >= sizeof c->password) {
		explicit_bzero(raw, len / 4 * 3 + 4);
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
				  "%s: auths.\"%s\".auth: expected base64 of USER:PASSWORD", what,
				  host);
	}
	memcpy(c->user, raw, (size_t)(colon - (char *)raw));
	memcpy(c->password, colon + 1, (size_t)((char *)raw + n - colon - 1));
	c->have = true;
	explicit_bzero(raw, len / 4 * 3 + 4);
	return 0;
}

struct auth_entry {
	char *auth;
};

static const struct aj_jf_field entry_rows[] = {
	{.name = "auth",
	 .type = AJ_JF_STRING,
	 .off = offsetof(struct auth_entry, auth),
	 .max = 4096},
	{0},
};

/* The file's entry for the registry: "auths" maps hosts (docker.io also under docker's own
 * names) to objects whose "auth" is base64(user:password); other members are ignored. */
static json_t *find_entry(json_t *root, const char *host)
{
	const char *alias[] = {host, NULL, NULL};
	json_t *auths = json_object_get(root, "auths"), *e = NULL;

	if (!strcmp(host, "docker.io")) {
		alias[1] = "https://index.docker.io/v1/";
		alias[2] = "registry-1.docker.io";
	}
	for (size_t i = 0; json_is_object(auths) && !e && i < 3 && alias[i]; i++)
		e = json_object_get(auths, alias[i]);
	return e;
}

int aj_creds_from_text(const char *text, const char *what, const char *host, struct aj_creds *c,
		       struct aj_err *err)
{
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr), *e;
	struct auth_entry entry = {NULL};
	struct aj_jf_error je;
	char path[300];
	int r = 0;

	memset(c, 0, sizeof *c);
	if (!root)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "%s, line %d: %s", what, jerr.line,
				  jerr.text);
	snprintf(path, sizeof path, "auths.\"%s\"", host);
	e = find_entry(root, host);
	if (e && aj_jf_read(entry_rows, e, &entry,
			    &(struct aj_jf_opts){AJ_LAYER_IMAGE, AJ_JF_IGNORE_UNKNOWN, path, NULL},
			    &je) < 0) {
		*err = je.err;
		r = aj_err_prefix(err, "%s", what);
	} else if (entry.auth) {
		r = decode_auth(entry.auth, what, host, c, err);
		explicit_bzero(entry.auth, strlen(entry.auth));
	}
	free(entry.auth);
	json_decref(root);
	return r;
}

struct token_doc {
	char *token, *access_token;
};

static const struct aj_jf_field token_rows[] = {
	{.name = "token",
	 .type = AJ_JF_STRING,
	 .off = offsetof(struct token_doc, token),
	 .max = 16384},
	{.name = "access_token",
	 .type = AJ_JF_STRING,
	 .off = offsetof(struct token_doc, access_token),
	 .max = 16384},
	{0},
};

/* A token's bytes are wiped before they are freed. */
static void wipe_free(char *p)
{
	if (p) {
		explicit_bzero(p, strlen(p));
		free(p);
	}
}

static int token_of(json_t *root, const char *realm, struct token_doc *t, char *out, size_t cap,
		    struct aj_err *err)
{
	struct aj_jf_error je;
	const char *tok;

	if (!json_is_object(root))
		return aj_err_set(err, AJ_LAYER_IMAGE, EPROTO,
				  "the token service %s: not a JSON object", realm);
	if (aj_jf_read(token_rows, root, t,
		       &(struct aj_jf_opts){AJ_LAYER_IMAGE, AJ_JF_IGNORE_UNKNOWN, NULL, NULL},
		       &je) < 0) {
		*err = je.err;
		return aj_err_prefix(err, "the token service %s", realm);
	}
	tok = t->token ? t->token : t->access_token;
	if (!tok || !*tok || strlen(tok) >= cap)
		return aj_err_set(err, AJ_LAYER_IMAGE, EPROTO, "the token service %s gave no token",
				  realm);
	if (strpbrk(tok, "\r\n"))
		return aj_err_set(err, AJ_LAYER_IMAGE, EPROTO,
				  "the token service %s gave a token with a "
				  "line break: refused",
				  realm);
	snprintf(out, cap, "%s", tok);
	return 0;
}

int aj_token_parse(const char *body, size_t len, const char *realm, char *out, size_t cap,
		   struct aj_err *err)
{
	_cleanup_json_ json_t *root = body ? json_loadb(body, len, 0, NULL) : NULL;
	struct token_doc t = {NULL, NULL};
	int r = token_of(root, realm, &t, out, cap, err);

	wipe_free(t.token);
	wipe_free(t.access_token);
	return r;
}

int aj_creds_lookup(const char *file, const char *host, struct aj_creds *c, struct aj_err *err)
{
	char paths[3][512];
	const char *env = getenv("REGISTRY_AUTH_FILE"), *xdg = getenv("XDG_RUNTIME_DIR");
	const char *home = getenv("HOME");
	size_t n = 0;

	memset(c, 0, sizeof *c);
	if (file)
		snprintf(paths[n++], sizeof paths[0], "%s", file);
	else {
		if (env && *env)
			snprintf(paths[n++], sizeof paths[0], "%s", env);
		if (xdg && *xdg)
			snprintf(paths[n++], sizeof paths[0], "%s/containers/auth.json", xdg);
		if (home && *home)
			snprintf(paths[n++], sizeof paths[0], "%s/.docker/config.json", home);
	}
	for (size_t i = 0; i < n && !c->have; i++) {
		size_t len;
		_cleanup_free_ char *text = aj_read_file(paths[i], MAX_AUTH_FILE, &len);
		if (!text && errno == ENOENT && !file)
			continue;
		if (!text)
			return aj_err_sys(err, AJ_LAYER_IMAGE, "read the auth file \"%s\"",
					  paths[i]);
		if (aj_creds_from_text(text, paths[i], host, c, err) < 0) {
			explicit_bzero(text, len);
			return -1;
		}
		explicit_bzero(text, len);
	}
	return 0;
}
