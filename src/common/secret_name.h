/* The names of the secret store's secrets (src/state/secrets.c), shared by the policy's
 * "from_secret" and the proxy that reads a secret's value: 1 to 128 letters, digits, '_' and
 * '-', compared without case (kept lower-case, as E2B's API keeps them), not beginning with
 * "sec_", which begins the ids. */
#ifndef AJ_COMMON_SECRET_NAME_H
#define AJ_COMMON_SECRET_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define AJ_SECRET_NAME_MAX 128

bool aj_secret_name_ok(const char *name);
/* The name lower-cased into buf (at least AJ_SECRET_NAME_MAX + 1 bytes); -1 if it is no
 * secret's name. */
int aj_secret_name_canon(const char *name, char *buf, size_t len);
/* The file holding a secret's value in an owner's directory of the store; -1 if the name is
 * no secret's or the path does not fit. */
int aj_secret_value_path(const char *owner_dir, const char *name, char *buf, size_t len);

#endif
