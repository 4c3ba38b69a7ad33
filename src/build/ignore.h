/* .dockerignore: which paths of a build context COPY and ADD leave out. One pattern per line
 * ('#' comments and blank lines skipped, a leading "/" or "./" dropped), matched against the
 * path relative to the context: '*' any run of characters but '/', '?' one, "[...]" a class,
 * "**" any run of whole directories, '\' escaping the next. A pattern that matches a directory
 * leaves out everything below it; a '!' pattern takes a path back; the last match wins, as
 * docker's does. The context's .dockerignore and Dockerfile are sent to nobody here, so they
 * are no exception.
 *
 * struct aj_ignore owns its patterns; aj_ignore_free() releases them.
 */
#ifndef AJ_BUILD_IGNORE_H
#define AJ_BUILD_IGNORE_H

#include <stdbool.h>

#include "common/err.h"
#include "common/strv.h"

struct aj_ignore {
	struct aj_strv patterns; /* as cleaned, each "!" prefix kept */
};

/* The patterns of text (a .dockerignore's content); NULL: none. */
void aj_ignore_parse(struct aj_ignore *ig, const char *text);
bool aj_ignore_match(const struct aj_ignore *ig, const char *path);
void aj_ignore_free(struct aj_ignore *ig);
/* Whether a glob `pattern` matches `path` whole, by the rules above. */
bool aj_glob_match(const char *pattern, const char *path);

#endif
