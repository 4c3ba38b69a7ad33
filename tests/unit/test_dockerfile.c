/* Dockerfiles (build/dockerfile.h): lexing, each instruction's arguments, errors with the file
 * and line, and variable expansion. */
#include <stdlib.h>
#include <string.h>

#include "build/dockerfile.h"
#include "build/ignore.h"
#include "unit.h"

static int parse(const char *text, struct aj_dockerfile *df, struct aj_err *err)
{
	return aj_dockerfile_parse(text, strlen(text), "Dockerfile", df, err);
}

static void instructions(void)
{
	struct aj_dockerfile df;
	struct aj_err err;
	const char *text = "# syntax=docker/dockerfile:1\n"
			   "ARG BASE=busybox\n"
			   "FROM $BASE AS build\n"
			   "# a comment\n"
			   "\n"
			   "run echo one \\\n"
			   "  # a comment inside\n"
			   "\n"
			   "    two\n"
			   "RUN [\"/bin/sh\", \"-c\", \"echo exec\"]\n"
			   "COPY --chown=1000:1000 --chmod=644 a \"b c\" /dst/\n"
			   "ENV A=1 B=\"two words\"\n"
			   "ENV LEGACY some value here\n"
			   "LABEL org.example=\"x y\" other=z\n"
			   "WORKDIR /my dir\n"
			   "USER app:app\n"
			   "EXPOSE 80 443/tcp\n"
			   "CMD echo shell form\r\n"
			   "ENTRYPOINT [\"/bin/echo\"]\n"
			   "SHELL [\"/bin/bash\", \"-c\"]\n"
			   "FROM scratch\n"
			   "COPY --from=build /a /a\n";

	CHECK(parse(text, &df, &err) == 0, "a Dockerfile with every instruction parses");
	CHECK(df.n == 16, "16 instructions");
	if (df.n != 16)
		return;
	CHECK(df.v[0].kind == AJ_DF_ARG && !strcmp(df.v[0].args.v[0], "BASE=busybox"),
	      "ARG before FROM");
	CHECK(df.v[1].kind == AJ_DF_FROM && df.v[1].args.n == 2 &&
		      !strcmp(df.v[1].args.v[0], "$BASE") && !strcmp(df.v[1].args.v[1], "build"),
	      "FROM IMAGE AS NAME, the variable kept for the builder");
	CHECK(df.v[2].kind == AJ_DF_RUN && df.v[2].line == 6 && !df.v[2].exec_form &&
		      !strcmp(df.v[2].args.v[0], "echo one     two"),
	      "a continuation joins lines, skipping comments and empty lines; keyword any case");
	CHECK(df.v[3].exec_form && df.v[3].args.n == 3 && !strcmp(df.v[3].args.v[2], "echo exec"),
	      "RUN exec form");
	CHECK(df.v[4].kind == AJ_DF_COPY && df.v[4].args.n == 3 &&
		      !strcmp(df.v[4].args.v[1], "\"b c\"") &&
		      !strcmp(aj_df_flag(&df.v[4], "chown"), "1000:1000") &&
		      !strcmp(aj_df_flag(&df.v[4], "chmod"), "644"),
	      "COPY flags and quoted words");
	CHECK(df.v[5].args.n == 2 && !strcmp(df.v[5].args.v[1], "B=\"two words\""),
	      "ENV pairs, quotes kept for expansion");
	CHECK(!strcmp(df.v[6].args.v[0], "LEGACY=some value here"), "ENV KEY VALUE, the legacy form");
	CHECK(df.v[7].kind == AJ_DF_LABEL && df.v[7].args.n == 2, "LABEL pairs");
	CHECK(!strcmp(df.v[8].args.v[0], "/my dir"), "WORKDIR keeps the rest of the line");
	CHECK(df.v[10].args.n == 2, "EXPOSE words");
	CHECK(!strcmp(df.v[11].args.v[0], "echo shell form"), "CMD shell form, CRLF line end");
	CHECK(df.v[12].exec_form && df.v[13].exec_form, "ENTRYPOINT and SHELL exec forms");
	CHECK(!strcmp(aj_df_flag(&df.v[15], "from"), "build"), "COPY --from");
	aj_dockerfile_free(&df);

	CHECK(parse("# escape=`\nFROM x\nRUN echo a `\n b\n", &df, &err) == 0 && df.escape == '`' &&
		      !strcmp(df.v[1].args.v[0], "echo a  b"),
	      "# escape=` changes the continuation character");
	aj_dockerfile_free(&df);
}

