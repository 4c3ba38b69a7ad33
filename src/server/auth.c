/* Bearer tokens of the TCP listeners: a file of "TOKEN OWNER" lines (# comments, blank
 * lines). The file is a secret: the daemon refuses to start if anyone but its owner may read
 * or write it, and names the line of any malformed entry. Lookups compare the presented token
 * against every entry in time that depends on neither the token nor where it matches. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/internal.h"

#define TOKEN_MAX 256
#define TOKEN_MIN 16

struct token {
	unsigned char tok[TOKEN_MAX]; /* zero-padded */
	size_t len;
	char owner[AJ_SRV_OWNER_MAX];
};

struct aj_srv_tokens {
	struct token *v;
	size_t n;
};

static bool token_ok(const char *t, size_t n)
{
	if (n < TOKEN_MIN || n > TOKEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (t[i] < 0x21 || t[i] > 0x7e)
			return false;
	return true;
}

static bool owner_ok(const char *o)
{
	size_t n = strlen(o);

	return n > 0 && n < AJ_SRV_OWNER_MAX &&
	       strspn(o, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@-") == n;
}

static int check_file(int fd, const char *what, const char *path, struct aj_err *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "%s \"%s\"", what, path);
	if (!S_ISREG(st.st_mode))
		return aj_err_set(err, AJ_LAYER_API, EINVAL, "%s \"%s\": not a regular file",
				  what, path);
	if (st.st_mode & 077) {
		aj_err_set(err, AJ_LAYER_API, EPERM,
			   "%s \"%s\": mode %04o lets other users read or change the tokens",
			   what, path, (unsigned)(st.st_mode & 07777));
		return aj_err_hint(err, "chmod 600 %s", path);
	}
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return aj_err_set(err, AJ_LAYER_API, EPERM,
				  "%s \"%s\": owned by uid %u, not by this user or root",
				  what, path, (unsigned)st.st_uid);
	return 0;
}

static int add_token(struct aj_srv_tokens *t, const char *tok, const char *owner,
		     const char *what, const char *path, unsigned line, struct aj_err *err)
{
	struct token *e;
	size_t n = strlen(tok);

	if (!token_ok(tok, n))
		return aj_err_set(err, AJ_LAYER_API, EINVAL,
				  "%s \"%s\", line %u: a token is %d-%d printable "
				  "characters without spaces",
				  what, path, line, TOKEN_MIN, TOKEN_MAX);
	if (!owner_ok(owner))
		return aj_err_set(err, AJ_LAYER_API, EINVAL,
				  "%s \"%s\", line %u: an owner is 1-128 of "
				  "A-Za-z0-9_.@-",
				  what, path, line);
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].len == n && !memcmp(t->v[i].tok, tok, n))
			return aj_err_set(err, AJ_LAYER_API, EINVAL,
					  "%s \"%s\", line %u: the token is listed twice",
					  what, path, line);
	t->v = aj_xrealloc(t->v, (t->n + 1) * sizeof *t->v);
	e = &t->v[t->n++];
	memset(e, 0, sizeof *e);
	memcpy(e->tok, tok, n);
	e->len = n;
	snprintf(e->owner, sizeof e->owner, "%s", owner);
	return 0;
}

/* One line: blank, "# comment", or exactly "TOKEN OWNER". */
static int parse_line(struct aj_srv_tokens *t, char *l, const char *what, const char *path,
		      unsigned line, struct aj_err *err)
{
	char *save = NULL, *tok, *owner, *extra;

	l[strcspn(l, "\r\n")] = '\0';
	l += strspn(l, " \t");
	if (!*l || *l == '#')
		return 0;
	tok = strtok_r(l, " \t", &save);
	owner = strtok_r(NULL, " \t", &save);
	extra = strtok_r(NULL, " \t", &save);
	if (!owner || extra)
		return aj_err_set(err, AJ_LAYER_API, EINVAL,
				  "%s \"%s\", line %u: expected TOKEN OWNER", what, path, line);
	return add_token(t, tok, owner, what, path, line, err);
}

int aj_srv_tokens_load(const char *path, struct aj_srv_tokens **out, struct aj_err *err)
{
	return aj_srv_tokens_load_as("--token-file", path, out, err);
}

static void tokens_freep(struct aj_srv_tokens **t)
{
	aj_srv_tokens_free(*t);
}

int aj_srv_tokens_load_as(const char *what, const char *path, struct aj_srv_tokens **out,
			  struct aj_err *err)
{
	__attribute__((cleanup(tokens_freep))) struct aj_srv_tokens *t = aj_xcalloc(1, sizeof *t);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *l = NULL;
	size_t cap = 0;
	unsigned line = 0;

	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_API, "%s \"%s\"", what, path);
	if (check_file(fd, what, path, err) < 0)
		return -1;
	if (!(f = fdopen(fd, "r")))
		return aj_err_sys(err, AJ_LAYER_API, "%s \"%s\"", what, path);
	aj_steal_fd(&fd); /* the stream's now */
	while (getline(&l, &cap, f) >= 0)
		if (parse_line(t, l, what, path, ++line, err) < 0)
			return -1;
	if (t->n == 0)
		return aj_err_set(err, AJ_LAYER_API, EINVAL, "%s \"%s\": no tokens", what, path);
	*out = aj_steal_ptr(&t);
	return 0;
}

void aj_srv_tokens_free(struct aj_srv_tokens *t)
{
	if (!t)
		return;
	/* The tokens are secrets: do not leave them in freed memory. */
	if (t->v)
		explicit_bzero(t->v, t->n * sizeof *t->v);
	free(t->v);
	free(t);
}

/* Compares every byte of both zero-padded buffers and the lengths, without branching on
 * them. */
static unsigned diff(const struct token *e, const unsigned char *cand, size_t clen)
{
	unsigned d = (unsigned)(e->len ^ clen);

	for (size_t i = 0; i < TOKEN_MAX; i++)
		d |= (unsigned)(e->tok[i] ^ cand[i]);
	return d;
}

const char *aj_srv_tokens_owner(const struct aj_srv_tokens *t, const char *authorization)
{
	const char *v = authorization;
	size_t n;

	if (!t || strncasecmp(v, "Bearer ", 7) != 0)
		return NULL;
	v += 7;
	v += strspn(v, " ");
	n = strcspn(v, " \t");
	if (v[n + strspn(v + n, " \t")] != '\0')
		return NULL;
	return aj_srv_tokens_lookup(t, v, n);
}

const char *aj_srv_tokens_lookup(const struct aj_srv_tokens *t, const char *v, size_t n)
{
	unsigned char cand[TOKEN_MAX] = {0};
	const char *owner = NULL;

	if (!t || n == 0 || n > TOKEN_MAX)
		return NULL;
	memcpy(cand, v, n);
	for (size_t i = 0; i < t->n; i++)
		if (diff(&t->v[i], cand, n) == 0)
			owner = t->v[i].owner;
	explicit_bzero(cand, sizeof cand);
	return owner;
}
