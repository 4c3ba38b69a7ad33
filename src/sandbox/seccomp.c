#include "sandbox/seccomp.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

int aj_seccomp_load(const struct sock_filter *insns, size_t len, struct aj_err *err)
{
	struct sock_fprog prog = {.len = (unsigned short)len, .filter = (struct sock_filter *)insns};

	if (len == 0 || len > 4096)
		return aj_err_set(err, AJ_LAYER_SECCOMP, 0, "BPF program of %zu instructions", len);
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return aj_err_sys(err, AJ_LAYER_SECCOMP, "seccomp(SECCOMP_SET_MODE_FILTER)");
	return 0;
}