static void errors(void)
{
	struct aj_dockerfile df;
	struct aj_err err;

	CHECK(parse("FROM x\nFROBNICATE y\n", &df, &err) < 0 &&
		      strstr(err.msg, "Dockerfile:2: unknown instruction \"FROBNICATE\""),
	      "an unknown instruction names the file and the line");
	CHECK(parse("FROM x\nONBUILD RUN y\n", &df, &err) < 0 &&
		      strstr(err.msg, "Dockerfile:2: ONBUILD is not supported"),
	      "a known but unsupported instruction says so");
	CHECK(parse("FROM x\nRUN a \\\n", &df, &err) < 0 &&
		      strstr(err.msg, "Dockerfile:2: the instruction continues"),
	      "an unterminated continuation");
	CHECK(parse("FROM x\nRUN --mount=type=cache,target=/x make\n", &df, &err) < 0 &&
		      strstr(err.msg, "RUN does not take the flag --mount"),
	      "an unsupported flag is named");
	CHECK(parse("FROM x\nCOPY --chown 1 a b\n", &df, &err) < 0 &&
		      strstr(err.msg, "--chown needs a value"),
	      "a flag without its value");
	CHECK(parse("RUN x\n", &df, &err) < 0 && strstr(err.msg, "RUN before FROM"),
	      "an instruction before FROM");
	CHECK(parse("# just a comment\n", &df, &err) < 0 && strstr(err.msg, "no FROM"),
	      "no FROM at all");
	CHECK(parse("FROM x\nCOPY onlyone\n", &df, &err) < 0 &&
		      strstr(err.msg, "needs a source and a destination"),
	      "COPY with one word");
	CHECK(parse("FROM x\nCOPY <<EOF /f\n", &df, &err) < 0 && strstr(err.msg, "here-documents"),
	      "here-documents refused");
	CHECK(parse("FROM x\nENV novalue\n", &df, &err) < 0 && strstr(err.msg, "needs a value"),
	      "ENV KEY without a value");
	CHECK(parse("FROM x\nLABEL a=1 b\n", &df, &err) < 0 && strstr(err.msg, "\"b\" is not key=value"),
	      "LABEL pair without =");
	CHECK(parse("FROM x y z w\n", &df, &err) < 0 && strstr(err.msg, "takes IMAGE [AS NAME]"),
	      "FROM with stray words");
	CHECK(parse("FROM x\nSHELL /bin/sh -c\n", &df, &err) < 0 && strstr(err.msg, "JSON array"),
	      "SHELL in the shell form");
	CHECK(parse("FROM x\nCOPY \"a b /c\n", &df, &err) < 0 && strstr(err.msg, "unterminated quote"),
	      "an unterminated quote");
	CHECK(aj_dockerfile_parse("FROM x\0", 7, "Dockerfile", &df, &err) < 0 &&
		      strstr(err.msg, "NUL byte"),
	      "a NUL byte: not a text file");
}

static const char *vars(void *arg, const char *name)
{
	(void)arg;
	if (!strcmp(name, "A"))
		return "alpha";
	if (!strcmp(name, "E"))
		return "";
	return NULL;
}

