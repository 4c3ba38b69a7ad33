/* Shared by the two readers of config.json, and by them alone: spec.c (the document, mounts,
 * linux) and spec_process.c (a process, the bundle's or `exec --process`'s process.json).
 * Both are tables of common/jfields.h rows, read in the tables' order with OCI's rule for
 * unknown fields; the rows' callbacks find what they read into in struct oci_read (the read
 * options' arg). The errors are config.json's (oci_error()); a row's own refusal is worded
 * "PATH: why" with OCI_REFUSE, inside a callback whose parameters are named f, path, v, e.
 *
 * Ownership: what the rows store belongs to the spec or process read into (aj_oci_spec_free,
 * aj_oci_process_free), also after a failed read.
 */
#ifndef AJ_OCI_SPEC_INTERNAL_H
#define AJ_OCI_SPEC_INTERNAL_H

#include <errno.h>
#include <stdint.h>

#include "common/jfields.h"
#include "oci/spec.h"

#define OCI_READ_FLAGS (AJ_JF_IGNORE_UNKNOWN | AJ_JF_TABLE_ORDER)
#define OCI_NONNEG .min = 0, .max = INT64_MAX, .expect = "a non-negative integer"
#define OCI_END {.name = NULL}

/* An error of config.json outside the engine (EINVAL). */
#define OCI_BAD(path, fmt, ...)                                                                \
	aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "config.json: %s: " fmt, path, ##__VA_ARGS__)
/* A row's refusal at path (EINVAL; ENOTSUP is set on e->err by the row itself). */
#define OCI_REFUSE(path, fmt, ...)                                                             \
	aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "%s: " fmt, path, ##__VA_ARGS__)

/* What the rows' callbacks read into: the spec (NULL for `exec --process`), the process being
 * read, and where notes go (NULL: nowhere). */
struct oci_read {
	struct aj_oci_spec *s;
	struct aj_container_process *p;
	struct aj_strv *notes;
};

#define OCI_CTX(o) ((struct oci_read *)(o)->arg)

/* The engine's error as config.json's: types, ranges and missing fields worded from the row
 * ("PATH: expected <expect>", "PATH: required"), a row's refusal as it wrote it. -1. */
int oci_error(const struct aj_jf_error *e, struct aj_err *err);
/* A nested object read with its own rows into base, at path (an element of an array). */
int oci_read_sub(const struct aj_jf_field *rows, json_t *v, void *base, const char *path,
		 const struct aj_jf_opts *o, struct aj_jf_error *e);
/* "PATH: why" into the read's notes, if it keeps them. */
void oci_note(const struct aj_jf_opts *o, const char *path, const char *why);
/* A row's parse: present (even null), accepted and noted as not applied. */
int oci_note_not_applied(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e);

/* spec_resources.c: linux.resources into the spec's res. */
int oci_read_resources(json_t *v, const char *path, const struct aj_jf_opts *o,
		       struct aj_jf_error *e);
/* spec_process.c: the process object at path into ctx->p (zeroed by the caller). */
int oci_read_process(json_t *obj, const char *path, struct oci_read *ctx, struct aj_jf_error *e);

#endif
