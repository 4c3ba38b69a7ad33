/* Base64 (RFC 4648, standard alphabet, padded): bytes inside JSON messages (process output on
 * the control socket, protobuf-JSON bytes fields). */
#ifndef AJ_COMMON_BASE64_H
#define AJ_COMMON_BASE64_H

#include <stddef.h>

/* Size of the encoding of n bytes, without the NUL. */
size_t aj_base64_len(size_t n);
/* Writes the encoding of in[0..n) and a NUL to out (aj_base64_len(n) + 1 bytes). */
void aj_base64_encode(const void *in, size_t n, char *out);
/* Decodes text (padding optional, no whitespace) into out, which needs (len / 4 + 1) * 3
 * bytes. Returns the decoded length, or -1 if text is not base64. */
long aj_base64_decode(const char *text, size_t len, unsigned char *out);

#endif
