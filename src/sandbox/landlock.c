#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

/* 1: added; 0: nothing to add (an optional path missing, or no rights there). */
static int add_path_rule(int ruleset, const struct aj_landlock_rule *rule, uint64_t handled,
			 struct aj_err *err)
{
	_cleanup_close_ int fd = open(rule->path, O_PATH | O_CLOEXEC);
	struct ll_path_beneath_attr attr;
	struct stat st;

	if (fd < 0 && rule->optional)
		return 0;
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_LANDLOCK, "open \"%s\" for a rule", rule->path);
	if (fstat(fd, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_LANDLOCK, "stat \"%s\"", rule->path);
	attr.parent_fd = fd;
	attr.allowed_access = rule->access & handled;
	if (!S_ISDIR(st.st_mode))
		attr.allowed_access &= AJ_LL_FS_FILE_RIGHTS;
	if (!attr.allowed_access)
		return 0;
	if (syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &attr, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_LANDLOCK, "add rule for \"%s\"", rule->path);
	return 1;
}

/* Whether a rule added before rules[i] grants its rights on its path or an ancestor. */
static bool covered(const struct aj_landlock_rule *rules, const bool *added, size_t i,
		    uint64_t handled)
{
	uint64_t want = rules[i].access & handled;

	for (size_t j = 0; j < i; j++)
		if (added[j] && (want & ~(rules[j].access & handled)) == 0 &&
		    aj_path_within(rules[i].path, rules[j].path))
			return true;
	return false;
}

static int add_port_rule(int ruleset, uint16_t port, uint64_t access, struct aj_err *err)
{
	struct ll_net_port_attr attr = {.allowed_access = access, .port = port};

	if (syscall(__NR_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &attr, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_LANDLOCK, "add TCP %s rule for port %u",
				  access == AJ_LL_NET_BIND_TCP ? "bind" : "connect", port);
	return 0;
}

int aj_landlock_apply(const struct aj_landlock_spec *spec, struct aj_err *err)
{
	struct ll_ruleset_attr attr = {
		.handled_access_fs = spec->handled_fs,
		.handled_access_net = spec->handled_net,
		.scoped = spec->scoped,
	};
	/* The attribute struct grew with the ABI; pass the size this kernel knows. */
	size_t size = spec->abi >= 6 ? sizeof attr
		    : spec->abi >= 4 ? offsetof(struct ll_ruleset_attr, scoped)
				     : offsetof(struct ll_ruleset_attr, handled_access_net);
	_cleanup_close_ int ruleset = -1;
	bool added[AJ_LANDLOCK_MAX_RULES] = {false};
	int r;

	if (spec->n_rules > AJ_LANDLOCK_MAX_RULES)
		return aj_err_set(err, AJ_LAYER_LANDLOCK, E2BIG, "%zu path rules (at most %d)",
				  spec->n_rules, AJ_LANDLOCK_MAX_RULES);
	ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, size, 0);
	if (ruleset < 0)
		return aj_err_sys(err, AJ_LAYER_LANDLOCK,
				  "landlock_create_ruleset (fs 0x%llx, net 0x%llx, scope 0x%llx)",
				  (unsigned long long)attr.handled_access_fs,
				  (unsigned long long)attr.handled_access_net,
				  (unsigned long long)attr.scoped);
	for (size_t i = 0; i < spec->n_rules; i++) {
		if (covered(spec->rules, added, i, spec->handled_fs))
			continue;
		if ((r = add_path_rule(ruleset, &spec->rules[i], spec->handled_fs, err)) < 0)
			return -1;
		added[i] = r > 0;
	}
	for (size_t i = 0; spec->handled_net && i < spec->n_connect_ports; i++)
		if (add_port_rule(ruleset, spec->connect_ports[i], AJ_LL_NET_CONNECT_TCP, err) < 0)
			return -1;
	for (size_t i = 0; spec->handled_net && i < spec->n_bind_ports; i++)
		if (add_port_rule(ruleset, spec->bind_ports[i], AJ_LL_NET_BIND_TCP, err) < 0)
			return -1;
	if (syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_LANDLOCK, "landlock_restrict_self");
	return 0;
}
