/* Capability names as OCI bundles, docker and the kernel's headers spell them ("CAP_CHOWN"),
 * and the sets a process holds. Pure: the vocabulary that the OCI reader checks names
 * against and that plans and reports print; sandbox/caps.c applies the sets.
 */
#ifndef AJ_RULES_CAPS_H
#define AJ_RULES_CAPS_H

#include <stddef.h>
#include <stdint.h>

/* Capabilities this table knows (0 .. AJ_CAP_LAST); a set is a mask of 1 << CAP_x. */
#define AJ_CAP_LAST 40

/* The five sets of a process, in runtime-spec's order of process.capabilities. */
enum aj_capset {
	AJ_CAPSET_BOUNDING,
	AJ_CAPSET_EFFECTIVE,
	AJ_CAPSET_INHERITABLE,
	AJ_CAPSET_PERMITTED,
	AJ_CAPSET_AMBIENT,
	AJ_CAPSET__COUNT
};

extern const char *const aj_capset_names[AJ_CAPSET__COUNT]; /* "bounding", ... */

/* The number of "CAP_NAME" (case-sensitive, as the spec writes it), or -1. */
int aj_cap_from_name(const char *name);
/* "CAP_NAME" of a number, or NULL past AJ_CAP_LAST. */
const char *aj_cap_name(int cap);
/* A mask of every capability this table knows. */
uint64_t aj_cap_all(void);
/* Parses "CAP_A,CAP_B" (spaces around names allowed) or "none" into *mask; -1 with the first
 * unknown name copied to bad. */
int aj_cap_parse_list(const char *list, uint64_t *mask, char *bad, size_t bad_len);
/* Names of a mask, comma-separated, into buf ("" for none); truncated to fit. */
void aj_cap_format(uint64_t mask, char *buf, size_t len);

#endif
