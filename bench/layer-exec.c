/* layer-exec: applies one of agentjail's per-syscall layers on its own, then execs a command,
 * so the syscall benchmark can tell what each layer costs the kernel apart from the rest of
 * the sandbox.
 *
 * usage: layer-exec seccomp|landlock|both CMD [ARGS...]
 *
 * seccomp   agentjail's default filter, the very BPF the build compiled from
 *           data/seccomp/default.rules (linked in from the build directory).
 * landlock  a Landlock domain handling every filesystem right this kernel knows, with one rule
 *           granting all of them beneath "/": nothing is denied, yet every open is checked by
 *           walking its path up to the root, where the rule is.
 */
#define _GNU_SOURCE /* O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

extern const struct sock_filter aj_seccomp_default_bpf[];
extern const unsigned aj_seccomp_default_len;

static void die(const char *what)
{
	fprintf(stderr, "layer-exec: %s: %s\n", what, strerror(errno));
	exit(125);
}

/* Filesystem rights by ABI: 13 in ABI 1, then REFER (2), TRUNCATE (3), IOCTL_DEV (5). */
static uint64_t fs_rights(int abi)
{
	int bits = abi >= 5 ? 16 : abi >= 3 ? 15 : abi >= 2 ? 14 : 13;
	return (UINT64_C(1) << bits) - 1;
}

static void apply_landlock(void)
{
	struct landlock_ruleset_attr attr = {0};
	struct landlock_path_beneath_attr rule = {0};
	int abi, ruleset;

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		die("landlock ABI version");
	attr.handled_access_fs = fs_rights(abi);
	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs,
			       0);
	if (ruleset < 0)
		die("landlock_create_ruleset");
	rule.allowed_access = attr.handled_access_fs;
	rule.parent_fd = open("/", O_PATH | O_CLOEXEC);
	if (rule.parent_fd < 0)
		die("open \"/\"");
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0)
		die("landlock_add_rule \"/\"");
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		die("landlock_restrict_self");
	close(rule.parent_fd);
	close(ruleset);
}

static void apply_seccomp(void)
{
	struct sock_fprog prog = {
		.len = (unsigned short)aj_seccomp_default_len,
		.filter = (struct sock_filter *)aj_seccomp_default_bpf,
	};

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		die("seccomp(SECCOMP_SET_MODE_FILTER)");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[1] : "";
	int ll = !strcmp(mode, "landlock") || !strcmp(mode, "both");
	int sc = !strcmp(mode, "seccomp") || !strcmp(mode, "both");

	if (!ll && !sc) {
		fprintf(stderr, "usage: layer-exec seccomp|landlock|both CMD [ARGS...]\n");
		return 2;
	}
	/* Both layers require it when unprivileged; agentjail sets it too. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("PR_SET_NO_NEW_PRIVS");
	if (ll)
		apply_landlock();
	/* Seccomp last, as in agentjail: the filter then need not allow the Landlock calls. */
	if (sc)
		apply_seccomp();
	execv(argv[2], argv + 2);
	die(argv[2]);
}
