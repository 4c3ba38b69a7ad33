#include "rules/seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"

struct errno_name {
	const char *name;
	int value;
};

static const struct errno_name errnos[] = {
	{"EPERM", EPERM}, {"ENOSYS", ENOSYS}, {"EACCES", EACCES},
	{"EAFNOSUPPORT", EAFNOSUPPORT}, {"EINVAL", EINVAL}, {"ENOTSUP", ENOTSUP},
};

static int parse_errno(const char *s, int *out)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(errnos); i++)
		if (strcmp(errnos[i].name, s) == 0) {
			*out = errnos[i].value;
			return 0;
		}
	return -1;
}

/* "a1&0xffffffff==0x5412", "a0>10", "a2!=0". */
static int parse_cond(const char *s, struct aj_sc_cond *c)
{
	static const struct {
		const char *tok;
		enum aj_sc_op op;
	} ops[] = {{"==", AJ_SC_EQ}, {"!=", AJ_SC_NE}, {">=", AJ_SC_GE},
		   {"<=", AJ_SC_LE}, {">", AJ_SC_GT},  {"<", AJ_SC_LT}};
	char *end;
	const char *p = s;

	if (p[0] != 'a' || p[1] < '0' || p[1] > '5')
		return -1;
	c->arg = (unsigned)(p[1] - '0');
	p += 2;
	c->mask = UINT64_MAX;
	if (*p == '&') {
		c->mask = strtoull(p + 1, &end, 0);
		if (end == p + 1)
			return -1;
		p = end;
	}
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ops); i++) {
		size_t n = strlen(ops[i].tok);
		if (strncmp(p, ops[i].tok, n) != 0)
			continue;
		c->op = ops[i].op;
		if (c->mask != UINT64_MAX) {
			if (c->op != AJ_SC_EQ)
				return -1; /* libseccomp masks only equality */
			c->op = AJ_SC_MASKED_EQ;
		}
		c->value = strtoull(p + n, &end, 0);
		return end != p + n && *end == '\0' ? 0 : -1;
	}
	return -1;
}

static int parse_allow(struct aj_sc_profile *out, char *line, int lineno, struct aj_err *err)
{
	char name[48], cond[96];
	struct aj_sc_cond c;
	struct aj_sc_allow *a;

	if (out->n_allows == AJ_ARRAY_SIZE(out->allows) || !strstr(line, " -- ") ||
	    sscanf(line, "allow %47s %95s", name, cond) != 2 || parse_cond(cond, &c) < 0 ||
	    (c.op != AJ_SC_MASKED_EQ && c.op != AJ_SC_EQ) || c.mask > UINT32_MAX ||
	    c.value > UINT32_MAX)
		return aj_err_set(err, AJ_LAYER_SECCOMP, 0,
				  "rules line %d: expected \"allow SYSCALL aN&MASK==VALUE -- REASON\" "
				  "with 32-bit MASK and VALUE",
				  lineno);
	a = &out->allows[out->n_allows++];
	snprintf(a->syscall, sizeof a->syscall, "%s", name);
	a->arg = c.arg;
	a->mask = c.mask == UINT64_MAX ? UINT32_MAX : (uint32_t)c.mask;
	a->value = (uint32_t)c.value;
	a->line = lineno;
	return 0;
}

static int parse_directive(struct aj_sc_profile *out, char *line, int lineno, struct aj_err *err)
{
	char *group = line + strlen("relaxable");

	while (*group == ' ' || *group == '\t')
		group++;
	if (!*group || out->n_relaxable >= AJ_ARRAY_SIZE(out->relaxable) ||
	    strlen(group) >= sizeof out->relaxable[0])
		return aj_err_set(err, AJ_LAYER_SECCOMP, 0, "rules line %d: bad relaxable line",
				  lineno);
	snprintf(out->relaxable[out->n_relaxable++], sizeof out->relaxable[0], "%s", group);
	return 0;
}

/* "name" or "name=NUMBER" (the x86-64 number, for calls libseccomp may not know yet). */
static void parse_syscall(struct aj_sc_rule *r, const char *tok)
{
	const char *eq = strchr(tok, '=');

	r->x86_64_nr = -1;
	if (!eq) {
		snprintf(r->syscall, sizeof r->syscall, "%s", tok);
		return;
	}
	snprintf(r->syscall, sizeof r->syscall, "%.*s", (int)(eq - tok), tok);
	r->x86_64_nr = atoi(eq + 1);
}

