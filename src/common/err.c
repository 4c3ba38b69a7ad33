#define AJ_ERR_DEFINE /* no analyzer macros over the definitions (err.h) */
#include "common/err.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

static const char *const layer_names[AJ_LAYER__COUNT] = {
	[AJ_LAYER_INTERNAL] = "internal", [AJ_LAYER_USAGE] = "usage",
	[AJ_LAYER_POLICY] = "policy",     [AJ_LAYER_USERNS] = "userns",
	[AJ_LAYER_NS] = "namespaces",     [AJ_LAYER_MOUNT] = "mount",
	[AJ_LAYER_LANDLOCK] = "landlock", [AJ_LAYER_SECCOMP] = "seccomp",
	[AJ_LAYER_CAPS] = "capabilities", [AJ_LAYER_CGROUP] = "cgroup",
	[AJ_LAYER_NET] = "net",           [AJ_LAYER_RLIMIT] = "rlimit",
	[AJ_LAYER_PROCESS] = "process",   [AJ_LAYER_EXEC] = "exec",
	[AJ_LAYER_IO] = "io",             [AJ_LAYER_STATE] = "state",
	[AJ_LAYER_API] = "api",           [AJ_LAYER_PROXY] = "proxy",
	[AJ_LAYER_IMAGE] = "image",       [AJ_LAYER_GVISOR] = "gvisor",
};

const char *aj_layer_name(int layer)
{
	if (layer < 0 || layer >= AJ_LAYER__COUNT)
		return "unknown";
	return layer_names[layer];
}

void aj_err_clear(struct aj_err *err)
{
	if (!err)
		return;
	err->layer = AJ_LAYER_INTERNAL;
	err->errnum = 0;
	err->cls = AJ_ERRC_NONE;
	err->msg[0] = '\0';
	err->hint[0] = '\0';
}

static int err_vset(struct aj_err *err, enum aj_layer layer, int errnum, const char *fmt,
		    va_list ap)
{
	if (!err)
		return -1;
	err->layer = layer;
	err->errnum = errnum;
	err->cls = AJ_ERRC_NONE;
	err->hint[0] = '\0';
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	return -1;
}

int aj_err_set(struct aj_err *err, enum aj_layer layer, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(err, layer, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

int aj_err_sys(struct aj_err *err, enum aj_layer layer, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	err_vset(err, layer, saved, fmt, ap);
	va_end(ap);
	errno = saved;
	return -1;
}

int aj_err_prefix(struct aj_err *err, const char *fmt, ...)
{
	char ctx[256], old[sizeof err->msg];
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof ctx, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	snprintf(err->msg, sizeof err->msg, "%s: %s", ctx, old);
	return -1;
}

int aj_err_hint(struct aj_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->hint, sizeof err->hint, fmt, ap);
	va_end(ap);
	return -1;
}

int aj_err_class(struct aj_err *err, enum aj_err_class cls)
{
	if (err)
		err->cls = cls;
	return -1;
}

void aj_err_format(const struct aj_err *err, char *buf, size_t len)
{
	if (err->errnum)
		snprintf(buf, len, "%s: %s", err->msg, strerror(err->errnum));
	else
		snprintf(buf, len, "%s", err->msg);
}

void aj_err_print(const struct aj_err *err, FILE *f)
{
	char buf[sizeof err->msg + 128];

	aj_err_format(err, buf, sizeof buf);
	fprintf(f, "agentjail: [%s] %s\n", aj_layer_name(err->layer), buf);
	if (err->hint[0])
		fprintf(f, "  hint: %s\n", err->hint);
}
