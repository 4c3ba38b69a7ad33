/* A bundle's seccomp profile through aj_oci_seccomp_compile() (src/oci/seccomp.c): a valid
 * profile becomes a program, unknown syscall names are skipped and counted, and each kind of
 * refusal names its field of config.json ("linux.seccomp.syscalls[0].args[0].index") and
 * says what is wrong. Nothing is loaded: the program is only built. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci/seccomp.h"
#include "unit.h"

static int compile(const char *text, size_t *n_insns, size_t *unknown, struct aj_err *err)
{
	json_t *j = json_loads(text, 0, NULL);
	struct sock_filter *insns = NULL;
	int r;

	if (!j) {
		printf("# bad test profile %s\n", text);
		return -2;
	}
	aj_err_clear(err);
	r = aj_oci_seccomp_compile(j, &insns, n_insns, unknown, err);
	free(insns);
	json_decref(j);
	return r;
}

static void refused(const char *text, const char *field, const char *word)
{
	struct aj_err err;
	size_t n = 0, unknown = 0;

	CHECK(compile(text, &n, &unknown, &err) == -1 && err.errnum == EINVAL &&
		      err.layer == AJ_LAYER_POLICY,
	      "%s is refused (%s)", text, err.msg);
	CHECK_CONTAINS(err.msg, field, "  and the error names the field");
	CHECK_CONTAINS(err.msg, word, "  and says what is wrong");
	CHECK(strncmp(err.msg, "config.json: linux.seccomp.", 27) == 0,
	      "  as a field of config.json");
}

static void valid(void)
{
	struct aj_err err;
	size_t n = 0, unknown = 0;

	CHECK(compile("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": "
		      "[\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\"], \"syscalls\": ["
		      "{\"names\": [\"mkdir\", \"mkdirat\", \"no_such_call\"], \"action\": "
		      "\"SCMP_ACT_ERRNO\", \"errnoRet\": 1},"
		      "{\"names\": [\"personality\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": ["
		      "{\"index\": 0, \"value\": 8, \"op\": \"SCMP_CMP_NE\"},"
		      "{\"index\": 0, \"value\": 131080, \"valueTwo\": \"x\", \"op\": "
		      "\"SCMP_CMP_NE\"}]},"
		      "{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\"}], "
		      "\"flags\": [\"SECCOMP_FILTER_FLAG_LOG\"]}",
		      &n, &unknown, &err) == 0,
	      "a profile with rules, comparisons and architectures compiles (%s)", err.msg);
	CHECK(n > 0, "into a program (%zu instructions)", n);
	CHECK(unknown == 1, "an unknown syscall name is skipped and counted (%zu)", unknown);
	CHECK(compile("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38}", &n,
		      &unknown, &err) == 0,
	      "a default action alone (%s)", err.msg);
}

static void refusals(void)
{
	refused("{}", "defaultAction", "required");
	refused("{\"defaultAction\": \"SCMP_ACT_BOGUS\"}", "defaultAction", "unknown action");
	refused("{\"defaultAction\": \"SCMP_ACT_NOTIFY\"}", "defaultAction", "seccomp agent");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/run/agent\"}",
		"listenerPath", "not supported");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": \"x\"}",
		"architectures", "array");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_VAX\"]}",
		"architectures[0]", "unknown architecture");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": {}}", "syscalls", "array");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"action\": "
		"\"SCMP_ACT_ERRNO\"}]}",
		"syscalls[0].names", "required");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": \"mkdir\", "
		"\"action\": \"SCMP_ACT_ERRNO\"}]}",
		"syscalls[0].names", "syscall names");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [1], "
		"\"action\": \"SCMP_ACT_ERRNO\"}]}",
		"syscalls[0].names[0]", "string");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], "
		"\"action\": \"SCMP_ACT_NOPE\"}]}",
		"syscalls[0].action", "unknown action");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], "
		"\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 6, \"value\": 0, \"op\": "
		"\"SCMP_CMP_EQ\"}]}]}",
		"syscalls[0].args[0].index", "0 to 5");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], "
		"\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": \"0\", "
		"\"op\": \"SCMP_CMP_EQ\"}]}]}",
		"syscalls[0].args[0].value", "integer");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], "
		"\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 0, \"op\": "
		"\"SCMP_CMP_ABOUT\"}]}]}",
		"syscalls[0].args[0].op", "SCMP_CMP_EQ");
	refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], "
		"\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 0, \"op\": "
		"\"SCMP_CMP_EQ\"}, {\"index\": 1, \"value\": 0, \"op\": \"SCMP_CMP_EQ\"}, {\"index\": "
		"2, \"value\": 0, \"op\": \"SCMP_CMP_EQ\"}, {\"index\": 3, \"value\": 0, \"op\": "
		"\"SCMP_CMP_EQ\"}, {\"index\": 4, \"value\": 0, \"op\": \"SCMP_CMP_EQ\"}, {\"index\": "
		"5, \"value\": 0, \"op\": \"SCMP_CMP_EQ\"}, {\"index\": 0, \"value\": 1, \"op\": "
		"\"SCMP_CMP_EQ\"}]}]}",
		"syscalls[0].args[6]", "more than 6");
}

int main(void)
{
	valid();
	refusals();
	UNIT_EXIT();
}
