/* Registry authentication: the challenge a registry answers 401 with (WWW-Authenticate, RFC
 * 7235: Bearer with realm, service and scope, or Basic), and the credentials a docker-style
 * auth file holds for a registry ({"auths": {"HOST": {"auth": base64(user:password)}}}: the
 * files docker login and podman login write). Pure but for reading the file; credentials are
 * wiped when freed.
 */
#ifndef AJ_IMAGE_AUTH_H
#define AJ_IMAGE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

enum aj_auth_scheme { AJ_AUTH_NONE = 0, AJ_AUTH_BASIC, AJ_AUTH_BEARER };

struct aj_challenge {
	enum aj_auth_scheme scheme;
	char realm[1024];
	char service[256];
	char scope[512];
};

/* Parses a WWW-Authenticate value: the first Bearer or Basic challenge in it. -1 when it has
 * none (or is malformed). */
int aj_challenge_parse(const char *value, struct aj_challenge *c);

struct aj_creds {
	char user[256];
	char password[1024];
	bool have;
};

/* The credentials for registry `host` ("127.0.0.1:5000"; docker.io is also looked up as
 * https://index.docker.io/v1/) from `file`, or when NULL from the usual places in order:
 * $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json. No
 * entry is no error (c->have false); an unreadable named file or a malformed entry is. */
int aj_creds_lookup(const char *file, const char *host, struct aj_creds *c, struct aj_err *err);
/* The same from a file's text (for the fuzzer and the tests); `what` names it in errors. */
int aj_creds_from_text(const char *text, const char *what, const char *host, struct aj_creds *c,
		       struct aj_err *err);
void aj_creds_wipe(struct aj_creds *c);

/* A token service's answer ({"token": ...} or {"access_token": ...}): the token into out. */
int aj_token_parse(const char *body, size_t len, const char *realm, char *out, size_t cap,
		   struct aj_err *err);

#endif
