/* Build-time helper: turns a data file into a C string constant.
 * usage: embed SYMBOL IN OUT.c */
#include <stdio.h>

int main(int argc, char **argv)
{
	FILE *in, *out;
	int c;

	if (argc != 4) {
		fprintf(stderr, "usage: %s SYMBOL IN OUT.c\n", argv[0]);
		return 2;
	}
	in = fopen(argv[2], "r");
	out = fopen(argv[3], "w");
	if (!in || !out) {
		perror("embed");
		return 1;
	}
	fprintf(out, "/* Generated from %s. Do not edit. */\nconst char %s[] =\n\t\"", argv[2],
		argv[1]);
	while ((c = fgetc(in)) != EOF) {
		if (c == '\n')
			fputs("\\n\"\n\t\"", out);
		else if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else
			fputc(c, out);
	}
	fputs("\";\n", out);
	return fclose(out) == 0 ? 0 : 1;
}
