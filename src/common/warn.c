#include "common/warn.h"

#include <stdarg.h>
#include <stdio.h>

/* An error's message and hint fit with room to spare. */
#define WARN_MAX 1280

static void vwarn(const struct aj_warn *w, unsigned flags, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void vwarn(const struct aj_warn *w, unsigned flags, const char *fmt, va_list ap)
{
	char msg[WARN_MAX];

	if (!w || !w->fn)
		return;
	vsnprintf(msg, sizeof msg, fmt, ap);
	w->fn(w->arg, flags, msg);
}

void aj_warn(const struct aj_warn *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(w, 0, fmt, ap);
	va_end(ap);
}

void aj_warn_flags(const struct aj_warn *w, unsigned flags, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(w, flags, fmt, ap);
	va_end(ap);
}

void aj_warn_err(const struct aj_warn *w, const struct aj_err *err)
{
	char buf[sizeof err->msg + 128];

	aj_err_format(err, buf, sizeof buf);
	if (err->hint[0])
		aj_warn(w, "[%s] %s\n  hint: %s", aj_layer_name(err->layer), buf, err->hint);
	else
		aj_warn(w, "[%s] %s", aj_layer_name(err->layer), buf);
}

static void to_stderr(void *arg, unsigned flags, const char *msg)
{
	(void)arg;
	fprintf(stderr, "%sagentjail: %s\n", flags & AJ_WARN_FRESH_LINE ? "\n" : "", msg);
}

const struct aj_warn aj_warn_stderr = {.fn = to_stderr, .arg = NULL};

void aj_warn_list_sink(void *strv, unsigned flags, const char *msg)
{
	(void)flags;
	aj_strv_push(strv, msg);
}
