/* The sandbox an MCP server is bound to, and its control connection. A session outlives
 * what happens to the sandbox meanwhile: an idle timer may pause or stop it, someone may
 * restart it, its supervisor may die. Every tool call therefore begins with aj_mcp_ctl(),
 * which looks at the sandbox's state and brings it and the connection back. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control/proto.h"
#include "mcp/internal.h"
#include "policy/policy.h"

/* What the stored policy says about commands and paths: the working directory relative paths
 * start from, the per-command timeout and the output cap that tools must not exceed. */
static int read_policy(struct aj_mcp_binding *b, const struct aj_sandbox_rec *r,
		       struct aj_err *err)
{
	struct aj_policy pol;
	const char *cwd;
	int rc = 0;

	aj_policy_init(&pol);
	if (aj_policy_load_text(&pol, r->policy, err) < 0) {
		rc = aj_err_prefix(err, "the stored policy of \"%s\"", r->name);
	} else {
		cwd = pol.cwd ? pol.cwd : pol.workspace ? pol.workspace : pol.home;
		snprintf(b->cwd, sizeof b->cwd, "%s", cwd && cwd[0] == '/' ? cwd : "/");
		b->policy_timeout_ms = pol.limits.timeout_ms;
		b->policy_output_cap = pol.limits.output_bytes;
	}
	aj_policy_free(&pol);
	return rc;
}

int aj_mcp_bind(struct aj_mcp_binding *b, const struct aj_mcp_opts *o, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	int rc;

	memset(b, 0, sizeof *b);
	b->ctl = -1;
	if (aj_mgr_open(&b->mgr, o->state_dir, NULL, err) < 0)
		return -1;
	b->mgr_open = true;
	if (o->create) {
		if (aj_mgr_create(&b->mgr, o->create, &r, err) < 0)
			return aj_err_prefix(err, "mcp --create");
		b->created = true;
		b->remove_on_exit = o->remove_on_exit;
	} else if (aj_mgr_get(&b->mgr, o->ref, &r, err) < 0) {
		return -1;
	}
	snprintf(b->id, sizeof b->id, "%s", r.id);
	snprintf(b->name, sizeof b->name, "%s", r.name);
	rc = read_policy(b, &r, err);
	aj_sandbox_rec_free(&r);
	if (rc < 0)
		return -1;
	/* Up now, so that a sandbox that cannot start fails the command, not the first call. */
	return aj_mcp_ctl(b, err);
}

void aj_mcp_disconnect(struct aj_mcp_binding *b)
{
	if (b->ctl >= 0)
		close(b->ctl);
	b->ctl = -1;
}

void aj_mcp_unbind(struct aj_mcp_binding *b)
{
	struct aj_err err;

	aj_mcp_disconnect(b);
	if (b->mgr_open && b->created && b->remove_on_exit) {
		if (aj_mgr_remove(&b->mgr, b->id, true, &err) < 0) {
			aj_err_prefix(&err, "mcp --rm: delete sandbox \"%s\"", b->name);
			aj_err_print(&err, stderr);
		}
	}
	if (b->mgr_open)
		aj_mgr_close(&b->mgr);
	b->mgr_open = false;
}

/* Whether the connection still leads to a live supervisor. Messages waiting on it are stale
 * (the end of a command a cancelled call left behind, the answer to its kill): dropped. */
static bool conn_alive(int fd)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		json_t *m = NULL;

		if (poll(&p, 1, 0) < 0)
			return errno == EINTR;
		if (!(p.revents & POLLIN))
			return !(p.revents & (POLLHUP | POLLERR | POLLNVAL));
		/* No descriptors wanted: any that come are closed. */
		if (aj_ctl_recv(fd, &m, NULL, NULL, 0) < 0 && errno != EPROTO)
			return errno == ETIMEDOUT || errno == EAGAIN;
		json_decref(m);
	}
}

/* Brings a paused or stopped sandbox back; *restarted when its compute is new (the old
 * connection, if any, leads nowhere). */
static int wake(struct aj_mcp_binding *b, const struct aj_sandbox_rec *r, bool *restarted,
		struct aj_err *err)
{
	*restarted = false;
	if (r->state == AJ_ST_RUNNING)
		return 0;
	if (r->state == AJ_ST_PAUSED) {
		fprintf(stderr, "agentjail mcp: resuming the paused sandbox \"%s\"\n", b->name);
		if (aj_mgr_pause(&b->mgr, b->id, false, err) < 0 && err->errnum != EALREADY)
			return -1;
		return 0;
	}
	if (r->state == AJ_ST_STOPPED) {
		fprintf(stderr, "agentjail mcp: starting the stopped sandbox \"%s\"\n", b->name);
		*restarted = true;
		/* EBUSY: someone else started it meanwhile, which serves as well. */
		if (aj_mgr_start(&b->mgr, b->id, err) < 0 && err->errnum != EBUSY)
			return -1;
		return 0;
	}
	return aj_err_set(err, AJ_LAYER_STATE, EBUSY, "sandbox \"%s\" is %s", b->name,
			  aj_sandbox_state_name(r->state));
}

int aj_mcp_ctl(struct aj_mcp_binding *b, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	bool restarted;
	int rc;

	if (b->ctl >= 0 && !conn_alive(b->ctl)) {
		fprintf(stderr, "agentjail mcp: the supervisor of \"%s\" went away; reconnecting\n",
			b->name);
		aj_mcp_disconnect(b);
	}
	if (aj_mgr_get(&b->mgr, b->id, &r, err) < 0)
		return aj_err_prefix(err, "the sandbox \"%s\"", b->name);
	rc = wake(b, &r, &restarted, err);
	aj_sandbox_rec_free(&r);
	if (rc < 0)
		return -1;
	if (restarted)
		aj_mcp_disconnect(b);
	if (b->ctl < 0) {
		b->ctl = aj_mgr_connect(&b->mgr, b->id, &r, err);
		if (b->ctl < 0)
			return -1;
		aj_sandbox_rec_free(&r);
	}
	return b->ctl;
}

int aj_mcp_path(const struct aj_mcp_binding *b, const char *path, const char *what, char *out,
		size_t out_len, char *why, size_t why_len)
{
	int n;

	if (!path || !path[0])
		return snprintf(why, why_len, "arguments.%s: empty path", what), -1;
	if (path[0] == '/')
		n = snprintf(out, out_len, "%s", path);
	else if (!strcmp(path, "."))
		n = snprintf(out, out_len, "%s", b->cwd);
	else
		n = snprintf(out, out_len, "%s%s%s", b->cwd,
			     b->cwd[strlen(b->cwd) - 1] == '/' ? "" : "/", path);
	if (n < 0 || (size_t)n >= out_len || n > 4095)
		return snprintf(why, why_len, "arguments.%s: path longer than 4095 bytes", what), -1;
	return 0;
}
