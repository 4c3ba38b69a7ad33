/* Shared between import_srt.c (field tables, network, output), import_srt_fs.c (paths) and
 * import_srt_builtin.c (what srt enforces beyond its settings file).
 * struct srt_import owns every string in it; srt_import_free() releases them. */
#ifndef AJ_POLICY_IMPORT_SRT_INTERNAL_H
#define AJ_POLICY_IMPORT_SRT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strv.h"
#include "policy/import_srt.h"

/* Every refusal is a policy error naming the srt field it is about. */
#define refuse(err, ...) aj_err_set((err), AJ_LAYER_POLICY, 0, __VA_ARGS__)

/* One entry of an srt path list, expanded and resolved. */
struct srt_path {
	char *text;      /* as written in the file: "./build" */
	char *lexical;   /* expanded and cleaned, symlinks not resolved: srt's spelling */
	char *path;      /* canonical absolute: what the kernel reaches through it */
	char field[128]; /* where it came from: "filesystem.denyRead[2]" */
	bool exists;     /* now, as the resolve hook saw it */
};

struct srt_paths {
	struct srt_path *v;
	size_t n, cap;
};

struct srt_import {
	const struct aj_srt_ctx *ctx;
	/* srt's lists as read */
	struct srt_paths allow_write, deny_write, allow_read, deny_read;
	/* the policy being built */
	bool ws_write; /* filesystem.workspace_mode "rw" */
	struct aj_strv read_only, read_write, mask;
	struct aj_strv net_allow, net_deny;
	struct aj_strv env_allow; /* agentjail's default environment.allow, minus srt's denials */
	bool env_changed;
};

void srt_note(struct srt_import *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Expands an srt path (see import_srt_fs.c for its forms) and appends it to list. */
int srt_add_path(struct srt_import *im, struct srt_paths *list, const char *field,
		 const char *text, struct aj_err *err);
/* Turns the four lists into filesystem.workspace_mode, read_only, read_write and mask. */
int srt_convert_fs(struct srt_import *im, struct aj_err *err);
void srt_paths_free(struct srt_paths *list);

/* import_srt_fs.c's helpers for import_srt_builtin.c. */
char *srt_resolve(const struct srt_import *im, const char *path, bool *exists);
bool srt_writable_at(const struct srt_import *im, const char *path);
void srt_push_unique(struct aj_strv *sv, const char *path);

/* import_srt_builtin.c: srt's mandatory write denials and its unix socket block. */
int srt_refuse_protected(const struct srt_path *e, struct aj_err *err);
int srt_builtin_denies(struct srt_import *im, struct aj_err *err);
int srt_refuse_sockets(struct srt_import *im, struct aj_err *err);

#endif
