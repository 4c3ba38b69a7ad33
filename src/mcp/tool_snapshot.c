/* snapshot and restore: checkpoints of the sandbox's workspace (manager/snapshot.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mcp/internal.h"

static const struct aj_jf_field snapshot_params[] = {
	AJ_MCP_STRING("name", 0,
	 "Name for the snapshot: 1-63 of A-Z a-z 0-9 _ . - (default: generated). Names are "
	 "unique; pass it to restore later."),
	AJ_MCP_PARAMS_END,
};

/* A running sandbox is frozen while its files are copied. Where it cannot be (no freezer
 * cgroup: rootless without delegation), it is stopped for the snapshot and started again
 * rather than copied while it writes. */
static int take(struct aj_mcp_binding *b, const char *name, struct aj_snapshot_rec *s,
		bool *restarted, struct aj_err *err)
{
	if (aj_mgr_snapshot(&b->mgr, b->id, name, 0, s, err) == 0)
		return 0;
	if (err->errnum != EOPNOTSUPP)
		return -1;
	fprintf(stderr, "agentjail mcp: cannot freeze \"%s\"; stopping it for the snapshot\n",
		b->name);
	aj_mcp_disconnect(b);
	*restarted = true;
	if (aj_mgr_stop(&b->mgr, b->id, err) < 0 ||
	    aj_mgr_snapshot(&b->mgr, b->id, name, 0, s, err) < 0)
		return -1;
	if (aj_mcp_ctl(b, err) < 0) {
		aj_snapshot_rec_free(s);
		return aj_err_prefix(err, "the snapshot was taken, but");
	}
	return 0;
}

static json_t *run_snapshot(struct aj_mcp_call *c, json_t *args)
{
	struct aj_mcp_binding *b = &c->srv->sb;
	const char *name = aj_mcp_arg_str(args, "name");
	struct aj_snapshot_rec s;
	struct aj_err err;
	char msg[640];
	json_t *res;
	bool restarted = false;

	if (name && !aj_mgr_name_ok(name))
		return aj_mcp_result_error("arguments.name: \"%.100s\" is not a valid name (1-63 of "
					   "A-Z a-z 0-9 _ . -, not starting with - or .)", name);
	/* Running, so that the snapshot has the files as the shell sees them now. */
	if (aj_mcp_ctl(b, &err) < 0)
		return aj_mcp_result_err(&err, "snapshot: the sandbox is not available");
	if (take(b, name, &s, &restarted, &err) < 0) {
		if (err.errnum == EEXIST)
			return aj_mcp_result_error("snapshot: the name \"%s\" is taken; choose another",
						   name ? name : "");
		return aj_mcp_result_err(&err, "snapshot");
	}
	snprintf(msg, sizeof msg, "Snapshot \"%s\" taken (%lld bytes changed since the previous "
				  "layer). restore with this name puts the workspace back to now.%s",
		 s.name, (long long)s.size_bytes,
		 restarted ? " The sandbox had to be restarted for it (this host cannot freeze "
			     "it): running processes ended." : "");
	res = aj_mcp_result_text(msg, json_pack("{s:s, s:s, s:I}", "name", s.name, "id", s.id,
						 "size_bytes", (json_int_t)s.size_bytes));
	aj_snapshot_rec_free(&s);
	return res;
}

const struct aj_mcp_tool aj_mcp_tool_snapshot = {
	.name = "snapshot",
	.title = "Snapshot the sandbox's workspace",
	.description = "Freezes the current state of the workspace (the files under the working "
		       "directory and everything else the sandbox changed) as a named snapshot. "
		       "Running processes are not affected. Take one before risky changes.",
	.params = snapshot_params,
	.run = run_snapshot,
};

static const struct aj_jf_field restore_params[] = {
	AJ_MCP_STRING("snapshot", AJ_JF_REQUIRED,
	 "Name of a snapshot taken of this sandbox (by the snapshot tool)."),
	AJ_MCP_PARAMS_END,
};

/* Only this sandbox's own snapshots: another sandbox's could carry another task's files. */
static json_t *check_own(struct aj_mcp_binding *b, const char *ref)
{
	struct aj_snapshot_rec s;
	struct aj_err err;
	bool own;

	if (aj_store_snapshot_get(b->mgr.store, ref, NULL, &s, &err) < 0)
		return err.errnum == ENOENT
			       ? aj_mcp_result_error("restore: no snapshot named \"%.100s\"", ref)
			       : aj_mcp_result_err(&err, "restore");
	own = !strcmp(s.source, b->id);
	aj_snapshot_rec_free(&s);
	return own ? NULL
		   : aj_mcp_result_error("restore: \"%.100s\" is not a snapshot of this sandbox",
					 ref);
}

static json_t *run_restore(struct aj_mcp_call *c, json_t *args)
{
	struct aj_mcp_binding *b = &c->srv->sb;
	const char *ref = aj_mcp_arg_str(args, "snapshot");
	struct aj_err err;
	char msg[512];
	json_t *res;

	if ((res = check_own(b, ref)))
		return res;
	aj_mcp_disconnect(b); /* the restore restarts the sandbox: a new supervisor */
	if (aj_mgr_restore(&b->mgr, b->id, ref, &err) < 0)
		return aj_mcp_result_err(&err, "restore");
	if (aj_mcp_ctl(b, &err) < 0)
		return aj_mcp_result_err(&err, "restore: the workspace was restored, but the sandbox "
					       "did not come back");
	snprintf(msg, sizeof msg, "Restored the workspace to snapshot \"%.100s\". The sandbox was "
				  "restarted: processes that were running are gone.", ref);
	return aj_mcp_result_text(msg, NULL);
}

const struct aj_mcp_tool aj_mcp_tool_restore = {
	.name = "restore",
	.title = "Restore the sandbox's workspace from a snapshot",
	.description = "Puts the workspace back exactly as it was when the snapshot was taken: "
		       "changes made since are discarded. The sandbox restarts, so running "
		       "processes (servers, background jobs) end. The snapshot itself stays and "
		       "can be restored again.",
	.params = restore_params,
	.destructive = true,
	.idempotent = true,
	.run = run_restore,
};
