/* The console listener's credentials (docs/console.md "Opening it"): the console's token,
 * login codes and the sessions they open, and <state>/console.json, which tells the local
 * administrator all of them.
 *
 * The login URL carries a login code in its fragment (which browsers never send to a server),
 * not a token: single use, valid for CODE_TTL_S, exchanged by the page for a session token
 * with POST /v1/console/session. A code read from the browser's history, or by a page that
 * held the origin before the daemon bound it (another local user's server on that port, with
 * a service worker that stays in the browser), is worthless once used or expired; the
 * console's token, which API clients use, never appears in a URL. The code is the listener's
 * alone: --listen has no such route, so no page can log a browser in there by a link.
 *
 * console.json (0600) is written once the listener is bound (with the port the kernel gave
 * for port 0), and again whenever its code changes: when it is used, and every CODE_TTL_S / 2
 * (the code before stays good until its own end, so the file's code always has CODE_TTL_S / 2
 * to live). It is removed when the daemon stops: a login URL must never point at a port that
 * someone else may hold by then.
 *
 * Sessions: at most SESSIONS_MAX (a new one takes the oldest's place), each for SESSION_TTL_S;
 * DELETE /v1/console/session ends the caller's (the page's "Log out"). Everything here is the
 * loop thread's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/util.h"
#include "manager/manager.h"
#include "server/internal.h"

#define TOKEN_BYTES 32
#define CODE_TTL_S 600
#define SESSION_TTL_S (12 * 3600)
#define SESSIONS_MAX 64

struct secret {
	char value[2 * TOKEN_BYTES + 1]; /* "" when unused */
	uint64_t expires_ms;             /* monotonic; 0: never (the console's token) */
};

static struct secret console_token;
static struct secret codes[2]; /* [0]: console.json's; [1]: the one before */
static struct secret sessions[SESSIONS_MAX];
static char json_path[4200], listen_addr[256];
static struct event *rotate_ev;

static uint64_t now_ms(void)
{
	return aj_now_monotonic_us() / 1000;
}

static void secret_clear(struct secret *s)
{
	explicit_bzero(s, sizeof *s);
}

static bool secret_is(const struct secret *s, const char *v, size_t n, uint64_t now)
{
	return s->value[0] && (!s->expires_ms || s->expires_ms > now) && n == 2 * TOKEN_BYTES &&
	       CRYPTO_memcmp(s->value, v, n) == 0;
}

static int secret_new(struct secret *s, uint64_t ttl_ms)
{
	if (aj_random_hex(s->value, TOKEN_BYTES) < 0) {
		secret_clear(s);
		return -1;
	}
	s->expires_ms = ttl_ms ? now_ms() + ttl_ms : 0;
	return 0;
}

/* console.json, replaced whole (a reader never sees half of it). */
static int write_json(struct aj_err *err)
{
	char tmp[4300], url[300];
	_cleanup_json_ json_t *info = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -1;

	snprintf(tmp, sizeof tmp, "%s.%d", json_path, (int)getpid());
	snprintf(url, sizeof url, "http://%s/console/", listen_addr);
	info = json_pack("{s:s, s:s, s:s, s:s++, s:i}", "listen", listen_addr, "url", url, "token",
			 console_token.value, "login_url", url, "#login=", codes[0].value,
			 "login_expires_in", CODE_TTL_S);
	text = info ? json_dumps(info, JSON_INDENT(2)) : NULL;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !text || aj_write_all(fd, text, strlen(text)) < 0 ||
	    aj_write_all(fd, "\n", 1) < 0 || close(aj_steal_fd(&fd)) < 0 ||
	    rename(tmp, json_path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return aj_err_sys(err, AJ_LAYER_API, "write \"%s\"", json_path);
	}
	return 0;
}

/* A new login code for console.json; the one before stays good until it expires. */
static int new_code(struct aj_err *err)
{
	codes[1] = codes[0];
	if (secret_new(&codes[0], CODE_TTL_S * 1000ull) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "random bytes for the console's login code");
	return write_json(err);
}

static void on_rotate(evutil_socket_t fd, short what, void *arg)
{
	struct aj_err err;

	(void)fd;
	(void)what;
	(void)arg;
	if (new_code(&err) < 0)
		fprintf(stderr, "agentjail: serve: console login code: %s\n", err.msg);
}

