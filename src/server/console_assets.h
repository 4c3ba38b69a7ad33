/* The web console's files, built into the binary (Makefile: data/console/ and the pinned
 * xterm.js of data/console/package-lock.json, through tools/embed into gen/console_assets.c).
 * Read-only data owned by nobody: the table ends with a row whose name is NULL.
 */
#ifndef AJ_SERVER_CONSOLE_ASSETS_H
#define AJ_SERVER_CONSOLE_ASSETS_H

#include <stddef.h>

struct aj_console_asset {
	const char *name; /* the path below /console/: "index.html", "vendor/xterm.js" */
	const char *data;
	size_t len;
};

extern const struct aj_console_asset aj_console_assets[];

#endif
