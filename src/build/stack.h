/* Reading a path through a stack of image layers (their directories, bottom first) as
 * overlayfs would show it: the topmost layer that has it wins; a whiteout deletes it; a
 * whiteout, a file or a symlink at a directory on the way hides what lower layers have below
 * it; an opaque directory hides lower layers' entries in it. Every component is opened
 * descriptor-relative without following a symlink: a link in a layer (a hostile base
 * image's, or one a stage made) is an entry, never a way out to the host.
 *
 * struct aj_stack_entry owns its descriptors; aj_stack_entry_close() releases them.
 */
#ifndef AJ_BUILD_STACK_H
#define AJ_BUILD_STACK_H

#include <stdbool.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/strv.h"

#define AJ_STACK_MAX 128

struct aj_stack_entry {
	bool found;
	struct stat st; /* the topmost entry's, ids as on disk */
	int parent;     /* its directory in that layer, -1 */
	char name[256];
	int dirs[AJ_STACK_MAX]; /* a directory: it in each layer that shows through, top first */
	size_t n_dirs;
};

/* rel: a path inside the image, "" or "." for its root. 0 with e->found false when the
 * image does not have it; -1 when a layer cannot be read (a directory the caller may not
 * enter). */
int aj_stack_lookup(const struct aj_strv *layers, const char *rel, struct aj_stack_entry *e,
		    struct aj_err *err);
void aj_stack_entry_close(struct aj_stack_entry *e);

#endif
