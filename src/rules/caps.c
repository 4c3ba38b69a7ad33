#include "rules/caps.h"

#include <stdio.h>
#include <string.h>

const char *const aj_capset_names[AJ_CAPSET__COUNT] = {"bounding", "effective", "inheritable",
						       "permitted", "ambient"};

/* In the kernel's numbering (linux/capability.h). */
static const char *const names[AJ_CAP_LAST + 1] = {
	"CAP_CHOWN",		  "CAP_DAC_OVERRIDE",	 "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID",		  "CAP_KILL",		 "CAP_SETGID",		"CAP_SETUID",
	"CAP_SETPCAP",		  "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",	  "CAP_NET_RAW",	 "CAP_IPC_LOCK",	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",	  "CAP_SYS_RAWIO",	 "CAP_SYS_CHROOT",	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",	  "CAP_SYS_ADMIN",	 "CAP_SYS_BOOT",	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",	  "CAP_SYS_TIME",	 "CAP_SYS_TTY_CONFIG",	"CAP_MKNOD",
	"CAP_LEASE",		  "CAP_AUDIT_WRITE",	 "CAP_AUDIT_CONTROL",	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",	  "CAP_MAC_ADMIN",	 "CAP_SYSLOG",		"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",	  "CAP_AUDIT_READ",	 "CAP_PERFMON",		"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

int aj_cap_from_name(const char *name)
{
	for (int c = 0; c <= AJ_CAP_LAST; c++)
		if (strcmp(name, names[c]) == 0)
			return c;
	return -1;
}

const char *aj_cap_name(int cap)
{
	return cap >= 0 && cap <= AJ_CAP_LAST ? names[cap] : NULL;
}

uint64_t aj_cap_all(void)
{
	return (UINT64_C(1) << (AJ_CAP_LAST + 1)) - 1;
}

int aj_cap_parse_list(const char *list, uint64_t *mask, char *bad, size_t bad_len)
{
	char name[64];

	*mask = 0;
	if (strcmp(list, "none") == 0)
		return 0;
	for (const char *p = list; *p;) {
		size_t n;
		int c;
		while (*p == ' ' || *p == ',')
			p++;
		n = strcspn(p, ", ");
		if (n == 0)
			break;
		snprintf(name, sizeof name, "%.*s", (int)n, p);
		c = n < sizeof name ? aj_cap_from_name(name) : -1;
		if (c < 0) {
			snprintf(bad, bad_len, "%.*s", (int)n, p);
			return -1;
		}
		*mask |= UINT64_C(1) << c;
		p += n;
	}
	return 0;
}

void aj_cap_format(uint64_t mask, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (int c = 0; c <= AJ_CAP_LAST && off < len; c++)
		if ((mask >> c) & 1)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[c]);
}