static int parse_rule(struct aj_sc_rule *r, char *line, int lineno, struct aj_err *err)
{
	char *reason = strstr(line, " -- ");
	char *tok, *save = NULL;
	int field = 0;

	if (!reason)
		return aj_err_set(err, AJ_LAYER_SECCOMP, 0,
				  "rules line %d: every rule needs a reason after \" -- \"", lineno);
	*reason = '\0';
	snprintf(r->reason, sizeof r->reason, "%s", reason + 4);
	r->line = lineno;
	for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save), field++) {
		if (field == 0 && strlen(tok) < sizeof r->group)
			snprintf(r->group, sizeof r->group, "%s", tok);
		else if (field == 1 && strlen(tok) < sizeof r->syscall)
			parse_syscall(r, tok);
		else if (field == 2 && parse_errno(tok, &r->errnum) == 0)
			;
		else if (field >= 3 && r->n_cond < AJ_ARRAY_SIZE(r->cond) &&
			 parse_cond(tok, &r->cond[r->n_cond]) == 0)
			r->n_cond++;
		else
			return aj_err_set(err, AJ_LAYER_SECCOMP, 0, "rules line %d: cannot parse \"%s\"",
					  lineno, tok);
	}
	if (field < 3)
		return aj_err_set(err, AJ_LAYER_SECCOMP, 0,
				  "rules line %d: expected GROUP SYSCALL ERRNO [CONDITION...]", lineno);
	return 0;
}

/* One line that is neither blank nor a comment. */
static int parse_line(struct aj_sc_profile *out, char *line, int lineno, struct aj_err *err)
{
	if (strncmp(line, "relaxable ", 10) == 0)
		return parse_directive(out, line, lineno, err);
	if (strncmp(line, "allow ", 6) == 0)
		return parse_allow(out, line, lineno, err);
	out->rules = aj_xrealloc(out->rules, (out->n + 1) * sizeof *out->rules);
	memset(&out->rules[out->n], 0, sizeof out->rules[0]);
	if (parse_rule(&out->rules[out->n], line, lineno, err) < 0)
		return -1;
	out->n++;
	return 0;
}

int aj_seccomp_parse(const char *text, struct aj_sc_profile *out, struct aj_err *err)
{
	_cleanup_free_ char *copy = aj_xstrdup(text);
	int lineno = 0;

	memset(out, 0, sizeof *out);
	for (char *line = copy, *nl; line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		lineno++;
		while (*line == ' ' || *line == '\t')
			line++;
		if (!*line || *line == '#')
			continue;
		if (parse_line(out, line, lineno, err) < 0) {
			aj_seccomp_profile_free(out);
			return -1;
		}
	}
	return 0;
}

void aj_seccomp_profile_free(struct aj_sc_profile *p)
{
	free(p->rules);
	memset(p, 0, sizeof *p);
}

int aj_seccomp_group_known(const struct aj_sc_profile *p, const char *group, int *relaxable)
{
	bool known = false;

	for (size_t i = 0; i < p->n && !known; i++)
		known = strcmp(p->rules[i].group, group) == 0;
	*relaxable = 0;
	for (size_t i = 0; i < p->n_relaxable; i++)
		if (strcmp(p->relaxable[i], group) == 0)
			*relaxable = 1;
	return known;
}

static struct scmp_arg_cmp to_scmp(const struct aj_sc_cond *c)
{
	static const enum scmp_compare map[] = {
		[AJ_SC_EQ] = SCMP_CMP_EQ, [AJ_SC_NE] = SCMP_CMP_NE, [AJ_SC_GT] = SCMP_CMP_GT,
		[AJ_SC_GE] = SCMP_CMP_GE, [AJ_SC_LT] = SCMP_CMP_LT, [AJ_SC_LE] = SCMP_CMP_LE,
		[AJ_SC_MASKED_EQ] = SCMP_CMP_MASKED_EQ,
	};
	struct scmp_arg_cmp a = {.arg = c->arg, .op = map[c->op]};

	if (c->op == AJ_SC_MASKED_EQ) {
		a.datum_a = c->mask;
		a.datum_b = c->value;
	} else {
		a.datum_a = c->value;
	}
	return a;
}

static int resolve(const char *name, int x86_64_nr)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR && x86_64_nr >= 0 && seccomp_arch_native() == SCMP_ARCH_X86_64)
		nr = x86_64_nr;
	return nr;
}

/* Adds the profile's rules but those of relaxed groups; *added counts them. */
static int add_rules(scmp_filter_ctx ctx, const struct aj_sc_profile *p,
		     const struct aj_strv *relax, size_t *skipped, size_t *added, struct aj_err *err)
{
	*added = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct aj_sc_rule *r = &p->rules[i];
		struct scmp_arg_cmp args[4];
		int nr, rc;

		if (relax && aj_strv_contains(relax, r->group))
			continue;
		nr = resolve(r->syscall, r->x86_64_nr);
		if (nr == __NR_SCMP_ERROR && r->x86_64_nr < 0 &&
		    seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, r->syscall) == __NR_SCMP_ERROR)
			return aj_err_set(err, AJ_LAYER_SECCOMP, EINVAL,
					  "rules line %d: \"%s\" is not a syscall libseccomp knows; "
					  "write it as %s=NUMBER",
					  r->line, r->syscall, r->syscall);
		if (nr == __NR_SCMP_ERROR) {
			(*skipped)++; /* not a syscall of this architecture */
			continue;
		}
		for (unsigned j = 0; j < r->n_cond; j++)
			args[j] = to_scmp(&r->cond[j]);
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((unsigned)r->errnum), nr, r->n_cond,
					    args);
		if (rc < 0)
			return aj_err_set(err, AJ_LAYER_SECCOMP, -rc,
					  "rules line %d (%s): seccomp_rule_add", r->line, r->syscall);
		(*added)++;
	}
	return 0;
}

