/* Per-container state of the OCI runtime under --root: <root>/<id>/ holds
 *   state.json   what `state` reports and what the other verbs need (init's pid and start
 *                time, bundle, cgroup path, whether `start` ran);
 *   config.json  the bundle's config as it was at create (exec rebuilds the plan from it);
 *   report.json  the enforcement report (`agentjail oci report ID`);
 *   exec.fifo    the start fifo until `start` consumes it.
 * Files are replaced atomically (write, then rename). The state owns `annotations`.
 */
#ifndef AJ_OCI_STATE_H
#define AJ_OCI_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct aj_oci_state {
	char id[256];
	char dir[4096];
	pid_t pid;
	uint64_t pid_start;
	char bundle[4096];
	char rootfs[4096];
	char created[64]; /* RFC 3339 with nanoseconds, UTC */
	bool started;
	char cgroup_path[512];
	json_t *annotations;
};

/* Checks the id (runc's rule: letters, digits, "_+-." and not "." or "..") and fills dir. */
int aj_oci_state_init(struct aj_oci_state *st, const char *root, const char *id,
		      struct aj_err *err);
/* Loads <root>/<id>/state.json; a missing container is an error saying "does not exist". */
int aj_oci_state_load(struct aj_oci_state *st, const char *root, const char *id,
		      struct aj_err *err);
int aj_oci_state_save(const struct aj_oci_state *st, struct aj_err *err);
/* Writes a file of the container's directory atomically. */
int aj_oci_state_write(const struct aj_oci_state *st, const char *name, const char *text,
		       struct aj_err *err);
/* The container's directory and everything in it. */
int aj_oci_state_remove(const struct aj_oci_state *st, struct aj_err *err);
void aj_oci_state_free(struct aj_oci_state *st);

bool aj_oci_state_alive(const struct aj_oci_state *st);
/* "created", "running", "paused" or "stopped"; `frozen` is the cgroup's freezer state. */
const char *aj_oci_state_status(const struct aj_oci_state *st, bool frozen);
/* The document `state` prints (runc's fields). New reference. */
json_t *aj_oci_state_json(const struct aj_oci_state *st, const char *status);

#endif
