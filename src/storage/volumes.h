/* Volumes: named directories of an owner that outlive every sandbox and that several may mount
 * at once (docs/storage.md "Volumes"). A volume is a plain shared directory: writes from one
 * sandbox are seen by the others as on any local filesystem, with no isolation between them.
 * Its files keep the ids the sandboxes see (0-65535, mapped like a persistent workspace's), so
 * every sandbox that mounts it sees the same owners. A size makes its data a quota directory
 * (storage/quota.h).
 *
 * Layout: STATE/volumes/<owner key>/<name>/{meta.json, lock, data/}, the owner key that of
 * common/owner_key.h; made as .tmp-<name> and renamed, removed by renaming to .rm-<id> first,
 * all under the owner directory's .lock. A sandbox that mounts a volume holds a shared flock
 * on its lock for as long as it runs; rm refuses while one does (unless forced).
 *
 * Errors are in the state layer; a missing volume has class NOT_FOUND, a taken name EXISTS, a
 * volume in use WRONG_STATE.
 */
#ifndef AJ_STORAGE_VOLUMES_H
#define AJ_STORAGE_VOLUMES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/strv.h"

#define AJ_VOLUME_NAME_MAX 63
#define AJ_VOLUME_SIZE_MIN (16ULL << 20)
#define AJ_VOLUME_LIST_MAX 10000 /* entries of one listing */
/* The owner of a new volume's root directory, as the sandboxes see it: the default sandbox
 * user (policy.h user.uid), so that sandboxes write there without root. */
#define AJ_VOLUME_ROOT_UID 1000

struct aj_volume {
	char id[21]; /* "vol_" and 16 hex digits */
	char name[AJ_VOLUME_NAME_MAX + 1];
	uint64_t size; /* the quota, 0: none */
	int64_t created_ms;
	char dir[4200]; /* STATE/volumes/<owner key>/<name> */
};

/* NULL if `name` may name a volume (1-63 of letters, digits, '_', '-', '.', the first a letter
 * or digit), else why not. */
const char *aj_volume_name_refusal(const char *name);

/* A new volume. size > 0 needs a quota here: refused otherwise, with the probe's finding. */
int aj_volume_create(const char *state, const char *owner, const char *name, uint64_t size,
		     struct aj_volume *out, struct aj_err *err);
/* ref: a name or an id. */
int aj_volume_get(const char *state, const char *owner, const char *ref, struct aj_volume *out,
		  struct aj_err *err);
int aj_volume_list(const char *state, const char *owner, struct aj_volume **out, size_t *n,
		   struct aj_err *err);
/* Removes the volume and its files; refused while a sandbox mounts it, unless force. */
int aj_volume_remove(const char *state, const char *owner, const char *ref, bool force,
		     struct aj_err *err);

/* The volume's files: "<dir>/data". */
int aj_volume_data(const struct aj_volume *v, char *buf, size_t len);
/* Takes the shared lock a sandbox that mounts v holds while it runs; the descriptor. */
int aj_volume_hold(const struct aj_volume *v, struct aj_err *err);
/* Whether a sandbox holds v now. */
bool aj_volume_in_use(const struct aj_volume *v);
/* Bytes its files take: the quota's figure, else a walk of the tree. */
uint64_t aj_volume_used(const struct aj_volume *v);

json_t *aj_volume_json(const struct aj_volume *v);

/* Copies between the host path `host` and `vpath` in volume v (in: into the volume, what is made
 * owned by AJ_VOLUME_ROOT_UID as root; out: to the host, owned by the caller), like cp -r: into
 * a destination that is a directory, else as it. Inside the volume nothing is followed: paths
 * resolve beneath its data without symlinks, links are copied as links, devices, FIFOs and
 * sockets skipped (volume_copy.c). *files: entries copied. */
int aj_volume_copy(const struct aj_volume *v, const char *vpath, const char *host, bool in,
		   unsigned *files, struct aj_err *err);

/* A volume's files for the APIs (volume_files.c): paths are the volume's ("/" its root),
 * resolved beneath it without following links; the last component is never followed. Errors
 * in the usage layer name the path; a missing one has class NOT_FOUND, an existing directory
 * for mkdir EXISTS. */
struct aj_volume_stat {
	char path[4096]; /* as the API shows it: "/a/b" */
	char name[256];
	char target[4096]; /* a link's */
	struct stat st;
};
/* What to set: uid or gid (uid_t)-1 and mode -1 for "as it is" (a new file: the sandbox user's
 * as root, mode 0644 or 0755). */
struct aj_volume_attrs {
	uid_t uid;
	gid_t gid;
	int mode;
};
int aj_volume_stat(const struct aj_volume *v, const char *path, struct aj_volume_stat *out,
		   struct aj_err *err);
/* The entries below path, depth levels deep (1: its own), into *out (free()). */
int aj_volume_list_dir(const struct aj_volume *v, const char *path, int depth,
		       struct aj_volume_stat **out, size_t *n, struct aj_err *err);
/* parents: make missing directories on the way (mkdir -p, writeFile's "force"). */
int aj_volume_mkdir(const struct aj_volume *v, const char *path, const struct aj_volume_attrs *a,
		    bool parents, struct aj_err *err);
int aj_volume_write(const struct aj_volume *v, const char *path, const void *data, size_t len,
		    const struct aj_volume_attrs *a, bool parents, struct aj_err *err);
/* A regular file opened for reading (*fd_out, the caller's) and its size. */
int aj_volume_open_file(const struct aj_volume *v, const char *path, int *fd_out,
			uint64_t *size, struct aj_err *err);
int aj_volume_chattr(const struct aj_volume *v, const char *path, const struct aj_volume_attrs *a,
		     struct aj_err *err);
/* Removes a file, or a directory with everything below it. */
int aj_volume_remove_path(const struct aj_volume *v, const char *path, struct aj_err *err);

/* An entry of a policy's filesystem.volumes: a volume's name or a host directory (host: an
 * absolute path), mounted at target, read-only when ro. */
struct aj_volume_entry {
	char source[4096];
	char target[4096];
	bool host;
	bool ro;
};
/* Splits `entry` ("SOURCE:TARGET[:ro|:rw]"); -1 with why (into why) when malformed. The syntax
 * only: policy/validate.c checks the paths. */
int aj_volume_entry_parse(const char *entry, struct aj_volume_entry *out, char *why, size_t len);

/* The sources of `entries` (filesystem.volumes) for owner: each volume's data directory, each
 * host directory as given, into dirs; a held lock (aj_volume_hold) per volume appended to
 * *fds (*n_fds of them, the caller closes them when its sandbox ends). A missing volume is an
 * error naming the entry. */
int aj_volumes_attach(const char *state, const char *owner, const struct aj_strv *entries,
		      struct aj_strv *dirs, int **fds, size_t *n_fds, struct aj_err *err);

#endif
