/* libFuzzer: an image layer as the unpacker reads it (tar, gzip or zstd), unpacked in this
 * process (not confined: the harness checks the unpacker's own rules) into a fresh directory.
 * Whatever the bytes, nothing may appear outside it: a canary directory beside it stays
 * empty. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tree.h"
#include "image/unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aj_unpack_opts o = {.set_owners = false, .max_bytes = 1 << 20, .max_entries = 256};
	struct aj_unpack_result res;
	struct aj_err err;
	char layer[128], canary[128];
	int fd = memfd_create("layer", MFD_CLOEXEC), dfd, top, cfd;

	if (!root[0]) {
		snprintf(root, sizeof root, "/tmp/ajfuzz-layer.%d", (int)getpid());
		mkdir(root, 0700);
	}
	snprintf(layer, sizeof layer, "%s/layer", root);
	snprintf(canary, sizeof canary, "%s/canary", root);
	mkdir(layer, 0700);
	mkdir(canary, 0700);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	lseek(fd, 0, SEEK_SET);
	dfd = open(layer, O_RDONLY | O_DIRECTORY);
	(void)aj_image_unpack_here(fd, dfd, &o, &res, &err);
	close(dfd);
	close(fd);
	cfd = open(canary, O_RDONLY | O_DIRECTORY);
	if (rmdir(canary) < 0) /* anything inside it fails the removal */
		abort();
	close(cfd);
	top = open(root, O_RDONLY | O_DIRECTORY);
	aj_tree_remove_at(top, "layer", &err);
	close(top);
	return 0;
}
