/* The tree walker (src/common/tree.c) on a descriptor it was given more than once: every walk
 * reads the whole directory, whatever an earlier walk of the same descriptor did. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tree.h"
#include "unit.h"

int main(void)
{
	char dir[] = "/tmp/ajunit-tree.XXXXXX", p[128];
	struct aj_err err;
	uint64_t a = 0, b = 0;
	int fd, root;

	if (!mkdtemp(dir))
		return 1;
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s/f%d", dir, i);
		fd = open(p, O_WRONLY | O_CREAT, 0600);
		CHECK(write(fd, "12345", 5) == 5, "file %d written", i);
		close(fd);
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(aj_tree_size(fd, &a, &err) == 0 && a > 0, "a first walk counts the files (%llu)",
	      (unsigned long long)a);
	CHECK(aj_tree_size(fd, &b, &err) == 0 && b == a,
	      "a second walk of the same descriptor counts them again (%llu)",
	      (unsigned long long)b);
	b = 0; /* aj_tree_size adds to what *bytes holds */
	CHECK(aj_tree_clear(fd, &err) == 0 && aj_tree_size(fd, &b, &err) == 0 && b == 0,
	      "clearing after two walks removes everything (%llu bytes left)",
	      (unsigned long long)b);
	close(fd);
	root = open("/tmp", O_RDONLY | O_DIRECTORY);
	aj_tree_remove_at(root, dir + 5, &err);
	close(root);
	UNIT_EXIT();
}
