/* Builds run for the API (E2B's template builds, docs/e2b.md "Building templates"): each is
 * a directory that outlives the daemon, and the build itself a process of its own
 * (`agentjail __build-job`), started by the daemon and detached from it, so that a build of
 * minutes holds no worker and survives a restart of the daemon.
 *
 * STATE/builds/<id>/          id: a UUID, E2B's buildID
 *   request.json   {"owner", "template", "name" (NAME[:TAG]), "tags": [...], "policy": {...},
 *                   "created_ms"}: written when the build is requested
 *   template.json  the template (build/template.h): written once, when the build is started
 *   lock           flocked by the build's process while it runs
 *   status.json    {"status": "building"|"ready"|"error", "message", "step", "image"},
 *                  replaced whole (rename) as it changes
 *   log.jsonl      {"timestamp", "level", "message"} per line of the build's output
 *   context/       the uploaded files, unpacked, while the build runs
 * STATE/builds/files/<owner key>/<hash>.tar
 *                  an upload (the SDK's tar, gzip or not) under the SDK's hash of its files;
 *                  per owner, so that no owner's upload stands in for another's
 *
 * Nothing here trusts what a directory holds more than the daemon wrote: ids and hashes are
 * checked before they become paths.
 */
#ifndef AJ_BUILD_JOB_H
#define AJ_BUILD_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define AJ_JOB_ID_LEN 36 /* a UUID */
#define AJ_JOB_MAX_RUNNING 2 /* per owner */

bool aj_job_id_ok(const char *id);

/* A new build for owner: request (the members above but "owner" and "created_ms", which
 * this adds) written, id (AJ_JOB_ID_LEN + 1 bytes) given. */
int aj_job_new(const char *state, const char *owner, json_t *request, char *id,
	       struct aj_err *err);
/* The request of build id if owner's (else ENOENT, as for one that does not exist). */
int aj_job_request(const char *state, const char *id, const char *owner, json_t **out,
		   struct aj_err *err);
/* How many of owner's builds are running (their process holds the lock, or was started in
 * the last moments). */
unsigned aj_job_running(const char *state, const char *owner);
/* Writes the template and starts the build's process: EEXIST if it was started already,
 * EAGAIN if owner has AJ_JOB_MAX_RUNNING builds running (counted and started under one
 * lock, STATE/builds/lock). */
int aj_job_start(const char *state, const char *id, const char *owner, json_t *tpl,
		 struct aj_err *err);
/* {"status", "message"?, "step"?, "image"?}: "waiting" until started; a build whose process
 * ended without a result is an "error" saying so. */
json_t *aj_job_status(const char *state, const char *id);
/* Log entries from the offset-th on (at most max), as E2B's BuildLogEntry. */
json_t *aj_job_logs(const char *state, const char *id, size_t offset, size_t max);

/* Uploads: whether owner's upload of hash is there, and storing one (data of len bytes). */
bool aj_job_file_present(const char *state, const char *owner, const char *hash);
int aj_job_file_put(const char *state, const char *owner, const char *hash, const void *data,
		    size_t len, struct aj_err *err);

/* gc: builds ended (or never started, or whose process died) AJ_JOB_KEEP_S ago, and uploads
 * no build has used for as long (a build touches what it unpacks). The number removed. */
#define AJ_JOB_KEEP_S (7 * 24 * 3600)
unsigned aj_job_gc(const char *state);

/* For the build's process (cli/cmd_build_job.c): its directory, an upload's path, its
 * status (replaced whole), and one log entry appended to the descriptor of log.jsonl. */
json_t *aj_job_read(const char *state, const char *id, const char *name);
void aj_job_dir(const char *state, const char *id, char *buf, size_t len);
void aj_job_file_path(const char *state, const char *owner, const char *hash, char *buf,
		      size_t len);
int aj_job_set_status(const char *state, const char *id, json_t *status, struct aj_err *err);
void aj_job_log(int fd, const char *level, const char *msg, size_t len);

#endif
