/* Table-driven command-line options. Each subcommand declares a table; the parser handles
 * "--name VALUE", "--name=VALUE", "-x VALUE" and "--" uniformly, and every error names the
 * option it is about. */
#ifndef AJ_CLI_ARGS_H
#define AJ_CLI_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"

struct aj_option {
	const char *name;  /* long name, without "--" */
	char short_name;   /* 0: none */
	const char *value; /* metavar if the option takes a value, NULL for a switch */
	/* Called with the value (NULL for a switch). `ctx` is the subcommand's context. */
	int (*apply)(void *ctx, const char *name, const char *value, struct aj_err *err);
	const char *help;
};

/* Parses options from argv[*pos] on, stopping at "--" (consumed), at the first non-option
 * argument, or at the end. *pos is left on the first unparsed argument. */
int aj_args_parse(const struct aj_option *table, void *ctx, int argc, char **argv, int *pos,
		  struct aj_err *err);
void aj_args_usage(FILE *f, const char *synopsis, const char *summary,
		   const struct aj_option *table);

#endif
