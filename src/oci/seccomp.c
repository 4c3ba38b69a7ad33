/* A bundle's linux.seccomp object translated into BPF through libseccomp. The result is
 * loaded in the container in addition to agentjail's own deny list (seccomp filters stack:
 * the strictest answer wins), so a bundle can narrow what agentjail allows, never widen it. */
#include "oci/seccomp.h"

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "rules/seccomp.h"

#define BAD(fmt, ...) aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "config.json: linux.seccomp." fmt, \
				 ##__VA_ARGS__)

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

static const struct {
	const char *name;
	enum scmp_compare op;
} operators[] = {
	{"SCMP_CMP_NE", SCMP_CMP_NE}, {"SCMP_CMP_LT", SCMP_CMP_LT}, {"SCMP_CMP_LE", SCMP_CMP_LE},
	{"SCMP_CMP_EQ", SCMP_CMP_EQ}, {"SCMP_CMP_GE", SCMP_CMP_GE}, {"SCMP_CMP_GT", SCMP_CMP_GT},
	{"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
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

/* The action named at `path`; errno_ret (or `dflt_errno`) completes ERRNO, TRACE takes 0. */
static int parse_action(json_t *name, json_t *errno_ret, int dflt_errno, const char *path,
			uint32_t *out, struct aj_err *err)
{
	const char *s = json_string_value(name);

	for (size_t i = 0; s && i < AJ_ARRAY_SIZE(actions); i++) {
		if (strcmp(s, actions[i].name) != 0)
			continue;
		*out = actions[i].act;
		if (actions[i].act == SCMP_ACT_ERRNO(0))
			*out = SCMP_ACT_ERRNO(json_is_integer(errno_ret)
						      ? (uint32_t)json_integer_value(errno_ret)
						      : (uint32_t)dflt_errno);
		return 0;
	}
	if (s && strcmp(s, "SCMP_ACT_NOTIFY") == 0)
		return BAD("%s: SCMP_ACT_NOTIFY needs a seccomp agent, which agentjail does not "
			   "support",
			   path);
	return BAD("%s: unknown action \"%s\"", path, s ? s : "(not a string)");
}

static int parse_arg(json_t *a, const char *path, struct scmp_arg_cmp *c, struct aj_err *err)
{
	const char *op = json_string_value(json_object_get(a, "op"));
	json_t *idx = json_object_get(a, "index"), *v = json_object_get(a, "value"),
	       *v2 = json_object_get(a, "valueTwo");
	size_t k;

	for (k = 0; op && k < AJ_ARRAY_SIZE(operators); k++)
		if (strcmp(op, operators[k].name) == 0)
			break;
	if (!op || k == AJ_ARRAY_SIZE(operators))
		return BAD("%s.op: unknown operator", path);
	if (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) > 5)
		return BAD("%s.index: expected 0 to 5", path);
	if (!json_is_integer(v))
		return BAD("%s.value: expected an integer", path);
	c->arg = (unsigned)json_integer_value(idx);
	c->op = operators[k].op;
	c->datum_a = (scmp_datum_t)json_integer_value(v);
	c->datum_b = json_is_integer(v2) ? (scmp_datum_t)json_integer_value(v2) : 0;
	return 0;
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

static int parse_rule(scmp_filter_ctx ctx, json_t *r, const char *path, uint32_t dflt,
		      int dflt_errno, size_t *unknown, struct aj_err *err)
{
	json_t *names = json_object_get(r, "names"), *args = json_object_get(r, "args"), *v;
	struct scmp_arg_cmp cmp[6];
	char sub[128];
	uint32_t act;
	size_t i, n = 0;

	if (parse_action(json_object_get(r, "action"), json_object_get(r, "errnoRet"),
			 dflt_errno, path, &act, err) < 0)
		return -1;
	if (args && !json_is_array(args))
		return BAD("%s.args: expected an array", path);
	json_array_foreach(args, i, v) {
		if (n == AJ_ARRAY_SIZE(cmp))
			return BAD("%s.args: more than 6 comparisons", path);
		snprintf(sub, sizeof sub, "%s.args[%zu]", path, i);
		if (parse_arg(v, sub, &cmp[n++], err) < 0)
			return -1;
	}
	if (!json_is_array(names))
		return BAD("%s.names: expected an array of syscall names", path);
	if (act == dflt)
		return 0; /* libseccomp refuses rules that repeat the default action */
	json_array_foreach(names, i, v) {
		const char *name = json_string_value(v);
		int nr = name ? seccomp_syscall_resolve_name(name) : __NR_SCMP_ERROR;
		if (!name)
			return BAD("%s.names[%zu]: expected a string", path, i);
		if (nr == __NR_SCMP_ERROR) {
			(*unknown)++; /* a newer or foreign syscall: as runc, skip it */
			continue;
		}
		snprintf(sub, sizeof sub, "%s (%s)", path, name);
		if (add_syscall(ctx, nr, act, cmp, (unsigned)n, sub, err) < 0)
			return -1;
	}
	return 0;
}

static int add_arches(scmp_filter_ctx ctx, json_t *a, struct aj_err *err)
{
	json_t *v;
	size_t i;

	if (a && !json_is_array(a))
		return BAD("architectures: expected an array");
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);
		size_t k;
		int rc;
		for (k = 0; s && k < AJ_ARRAY_SIZE(arches); k++)
			if (strcmp(s, arches[k].name) == 0)
				break;
		if (!s || k == AJ_ARRAY_SIZE(arches))
			return BAD("architectures[%zu]: unknown architecture", i);
		rc = seccomp_arch_add(ctx, arches[k].arch);
		if (rc < 0 && rc != -EEXIST)
			return aj_err_set(err, AJ_LAYER_SECCOMP, -rc, "seccomp_arch_add(%s)", s);
	}
	return 0;
}

