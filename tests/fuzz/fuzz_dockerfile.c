/* libFuzzer: a Dockerfile (a repository's, a model's) and the variable references in its
 * words, and the same bytes as a .dockerignore. Whatever parses holds a FROM and well-formed
 * instructions; expansion either fails with an error or gives a string; the patterns match
 * or not, without running away. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "build/dockerfile.h"
#include "build/ignore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *lookup(void *arg, const char *name)
{
	(void)arg;
	return strcmp(name, "A") == 0 ? "value" : strcmp(name, "E") == 0 ? "" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aj_dockerfile df;
	struct aj_err err;
	bool from = false;

	char *text = malloc(size + 1);
	struct aj_ignore ig;
	static const char *const paths[] = {"a", "a/b/c.key", "src/x/y", ".git/config", ""};

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	aj_ignore_parse(&ig, text);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		(void)aj_ignore_match(&ig, paths[i]);
	for (size_t i = 0; i < ig.patterns.n; i++)
		(void)aj_glob_match(ig.patterns.v[i], text);
	aj_ignore_free(&ig);
	free(text);
	if (aj_dockerfile_parse((const char *)data, size, "Dockerfile", &df, &err) < 0)
		return 0;
	for (size_t i = 0; i < df.n; i++) {
		const struct aj_df_insn *in = &df.v[i];

		from = from || in->kind == AJ_DF_FROM;
		if (in->line == 0 || !in->text || (in->kind == AJ_DF_FROM && in->args.n == 0))
			abort();
		for (size_t k = 0; k < in->args.n; k++) {
			char *out = NULL;

			if (aj_df_expand(in->args.v[k], df.escape, lookup, NULL, &out, "word", &err) ==
				    0 &&
			    !out)
				abort();
			free(out);
		}
	}
	if (!from)
		abort();
	aj_dockerfile_free(&df);
	return 0;
}
