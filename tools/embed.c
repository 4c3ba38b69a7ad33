/* Build-time helper: turns a data file into a C string constant (and SYMBOL_len, its length).
 * Besides quotes and backslashes it escapes '?' (no trigraph such as JavaScript's "??=" may
 * reach the compiler) and control characters other than newlines.
 * usage: embed SYMBOL IN OUT.c */
#include <stdio.h>

int main(int argc, char **argv)
{
	FILE *in, *out;
	int c;
	unsigned long len = 0;

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
		len++;
		if (c == '\n')
			fputs("\\n\"\n\t\"", out);
		else if (c == '"' || c == '\\' || c == '?')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\%03o", (unsigned)c);
		else
			fputc(c, out);
	}
	fprintf(out, "\";\nconst unsigned long %s_len = %luUL;\n", argv[1], len);
	return fclose(out) == 0 ? 0 : 1;
}
