/* Converting an Anthropic sandbox-runtime ("srt") settings file into an agentjail policy
 * (docs/policy.md, "Importing a sandbox-runtime settings file", has the mapping and what is
 * refused).
 *
 * The conversion is pure: it reads nothing from the system itself. What it needs to know
 * about the host -- the home directory "~" names, the directory srt would run in, what a path
 * resolves to and whether it exists -- comes through struct aj_srt_ctx, so that the unit
 * tests and the fuzzer can drive it with made-up answers.
 *
 * It fails closed: an srt setting agentjail cannot express is an error naming its field path
 * ("network.allowUnixSockets: no equivalent in agentjail (...)"), never silently dropped; only
 * settings that change no permission are dropped, each with a note.
 *
 * Ownership: aj_policy_import_srt() returns a new reference (json_decref() it) and takes none
 * of its input. Strings the resolve hook returns are malloc'd and freed by the conversion.
 */
#ifndef AJ_POLICY_IMPORT_SRT_H
#define AJ_POLICY_IMPORT_SRT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* What a look for host unix sockets found (struct aj_srt_ctx.find_socket). */
enum aj_srt_sock {
	AJ_SRT_SOCK_NONE,      /* none at or below the path */
	AJ_SRT_SOCK_FOUND,     /* one, named in found */
	AJ_SRT_SOCK_UNCHECKED, /* the look gave up; found says why */
};

struct aj_srt_ctx {
	/* "~" and "~/..." expand to it (srt uses the invoking user's home); NULL: refused. */
	const char *home;
	/* The directory srt would run in, canonical and absolute: "." and relative paths resolve
	 * against it, and it becomes the policy's filesystem.workspace. */
	const char *workspace;
	/* The canonical form of a clean absolute path (every symlink resolved: what the kernel
	 * reaches through it), malloc'd, with *exists telling whether it exists now; NULL only
	 * when out of memory. The conversion compares it with the path as written to apply
	 * srt's rules on symlinks. NULL hook: every path is taken as written and as existing. */
	char *(*resolve)(const char *path, bool *exists, void *opaque);
	/* Looks for a unix socket at or below an existing canonical path, following no symlink,
	 * and writes its path (or why it gave up: too many entries, an unreadable directory)
	 * into found. NULL hook: no path holds one. */
	enum aj_srt_sock (*find_socket)(const char *path, char *found, size_t len, void *opaque);
	/* One line per setting dropped or adjusted, saying why; may be NULL. */
	void (*note)(const char *msg, void *opaque);
	void *opaque;
};

/* The agentjail policy document for an srt settings document, or NULL with err set. */
json_t *aj_policy_import_srt(json_t *srt, const struct aj_srt_ctx *ctx, struct aj_err *err);

#endif