int aj_srv_console_login_start(struct aj_srv *s, const char *hostport, struct aj_err *err)
{
	struct aj_mgr m;
	struct timeval every = {CODE_TTL_S / 2, 0};

	if (secret_new(&console_token, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "random bytes for the console's token");
	if (aj_mgr_open(&m, s->cfg->state_dir, NULL, err) < 0)
		return -1;
	snprintf(json_path, sizeof json_path, "%s/console.json", m.state);
	aj_mgr_close(&m);
	snprintf(listen_addr, sizeof listen_addr, "%s", hostport);
	rotate_ev = event_new(s->base, -1, EV_PERSIST, on_rotate, NULL);
	if (!rotate_ev || event_add(rotate_ev, &every) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "a timer for the console's login codes");
	return new_code(err);
}

void aj_srv_console_login_stop(void)
{
	if (rotate_ev)
		event_free(rotate_ev);
	rotate_ev = NULL;
	if (json_path[0])
		unlink(json_path);
	json_path[0] = '\0';
	secret_clear(&console_token);
	for (size_t i = 0; i < 2; i++)
		secret_clear(&codes[i]);
	for (size_t i = 0; i < SESSIONS_MAX; i++)
		secret_clear(&sessions[i]);
}

static struct secret *find_session(const char *v, size_t n, uint64_t now)
{
	for (size_t i = 0; i < SESSIONS_MAX; i++)
		if (secret_is(&sessions[i], v, n, now))
			return &sessions[i];
	return NULL;
}

bool aj_srv_console_credential_ok(const char *v, size_t n)
{
	return secret_is(&console_token, v, n, 0) || find_session(v, n, now_ms());
}

/* ---- /v1/console/session ------------------------------------------------------------------ */

/* The slot for a new session: a free or expired one, else the oldest. */
static struct secret *session_slot(uint64_t now)
{
	struct secret *oldest = &sessions[0];

	for (size_t i = 0; i < SESSIONS_MAX; i++) {
		if (!sessions[i].value[0] || sessions[i].expires_ms <= now)
			return &sessions[i];
		if (sessions[i].expires_ms < oldest->expires_ms)
			oldest = &sessions[i];
	}
	return oldest;
}

static const struct aj_jf_field login_fields[] = {
	AJ_SRV_STRING("code", AJ_JF_REQUIRED),
	AJ_SRV_FIELDS_END,
};

/* POST {"code"}: the code is used up, and a session begins. */
static int login(struct aj_srv_req *r)
{
	static const struct aj_srv_route route = AJ_SRV_ROUTE(
		EVHTTP_REQ_POST, "/v1/console/session", AJ_SRV_BODY_JSON, NULL, NULL, NULL, NULL);
	uint64_t now = now_ms();
	const char *code;
	struct secret *s;
	struct aj_err err;
	int used = -1;

	r->route = &route;
	if (aj_srv_read_body(r) < 0)
		return -1;
	if (!r->body)
		return aj_srv_fail(r, 400, "missing_field", "code", "code: required");
	if (aj_srv_check_fields(r, login_fields) < 0)
		return -1;
	code = aj_srv_str(r, "code");
	for (int i = 0; i < 2; i++)
		if (secret_is(&codes[i], code, strlen(code), now))
			used = i;
	if (used < 0)
		return aj_srv_fail(
			r, 401, "unauthorized", "code",
			"the login code is not valid: used already, expired, or of an earlier "
			"start of the daemon (console.json has the current login URL)");
	secret_clear(&codes[used]);
	if (used == 0 && new_code(&err) < 0)
		fprintf(stderr, "agentjail: serve: console login code: %s\n", err.msg);
	s = session_slot(now);
	if (secret_new(s, SESSION_TTL_S * 1000ull) < 0)
		return aj_srv_fail(r, 500, "internal", NULL, "no random bytes for a session");
	aj_srv_ok(r, 200,
		  json_pack("{s:s, s:i, s:n}", "token", s->value, "expires_in", SESSION_TTL_S,
			    "owner"));
	return 0;
}

/* DELETE, with the session's token: it ends (the console's token is not a session: 204). */
static int logout(struct aj_srv_req *r)
{
	const char *auth =
		evhttp_find_header(evhttp_request_get_input_headers(r->req), "Authorization");
	struct secret *s;

	if (aj_srv_console_auth(r) < 0)
		return -1;
	auth += 7 + strspn(auth + 7, " ");
	if ((s = find_session(auth, strcspn(auth, " \t"), now_ms())))
		secret_clear(s);
	aj_srv_ok(r, 204, NULL);
	return 0;
}

bool aj_srv_console_session_route(struct aj_srv_req *r, const char *path)
{
	enum evhttp_cmd_type method = evhttp_request_get_command(r->req);
	int rc;

	if (!r->console || !path || strcmp(path, "/v1/console/session"))
		return false;
	if (aj_srv_console_host_check(r) < 0) {
		rc = -1;
	} else if (method == EVHTTP_REQ_POST) {
		rc = login(r);
	} else if (method == EVHTTP_REQ_DELETE) {
		rc = logout(r);
	} else {
		snprintf(r->allow, sizeof r->allow, "POST, DELETE");
		rc = aj_srv_fail(r, 405, "method_not_allowed", NULL,
				 "%s is not allowed here (allowed: POST, DELETE)",
				 aj_srv_method_name(method));
	}
	(void)rc;
	aj_srv_req_finish(r);
	return true;
}