static void expansion(void)
{
	struct aj_err err;
	char *out = NULL;

#define EXPANDS(in, want, what)                                                                  \
	do {                                                                                     \
		out = NULL;                                                                      \
		CHECK(aj_df_expand(in, '\\', vars, NULL, &out, "word", &err) == 0 && out &&      \
			      !strcmp(out, want),                                                \
		      what);                                                                     \
		free(out);                                                                       \
	} while (0)
	EXPANDS("$A", "alpha", "$NAME");
	EXPANDS("${A}/x", "alpha/x", "${NAME}");
	EXPANDS("$UNSET-x", "-x", "an unset variable is empty");
	EXPANDS("${UNSET:-def}", "def", ":- of an unset variable");
	EXPANDS("${E:-def}", "def", ":- of an empty variable");
	EXPANDS("${A:-def}", "alpha", ":- of a set variable");
	EXPANDS("${A:+alt}", "alt", ":+ of a set variable");
	EXPANDS("${UNSET:+alt}", "", ":+ of an unset variable");
	EXPANDS("${UNSET:-${A}}", "alpha", "a reference in the word");
	EXPANDS("'$A'", "$A", "single quotes: literal");
	EXPANDS("\"$A b\"", "alpha b", "double quotes: expanded, quotes removed");
	EXPANDS("\\$A", "$A", "an escaped $");
	EXPANDS("a$", "a$", "a lone $");
	out = NULL;
	CHECK(aj_df_expand("${A", '\\', vars, NULL, &out, "word", &err) < 0 &&
		      strstr(err.msg, "word"),
	      "\"${\" without \"}\"");
	CHECK(aj_df_expand("${A?x}", '\\', vars, NULL, &out, "word", &err) < 0 &&
		      strstr(err.msg, "only ${NAME}"),
	      "an unsupported modifier");
	CHECK(aj_df_expand("'open", '\\', vars, NULL, &out, "word", &err) < 0, "an open quote");
}

static void ignore(void)
{
	struct aj_ignore ig;

	CHECK(aj_glob_match("*.key", "a.key") && !aj_glob_match("*.key", "src/a.key"),
	      "'*' stays within a path element");
	CHECK(aj_glob_match("**/*.key", "src/deep/a.key") && aj_glob_match("**/*.key", "a.key"),
	      "\"**\" spans any number of elements, none included");
	CHECK(aj_glob_match("src/**", "src/a/b") && aj_glob_match("a/**/b", "a/b"),
	      "\"**\" at the end and in the middle");
	CHECK(aj_glob_match("f?o[0-9]", "fxo7") && !aj_glob_match("f?o[0-9]", "fxoa") &&
		      aj_glob_match("[!a]b", "cb") && !aj_glob_match("[!a]b", "ab"),
	      "'?' and classes, negated too");
	CHECK(aj_glob_match("\\*x", "*x") && !aj_glob_match("\\*x", "ax"), "an escaped '*'");
	CHECK(!aj_glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
	      "many stars: no exponential backtracking (this returns)");
	aj_ignore_parse(&ig, "# comment\n\n/build/\n*.log\n!keep.log\nnode_modules\n  ./tmp/x  \n");
	CHECK(ig.patterns.n == 5, "comments and blank lines skipped, 5 patterns");
	CHECK(aj_ignore_match(&ig, "build/out/a.o"), "a directory pattern covers what is below it");
	CHECK(aj_ignore_match(&ig, "debug.log") && !aj_ignore_match(&ig, "keep.log"),
	      "'!' takes a path back; the last match wins");
	CHECK(aj_ignore_match(&ig, "node_modules/x/y.js") && aj_ignore_match(&ig, "tmp/x"),
	      "leading ./ and spaces dropped");
	CHECK(!aj_ignore_match(&ig, "src/main.c"), "others kept");
	aj_ignore_free(&ig);
}

int main(void)
{
	ignore();
	instructions();
	errors();
	expansion();
	UNIT_EXIT();
}
