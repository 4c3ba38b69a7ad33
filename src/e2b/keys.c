/* Who may use the E2B API, and the tokens of the sandbox side.
 *
 * API keys (X-API-KEY) map to owners through --e2b-keys, a file like --token-file's ("KEY
 * OWNER" lines, mode 0600). Without it the listener must be loopback: every key is then
 * accepted and is its own owner ("e2b-" and 16 hex digits of its SHA-256), so that two keys
 * still never see each other's sandboxes, but anyone who can connect to the port may create
 * sandboxes (docs/e2b.md says so).
 *
 * A sandbox's envdAccessToken is an HMAC of its id under a secret of the daemon, kept in the
 * state directory (e2b.secret, 0600): nothing per sandbox is stored, a restarted daemon gives
 * the same tokens, and a token for one id says nothing about another's. Tokens also key the
 * signed URLs of uploadUrl()/downloadUrl(). This file and egress are the only users of
 * OpenSSL (digests only; docs/architecture.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/util.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/base64.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "e2b/internal.h"
#include "state/store.h"

#define KEY_MAX 256

static bool loopback(const char *hostport)
{
	struct sockaddr_storage ss = {0};
	int len = sizeof ss;

	if (evutil_parse_sockaddr_port(hostport, (struct sockaddr *)&ss, &len) < 0)
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	return ss.ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
}

int e2b_keys_load(struct aj_e2b *e, const struct aj_srv_config *c, struct aj_err *err)
{
	if (c->e2b_keys)
		return aj_srv_tokens_load_as("--e2b-keys", c->e2b_keys, &e->keys, err);
	for (size_t i = 0; i < c->e2b_listen.n; i++)
		if (!loopback(c->e2b_listen.v[i])) {
			aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				   "--e2b-listen %s: without --e2b-keys the E2B API only listens on "
				   "a loopback address (any API key would be accepted)",
				   c->e2b_listen.v[i]);
			return aj_err_hint(err, "write \"API_KEY OWNER\" lines to a file (mode 0600) "
						"and pass it with --e2b-keys");
		}
	return 0;
}

static void hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static void sha256(const void *in, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	if (EVP_Digest(in, n, out, &len, EVP_sha256(), NULL) != 1)
		memset(out, 0, 32); /* only on allocation failure; then no key or token matches */
}

bool e2b_key_owner(const struct aj_e2b *e, const char *key, char owner[AJ_SRV_OWNER_MAX])
{
	unsigned char d[32];
	char h[65];
	size_t n = key ? strlen(key) : 0;
	const char *o;

	if (n == 0 || n > KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (key[i] < 0x21 || key[i] > 0x7e)
			return false;
	if (e->keys) {
		o = aj_srv_tokens_lookup(e->keys, key, n);
		if (o)
			snprintf(owner, AJ_SRV_OWNER_MAX, "%s", o);
		return o != NULL;
	}
	sha256(key, n, d);
	hex(d, 8, h);
	snprintf(owner, AJ_SRV_OWNER_MAX, "e2b-%s", h);
	return true;
}

/* ---- the daemon's secret ------------------------------------------------------------------ */

static int read_secret(struct aj_e2b *e, const char *path, struct aj_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;

	if (fd < 0)
		return errno == ENOENT ? 1 : aj_err_sys(err, AJ_LAYER_API, "open \"%s\"", path);
	if (fstat(fd, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "stat \"%s\"", path);
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_size != sizeof e->secret) {
		aj_err_set(err, AJ_LAYER_API, EPERM,
			   "\"%s\" must be a regular file of %zu bytes that only its owner can read",
			   path, sizeof e->secret);
		return aj_err_hint(err, "remove it: a new secret is made (sandboxes' access tokens "
					"change; clients get new ones from Sandbox.connect)");
	}
	if (aj_read_full(fd, e->secret, sizeof e->secret) != (ssize_t)sizeof e->secret)
		return aj_err_sys(err, AJ_LAYER_API, "read \"%s\"", path);
	return 0;
}

/* Written under a temporary name and linked into place, so that of two daemons starting at
 * once one secret wins and both read it. */
static int make_secret(struct aj_e2b *e, const char *path, struct aj_err *err)
{
	unsigned char s[sizeof e->secret];
	char tmp[4200];
	_cleanup_close_ int fd = -1;
	int r = 0;

	if (getrandom(s, sizeof s, 0) != (ssize_t)sizeof s)
		return aj_err_sys(err, AJ_LAYER_API, "getrandom");
	snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_API, "create \"%s\"", tmp);
	if (aj_write_all(fd, s, sizeof s) < 0 || fsync(fd) < 0)
		r = aj_err_sys(err, AJ_LAYER_API, "write \"%s\"", tmp);
	if (r == 0 && link(tmp, path) < 0 && errno != EEXIST)
		r = aj_err_sys(err, AJ_LAYER_API, "create \"%s\"", path);
	unlink(tmp);
	explicit_bzero(s, sizeof s);
	return r;
}