static int build(scmp_filter_ctx ctx, json_t *sc, uint32_t dflt, int dflt_errno,
		 size_t *unknown, struct aj_err *err)
{
	json_t *rules = json_object_get(sc, "syscalls"), *r;
	char path[64];
	size_t i;

	/* agentjail sets no_new_privs itself, as a step of its own sequence. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0)
		return aj_err_set(err, AJ_LAYER_SECCOMP, EINVAL, "seccomp_attr_set");
	if (add_arches(ctx, json_object_get(sc, "architectures"), err) < 0)
		return -1;
	if (rules && !json_is_array(rules))
		return BAD("syscalls: expected an array");
	json_array_foreach(rules, i, r) {
		snprintf(path, sizeof path, "syscalls[%zu]", i);
		if (parse_rule(ctx, r, path, dflt, dflt_errno, unknown, err) < 0)
			return -1;
	}
	return 0;
}

int aj_oci_seccomp_compile(json_t *sc, struct sock_filter **insns, size_t *n_insns,
			   size_t *unknown, struct aj_err *err)
{
	json_t *de = json_object_get(sc, "defaultErrnoRet");
	int dflt_errno = json_is_integer(de) ? (int)json_integer_value(de) : EPERM;
	scmp_filter_ctx ctx;
	uint32_t dflt;
	int r;

	*unknown = 0;
	if (json_object_get(sc, "listenerPath"))
		return BAD("listenerPath: seccomp agents are not supported");
	if (parse_action(json_object_get(sc, "defaultAction"), de, dflt_errno, "defaultAction",
			 &dflt, err) < 0)
		return -1;
	ctx = seccomp_init(dflt);
	if (!ctx)
		return aj_err_set(err, AJ_LAYER_SECCOMP, ENOMEM, "seccomp_init");
	r = build(ctx, sc, dflt, dflt_errno, unknown, err);
	if (r == 0)
		r = aj_seccomp_export(ctx, insns, n_insns, err);
	seccomp_release(ctx);
	return r;
}
