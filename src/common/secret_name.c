#include "common/secret_name.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool aj_secret_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > AJ_SECRET_NAME_MAX || !strncasecmp(name, "sec_", 4))
		return false; /* sec_ begins the ids */
	for (const char *p = name; *p; p++)
		if (!isascii((unsigned char)*p) ||
		    !(isalnum((unsigned char)*p) || *p == '_' || *p == '-'))
			return false;
	return true;
}

int aj_secret_name_canon(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	if (!aj_secret_name_ok(name) || len <= n)
		return -1;
	for (size_t i = 0; i <= n; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	return 0;
}

int aj_secret_value_path(const char *owner_dir, const char *name, char *buf, size_t len)
{
	char canon[AJ_SECRET_NAME_MAX + 1];
	int n;

	if (aj_secret_name_canon(name, canon, sizeof canon) < 0)
		return -1;
	n = snprintf(buf, len, "%s/%s.value", owner_dir, canon);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
