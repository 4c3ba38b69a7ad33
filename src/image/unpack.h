/* Unpacking an image layer: a tar stream (plain, gzip or zstd, as the OCI image
 * spec allows) into an empty directory, the layer as overlayfs stacks it. A
 * layer is hostile input; what each kind of entry becomes is in docs/images.md
 * ("Unpacking") and, per case, here:
 *
 * - paths are relative to the layer: a leading "/" or "./" is dropped, a ".."
 * component is refused; every directory on the way is opened without following
 * a symlink, so an entry cannot be written through a symlink an earlier entry
 * made (refused, naming both);
 * - hard links must name an earlier entry of the same layer, found the same
 * way;
 * - OCI whiteouts (".wh.NAME") become overlay whiteouts (a 0/0 character
 * device), the opaque marker (".wh..wh..opq") the overlay's opaque attribute on
 * its directory;
 * - device nodes are skipped (counted): a sandbox's root is mounted nodev
 * anyway; sockets too;
 * - extended attributes other than user.* are dropped (counted), and so are
 * user.overlay.*, which overlayfs itself reads;
 * - owners are kept as the image has them (0-65535, what a sandbox maps; others
 * refused) when the caller may set them, modes with their setuid bits (the root
 * is mounted nosuid and runs with no_new_privs), modification times;
 * - file data is limited in total (sparse files count their size), and so is
 * the number of entries.
 *
 * aj_image_unpack() runs the unpacking in a child process that the kernel
 * confines to the directory (sandbox/confine.h): a bug in the checks above
 * still cannot write elsewhere. Nothing here allocates what the caller must
 * free.
 */
#ifndef AJ_IMAGE_UNPACK_H
#define AJ_IMAGE_UNPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "host/subids.h"
#include "image/digest.h"

#define AJ_UNPACK_MAX_BYTES (64ULL << 30)
#define AJ_UNPACK_MAX_ENTRIES 2000000

struct aj_unpack_opts {
	bool set_owners;      /* keep the layer's uids and gids (needs CAP_CHOWN) */
	/* Rootless: unpack in a user namespace mapping the caller's subordinate ids
	 * (host/subids.h), owners kept; NULL: in the caller's own. */
	const struct aj_subids *subids;
	uint64_t max_bytes;   /* of file data; 0: AJ_UNPACK_MAX_BYTES */
	uint64_t max_entries; /* 0: AJ_UNPACK_MAX_ENTRIES */
	const char *what;     /* names the layer in errors ("layer sha256:..."); NULL: "layer" */
};

struct aj_unpack_result {
	char diff_id[AJ_DIGEST_SIZE]; /* sha256 of the uncompressed tar: the config's
                                   diff_id */
	uint64_t bytes;               /* file data */
	uint64_t entries;
	uint64_t whiteouts;
	uint64_t skipped_devices; /* device nodes and sockets not made */
	uint64_t dropped_xattrs;
	uint64_t other_owners; /* entries whose owner is not 0:0 */
};

/* Unpacks the layer read from blob_fd into the empty directory `dir`, in a
 * confined child. */
int aj_image_unpack(int blob_fd, const char *dir, const struct aj_unpack_opts *o,
		    struct aj_unpack_result *res, struct aj_err *err);
/* The same in the calling process, unconfined: for the fuzzer and for callers
 * that confine themselves. */
int aj_image_unpack_here(int blob_fd, int dir_fd, const struct aj_unpack_opts *o,
			 struct aj_unpack_result *res, struct aj_err *err);

#endif
