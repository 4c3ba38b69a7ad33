/* libFuzzer: a packet of the gvisor tier's file stream (common/fsstream.h), as the sandbox's
 * init (inside the sandbox) sends it. What parses must hold a valid name and link, and a
 * status must encode back to a packet that parses the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char again[AJ_FSS_MAX_PACKET];
	struct aj_fss_packet pk, pk2;
	size_t n;

	if (aj_fss_parse((const char *)data, size, &pk) < 0)
		return 0;
	if (pk.type == AJ_FSS_DATA && pk.len > AJ_FSS_MAX_DATA)
		abort();
	if (pk.type != AJ_FSS_STAT && pk.type != AJ_FSS_ENTRY)
		return 0;
	if (strchr(pk.name, '/') || (pk.type == AJ_FSS_ENTRY && !pk.name[0]))
		abort();
	n = aj_fss_stat_packet(again, pk.type, &pk.st, pk.type == AJ_FSS_ENTRY ? pk.name : NULL,
			       pk.has_link ? pk.link : NULL);
	if (aj_fss_parse(again, n, &pk2) < 0 || strcmp(pk.name, pk2.name) ||
	    strcmp(pk.link, pk2.link) || pk.st.st_mode != pk2.st.st_mode ||
	    pk.st.st_size != pk2.st.st_size)
		abort();
	return 0;
}
