/* The secret store: values a policy names as a credential source ("from_secret", read by the
 * egress proxy as the sandbox starts), kept apart per owner under STATE/secrets/, readable
 * only by agentjail's user (directories 0700, files 0600). A value is written once and never
 * read back by anything but the proxy: the functions here return a secret's metadata (id,
 * name, version, times, the caller's metadata), never its value.
 *
 * Layout: STATE/secrets/<owner key>/NAME.value (the value) and NAME.json (the metadata),
 * written to a temporary file and renamed, under the directory's lock (.lock). The owner key is
 * 32 hex digits of the owner's SHA-256, so any owner string makes one plain directory name. */
#ifndef AJ_STATE_SECRETS_H
#define AJ_STATE_SECRETS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/secret_name.h"

#define AJ_SECRET_VALUE_MAX 16384

struct aj_secret {
	char id[29]; /* "sec_" and 24 hex digits */
	char name[AJ_SECRET_NAME_MAX + 1];
	int64_t version; /* 1 at create, one more at each update */
	int64_t created_ms, updated_ms;
	json_t *metadata; /* an object of strings, owned; {} when none was given */
};

void aj_secret_free(struct aj_secret *s);
void aj_secrets_free(struct aj_secret *v, size_t n);

/* The owner's directory (made by aj_secret_put); the proxy reads values under it. */
int aj_secret_dir(const char *state, const char *owner, char *buf, size_t len);

/* A value a secret may hold: 1 to AJ_SECRET_VALUE_MAX bytes, no control characters (it goes
 * into an HTTP header). NULL if it may, else why not. */
const char *aj_secret_value_refusal(const char *value, size_t len);

/* create: a new secret (EEXIST if the name is taken); otherwise ref (a name or an id) is
 * updated to the new value, its version one more (ENOENT if there is none). metadata may be
 * NULL (kept as it was on update, {} on create). out, if not NULL, gets the result. Errors
 * name the field ("name", "value", "metadata"). */
int aj_secret_put(const char *state, const char *owner, const char *ref, const char *value,
		  size_t len, json_t *metadata, bool create, struct aj_secret *out,
		  struct aj_err *err);
/* A secret by name or id; ENOENT (class not found) if the owner has none. */
int aj_secret_get(const char *state, const char *owner, const char *ref, struct aj_secret *out,
		  struct aj_err *err);
/* The owner's secrets by name. */
int aj_secret_list(const char *state, const char *owner, struct aj_secret **out, size_t *n,
		   struct aj_err *err);
/* Removes a secret by name or id (its value wiped from the file first); ENOENT if none. */
int aj_secret_remove(const char *state, const char *owner, const char *ref, struct aj_err *err);
/* Whether the owner has a secret of that name (a policy's from_secret, checked at create). */
bool aj_secret_exists(const char *state, const char *owner, const char *name);

/* The metadata as the front ends show it: id, name, version, created, updated, metadata. */
json_t *aj_secret_json(const struct aj_secret *s);

#endif
