/* libFuzzer: an image's /etc/passwd and /etc/group (hostile: any image can hold any bytes
 * there) and a --user spec. The input is split at the first two NUL bytes into passwd, group
 * and spec; whatever resolves must stay within the ids a sandbox maps. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/users.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 3), *group, *spec;
	struct aj_user u;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = s[size + 1] = s[size + 2] = '\0';
	group = s + strlen(s) + 1;
	spec = group + strlen(group) + 1;
	if (aj_user_spec_ok(spec) && aj_user_resolve(s, group, spec, &u) == AJ_USER_OK) {
		if (u.uid > 65535 || u.gid > 65535 || u.n_groups > AJ_USER_MAX_GROUPS)
			abort();
		for (size_t i = 0; i < u.n_groups; i++)
			if (u.groups[i] > 65535)
				abort();
	}
	(void)aj_user_resolve(s, group, "root", &u);
	(void)aj_passwd_find(s, NULL, 0, &u);
	(void)aj_group_has_gid(group, 0);
	free(s);
	return 0;
}
