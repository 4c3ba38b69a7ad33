/* Libraries loaded at their first use (src/common/lazylib.h): nothing of OpenSSL or libm is in
 * the process before; OpenSSL's first call loads it with the allocators given beforehand, and
 * calls give the library's answers (a digest's known value, a power); a process that forbade
 * loading ends (125) at a call that would load instead of searching for the library. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <math.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/lazylib.h"
#include "common/openssl.h"
#include "unit.h"

static size_t allocations;

static void *count_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	allocations++;
	return malloc(n);
}

static void *count_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	allocations++;
	return realloc(p, n);
}

static void count_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	free(p);
}

/* Whether a shared object whose path contains name is mapped in this process. */
static bool mapped(const char *name)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

static void hex(const unsigned char *md, unsigned n, char *out)
{
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

/* In a child: forbid, then a call that would load. */
static void forbidden_call(void)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		unsigned char md[EVP_MAX_MD_SIZE];
		unsigned n = 0;
		/* stderr to /dev/null: the message is the process's own, not the test's */
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		aj_lazylib_forbid();
		EVP_Digest("abc", 3, md, &n, EVP_sha256(), NULL);
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "forbidden: the child ran");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 125,
	      "forbidden: a call that would load ends the process (exit 125), status 0x%x", status);
}

int main(void)
{
#if AJ_LAZY_LIBS
	unsigned char md[EVP_MAX_MD_SIZE];
	char got[2 * EVP_MAX_MD_SIZE + 1] = "";
	unsigned n = 0;
	struct aj_err err;
	double (*volatile pw)(double, double) = pow; /* a call, not the compiler's own */

	forbidden_call();
	CHECK(!mapped("libcrypto.so") && !mapped("libssl.so"),
	      "before the first call: no OpenSSL in the process");
#ifdef __SANITIZE_ADDRESS__
	printf("ok - before the first call: no libm in the process # SKIP the sanitizers' runtime "
	       "maps it\n");
#else
	CHECK(!mapped("libm.so"), "before the first call: no libm in the process");
#endif
	CHECK(pw(2.0, 10.0) == 1024.0, "pow(2, 10) through the loaded libm: 1024");
	CHECK(mapped("libm.so.6"), "libm.so.6 is loaded");
	CHECK(CRYPTO_set_mem_functions(count_malloc, count_realloc, count_free) == 1,
	      "allocators given before the load are accepted");
	CHECK(EVP_Digest("abc", 3, md, &n, EVP_sha256(), NULL) == 1 && n == 32,
	      "the first call loads and answers");
	hex(md, n, got);
	CHECK_STR(got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		  "SHA-256 of \"abc\" is the known value");
	CHECK(mapped("libcrypto.so.3") && mapped("libssl.so.3"),
	      "libssl.so.3 and libcrypto are loaded");
	CHECK(allocations > 0, "OpenSSL allocates through the allocators given before (%zu calls)",
	      allocations);
	aj_err_clear(&err);
	CHECK(aj_openssl_load(&err) == 0, "aj_openssl_load: loaded already, 0");
	aj_lazylib_forbid();
	CHECK(EVP_Digest("abc", 3, md, &n, EVP_sha256(), NULL) == 1,
	      "forbidding later loads leaves what is loaded usable");
#else
	printf("ok - # SKIP OpenSSL is linked in (STATIC_LIBS=0)\n");
#endif
	UNIT_EXIT();
}
