#include "egress/creds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/secret_name.h"
#include "common/util.h"
#include "policy/plan.h"

#define SECRET_MAX 16384

char *aj_egress_replace_all(const char *s, const char *from, const char *to, size_t to_len)
{
	size_t fl = strlen(from), count = 0, n;
	const char *p;
	char *out, *w;

	for (p = s; (p = strstr(p, from)); p += fl)
		count++;
	if (!count)
		return NULL;
	n = strlen(s) - count * fl + count * to_len;
	out = aj_xmalloc(n + 1);
	for (w = out, p = s;;) {
		const char *hit = strstr(p, from);
		size_t lit = hit ? (size_t)(hit - p) : strlen(p);
		memcpy(w, p, lit);
		w += lit;
		if (!hit)
			break;
		memcpy(w, to, to_len);
		w += to_len;
		p = hit + fl;
	}
	*w = '\0';
	return out;
}

/* A secret goes into a header value: control characters would let it end the header and
 * add others. */
static bool secret_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			return false;
	return n > 0;
}

static char *read_secret_file(const char *path, size_t *len, struct aj_err *err,
			      const char *field)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *buf = NULL;
	ssize_t n;

	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_PROXY, "%s: open \"%s\"", field, path), NULL;
	buf = aj_xcalloc(1, SECRET_MAX + 1);
	n = aj_read_full(fd, buf, SECRET_MAX + 1);
	if (n < 0)
		return aj_err_sys(err, AJ_LAYER_PROXY, "%s: read \"%s\"", field, path), NULL;
	if (n > SECRET_MAX) {
		/* What was read may be a secret all the same: wiped. */
		explicit_bzero(buf, SECRET_MAX + 1);
		return aj_err_set(err, AJ_LAYER_PROXY, EFBIG, "%s: \"%s\" is larger than %d bytes",
				  field, path, SECRET_MAX),
		       NULL;
	}
	/* Files made with echo end in a newline that is not part of the secret. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	*len = (size_t)n;
	return aj_steal_ptr(&buf);
}

static int load_one(const struct aj_credential *pc, struct aj_egress_cred *c,
		    const char *placeholder, const char *secret_dir, struct aj_err *err)
{
	char field[320], why[256], path[4400];
	const char *v;

	c->name = pc->name;
	c->header = pc->header;
	c->format = pc->format;
	c->replace = pc->replace;
	snprintf(c->placeholder, sizeof c->placeholder, "%s", placeholder);
	if (pc->from_env) {
		snprintf(field, sizeof field, "credentials.%s.from_env", pc->name);
		v = getenv(pc->from_env);
		if (!v)
			return aj_err_set(err, AJ_LAYER_PROXY, ENOENT,
					  "%s: the variable %s is not set in agentjail's environment",
					  field, pc->from_env);
		c->secret_len = strlen(v);
		c->secret = aj_xstrdup(v);
	} else if (pc->from_secret) {
		snprintf(field, sizeof field, "credentials.%s.from_secret", pc->name);
		if (!secret_dir || aj_secret_value_path(secret_dir, pc->from_secret, path,
							sizeof path) < 0)
			return aj_err_set(err, AJ_LAYER_PROXY, ENOENT,
					  "%s: no secret store here (secrets are for the sandboxes "
					  "of a state directory)",
					  field);
		c->secret = read_secret_file(path, &c->secret_len, err, field);
		if (!c->secret) {
			if (err->errnum == ENOENT)
				aj_err_set(err, AJ_LAYER_PROXY, 0,
					   "%s: no secret \"%s\" (agentjail secret ls)", field,
					   pc->from_secret);
			return -1;
		}
	} else {
		snprintf(field, sizeof field, "credentials.%s.from_file", pc->name);
		c->secret = read_secret_file(pc->from_file, &c->secret_len, err, field);
		if (!c->secret)
			return -1;
	}
	if (!secret_ok(c->secret, c->secret_len))
		return aj_err_set(err, AJ_LAYER_PROXY, EINVAL,
				  "%s: the secret is empty or holds control characters", field);
	c->hosts = aj_xcalloc(pc->hosts.n, sizeof *c->hosts);
	for (size_t i = 0; i < pc->hosts.n; i++, c->n_hosts++)
		if (aj_egress_rule_parse(pc->hosts.v[i], AJ_RULE_PORTS_TLS, &c->hosts[i], why,
					 sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "credentials.%s.hosts[%zu]: %s",
					  pc->name, i, why);
	return 0;
}

int aj_egress_creds_load(const struct aj_plan *plan, struct aj_egress_cred **out, size_t *n,
			 struct aj_err *err)
{
	const struct aj_policy *pol = plan->policy;
	struct aj_egress_cred *c;

	*out = NULL;
	*n = 0;
	if (!pol->n_creds)
		return 0;
	c = aj_xcalloc(pol->n_creds, sizeof *c);
	for (size_t i = 0; i < pol->n_creds; i++) {
		const char *name = pol->creds[i].name;
		long at = aj_strv_find_env(&plan->egress.placeholders, name, strlen(name));
		if (at < 0 || load_one(&pol->creds[i], &c[i],
				       strchr(plan->egress.placeholders.v[at], '=') + 1,
				       plan->egress.secret_dir, err) < 0) {
			if (at < 0)
				aj_err_set(err, AJ_LAYER_INTERNAL, 0, "no placeholder for %s", name);
			aj_egress_creds_free(c, i + 1);
			return -1;
		}
	}
	*out = c;
	*n = pol->n_creds;
	return 0;
}

void aj_egress_creds_free(struct aj_egress_cred *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++) {
		if (c[i].secret) {
			explicit_bzero(c[i].secret, c[i].secret_len);
			free(c[i].secret);
		}
		for (size_t j = 0; j < c[i].n_hosts; j++)
			aj_egress_rule_free(&c[i].hosts[j]);
		free(c[i].hosts);
	}
	free(c);
}

static bool cred_bound(const struct aj_egress_cred *c, const char *host, uint16_t port)
{
	for (size_t j = 0; j < c->n_hosts; j++)
		if (aj_egress_rule_match(&c->hosts[j], host, port))
			return true;
	return false;
}

bool aj_egress_creds_bound(const struct aj_egress_cred *c, size_t n, const char *host,
			   uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (cred_bound(&c[i], host, port))
			return true;
	return false;
}

/* A string holding a secret: wiped before it is freed. */
static void secret_freep(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
	}
}

