/* An OCI runtime bundle's config.json (runtime-spec 1.x), parsed and checked field by field.
 * Every error names the field path ("mounts[3].options[1]"). Fields agentjail accepts but
 * does not enforce the way the spec describes are listed in `notes` (they reach the report);
 * fields it cannot honour safely are errors.
 *
 * The spec owns its strings and arrays; aj_oci_spec_free() releases them. `seccomp` and
 * `annotations` hold a reference to the JSON they came from.
 */
#ifndef AJ_OCI_SPEC_H
#define AJ_OCI_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/strv.h"
#include "sandbox/container.h" /* the process description the sandbox runs */

struct aj_oci_mount {
	char *dst;
	char *type;   /* "bind" for bind mounts, whatever the type field said */
	char *src;
	unsigned long flags; /* MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, ... */
	bool bind, recursive;
	unsigned long propagation; /* MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE (| MS_REC) */
	char *data; /* filesystem options ("mode=755,size=65536k"), NULL if none */
};

struct aj_oci_ns {
	int type;   /* CLONE_NEW* */
	char *path; /* join this namespace; NULL: a new one */
};


struct aj_oci_spec {
	char *oci_version;
	struct aj_container_process proc;
	bool have_proc;
	char *root_path; /* as written (relative to the bundle) */
	bool root_ro;
	struct aj_oci_mount *mounts;
	size_t n_mounts;
	char *hostname;
	unsigned long root_propagation; /* linux.rootfsPropagation as MS_* flags, 0: private */
	struct aj_oci_ns ns[AJ_CONTAINER_MAX_NS];
	size_t n_ns;
	struct aj_cgroup_oci_limits res; /* linux.resources (spec_resources.c) */
	struct aj_strv masked, readonly;
	struct aj_strv sysctl; /* "name=value", checked against the allowlist */
	struct aj_strv devices; /* linux.devices: "path=host node" of the safe character devices */
	json_t *seccomp;       /* linux.seccomp, NULL if absent */
	char *cgroups_path;
	json_t *annotations; /* object, never NULL after a successful parse */
	struct aj_strv notes;
};

int aj_oci_spec_parse(json_t *root, struct aj_oci_spec *s, struct aj_err *err);
/* Parses a process object; `where` prefixes field paths ("process" or "process.json"). */
int aj_oci_process_parse(json_t *obj, const char *where, struct aj_container_process *p,
			 struct aj_strv *notes, struct aj_err *err);
void aj_oci_process_free(struct aj_container_process *p);
void aj_oci_spec_free(struct aj_oci_spec *s);

/* True if the namespace of this type is requested (new or joined); *path gets its path. */
bool aj_oci_spec_has_ns(const struct aj_oci_spec *s, int type, const char **path);
/* The namespace a sysctl the bundle may set belongs to (CLONE_NEWIPC, CLONE_NEWNET), or 0;
 * name may be "name=value". */
int aj_oci_sysctl_ns(const char *name);
/* The annotation's value, or NULL. */
const char *aj_oci_annotation(const struct aj_oci_spec *s, const char *key);

/* Name tables shared with `features`. */
extern const char *const aj_oci_mount_options[];
extern const char *const aj_oci_ns_names[];

#endif
