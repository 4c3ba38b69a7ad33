/* A bundle's linux.seccomp object translated into BPF through libseccomp. The result is
 * loaded in the container in addition to agentjail's own deny list (seccomp filters stack:
 * the strictest answer wins), so a bundle can narrow what agentjail allows, never widen it.
 *
 * The profile is read first, by the field-table engine with config.json's rows and words
 * (spec_internal.h), into a struct profile; libseccomp then builds the filter from that.
 * Lenient where runc is: a non-integer errnoRet or valueTwo is no value, an unknown syscall
 * name is skipped (and counted). */
#include "oci/seccomp.h"

#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "oci/spec_internal.h"
#include "rules/seccomp.h"

static const struct {
	const char *name;
	uint32_t act; /* SCMP_ACT_ERRNO / TRACE get their argument later */
} actions[] = {
	{"SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD},
	{"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD},
	{"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS},
	{"SCMP_ACT_TRAP", SCMP_ACT_TRAP},
	{"SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0)},
	{"SCMP_ACT_TRACE", SCMP_ACT_TRACE(0)},
	{"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW},
	{"SCMP_ACT_LOG", SCMP_ACT_LOG},
};

/* In the order of aj_oci_seccomp_operators. */
static const enum scmp_compare operators[] = {
	SCMP_CMP_NE, SCMP_CMP_LT, SCMP_CMP_LE, SCMP_CMP_EQ, SCMP_CMP_GE, SCMP_CMP_GT,
	SCMP_CMP_MASKED_EQ,
};

static const struct {
	const char *name;
	uint32_t arch;
} arches[] = {
	{"SCMP_ARCH_X86", SCMP_ARCH_X86},         {"SCMP_ARCH_X86_64", SCMP_ARCH_X86_64},
	{"SCMP_ARCH_X32", SCMP_ARCH_X32},         {"SCMP_ARCH_ARM", SCMP_ARCH_ARM},
	{"SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64}, {"SCMP_ARCH_PPC64LE", SCMP_ARCH_PPC64LE},
	{"SCMP_ARCH_S390X", SCMP_ARCH_S390X},     {"SCMP_ARCH_RISCV64", SCMP_ARCH_RISCV64},
};

const char *const aj_oci_seccomp_actions[] = {
	"SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP",
	"SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG", NULL};
const char *const aj_oci_seccomp_operators[] = {
	"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
	"SCMP_CMP_MASKED_EQ", NULL};
_Static_assert(AJ_ARRAY_SIZE(operators) + 1 == AJ_ARRAY_SIZE(aj_oci_seccomp_operators),
	       "an operator per name");

/* ---- the profile as read --------------------------------------------------------------- */

#define MAX_ARGS 6

struct arg {
	int op; /* index in aj_oci_seccomp_operators */
	int64_t index, value;
	json_t *value_two; /* borrowed; not an integer: 0 */
};

struct args {
	struct arg v[MAX_ARGS];
	size_t n;
};

struct rule {
	char *action;
	json_t *errno_ret; /* borrowed; not an integer: the profile's */
	struct args args;
	struct aj_strv names;
};

struct rules {
	struct rule *v;
	size_t n;
};

struct profile {
	json_t *dflt_errno; /* borrowed; not an integer: EPERM */
	char *dflt_action;
	struct aj_strv arches;
	struct rules rules;
};

static void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->rules.n; i++) {
		free(p->rules.v[i].action);
		aj_strv_free(&p->rules.v[i].names);
	}
	free(p->rules.v);
	free(p->dflt_action);
	aj_strv_free(&p->arches);
}

static void filter_release(scmp_filter_ctx *f)
{
	if (*f)
		seccomp_release(*f);
}

static int check_action(const char *path, const char *s, struct aj_err *err)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(actions); i++)
		if (strcmp(s, actions[i].name) == 0)
			return 0;
	if (strcmp(s, "SCMP_ACT_NOTIFY") == 0)
		return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: SCMP_ACT_NOTIFY needs a seccomp "
				  "agent, which agentjail does not support", path);
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: unknown action \"%s\"", path, s);
}

static int check_arch(const char *path, const char *s, struct aj_err *err)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(arches); i++)
		if (strcmp(s, arches[i].name) == 0)
			return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: unknown architecture", path);
}

/* A value kept as it is (borrowed from the profile), for the rows runc reads leniently. */
static int keep_json(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	*(json_t **)dst = v;
	return 0;
}

