/* Users and groups of a root's /etc/passwd and /etc/group text, as docker reads a --user
 * spec: NAME or UID, optionally :GROUP or :GID. Pure (text in, ids out): the plan resolves an
 * image's user with it (from the image's layers), init a command's (from the sandbox's own
 * files). Lines that do not parse are skipped. */
#ifndef AJ_POLICY_USERS_H
#define AJ_POLICY_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AJ_USER_MAX_GROUPS 32

struct aj_user {
	char name[64], home[512], shell[512]; /* "" when the passwd lacks the user */
	uint32_t uid, gid;
	bool found;                           /* the passwd has the user */
	uint32_t groups[AJ_USER_MAX_GROUPS];  /* groups naming the user as a member, but its
					       * primary one */
	size_t n_groups;
};

enum aj_user_result {
	AJ_USER_OK = 0,
	AJ_USER_NO_USER,  /* a name the passwd lacks (a uid is fine without an entry) */
	AJ_USER_NO_GROUP, /* a group name the group file lacks */
	AJ_USER_RANGE,    /* an id above 65535 */
};

/* Resolves spec against passwd and group (either may be NULL). "root" resolves without a
 * passwd. A uid without an entry gets its own gid unless one is given. */
enum aj_user_result aj_user_resolve(const char *passwd, const char *group, const char *spec,
				    struct aj_user *u);
/* The passwd entry named `name` (or, name NULL, with uid `uid`): the first that matches. */
bool aj_passwd_find(const char *passwd, const char *name, uint32_t uid, struct aj_user *u);
bool aj_group_has_gid(const char *group, uint32_t gid);
/* The syntax of a spec: each side a name as useradd allows it or an id 0-65535. */
bool aj_user_spec_ok(const char *spec);

#endif
