/* A Dockerfile, parsed: instructions with their line, flags and arguments, as docs/build.md
 * ("Dockerfiles") describes. The text is outside input (a repository's, a model's): every
 * error names the file, the line and the instruction, and nothing is run here.
 *
 * Lexing as Docker's frontend does: parser directives at the top (`# escape=` and `# syntax=`,
 * the latter ignored), comment lines, continuations by the escape character (a backslash
 * unless `# escape=` says otherwise), empty lines inside a continuation skipped. An
 * instruction is a keyword (any case), then `--name=value` flags where it takes them, then its
 * arguments: the exec form (a JSON array of strings) or the shell form for RUN, CMD and
 * ENTRYPOINT; words, with quotes, for COPY and ADD; `key=value` pairs (or the legacy
 * `ENV key value`) for ENV and LABEL. Variables ($NAME, ${NAME}, ${NAME:-word},
 * ${NAME:+word}) are expanded by the builder (aj_df_expand()), per instruction, with the
 * values it has at that step.
 *
 * struct aj_dockerfile owns its instructions; aj_dockerfile_free() releases them.
 */
#ifndef AJ_BUILD_DOCKERFILE_H
#define AJ_BUILD_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/strv.h"

#define AJ_DF_MAX_BYTES (1u << 20)
#define AJ_DF_MAX_INSNS 4096
#define AJ_DF_MAX_WORD (256u << 10) /* what one word may expand to */

enum aj_df_kind {
	AJ_DF_FROM,
	AJ_DF_RUN,
	AJ_DF_COPY,
	AJ_DF_ADD,
	AJ_DF_ENV,
	AJ_DF_ARG,
	AJ_DF_WORKDIR,
	AJ_DF_USER,
	AJ_DF_LABEL,
	AJ_DF_EXPOSE,
	AJ_DF_CMD,
	AJ_DF_ENTRYPOINT,
	AJ_DF_SHELL,
	AJ_DF_VOLUME,
	AJ_DF_STOPSIGNAL,
};

struct aj_df_insn {
	enum aj_df_kind kind;
	unsigned line;        /* where it starts, from 1 */
	bool exec_form;       /* the arguments were a JSON array */
	struct aj_strv flags; /* "name=value" (the leading "--" dropped), in order */
	/* RUN, CMD, ENTRYPOINT in the shell form: one element, the command line. COPY and ADD:
	 * the sources, then the destination. ENV and LABEL: "key=value" per pair, quotes
	 * removed, variables not yet expanded. ARG: "name" or "name=default". FROM: the image,
	 * then the stage's name if `AS name`. Others: the words. */
	struct aj_strv args;
	char *text; /* the instruction as written, continuations joined (for the cache key) */
};

struct aj_dockerfile {
	struct aj_df_insn *v;
	size_t n;
	char escape;
};

/* Parses text (len bytes, not necessarily NUL-terminated); `file` names it in errors. */
int aj_dockerfile_parse(const char *text, size_t len, const char *file, struct aj_dockerfile *df,
			struct aj_err *err);
void aj_dockerfile_free(struct aj_dockerfile *df);
const char *aj_df_kind_name(enum aj_df_kind k);

/* A flag's value ("chown" of "--chown=1:1"), or NULL. */
const char *aj_df_flag(const struct aj_df_insn *in, const char *name);

/* Expands the variables of word with lookup(arg, name) (NULL: unset, ""), the escape
 * character escaping a `$`. 0 and *out (the caller frees); -1 with err naming `what` on a
 * malformed reference ("${" without "}", a bad modifier). */
int aj_df_expand(const char *word, char escape, const char *(*lookup)(void *arg, const char *name),
		 void *arg, char **out, const char *what, struct aj_err *err);

#endif
