/* Shared by the E2B module's files; not for other modules.
 *
 * Threads and ownership are the server's (server/frontend.h): every E2B request is a struct
 * aj_srv_req made by the E2B router, with a struct e2b_req in r->data (freed with it); its
 * route's prepare runs on the loop thread, work on a worker with a manager, done on the loop
 * thread again. A request is answered and freed in exactly one place: e2b_finish(), or by the
 * Connect stream that took it over (e2b_stream_finish()).
 *
 * Mapping (docs/e2b.md): an E2B sandbox is a persistent sandbox carrying the label
 * "e2b/template"; its sandboxID is the sandbox's id, its owner the API key's owner, its
 * metadata its other labels, its timeout the sandbox's maximum lifetime (lifetime_action
 * "pause" for autoPause), its envVars the policy's environment. An E2B process id is the
 * supervisor's exec id of a spawned command.
 */
#ifndef AJ_E2B_INTERNAL_H
#define AJ_E2B_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "e2b/e2b.h"
#include "server/frontend.h"

#define E2B_ENVD_PORT "49983"
/* What the SDK gates features on (docs/e2b-protocol.md section 11): octet-stream and gzip
 * uploads, closeStdin; not file metadata (0.6.2) nor includeEntry (0.6.3). */
#define E2B_ENVD_VERSION "0.5.7"
#define E2B_LABEL_TEMPLATE "e2b/template" /* marks a sandbox made through this API */
#define E2B_DEFAULT_TIMEOUT_S 300
#define E2B_PATH_MAX 4095
#define E2B_TOKEN_LEN 32 /* hex characters of an access token */

struct e2b_watcher;

struct aj_e2b {
	struct aj_srv *srv;
	struct aj_srv_tokens *keys;   /* NULL: loopback only, every key its own owner */
	unsigned char secret[32];     /* HMAC key of the sandboxes' access tokens */
	json_t *templates;            /* template name -> policy object */
	struct e2b_watcher *watchers; /* CreateWatcher's, polled by GetWatcherEvents */
	uint64_t next_watcher;
};

/* How a request's errors are answered. */
enum e2b_style {
	E2B_API,    /* control plane and envd REST: {"code": <status>, "message"} */
	E2B_UNARY,  /* Connect unary: {"code": "not_found", "message"} with the code's status */
	E2B_STREAM, /* Connect server stream: HTTP 200, the error in the end-stream envelope */
};

/* An E2B route: a row of the server's route type (server/frontend.h) and the style of its
 * answers; the body is read by the style, not by the row's body kind. prepare on the loop
 * thread (0 on to work, -1 failed, 1 taken over), work on a worker, done back on the loop
 * (NULL: e2b_finish). */
struct e2b_route {
	struct aj_srv_route rt; /* first: the server's matcher walks E2B's tables by row size */
	enum e2b_style style;
};

#define E2B_ROUTE(m, p, st, pre, wk, dn)                                                       \
	{.rt = {.method = (m), .pattern = (p), .prepare = (pre), .work = (wk), .done = (dn)},    \
	 .style = (st)}
#define E2B_ROUTES_END {.rt = {.pattern = NULL}}
#define E2B_TABLE(rows) {&(rows)[0].rt, sizeof *(rows)}

/* The E2B row of a route the E2B router matched (every one is the first member of one). */
static inline const struct e2b_route *e2b_route_of(const struct aj_srv_route *rt)
{
	return (const struct e2b_route *)rt;
}