int e2b_secret_load(struct aj_e2b *e, const char *state_dir, struct aj_err *err)
{
	char dir[4096], path[4200];
	int r;

	if (state_dir)
		snprintf(dir, sizeof dir, "%s", state_dir);
	else if (aj_state_dir_default(dir, sizeof dir) < 0)
		return aj_err_set(err, AJ_LAYER_API, ENOENT, "no state directory: set HOME or pass "
							     "--state-dir");
	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "create the state directory \"%s\"", dir);
	snprintf(path, sizeof path, "%s/e2b.secret", dir);
	r = read_secret(e, path, err);
	if (r <= 0)
		return r;
	if (make_secret(e, path, err) < 0)
		return -1;
	return read_secret(e, path, err) == 0 ? 0 : -1;
}

/* ---- tokens and signatures --------------------------------------------------------------- */

void e2b_access_token(const struct aj_e2b *e, const char *id, char *out)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char msg[128];
	int n = snprintf(msg, sizeof msg, "envd-access-token:%s", id);

	if (!HMAC(EVP_sha256(), e->secret, sizeof e->secret, (const unsigned char *)msg,
		  (size_t)n, mac, &len) ||
	    len < E2B_TOKEN_LEN / 2) {
		/* Never an empty or guessable token: fill with randomness nobody can present. */
		if (getrandom(mac, E2B_TOKEN_LEN / 2, 0) != E2B_TOKEN_LEN / 2)
			memset(mac, 0xff, E2B_TOKEN_LEN / 2);
	}
	hex(mac, E2B_TOKEN_LEN / 2, out);
}

void e2b_upload_signature(const struct aj_e2b *e, const char *owner, const char *hash,
			  const char *expires, char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	_cleanup_free_ char *msg = aj_xasprintf("template-upload:%s:%s:%s", hash, expires, owner);

	if (!HMAC(EVP_sha256(), e->secret, sizeof e->secret, (const unsigned char *)msg,
		  strlen(msg), mac, &len) ||
	    len < 32) {
		memset(out, 'x', 64); /* not hex: matches no signature presented */
		out[64] = '\0';
		return;
	}
	hex(mac, 32, out);
}

bool e2b_str_eq_ct(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned d = (unsigned)(na ^ nb);

	for (size_t i = 0; i < na; i++)
		d |= (unsigned)(a[i] ^ b[i % (nb ? nb : 1)]);
	return d == 0 && nb > 0;
}

/* HMAC of "volume:<owner>:<id>", E2B_TOKEN_LEN hex digits. */
static void volume_mac(const struct aj_e2b *e, const char *owner, const char *id, char *out)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char msg[AJ_SRV_OWNER_MAX + 128];
	int n = snprintf(msg, sizeof msg, "volume:%s:%s", owner, id);

	if (n < 0 || (size_t)n >= sizeof msg ||
	    !HMAC(EVP_sha256(), e->secret, sizeof e->secret, (const unsigned char *)msg, (size_t)n,
		  mac, &len) ||
	    len < E2B_TOKEN_LEN / 2) {
		if (getrandom(mac, E2B_TOKEN_LEN / 2, 0) != E2B_TOKEN_LEN / 2)
			memset(mac, 0xff, E2B_TOKEN_LEN / 2);
	}
	hex(mac, E2B_TOKEN_LEN / 2, out);
}

void e2b_volume_token(const struct aj_e2b *e, const char *owner, const char *id, char *out,
		      size_t len)
{
	char mac[E2B_TOKEN_LEN + 1];
	size_t n = strlen(owner), o = 0;

	volume_mac(e, owner, id, mac);
	for (size_t i = 0; i < n && o + 3 < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%02x", (unsigned char)owner[i]);
	snprintf(out + o, len - o, ".%s", mac);
}

static int lower_hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool e2b_volume_token_owner(const struct aj_e2b *e, const char *token, const char *id,
			    char owner[AJ_SRV_OWNER_MAX])
{
	const char *dot = token ? strchr(token, '.') : NULL;
	char want[E2B_TOKEN_LEN + 1];
	size_t n = dot ? (size_t)(dot - token) : 0;

	if (!dot || n % 2 || n / 2 >= AJ_SRV_OWNER_MAX)
		return false;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = lower_hex(token[2 * i]), lo = lower_hex(token[2 * i + 1]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return false; /* lower-case hex as e2b_volume_token writes it, no NUL */
		owner[i] = (char)(hi << 4 | lo);
	}
	owner[n / 2] = '\0';
	volume_mac(e, owner, id, want);
	return e2b_str_eq_ct(dot + 1, want);
}

bool e2b_token_ok(const struct aj_e2b *e, const char *id, const char *presented)
{
	char want[E2B_TOKEN_LEN + 1];

	if (!presented)
		return false;
	e2b_access_token(e, id, want);
	return e2b_str_eq_ct(presented, want);
}

void e2b_signature(const char *path, const char *op, const char *user, const char *token,
		   const char *exp, char *out)
{
	unsigned char d[32];
	char b64[48];
	_cleanup_free_ char *raw = aj_xasprintf("%s:%s:%s:%s%s%s", path, op, user, token,
						exp ? ":" : "", exp ? exp : "");

	sha256(raw, strlen(raw), d);
	aj_base64_encode(d, sizeof d, b64);
	b64[strcspn(b64, "=")] = '\0';
	snprintf(out, 64, "v1_%s", b64);
}
