/* Parsing and printing of the quantities a policy speaks in: sizes ("512MiB", "2G", 1048576),
 * durations ("30s", "5m", "250ms", 1.5 meaning seconds) and CPU counts ("1.5"). Pure functions,
 * no allocation. Parsers return 0 or -1 (errno = EINVAL or ERANGE) and never accept trailing
 * garbage, negative values or overflow.
 */
#ifndef AJ_COMMON_UNITS_H
#define AJ_COMMON_UNITS_H

#include <stddef.h>
#include <stdint.h>

int aj_parse_size(const char *s, uint64_t *out);
/* Durations are returned in milliseconds. A bare number means seconds. */
int aj_parse_duration_ms(const char *s, uint64_t *out);
/* CPU count as thousandths of a CPU ("1.5" -> 1500). */
int aj_parse_cpus_milli(const char *s, uint64_t *out);
int aj_parse_u64(const char *s, uint64_t *out);

/* "1.5 GiB", "512 MiB", "17 B". */
void aj_format_size(uint64_t bytes, char *buf, size_t len);
/* "1h30m", "5s", "250ms". */
void aj_format_duration_ms(uint64_t ms, char *buf, size_t len);

#endif
