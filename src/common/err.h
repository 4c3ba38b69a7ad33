/* Error convention (docs/architecture.md, "Errors").
 *
 * Fallible functions return int (<0 on failure) or a pointer (NULL on failure) and take
 * `struct aj_err *err` as their last parameter. The function that knows errno fills it in,
 * naming the object that failed (operation, quoted path, errno text); callers add context on
 * the way up with aj_err_prefix(); only the edge (CLI, HTTP, MCP) prints it, once.
 *
 * The struct is fixed-size and holds no pointers so that the post-fork child can fill it
 * without malloc and send it to the parent over the sync socket as plain bytes.
 */
#ifndef AJ_COMMON_ERR_H
#define AJ_COMMON_ERR_H

#include <stdio.h>

enum aj_layer {
	AJ_LAYER_INTERNAL = 0,
	AJ_LAYER_USAGE,    /* command line */
	AJ_LAYER_POLICY,   /* policy parse/validate */
	AJ_LAYER_USERNS,   /* user namespace, id maps */
	AJ_LAYER_NS,       /* other namespaces */
	AJ_LAYER_MOUNT,    /* root filesystem construction */
	AJ_LAYER_LANDLOCK,
	AJ_LAYER_SECCOMP,
	AJ_LAYER_CAPS,
	AJ_LAYER_CGROUP,
	AJ_LAYER_NET,
	AJ_LAYER_RLIMIT,
	AJ_LAYER_PROCESS,  /* clone, sync, init */
	AJ_LAYER_EXEC,     /* the command itself */
	AJ_LAYER_IO,       /* files agentjail reads or writes on the host */
	AJ_LAYER_STATE,
	AJ_LAYER_API,
	AJ_LAYER_PROXY,
	AJ_LAYER_IMAGE, /* image store, registries, layers */
	AJ_LAYER_GVISOR, /* the gvisor tier: runsc and its bundle */
	AJ_LAYER__COUNT
};

/* What an error says about the object (sandbox, snapshot, command to run) a request named. Set
 * only by the code that decided it -- the state store's lookups and inserts, the manager's state
 * checks, the supervisor's answer to a command that could not start -- with aj_err_class();
 * every other error has AJ_ERRC_NONE. The exit codes of the sandbox verbs
 * come from it, never from errnum alone: a failed rename or mkdir in the state directory
 * carries ENOENT or EEXIST too, and is no "no such sandbox". */
enum aj_err_class {
	AJ_ERRC_NONE = 0,
	AJ_ERRC_NOT_FOUND,   /* no such sandbox or snapshot */
	AJ_ERRC_WRONG_STATE, /* wrong state for the operation, or in use */
	AJ_ERRC_EXISTS,      /* the name is taken */
	AJ_ERRC_NO_COMMAND,  /* the command is not found inside the sandbox (exit 127) */
	AJ_ERRC_NO_EXEC,     /* the command cannot be started: not executable, bad cwd (126) */
};

struct aj_err {
	enum aj_layer layer;
	int errnum;  /* errno, 0 if not a system error */
	enum aj_err_class cls;     /* reset by every setter but aj_err_prefix/_hint */
	char msg[768];
	char hint[320];
};

/* All setters return -1 so that `return aj_err_set(...)` reads naturally. */
int aj_err_set(struct aj_err *err, enum aj_layer layer, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Like aj_err_set() with errnum = errno at the time of the call. */
int aj_err_sys(struct aj_err *err, enum aj_layer layer, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Adds context in front of the message: "<context>: <message>". */
int aj_err_prefix(struct aj_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the remedy shown after the message. */
int aj_err_hint(struct aj_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Marks the error just set as one about the named object (see enum aj_err_class). */
int aj_err_class(struct aj_err *err, enum aj_err_class cls);

/* The static analyzer sees one file at a time: without being told, it assumes the setters
 * may return anything, and reports "success" paths after `return aj_err_set(...)` that cannot
 * happen (a NULL out-pointer used, a variable left unset). err.c, which defines them, sets
 * AJ_ERR_DEFINE. */
#if defined(__clang_analyzer__) && !defined(AJ_ERR_DEFINE)
#define aj_err_set(...) (aj_err_set(__VA_ARGS__), -1)
#define aj_err_sys(...) (aj_err_sys(__VA_ARGS__), -1)
#define aj_err_prefix(...) (aj_err_prefix(__VA_ARGS__), -1)
#define aj_err_hint(...) (aj_err_hint(__VA_ARGS__), -1)
#define aj_err_class(...) (aj_err_class(__VA_ARGS__), -1)
#endif

void aj_err_clear(struct aj_err *err);
const char *aj_layer_name(int layer);
/* "agentjail: [layer] message: errno text\n  hint: ...\n" */
void aj_err_print(const struct aj_err *err, FILE *f);
/* "message: errno text" into buf. */
void aj_err_format(const struct aj_err *err, char *buf, size_t len);

#endif
