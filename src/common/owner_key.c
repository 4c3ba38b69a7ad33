#include "common/owner_key.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

int aj_owner_key(const char *owner, char *key)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(owner, strlen(owner), md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen < AJ_OWNER_KEY_LEN / 2)
		return -1;
	for (int i = 0; i < AJ_OWNER_KEY_LEN / 2; i++)
		snprintf(key + 2 * i, 3, "%02x", md[i]);
	return 0;
}
