/* membomb MIB: allocates and touches memory one MiB at a time up to MIB, then prints
 * "allocated MIB" and exits 0. Under a memory limit it is killed on the way; every MiB it got
 * is first written to, so the pages are really charged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 1024, got;

	for (got = 0; got < want; got++) {
		char *p = malloc(1 << 20);
		if (!p) {
			printf("malloc failed after %ld\n", got);
			return 2;
		}
		memset(p, 0x5a, 1 << 20);
	}
	printf("allocated %ld\n", got);
	return 0;
}
