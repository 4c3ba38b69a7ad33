/* Subordinate ids: the host ids an unprivileged user may map into its user namespaces besides
 * its own (/etc/subuid and /etc/subgid, written by useradd or an administrator), through the
 * setuid helpers newuidmap and newgidmap (Debian's uidmap package). With them a rootless
 * image sandbox maps the image's ids 0-65535: 0 to the caller's own uid and gid, 1-65535 to
 * the first 65,535 subordinate ids. Without them a rootless sandbox maps only the caller.
 *
 * The map is the same for every sandbox and every layer of a user's store, so layers are
 * unpacked once, in a user namespace with the map (their files owned by the subordinate ids
 * on disk), and sandboxes see them as the image has them. What the caller cannot reach on
 * disk (a directory of uid 100 inside, mode 0700) is removed or copied in such a namespace
 * too (aj_subids_run()).
 *
 * Nothing here allocates.
 */
#ifndef AJ_HOST_SUBIDS_H
#define AJ_HOST_SUBIDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

/* The ids a sandbox maps: 0-65535. */
#define AJ_SUBIDS_NEEDED 65535u

struct aj_subids {
	bool on;           /* ranges of at least AJ_SUBIDS_NEEDED ids and both helpers */
	uint32_t uid, gid; /* the caller's */
	uint32_t sub_uid, sub_gid; /* the first subordinate uid and gid used */
	char why[256];     /* when off: what is missing */
};

/* The ranges in the text of an /etc/subuid-like file for a user (its name or its uid as a
 * number): the first range of at least `need` ids. 0 and *start set; -1 none. */
int aj_subids_parse(const char *text, const char *name, uint32_t id, uint32_t need,
		    uint32_t *start);
/* What this caller has (uid 0 has no need: s->on false, why says so). */
void aj_subids_probe(struct aj_subids *s);
/* Writes process pid's uid and gid maps with the helpers: 0 the caller, 1-65535 the
 * subordinate ids. pid must be in a user namespace of its own, not yet mapped. */
int aj_subids_map(const struct aj_subids *s, pid_t pid, struct aj_err *err);
/* Runs fn(arg, err) in a forked child that is uid 0 of a new user namespace with that map
 * (holding its capabilities there, none on the host), and waits for it. fn's err comes back;
 * what else it must return, it writes to memory it shares (MAP_SHARED) or to descriptors. */
int aj_subids_run(const struct aj_subids *s, int (*fn)(void *arg, struct aj_err *err), void *arg,
		  struct aj_err *err);
/* aj_subids_run() with this caller's ranges, probed at the first call (common/tree.h's
 * aj_tree_elevate_fn). Without ranges: -1 with err untouched. */
int aj_subids_elevate(int (*fn)(void *arg, struct aj_err *err), void *arg, struct aj_err *err);
/* The two halves of aj_subids_run() for a caller that forks itself: in the child, unshare a
 * user namespace, tell the parent on `sync_fd` and wait for its word; in the parent, map the
 * child and give the word (a byte; the descriptor closed without one is a failure). The
 * parent's half returns -2 when the child could not make its namespace: it sends its own
 * error (what the caller reads from the descriptor next). */
int aj_subids_child_enter(int sync_fd, struct aj_err *err);
int aj_subids_parent_map(const struct aj_subids *s, pid_t pid, int sync_fd, struct aj_err *err);

#endif
