/* Writing a tar of plain files: what an exported OCI layout is (oci-layout, index.json,
 * blobs/sha256/<digest>). POSIX ustar headers, names under 100 bytes, regular files only.
 * libarchive reads every tar agentjail takes in; its writer, linked statically, would bring
 * every compression library it supports with it (bzip2, lzma, libxml2 and ICU), for what is
 * here a header and padding per file. Nothing to free but the descriptor, the caller's.
 */
#ifndef AJ_IMAGE_TARWRITE_H
#define AJ_IMAGE_TARWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* A file `name` of `size` bytes whose content follows with aj_tar_data(). */
int aj_tar_file(int out, const char *name, uint64_t size, struct aj_err *err);
int aj_tar_data(int out, const void *data, size_t len, struct aj_err *err);
/* Pads the file's content to the block size. */
int aj_tar_pad(int out, uint64_t size, struct aj_err *err);
/* A file whose content is the descriptor's (read to its end, size bytes). */
int aj_tar_copy(int out, const char *name, int fd, uint64_t size, struct aj_err *err);
/* The end-of-archive marker. */
int aj_tar_end(int out, struct aj_err *err);

#endif