static const struct aj_jf_field arg_rows[] = {
	{.name = "index", .type = AJ_JF_INT, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct arg, index), .min = 0, .max = MAX_ARGS - 1, .expect = "0 to 5"},
	{.name = "value", .type = AJ_JF_INT, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct arg, value), .expect = "an integer"},
	{.name = "valueTwo", .type = AJ_JF_ANY, .off = offsetof(struct arg, value_two),
	 .parse = keep_json},
	{.name = "op", .type = AJ_JF_ENUM, .flags = AJ_JF_REQUIRED, .off = offsetof(struct arg, op),
	 .values = aj_oci_seccomp_operators,
	 .expect = "one of SCMP_CMP_NE, SCMP_CMP_LT, SCMP_CMP_LE, SCMP_CMP_EQ, SCMP_CMP_GE, "
		   "SCMP_CMP_GT, SCMP_CMP_MASKED_EQ"},
	OCI_END,
};

/* dst: the rule's comparisons. */
static int add_arg(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		   const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct args *args = dst;

	if (args->n == MAX_ARGS)
		return OCI_REFUSE(path, "more than %d comparisons", MAX_ARGS);
	return oci_read_sub(arg_rows, v, &args->v[args->n++], path, o, e);
}

static const struct aj_jf_field arg_el = {.name = "", .type = AJ_JF_OBJECT, .parse = add_arg};

static const struct aj_jf_field rule_rows[] = {
	{.name = "action", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct rule, action), .check = check_action},
	{.name = "errnoRet", .type = AJ_JF_ANY, .off = offsetof(struct rule, errno_ret),
	 .parse = keep_json},
	{.name = "args", .type = AJ_JF_ARRAY, .off = offsetof(struct rule, args), .sub = &arg_el,
	 .expect = "an array"},
	{.name = "names", .type = AJ_JF_ARRAY, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct rule, names), .expect = "an array of syscall names"},
	OCI_END,
};

/* dst: the profile's rules; each is counted before it is read, so that profile_free releases
 * what a failed read left. */
static int add_rule(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct rules *rs = dst;
	struct rule *r;

	rs->v = aj_xrealloc(rs->v, (rs->n + 1) * sizeof *rs->v);
	r = &rs->v[rs->n++];
	memset(r, 0, sizeof *r);
	return oci_read_sub(rule_rows, v, r, path, o, e);
}

static const struct aj_jf_field rule_el = {.name = "", .type = AJ_JF_OBJECT, .parse = add_rule};

static int refuse_listener(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			   const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return OCI_REFUSE(path, "seccomp agents are not supported");
}

#define PR(m) offsetof(struct profile, m)
static const struct aj_jf_field profile_rows[] = {
	{.name = "listenerPath", .type = AJ_JF_ANY, .parse = refuse_listener},
	{.name = "defaultErrnoRet", .type = AJ_JF_ANY, .off = PR(dflt_errno), .parse = keep_json},
	{.name = "defaultAction", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .off = PR(dflt_action), .check = check_action},
	{.name = "architectures", .type = AJ_JF_ARRAY, .off = PR(arches), .check = check_arch},
	{.name = "syscalls", .type = AJ_JF_ARRAY, .off = PR(rules), .sub = &rule_el,
	 .expect = "an array"},
	OCI_END,
};
#undef PR

/* ---- the filter -------------------------------------------------------------------------- */

/* A checked action's value; errno_ret (an integer) or dflt_errno completes ERRNO. */
static uint32_t action_value(const char *name, const json_t *errno_ret, int dflt_errno)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(actions); i++) {
		if (strcmp(name, actions[i].name) != 0)
			continue;
		if (actions[i].act != SCMP_ACT_ERRNO(0))
			return actions[i].act;
		return SCMP_ACT_ERRNO(json_is_integer(errno_ret)
					      ? (uint32_t)json_integer_value(errno_ret)
					      : (uint32_t)dflt_errno);
	}
	return SCMP_ACT_KILL_PROCESS; /* not reached: check_action let only these through */
}

/* libseccomp ANDs the comparisons of one rule; comparisons on the same argument are meant
 * as alternatives (runtime-spec), so those become one rule each. */
static int add_syscall(scmp_filter_ctx ctx, int nr, uint32_t act, struct scmp_arg_cmp *c,
		       unsigned n, const char *path, struct aj_err *err)
{
	bool same_arg = false;
	int rc;

	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			same_arg = same_arg || c[i].arg == c[j].arg;
	if (!same_arg) {
		rc = seccomp_rule_add_array(ctx, act, nr, n, c);
		return rc < 0 ? aj_err_set(err, AJ_LAYER_SECCOMP, -rc, "%s: seccomp_rule_add", path)
			      : 0;
	}
	for (unsigned i = 0; i < n; i++) {
		rc = seccomp_rule_add_array(ctx, act, nr, 1, &c[i]);
		if (rc < 0)
			return aj_err_set(err, AJ_LAYER_SECCOMP, -rc, "%s: seccomp_rule_add", path);
	}
	return 0;
}