/* The request's E2B side, r->data. */
struct e2b_req {
	struct aj_e2b *e2b;
	enum e2b_style style;
	char id[80];               /* the sandbox: {id} of the path, or E2b-Sandbox-Id */
	char arg[80];              /* the path's {arg}: a build, a files hash, an alias */
	char user[64];             /* envd: the user asked for; "" the sandbox's own */
	int64_t timeout_ms;        /* Connect-Timeout-Ms; 0: none */
	int keepalive_s;           /* Keepalive-Ping-Interval */
	json_t *msg;               /* the request message (RPC), or the JSON body */
	const char *raw;           /* the body as received (contiguous) */
	size_t raw_len;
	struct aj_sandbox_rec rec; /* e2b_sandbox_open()'s */
	bool have_rec;
	int ctl;                   /* connection to the sandbox's supervisor, or -1 */
	char next_token[128];      /* a list's X-Next-Token */
	bool signed_url;           /* /files reached by its signature, without headers */
	bool upload;               /* the body is a file's bytes (PUT /volumecontent/.../file) */
	void *x;                   /* the route's own data, freed with x_free */
	void (*x_free)(void *x);
};

static inline struct e2b_req *e2b_of(struct aj_srv_req *r)
{
	return r->data;
}

/* ---- routes (one table per file, ended by a NULL path) -------------------------------- */

extern const struct e2b_route e2b_control_routes[];
extern const struct e2b_route e2b_envd_routes[];
extern const struct e2b_route e2b_process_routes[];
extern const struct e2b_route e2b_fs_routes[];
extern const struct e2b_route e2b_watch_routes[];
extern const struct e2b_route e2b_template_routes[];
extern const struct e2b_route e2b_network_routes[];
extern const struct e2b_route e2b_secret_routes[];
extern const struct e2b_route e2b_snapshot_routes[];
extern const struct e2b_route e2b_metrics_routes[];
extern const struct e2b_route e2b_volume_routes[];
extern const struct e2b_route e2b_volume_content_routes[];

/* ---- keys and tokens (keys.c) ---------------------------------------------------------- */

int e2b_keys_load(struct aj_e2b *e, const struct aj_srv_config *c, struct aj_err *err);
/* The owner of an X-API-KEY into owner; false if the key is not valid. */
bool e2b_key_owner(const struct aj_e2b *e, const char *key, char owner[AJ_SRV_OWNER_MAX]);
int e2b_secret_load(struct aj_e2b *e, const char *state_dir, struct aj_err *err);
/* The sandbox's envdAccessToken: derived from the daemon's secret and the id, so it needs no
 * storage and survives restarts of the daemon. out: E2B_TOKEN_LEN + 1 bytes. */
void e2b_access_token(const struct aj_e2b *e, const char *id, char *out);
/* A volume's token (Volume.create's, for the volume content routes): the owner in hex, '.',
 * an HMAC of the owner and the id under the daemon's secret; no storage, like the access
 * tokens. owner_of checks one for the volume `id` and gives its owner. */
#define E2B_VOLUME_TOKEN_MAX (2 * AJ_SRV_OWNER_MAX + E2B_TOKEN_LEN + 2)
void e2b_volume_token(const struct aj_e2b *e, const char *owner, const char *id, char *out,
		      size_t len);
bool e2b_volume_token_owner(const struct aj_e2b *e, const char *token, const char *id,
			    char owner[AJ_SRV_OWNER_MAX]);
/* Constant-time comparison of a presented token with the sandbox's. */
bool e2b_token_ok(const struct aj_e2b *e, const char *id, const char *presented);
/* A signed URL's signature (docs/e2b-protocol.md section 3.4) into out (>= 64 bytes). exp
 * NULL: no expiration. */
void e2b_signature(const char *path, const char *op, const char *user, const char *token,
		   const char *exp, char *out);
bool e2b_str_eq_ct(const char *a, const char *b);
/* The signature of a template upload's URL (template_build.c): HMAC-SHA256 of the hash, the
 * expiry and the owner under the daemon's secret, 64 hex digits into out. */
void e2b_upload_signature(const struct aj_e2b *e, const char *owner, const char *hash,
			  const char *expires, char out[65]);

/* ---- templates (templates.c) ------------------------------------------------------------ */

