/* The seccomp rule file format (data/seccomp/default.rules) and its translation into a
 * libseccomp filter. Shared by the build-time compiler (tools/seccomp-compile) and by the
 * runtime, which only compiles when a policy relaxes a group; the default profile is BPF
 * built into the binary.
 *
 * A profile owns its rule array; aj_seccomp_profile_free() releases it.
 */
#ifndef AJ_RULES_SECCOMP_H
#define AJ_RULES_SECCOMP_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strv.h"

enum aj_sc_op { AJ_SC_EQ, AJ_SC_NE, AJ_SC_GT, AJ_SC_GE, AJ_SC_LT, AJ_SC_LE, AJ_SC_MASKED_EQ };

struct aj_sc_cond {
	unsigned arg;
	enum aj_sc_op op;
	uint64_t mask;
	uint64_t value;
};

struct aj_sc_rule {
	char group[32];
	char syscall[48];
	int x86_64_nr; /* from NAME=NUMBER, -1 if not given */
	int errnum;
	unsigned n_cond;
	struct aj_sc_cond cond[4];
	char reason[320];
	int line;
};

/* An exception checked before the rules: the syscall is allowed when
 * (low 32 bits of argument arg) & mask == value. */
struct aj_sc_allow {
	char syscall[48];
	unsigned arg;
	uint32_t mask, value;
	int line;
};

struct aj_sc_profile {
	struct aj_sc_rule *rules;
	size_t n;
	struct aj_sc_allow allows[8];
	size_t n_allows;
	char relaxable[16][32];
	size_t n_relaxable;
};

int aj_seccomp_parse(const char *text, struct aj_sc_profile *out, struct aj_err *err);
void aj_seccomp_profile_free(struct aj_sc_profile *p);
/* True if `group` names a group of the profile; *relaxable tells whether a policy may lift
 * it. */
int aj_seccomp_group_known(const struct aj_sc_profile *p, const char *group, int *relaxable);

/* Compiles the profile minus the groups in `relax` to BPF for the native architecture.
 * *insns is malloc'd. *skipped counts rules naming syscalls this architecture lacks; a name
 * no architecture knows is an error (a typo would otherwise silently drop a rule). */
int aj_seccomp_compile(const struct aj_sc_profile *p, const struct aj_strv *relax,
		       struct sock_filter **insns, size_t *n_insns, size_t *skipped,
		       struct aj_err *err);

/* BPF of a libseccomp filter context (scmp_filter_ctx), malloc'd: for other translators of
 * seccomp profiles (the OCI bundle's, src/oci/seccomp.c). */
int aj_seccomp_export(void *ctx, struct sock_filter **insns, size_t *n_insns, struct aj_err *err);

/* The default profile, compiled at build time (build/gen/seccomp_default.c), and its rules
 * text; the landlock tier's additions (data/seccomp/landlock-tier.rules, embedded). Linked
 * into agentjail, not into tools/seccomp-compile, which makes them. */
extern const struct sock_filter aj_seccomp_default_bpf[];
extern const unsigned aj_seccomp_default_len;
extern const unsigned aj_seccomp_default_rules_count;
extern const char aj_seccomp_default_rules[];
extern const char aj_seccomp_tier_rules[];
/* The gvisor tier's filter on runsc itself (data/seccomp/gvisor-tier.rules, embedded). */
extern const char aj_seccomp_gvisor_rules[];

#endif
