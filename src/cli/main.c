/* agentjail: dispatch to a verb (verbs.c lists them). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/crypto.h>

#include "cli/commands.h"
#include "cli/config.h"
#include "common/alloc.h"
#include "common/exitcode.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "common/tree.h"
#include "host/subids.h"
#include "oci/oci.h"

/* A closed 0, 1 or 2 would be taken by the next file we open (the events log, say) and then
 * handed to the sandbox as its stdio. */
static void ensure_stdio(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			_exit(125);
}

/* OpenSSL's allocator takes the caller's file and line, which the policy has no use for. */
static void *ssl_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return aj_xmalloc(n);
}

static void *ssl_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return aj_xrealloc(p, n);
}

static void ssl_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	free(p);
}

/* The out-of-memory policy (docs/architecture.md, "Allocation") for the libraries that hold
 * memory for agentjail: before anything has allocated through them. */
static void install_allocators(void)
{
	aj_alloc_install();
	event_set_mem_functions(aj_xmalloc, aj_xrealloc, free);
	CRYPTO_set_mem_functions(ssl_malloc, ssl_realloc, ssl_free);
}

static int unknown_command(const char *name)
{
	const char *names[64], *near;
	size_t n = 0;

	for (const struct aj_verb *const *v = aj_verbs; *v && n < 64; v++)
		if (!((*v)->flags & AJ_VERB_HIDDEN))
			names[n++] = (*v)->name;
	near = aj_args_nearest(names, n, name, strlen(name));
	fprintf(stderr, "agentjail: [usage] unknown command \"%s\"\n", name);
	if (near)
		fprintf(stderr, "  hint: did you mean %s?\n", near);
	aj_cli_usage(stderr);
	return AJ_EXIT_ERROR;
}

int main(int argc, char **argv)
{
	const struct aj_verb *v;
	struct aj_err err;
	int pos = 1;

	ensure_stdio();
	install_allocators();
	aj_trace_init();
	aj_proctitle_init(argc, argv);
	/* Rootless: trees a sandbox's other ids own are removed and copied in a user namespace
	 * that maps them (host/subids.h). */
	if (geteuid() != 0)
		aj_tree_set_elevate(aj_subids_elevate);
	if (argc < 2) {
		aj_cli_usage(stderr);
		return AJ_EXIT_ERROR;
	}
	if (strcmp(argv[1], "--version") == 0)
		return aj_verb_version.fn(&aj_verb_version, argc - 1, argv + 1);
	/* containerd's runc shim runs its runtime as BIN --root DIR --log FILE ... VERB. */
	if (aj_oci_invoked_as_runc(argc, argv))
		return aj_cmd_oci(argc, argv);
	/* The shared options may come before the verb: agentjail --state-dir DIR ls. */
	if (aj_args_parse(aj_cli_options, NULL, argc, argv, &pos, &err) < 0) {
		aj_err_print(&err, stderr);
		return AJ_EXIT_ERROR;
	}
	if (pos >= argc) {
		aj_cli_usage(aj_cli.help ? stdout : stderr);
		return aj_cli.help ? 0 : AJ_EXIT_ERROR;
	}
	v = aj_verb_find(argv[pos]);
	if (!v)
		return unknown_command(argv[pos]);
	if (!(v->flags & AJ_VERB_NO_CONFIG) && aj_cli_config_load(&err) < 0) {
		aj_err_print(&err, stderr);
		return AJ_EXIT_ERROR;
	}
	return v->fn(v, argc - pos, argv + pos);
}