int e2b_templates_load(struct aj_e2b *e, const char *path, struct aj_err *err);
/* The policy object of a template (borrowed), NULL if there is none of that name. */
json_t *e2b_template(const struct aj_e2b *e, const char *name);
/* control.c: the policy of a plain Sandbox.create(name), for the daemon's warm pools
 * (struct aj_srv_frontend's warm_policy; state is the front end's struct aj_e2b). */
int e2b_warm_policy(void *state, const char *name, struct aj_policy *pol, struct aj_err *err);

/* ---- template builds and starts (template_build.c, template_start.c) ------------------- */

/* Worker: the start and ready commands of the image sandbox id was created on, if it has
 * them (the ready one waited on). -1 with the request failed: the caller removes it. */
int e2b_template_start(struct aj_srv_req *r, struct aj_mgr *m, const char *id,
		       const char *image);

/* ---- replies (reply.c) ----------------------------------------------------------------- */

/* An error answered as the request's style asks: API status (E2B_API), or a Connect code
 * (E2B_UNARY, E2B_STREAM). Each returns -1. */
int e2b_fail(struct aj_srv_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int e2b_rpc_fail(struct aj_srv_req *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A manager, control or file error, by its errno, in the request's style. */
int e2b_fail_err(struct aj_srv_req *r, const struct aj_err *e);
/* 502 as E2B's proxy answers for a sandbox that is not running. */
int e2b_fail_gone(struct aj_srv_req *r);
/* The Connect code of an errno inside a sandbox, and the HTTP status of a code. */
const char *e2b_rpc_code(int errnum);
int e2b_rpc_status(const char *code);
/* Hands the outcome to libevent and frees r. */
void e2b_finish(struct aj_srv_req *r);
void e2b_reply_early(struct aj_srv *s, struct evhttp_request *req, int status, const char *msg);

/* ---- sandboxes as E2B shows them (sandboxes.c) ----------------------------------------- */

bool e2b_id_ok(const char *id);
/* Worker: the owner's live (running or paused) E2B sandbox {id} in x->rec, else the request
 * failed with 404 (connect's words with for_connect). A stopped E2B sandbox found on the way is
 * removed: E2B has none. */
int e2b_find_live(struct aj_srv_req *r, struct aj_mgr *m, bool for_connect);
/* network.c: E2B's allowOut, denyOut (members of obj) and allow_internet_access as the allowed
 * and denied egress rules, within the template's policy tpl (never more than it allows);
 * rules' header transforms with ${e2b.secrets.NAME} as credentials added to p. -1: answered
 * 400. */
int e2b_network_egress(struct aj_srv_req *r, json_t *obj, json_t *internet,
		       const struct aj_policy *tpl, struct aj_strv *allow, struct aj_strv *deny);
int e2b_network_rules(struct aj_srv_req *r, json_t *rules, struct aj_policy *p);
/* The value of label key of rec, or NULL. */
const char *e2b_label(const struct aj_sandbox_rec *rec, const char *key);
bool e2b_is_ours(const struct aj_sandbox_rec *rec);
/* A row's parse (common/jfields.h): metadata, an object of strings, as labels "KEY=VALUE"
 * into the struct aj_strv at dst, keys percent-encoded so that any E2B key survives and none
 * collides with the module's own "e2b/" labels; refused in E2B's words. */
int e2b_metadata_labels(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e);
json_t *e2b_metadata_json(const struct aj_sandbox_rec *rec);
/* endAt in ms: the end of the lifetime, as the supervisor counts it. */
int64_t e2b_end_ms(const struct aj_sandbox_rec *rec);
/* The Sandbox object of create and connect, the SandboxDetail of get (detail) or the
 * ListedSandbox of a list. */
json_t *e2b_sandbox_json(const struct aj_e2b *e, const struct aj_sandbox_rec *rec);
json_t *e2b_detail_json(const struct aj_e2b *e, const struct aj_sandbox_rec *rec, bool detail);
json_t *e2b_time_json(int64_t ms);

/* ---- listing (list.c) ------------------------------------------------------------------- */

/* GET /v2/sandboxes (filters, paging) and the v1 GET /sandboxes (running ones, one page). */
void e2b_list_work(struct aj_srv_req *r, struct aj_mgr *m);
void e2b_list_v1_work(struct aj_srv_req *r, struct aj_mgr *m);

/* ---- the sandbox side (envd.c) ---------------------------------------------------------- */

/* Worker: the request's sandbox, which must be an E2B one and running (else 502), with a
 * connection to its supervisor in x->ctl. */
int e2b_sandbox_open(struct aj_srv_req *r, struct aj_mgr *m);

/* The sandbox's user as E2B names it, resolved against the stored policy. */
struct e2b_user {
	char name[64]; /* the policy's user name */
	char home[E2B_PATH_MAX + 1];
	unsigned uid, gid;
	bool root; /* "root" of an image sandbox: commands run as its root, home /root */
};
/* x->user against rec's policy: "" and the policy's user name are the sandbox user; "root"
 * is the image's root in an image sandbox, and the sandbox user elsewhere (a sandbox on the
 * host's root has no other, docs/e2b.md); anything else fails the request (401 /
 * unauthenticated). */
int e2b_user_resolve(struct aj_srv_req *r, struct e2b_user *u);
/* A path as E2B takes it: absolute, or relative to the user's home ("~" and "~/x" too),
 * cleaned lexically; init resolves the result inside the sandbox. -1 with the request failed. */
int e2b_path(struct aj_srv_req *r, const struct e2b_user *u, const char *in, char *out,
	     size_t len);

/* ---- processes (process.c, pstream.c) ------------------------------------------------------ */

/* A call to the request's supervisor (x->ctl); -1 with the request failed in Connect terms. */
int e2b_proc_call(struct aj_srv_req *r, json_t *req, json_t **reply);
struct e2b_selector;
/* The running command a ProcessSelector names (a new reference of the supervisor's record),
 * or NULL with the request failed (invalid_argument for a selector that names none,
 * not_found for ended and unknown ones, as envd). */
json_t *e2b_proc_find(struct aj_srv_req *r, const struct e2b_selector *sel);
/* Start and Connect: the blocking part on a worker, then e2b_follow_done streams. */
int e2b_start_prepare(struct aj_srv_req *r);
void e2b_start_work(struct aj_srv_req *r, struct aj_mgr *m);
void e2b_connect_work(struct aj_srv_req *r, struct aj_mgr *m);
void e2b_follow_done(struct aj_srv_req *r);

/* ---- request bodies (multipart.c) ------------------------------------------------------- */

struct e2b_part {
	char name[64];
	char filename[E2B_PATH_MAX + 1]; /* undici's escapes (%0A %0D %22) undone */
	const char *data;
	size_t len;
};
/* Calls fn for each part of a multipart/form-data body (ctype gives the boundary); fn returns
 * non-zero to stop. -1 with why set when the body is not multipart. */
int e2b_multipart(const char *body, size_t len, const char *ctype,
		  int (*fn)(void *arg, const struct e2b_part *p), void *arg, char *why,
		  size_t why_len);
/* Inflates a gzip body, at most max bytes; -1 with why set. *out is malloc'd. */
int e2b_gunzip(const char *in, size_t n, size_t max, char **out, size_t *out_len, char *why,
	       size_t why_len);

/* ---- Connect protocol (connect.c) ------------------------------------------------------- */

/* The one enveloped message of a server-streaming request; -1 with the request failed. */
int e2b_envelope_msg(struct aj_srv_req *r);

struct e2b_stream;
struct e2b_stream_cbs {
	void (*on_drain)(void *arg);    /* the client took what was queued */
	void (*on_close)(void *arg);    /* the client went away, or the daemon is stopping */
	void (*on_deadline)(void *arg); /* Connect-Timeout-Ms elapsed */
	void *arg;
};
/* Takes r over as a Connect stream (200, application/connect+json). keepalive is the message
 * sent after Keepalive-Ping-Interval seconds of silence ({"event":{"keepalive":{}}} for
 * processes). NULL if out of memory (r is then finished with an error). */
struct e2b_stream *e2b_stream_start(struct aj_srv_req *r, const char *keepalive,
				    const struct e2b_stream_cbs *cbs);
/* One message (consumed). -1 once the client is gone. */
int e2b_stream_send(struct e2b_stream *st, json_t *msg);
bool e2b_stream_writable(const struct e2b_stream *st);
/* The client left before the stream began: the producer should end it (no on_close comes). */
bool e2b_stream_gone(const struct e2b_stream *st);
/* The end-stream envelope ({} or the error code and message), the end of the body, and the
 * stream and its request freed. Never from inside on_close. */
void e2b_stream_finish(struct e2b_stream *st, const char *code, const char *message);

/* ---- protobuf JSON (pbjson.c) ----------------------------------------------------------- */

/* EntryInfo of path (st: lstat; target: the link's resolved target, for a symlink, and
 * tst its stat, NULL if dangling). */
json_t *e2b_entry_json(const char *path, const struct stat *st, const char *target,
		       const struct stat *tst, const struct e2b_user *u);
/* Go's os.FileMode.String() of a mode. out: >= 15 bytes (a character device with setuid,
 * setgid and sticky bits is "Dugctrwxrwxrwx"). */
void e2b_permissions(mode_t mode, char *out);
/* Go's os.ProcessState.String() of an exit: "exit status 3", "signal: killed". */
void e2b_exit_status(bool signaled, int n, char *out, size_t len);
/* An unsigned integer field of a request (uint32 and the like): a JSON number or a string of
 * digits, as proto3 JSON allows, at most max; absent or null is 0. false for anything else. */
bool e2b_pb_uint(json_t *v, uint64_t max, uint64_t *out);
/* The same as a row's parse (common/jfields.h): at most the row's max, into a uint64_t at
 * dst; refused as "PATH: <the row's refusal>". */
int e2b_pb_uint_parse(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e);
/* A PTY's size {"rows", "cols"} (absent: 0, the default): false unless both are unsigned
 * integers a terminal can have (at most 65535). */
bool e2b_pty_size(json_t *size, unsigned *rows, unsigned *cols);

/* Every request's message, or JSON body (none reads as {}), is read against a table of rows
 * of common/jfields.h into base (NULL: checks only), in the table's order, fields no row names
 * ignored (protobuf JSON's rule, and E2B's API's). A refusal is in the row's words: "PATH:
 * <refusal>" (the row's refusal member) for a missing member or one of the wrong type or
 * range, or what its parse said; the request fails in its style (400, or invalid_argument).
 * The rows' callbacks get the request as the options' arg. */
int e2b_read_msg(struct aj_srv_req *r, const struct aj_jf_field *rows, void *base);

/* The parse of an AJ_JF_STRING row that keeps the string where it is: a const char * at dst,
 * borrowed from the message, which lives as long as the request. */
int e2b_keep_string(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e);
#define E2B_PATH_ROW(n, base, m)                                                               \
	{.name = (n), .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED, .off = offsetof(base, m),   \
	 .parse = e2b_keep_string, .refusal = "a path is required"}

/* A ProcessSelector as read: a pid, a tag, both or neither (e2b_proc_find needs one). */
struct e2b_selector {
	bool have_pid;
	int64_t pid;
	const char *tag; /* borrowed from the message */
};
/* The parse of a "process" row (AJ_JF_ANY) into a struct e2b_selector at dst: lenient, as the
 * calls always were: what is not a selector selects nothing. */
int e2b_read_selector(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e);
#define E2B_SELECTOR_ROW(base, m)                                                              \
	{.name = "process", .type = AJ_JF_ANY, .off = offsetof(base, m),                       \
	 .parse = e2b_read_selector}

/* ---- watchers (watch.c) ----------------------------------------------------------------- */

void e2b_watchers_free(struct aj_e2b *e);

#endif