static int add_rule_syscalls(scmp_filter_ctx ctx, const struct rule *r, size_t i, uint32_t dflt,
			     int dflt_errno, size_t *unknown, struct aj_err *err)
{
	uint32_t act = action_value(r->action, r->errno_ret, dflt_errno);
	struct scmp_arg_cmp cmp[MAX_ARGS];
	char path[160];

	if (act == dflt)
		return 0; /* libseccomp refuses rules that repeat the default action */
	for (size_t k = 0; k < r->args.n; k++) {
		const struct arg *a = &r->args.v[k];
		cmp[k] = (struct scmp_arg_cmp){(unsigned)a->index, operators[a->op],
					       (scmp_datum_t)a->value,
					       json_is_integer(a->value_two)
						       ? (scmp_datum_t)json_integer_value(a->value_two)
						       : 0};
	}
	for (size_t k = 0; k < r->names.n; k++) {
		int nr = seccomp_syscall_resolve_name(r->names.v[k]);
		if (nr == __NR_SCMP_ERROR) {
			(*unknown)++; /* a newer or foreign syscall: as runc, skip it */
			continue;
		}
		snprintf(path, sizeof path, "syscalls[%zu] (%s)", i, r->names.v[k]);
		if (add_syscall(ctx, nr, act, cmp, (unsigned)r->args.n, path, err) < 0)
			return -1;
	}
	return 0;
}

static int build(scmp_filter_ctx ctx, const struct profile *p, uint32_t dflt, int dflt_errno,
		 size_t *unknown, struct aj_err *err)
{
	/* agentjail sets no_new_privs itself, as a step of its own sequence. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0)
		return aj_err_set(err, AJ_LAYER_SECCOMP, EINVAL, "seccomp_attr_set");
	for (size_t i = 0; i < p->arches.n; i++) {
		int rc;
		size_t k = 0;
		while (strcmp(p->arches.v[i], arches[k].name) != 0)
			k++; /* check_arch let only these through */
		rc = seccomp_arch_add(ctx, arches[k].arch);
		if (rc < 0 && rc != -EEXIST)
			return aj_err_set(err, AJ_LAYER_SECCOMP, -rc, "seccomp_arch_add(%s)",
					  p->arches.v[i]);
	}
	for (size_t i = 0; i < p->rules.n; i++)
		if (add_rule_syscalls(ctx, &p->rules.v[i], i, dflt, dflt_errno, unknown, err) < 0)
			return -1;
	return 0;
}

int aj_oci_seccomp_compile(json_t *sc, struct sock_filter **insns, size_t *n_insns,
			   size_t *unknown, struct aj_err *err)
{
	__attribute__((cleanup(profile_free))) struct profile p = {NULL, NULL, AJ_STRV_INIT,
								   {NULL, 0}};
	__attribute__((cleanup(filter_release))) scmp_filter_ctx filter = NULL;
	struct oci_read ctx = {NULL, NULL, NULL};
	struct aj_jf_opts o = {AJ_LAYER_POLICY, OCI_READ_FLAGS, "linux.seccomp", &ctx};
	struct aj_jf_error e;
	uint32_t dflt;
	int dflt_errno;

	*unknown = 0;
	if (aj_jf_read(profile_rows, sc, &p, &o, &e) < 0)
		return oci_error(&e, err);
	dflt_errno = json_is_integer(p.dflt_errno) ? (int)json_integer_value(p.dflt_errno) : EPERM;
	dflt = action_value(p.dflt_action, p.dflt_errno, dflt_errno);
	if (!(filter = seccomp_init(dflt)))
		return aj_err_set(err, AJ_LAYER_SECCOMP, ENOMEM, "seccomp_init");
	if (build(filter, &p, dflt, dflt_errno, unknown, err) < 0)
		return -1;
	return aj_seccomp_export(filter, insns, n_insns, err);
}

int aj_oci_seccomp_host_guard(struct sock_filter **insns, size_t *n_insns, struct aj_err *err)
{
	static const char *const keep[] = {"setid", "namespaces"};
	_cleanup_strv_ struct aj_strv relax = AJ_STRV_INIT;
	struct aj_sc_profile prof;
	size_t skipped = 0;
	int r;

	if (aj_seccomp_parse(aj_seccomp_default_rules, &prof, err) < 0)
		return -1;
	for (size_t i = 0; i < prof.n; i++) {
		const char *g = prof.rules[i].group;
		bool kept = false;
		for (size_t k = 0; k < AJ_ARRAY_SIZE(keep); k++)
			kept = kept || strcmp(g, keep[k]) == 0;
		if (!kept && !aj_strv_contains(&relax, g))
			aj_strv_push(&relax, g);
	}
	r = aj_seccomp_compile(&prof, &relax, insns, n_insns, &skipped, err);
	aj_seccomp_profile_free(&prof);
	return r;
}
