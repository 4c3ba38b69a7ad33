/* policy/users.c: --user specs against passwd and group text as docker reads them. */
#include <string.h>

#include "policy/users.h"
#include "unit.h"

static const char passwd[] = "root:x:0:0:root:/root:/bin/sh\n"
			     "# a comment\n"
			     "broken line\n"
			     "app:x:1000:1000:app:/home/app:/bin/bash\n"
			     "big:x:70000:70000::/home/big:/bin/sh\n"
			     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin";
static const char group[] = "root:x:0:\nstaff:x:50:app,other\napp:x:1000:\n"
			    "wheel:x:10:root,app\nhuge:x:90000:app\n";

static void resolves(void)
{
	struct aj_user u;

	CHECK(aj_user_resolve(passwd, group, "app", &u) == AJ_USER_OK && u.uid == 1000 &&
		      u.gid == 1000 && u.found && !strcmp(u.home, "/home/app") &&
		      !strcmp(u.shell, "/bin/bash"),
	      "a name: its uid, gid, home and shell");
	CHECK(u.n_groups == 2 && u.groups[0] == 50 && u.groups[1] == 10,
	      "its supplementary groups, in file order; none above 65535");
	CHECK(aj_user_resolve(passwd, group, "1000", &u) == AJ_USER_OK && u.found &&
		      !strcmp(u.name, "app"),
	      "a uid the passwd has: its entry");
	CHECK(aj_user_resolve(passwd, group, "4321", &u) == AJ_USER_OK && !u.found &&
		      u.uid == 4321 && u.gid == 4321 && !u.name[0],
	      "a uid the passwd lacks: its own gid, no entry");
	CHECK(aj_user_resolve(passwd, group, "app:staff", &u) == AJ_USER_OK && u.gid == 50,
	      "NAME:GROUP");
	CHECK(aj_user_resolve(passwd, group, "app:7", &u) == AJ_USER_OK && u.gid == 7, "NAME:GID");
	CHECK(aj_user_resolve(NULL, NULL, "root", &u) == AJ_USER_OK && u.uid == 0 && u.found &&
		      !strcmp(u.home, "/root"),
	      "root without a passwd");
	CHECK(aj_user_resolve(passwd, group, "ghost", &u) == AJ_USER_NO_USER &&
		      !strcmp(u.name, "ghost"),
	      "an unknown name: NO_USER, named");
	CHECK(aj_user_resolve(passwd, group, "app:nogroup", &u) == AJ_USER_NO_GROUP,
	      "an unknown group: NO_GROUP");
	CHECK(aj_user_resolve(passwd, group, "big", &u) == AJ_USER_RANGE,
	      "an entry above 65535: RANGE");
	CHECK(aj_user_resolve(passwd, group, "app:huge", &u) == AJ_USER_RANGE,
	      "a group above 65535: RANGE");
	CHECK(aj_user_resolve(passwd, group, "broken", &u) == AJ_USER_NO_USER,
	      "a line that does not parse is no user");
	CHECK(aj_group_has_gid(group, 50) && !aj_group_has_gid(group, 51), "group ids");
}

static void syntax(void)
{
	static const char *const good[] = {"root", "app", "0", "65535", "a:b", "1:2", "w-d.x_y"};
	static const char *const bad[] = {"",       ":",     "a:",  ":b",  "a b", "65536",
					  "a:65536", "a;b",   "a/b", "123456", "a:b:c"};

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		CHECK(aj_user_spec_ok(good[i]), "spec \"%s\" accepted", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(!aj_user_spec_ok(bad[i]), "spec \"%s\" refused", bad[i]);
}

int main(void)
{
	resolves();
	syntax();
	UNIT_EXIT();
}
