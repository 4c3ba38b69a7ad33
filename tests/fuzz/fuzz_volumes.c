/* libFuzzer: what names a volume from outside: a filesystem.volumes entry (a policy, --volume,
 * E2B's volumeMounts) and a volume token (E2B's Authorization header). An entry that parses
 * has a source and a clean absolute target; a token is accepted only as the one the daemon
 * would make for the owner it names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "e2b/internal.h"
#include "storage/volumes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct aj_e2b e = {.secret = {1, 2, 3}};
	char *s = malloc(size + 1), why[200], owner[AJ_SRV_OWNER_MAX], tok[E2B_VOLUME_TOKEN_MAX];
	struct aj_volume_entry v;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (aj_volume_entry_parse(s, &v, why, sizeof why) == 0 &&
	    (!v.source[0] || !aj_path_is_clean_abs(v.target) || strchr(v.target, ':') ||
	     (!v.host && aj_volume_name_refusal(v.source))))
		abort();
	if (e2b_volume_token_owner(&e, s, "vol_0123456789abcdef", owner)) {
		e2b_volume_token(&e, owner, "vol_0123456789abcdef", tok, sizeof tok);
		if (strcmp(tok, s) != 0)
			abort();
	}
	/* The input as an owner: its token names it, for this volume only. */
	if (size && size < AJ_SRV_OWNER_MAX && !memchr(data, 0, size)) {
		e2b_volume_token(&e, s, "vol_0123456789abcdef", tok, sizeof tok);
		if (!e2b_volume_token_owner(&e, tok, "vol_0123456789abcdef", owner) ||
		    strcmp(owner, s) != 0 ||
		    e2b_volume_token_owner(&e, tok, "vol_0123456789abcdee", owner))
			abort();
	}
	free(s);
	return 0;
}
