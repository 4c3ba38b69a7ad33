/* The token file of `agentjail serve --token-file` and bearer token lookup (src/server/auth.c):
 * what is accepted, every refusal naming the line, and lookups that match only the whole
 * token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/internal.h"
#include "unit.h"

static char path[64];

static struct aj_srv_tokens *load(const char *text, mode_t mode, struct aj_err *err)
{
	struct aj_srv_tokens *t = NULL;
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	aj_err_clear(err);
	if (aj_srv_tokens_load(path, &t, err) < 0)
		return NULL;
	return t;
}

static void refusals(void)
{
	struct aj_err err;

	CHECK(!load("tok-0123456789abcdef alice\n", 0640, &err), "a group-readable file is refused");
	CHECK_CONTAINS(err.msg, "mode 0640", "... naming its mode");
	CHECK(!load("tok-0123456789abcdef alice\n", 0602, &err), "a world-writable file is refused");
	CHECK(!load("# only a comment\n\n", 0600, &err), "a file without tokens is refused");
	CHECK_CONTAINS(err.msg, "no tokens", "... saying so");
	CHECK(!load("tok-0123456789abcdef alice\nshort bob\n", 0600, &err), "a short token is refused");
	CHECK_CONTAINS(err.msg, "line 2", "... naming line 2");
	CHECK(!load("\n# c\ntok-0123456789abcdef\n", 0600, &err), "a token without an owner");
	CHECK_CONTAINS(err.msg, "line 3: expected TOKEN OWNER", "... naming line 3");
	CHECK(!load("tok-0123456789abcdef alice x\n", 0600, &err), "three fields are refused");
	CHECK(!load("tok-0123456789abcdef a/b\n", 0600, &err), "an owner with a slash is refused");
	CHECK(!load("tok-0123456789abcdef alice\ntok-0123456789abcdef bob\n", 0600, &err),
	      "a duplicate token is refused");
	CHECK_CONTAINS(err.msg, "line 2", "... naming the second line");
}

static void lookups(void)
{
	struct aj_err err;
	struct aj_srv_tokens *t =
		load("# owners\n  tok-0123456789abcdef   alice  \r\n\ntok-fedcba9876543210 bob\n", 0600,
		     &err);
	char longer[400];

	CHECK(t != NULL, "comments, blank lines, spaces and CRLF are accepted (%s)", err.msg);
	if (!t)
		return;
	CHECK_STR(aj_srv_tokens_owner(t, "Bearer tok-0123456789abcdef"), "alice", "alice's token");
	CHECK_STR(aj_srv_tokens_owner(t, "Bearer tok-fedcba9876543210"), "bob", "bob's token");
	CHECK_STR(aj_srv_tokens_owner(t, "bearer  tok-fedcba9876543210 "), "bob",
		  "the scheme in any case, extra spaces");
	CHECK(!aj_srv_tokens_owner(t, "Bearer tok-0123456789abcde"), "a prefix is no token");
	CHECK(!aj_srv_tokens_owner(t, "Bearer tok-0123456789abcdef0"), "a longer one is none");
	CHECK(!aj_srv_tokens_owner(t, "Bearer tok-0123456789abcdef x"), "trailing words: none");
	CHECK(!aj_srv_tokens_owner(t, "Basic tok-0123456789abcdef"), "another scheme: none");
	CHECK(!aj_srv_tokens_owner(t, "Bearer "), "an empty token: none");
	CHECK(!aj_srv_tokens_owner(t, "tok-0123456789abcdef"), "no scheme: none");
	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	memcpy(longer, "Bearer ", 7);
	CHECK(!aj_srv_tokens_owner(t, longer), "a token longer than any: none");
	aj_srv_tokens_free(t);
}

int main(void)
{
	snprintf(path, sizeof path, "/tmp/aj-unit-tokens.%d", (int)getpid());
	refusals();
	lookups();
	unlink(path);
	UNIT_EXIT();
}