#define _cleanup_secret_ __attribute__((cleanup(secret_freep)))

/* "Basic base64(user:password)": decoded, rewritten, encoded again. 0 if nothing to do,
 * 1 if *value was replaced. */
static int rewrite_basic(char **value, const struct aj_egress_cred *c)
{
	const char *b64 = *value + 6;
	size_t bl = strlen(b64);
	_cleanup_free_ unsigned char *raw = aj_xmalloc(bl / 4 * 3 + 4);
	_cleanup_secret_ char *plain = NULL;
	char *enc;
	long n;

	n = aj_base64_decode(b64, bl, raw);
	if (n < 0 || memchr(raw, '\0', (size_t)n))
		return 0; /* not base64 text: left alone */
	raw[n] = '\0';
	plain = aj_egress_replace_all((char *)raw, c->placeholder, c->secret, c->secret_len);
	if (!plain)
		return 0;
	enc = aj_xmalloc(6 + aj_base64_len(strlen(plain)) + 1);
	memcpy(enc, "Basic ", sizeof "Basic "); /* the encoding goes over the NUL */
	aj_base64_encode(plain, strlen(plain), enc + 6);
	free(*value);
	*value = enc;
	return 1;
}

static int rewrite_value(char **value, const struct aj_egress_cred *c)
{
	char *rep = aj_egress_replace_all(*value, c->placeholder, c->secret, c->secret_len);

	if (rep) {
		free(*value);
		*value = rep;
		return 1;
	}
	if (strncasecmp(*value, "Basic ", 6) == 0)
		return rewrite_basic(value, c);
	return 0;
}

static int inject(struct aj_http_head *h, const struct aj_egress_cred *c)
{
	_cleanup_secret_ char *v = NULL;

	if (!c->header || (!c->replace && aj_http_head_get(h, c->header)))
		return 0;
	if (c->replace)
		aj_http_head_del(h, c->header);
	v = aj_egress_replace_all(c->format, "{}", c->secret, c->secret_len);
	if (!v)
		return -1; /* the format always holds "{}" (checked by the policy) */
	aj_http_head_add(h, c->header, v);
	return 1;
}

int aj_egress_creds_apply(struct aj_egress_cred *c, size_t n, const char *host, uint16_t port,
			  struct aj_http_head *h, bool *used)
{
	int count = 0;

	for (size_t i = 0; i < n; i++) {
		int r = 0;
		used[i] = false;
		if (!cred_bound(&c[i], host, port))
			continue;
		for (size_t j = 0; j < h->n && r >= 0; j++) {
			int one = rewrite_value(&h->f[j].value, &c[i]);
			r = one < 0 ? -1 : r + one;
		}
		if (r >= 0) {
			int one = inject(h, &c[i]);
			r = one < 0 ? -1 : r + one;
		}
		if (r < 0)
			return -1;
		if (r > 0) {
			used[i] = true;
			c[i].uses++;
			count++;
		}
	}
	return count;
}