/* libseccomp 2.5 exports BPF only to a file descriptor; a memfd keeps it in memory. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_filter **insns, size_t *n,
		      struct aj_err *err)
{
	_cleanup_close_ int fd = memfd_create("aj-seccomp", MFD_CLOEXEC);
	_cleanup_free_ struct sock_filter *buf = NULL;
	off_t size;
	int rc;

	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_SECCOMP, "memfd_create");
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return aj_err_set(err, AJ_LAYER_SECCOMP, -rc, "seccomp_export_bpf");
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter))
		return aj_err_set(err, AJ_LAYER_SECCOMP, EINVAL, "exported BPF has size %ld",
				  (long)size);
	buf = aj_xmalloc((size_t)size);
	if (pread(fd, buf, (size_t)size, 0) != size)
		return aj_err_sys(err, AJ_LAYER_SECCOMP, "read exported BPF");
	*insns = aj_steal_ptr(&buf);
	*n = (size_t)size / sizeof(struct sock_filter);
	return 0;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) (16u + 8u * (i))
#else
#define ARG_LO(i) (16u + 8u * (i) + 4u)
#endif

/* The exceptions, as BPF placed before libseccomp's program: on the native architecture, a
 * matching call returns ALLOW at once; anything else falls through to the rules. */
static int prepend_allows(const struct aj_sc_profile *p, struct sock_filter **insns, size_t *n,
			  struct aj_err *err)
{
	struct sock_filter pre[2 + 8 * 6], *all;
	size_t k = 0;

	if (!p->n_allows)
		return 0;
	pre[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4);
	pre[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0,
						(uint8_t)(p->n_allows * 6));
	for (size_t i = 0; i < p->n_allows; i++) {
		const struct aj_sc_allow *a = &p->allows[i];
		int nr = resolve(a->syscall, -1);
		if (nr < 0)
			return aj_err_set(err, AJ_LAYER_SECCOMP, EINVAL, "rules line %d: unknown \"%s\"",
					  a->line, a->syscall);
		pre[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
		pre[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 4);
		pre[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(a->arg));
		pre[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, a->mask);
		pre[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, a->value, 0, 1);
		pre[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	all = aj_xmalloc((k + *n) * sizeof *all);
	memcpy(all, pre, k * sizeof *all);
	memcpy(all + k, *insns, *n * sizeof *all);
	free(*insns);
	*insns = all;
	*n += k;
	return 0;
}

static void release_ctx(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

int aj_seccomp_compile(const struct aj_sc_profile *p, const struct aj_strv *relax,
		       struct sock_filter **insns, size_t *n_insns, size_t *skipped,
		       struct aj_err *err)
{
	__attribute__((cleanup(release_ctx))) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	size_t added;

	*skipped = 0;
	if (!ctx) /* libseccomp's allocation, not ours: reported, as the library does */
		return aj_err_set(err, AJ_LAYER_SECCOMP, ENOMEM, "seccomp_init");
	/* Only the native ABI is in the filter; any other (i386, x32) gets the bad-arch action,
	 * which kills the process: see the header of the rules file. agentjail sets
	 * no_new_privs itself, as an explicit step of the launch sequence. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0)
		return aj_err_set(err, AJ_LAYER_SECCOMP, EINVAL, "seccomp_attr_set");
	if (add_rules(ctx, p, relax, skipped, &added, err) < 0)
		return -1;
	/* A binary search over the syscall numbers rather than libseccomp's chain of one
	 * comparison per rule. Installing a filter, the kernel runs it for every syscall number
	 * to cache those it always allows, most of them down the whole chain; with the tree the
	 * default profile installs in 60 us instead of 150. Not for a handful of rules, where
	 * the chain is as short (and libseccomp before 2.5.4 lost the default action of a tree
	 * without rules). */
	if (added >= 8 && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0)
		return aj_err_set(err, AJ_LAYER_SECCOMP, EINVAL, "seccomp_attr_set");
	if (export_bpf(ctx, insns, n_insns, err) < 0)
		return -1;
	if (prepend_allows(p, insns, n_insns, err) < 0) {
		free(*insns);
		*insns = NULL;
		return -1;
	}
	return 0;
}

int aj_seccomp_export(void *ctx, struct sock_filter **insns, size_t *n_insns, struct aj_err *err)
{
	return export_bpf(ctx, insns, n_insns, err);
}
