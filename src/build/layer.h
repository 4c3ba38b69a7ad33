/* Writing an image layer: a gzip-compressed tar (pax), as the OCI image spec has it, into the
 * image store's blobs, from a build step's result. Two sources:
 *
 * - a step's system layer (an overlay upper directory): overlay whiteouts (character devices
 *   0/0) become ".wh.NAME" entries and opaque directories a ".wh..wh..opq" entry in them;
 *   user.* attributes go with their files, overlayfs' own (user.overlay.*) do not;
 * - files a COPY or ADD takes (a tree of the build context or of another stage), placed
 *   under a destination, with the owner and mode the instruction gives.
 *
 * Every walk is descriptor-relative and never follows a symlink; entries are written in name
 * order, so that the same files make the same blob. The tar is written here (ustar headers,
 * a pax header before one whose name, link or size ustar cannot hold, and for user.*
 * attributes), compressed with zlib; its gzip header carries no time.
 * The layer's diff_id is learnt when the store unpacks the blob (aj_images_layer_add()).
 *
 * A writer owns its archive and its blob writer until aj_layer_commit() or
 * aj_layer_abort(), which release them.
 */
#ifndef AJ_BUILD_LAYER_H
#define AJ_BUILD_LAYER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "image/blobs.h"
#include "image/digest.h"

struct aj_layer_writer {
	void *z; /* the zlib stream */
	struct aj_blob_writer w;
	uint64_t left, size; /* the current file's data still owed, and its size */
	struct aj_hasher *content; /* names, types, modes, owners, links and data: not times */
	/* the paths written (a tar with a path twice is refused by other tools): a set */
	char **paths;
	size_t paths_cap, n_paths;
	bool writing_whiteout; /* the entry being written is one (".wh." allowed) */
	struct aj_err *err;
	bool failed;
	/* hard links: the first path written for each (device, inode) of several links */
	struct aj_layer_link *links; /* a table of n_links slots, links_used of them taken */
	size_t n_links, links_used;
	uint64_t entries;
};

/* How a tree's files are written. */
struct aj_layer_tree {
	const char *dest;     /* the path in the layer its top directory becomes ("" the root) */
	bool overlay;         /* an upper directory: whiteouts and opaque directories */
	bool own;             /* every entry owned by uid:gid (COPY's rule: 0:0 or --chown) */
	uid_t uid;
	gid_t gid;
	int chmod;            /* COPY --chmod: the mode of every entry; -1 their own */
	uid_t self;           /* an owner written as 0 (rootless single-id: the caller); -1 none */
	/* A path (relative to the tree) to leave out, with what is below it; NULL: none. */
	bool (*skip)(void *arg, const char *path, bool dir);
	void *skip_arg;
};

int aj_layer_begin(struct aj_layer_writer *lw, const struct aj_blobs *b, struct aj_err *err);
/* A directory entry, as the parents of what follows (their mode, owner and time given). */
int aj_layer_dir(struct aj_layer_writer *lw, const char *path, mode_t mode, uid_t uid, gid_t gid,
		 int64_t mtime);
/* The tree at dir_fd (a directory) as `t` says; a regular file or symlink at dir_fd/name when
 * name is non-NULL (then written at t->dest itself). */
int aj_layer_tree(struct aj_layer_writer *lw, int dir_fd, const char *name,
		  const struct aj_layer_tree *t);
/* The merged view of a directory of a stack of layers (dirs: it in each layer that shows
 * through, top first, as build/stack.h finds them) under t->dest, as overlayfs would show
 * it: whiteouts delete, opaque directories hide what is below. */
int aj_layer_merged(struct aj_layer_writer *lw, const int *dirs, size_t n,
		    const struct aj_layer_tree *t);
/* Entries of a tar (ADD's local archive, plain, gzip, bzip2, xz or zstd) under t->dest, with
 * its owners unless t->own; paths with ".." or absolute ones are refused. */
int aj_layer_archive(struct aj_layer_writer *lw, int fd, const char *what,
		     const struct aj_layer_tree *t);
/* The digest of what the entries so far hold, times left out (the cache key of a COPY: a
 * touched file is the same file). */
void aj_layer_content(struct aj_layer_writer *lw, char out[AJ_DIGEST_SIZE]);
/* Closes the archive and publishes the blob; its digest into out. */
int aj_layer_commit(struct aj_layer_writer *lw, char out[AJ_DIGEST_SIZE]);
void aj_layer_abort(struct aj_layer_writer *lw);

/* Whether fd (at its start, rewound after) is an archive libarchive reads as a tar. */
bool aj_layer_is_archive(int fd);

#endif
