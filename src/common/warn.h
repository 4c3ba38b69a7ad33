/* Warnings: what library code has to tell the person running agentjail that is no error -- a
 * guard that acted (a .git/commondir removed), a limit the command reached, something that
 * could not be cleaned up. Library code never prints. A function that may warn takes a
 * `const struct aj_warn *` from its caller (or keeps the one it was given in its context) and
 * hands it each warning as one message: the text without the "agentjail: " prefix and the
 * newline (an error's hint follows on a line of its own). The edge -- the CLI, the daemon, a
 * supervisor's entry point -- chooses the sink: stderr (aj_warn_stderr), a list it reports
 * later (aj_warn_list_sink), or its own. A NULL sink, or one with a NULL fn, drops them.
 *
 * A warning is formatted into a fixed buffer and the sink is called at once, on the caller's
 * thread: no allocation, and a message about the command's output comes when it happens.
 * The sink and its argument belong to the edge and outlive every call given them.
 */
#ifndef AJ_COMMON_WARN_H
#define AJ_COMMON_WARN_H

#include "common/err.h"
#include "common/strv.h"

enum aj_warn_flag {
	/* The message follows output of the sandbox's command, which may have stopped in the
	 * middle of a line: a terminal sink starts it on a fresh line. */
	AJ_WARN_FRESH_LINE = 1u << 0,
};

struct aj_warn {
	void (*fn)(void *arg, unsigned flags, const char *msg); /* flags: enum aj_warn_flag */
	void *arg;
};

void aj_warn(const struct aj_warn *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void aj_warn_flags(const struct aj_warn *w, unsigned flags, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An error that ends nothing, as aj_err_print() words it: "[layer] message: errno text", and
 * "\n  hint: ..." when it has one. */
void aj_warn_err(const struct aj_warn *w, const struct aj_err *err);

/* "agentjail: MSG\n" on stderr, after a newline for AJ_WARN_FRESH_LINE. */
extern const struct aj_warn aj_warn_stderr;

/* A sink that appends each message to the struct aj_strv its arg points to. */
void aj_warn_list_sink(void *strv, unsigned flags, const char *msg);
#define AJ_WARN_LIST(sv) ((struct aj_warn){.fn = aj_warn_list_sink, .arg = (sv)})

#endif
