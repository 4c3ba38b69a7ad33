#include "image/tarwrite.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static int put(int out, const void *d, size_t n, struct aj_err *err)
{
	if (aj_write_all(out, d, n) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "write the archive");
	return 0;
}

int aj_tar_file(int out, const char *name, uint64_t size, struct aj_err *err)
{
	char h[512];
	unsigned sum = 0;

	if (strlen(name) >= 100)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENAMETOOLONG, "tar name \"%s\"", name);
	memset(h, 0, sizeof h);
	memcpy(h, name, strlen(name) + 1); /* fits: shorter than the 100 bytes of the field */
	snprintf(h + 100, 8, "%07o", 0644);
	snprintf(h + 108, 8, "%07o", 0);
	snprintf(h + 116, 8, "%07o", 0);
	snprintf(h + 124, 12, "%011llo", (unsigned long long)size);
	snprintf(h + 136, 12, "%011o", 0);
	memset(h + 148, ' ', 8);
	h[156] = '0';
	/* magic "ustar\0" and version "00", no terminator of their own */
	static const char magic[8] = {'u', 's', 't', 'a', 'r', '\0', '0', '0'};
	memcpy(h + 257, magic, sizeof magic);
	for (size_t i = 0; i < sizeof h; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	return put(out, h, sizeof h, err);
}

int aj_tar_data(int out, const void *data, size_t len, struct aj_err *err)
{
	return put(out, data, len, err);
}

int aj_tar_pad(int out, uint64_t size, struct aj_err *err)
{
	static const char zero[512];

	return size % 512 ? put(out, zero, 512 - size % 512, err) : 0;
}

int aj_tar_copy(int out, const char *name, int fd, uint64_t size, struct aj_err *err)
{
	char buf[64 * 1024];
	uint64_t done = 0;
	ssize_t n;

	if (aj_tar_file(out, name, size, err) < 0)
		return -1;
	while (done < size && (n = read(fd, buf, sizeof buf)) > 0) {
		if ((uint64_t)n > size - done)
			n = (ssize_t)(size - done);
		if (put(out, buf, (size_t)n, err) < 0)
			return -1;
		done += (uint64_t)n;
	}
	if (done != size)
		return aj_err_set(err, AJ_LAYER_IO, EIO, "%s: %llu of %llu bytes read", name,
				  (unsigned long long)done, (unsigned long long)size);
	return aj_tar_pad(out, size, err);
}

int aj_tar_end(int out, struct aj_err *err)
{
	static const char zero[1024];

	return put(out, zero, sizeof zero, err);
}
