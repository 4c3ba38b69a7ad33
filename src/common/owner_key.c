#include "common/owner_key.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>

#include "common/cleanup.h"
#include "common/util.h"

int aj_owner_key(const char *owner, char *key)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(owner, strlen(owner), md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen < AJ_OWNER_KEY_LEN / 2)
		return -1;
	for (int i = 0; i < AJ_OWNER_KEY_LEN / 2; i++)
		snprintf(key + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int aj_owner_dir_open(const char *path, bool make, int *dir, int *lock, struct aj_err *err)
{
	_cleanup_close_ int d = -1, l = -1;

	*dir = *lock = -1;
	if (make && aj_mkdir_p(path, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "make \"%s\"", path);
	d = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (d < 0 && errno == ENOENT && !make)
		return 0;
	if (d < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
	l = openat(d, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (l < 0 || flock(l, LOCK_EX) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s/.lock\"", path);
	*dir = aj_steal_fd(&d);
	*lock = aj_steal_fd(&l);
	return 0;
}
