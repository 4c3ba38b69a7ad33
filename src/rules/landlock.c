#include "rules/landlock.h"

uint64_t aj_landlock_fs_rights(int abi)
{
	uint64_t r = (1ULL << 13) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
	if (abi >= 2)
		r |= AJ_LL_FS_REFER;
	if (abi >= 3)
		r |= AJ_LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= AJ_LL_FS_IOCTL_DEV;
	return r;
}
