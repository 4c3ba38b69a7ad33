#include "common/units.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct unit {
	const char *suffix;
	uint64_t mult;
};

/* Both binary and decimal spellings mean powers of 1024: "2G" in a memory limit means what
 * the user meant (as in docker --memory), and "2GB" is accepted as a synonym. */
static const struct unit size_units[] = {
	{"", 1},
	{"b", 1},
	{"k", 1ULL << 10}, {"kb", 1ULL << 10}, {"kib", 1ULL << 10},
	{"m", 1ULL << 20}, {"mb", 1ULL << 20}, {"mib", 1ULL << 20},
	{"g", 1ULL << 30}, {"gb", 1ULL << 30}, {"gib", 1ULL << 30},
	{"t", 1ULL << 40}, {"tb", 1ULL << 40}, {"tib", 1ULL << 40},
};

static const struct unit duration_units[] = {
	{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
};

static int fail_with(int errnum)
{
	errno = errnum;
	return -1;
}

/* Parses "<decimal>[.<fraction>]<suffix>" and scales by the unit; the fraction is kept to
 * three decimal places, which is all any of our units need. */
static int parse_scaled(const char *s, const struct unit *units, size_t n_units, uint64_t *out)
{
	uint64_t whole = 0, frac = 0, frac_div = 1;
	const char *p = s;
	int digits = 0;

	while (*p == ' ')
		p++;
	if (!isdigit((unsigned char)*p))
		return fail_with(EINVAL);
	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return fail_with(ERANGE);
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return fail_with(EINVAL);
		for (; isdigit((unsigned char)*p); p++)
			if (frac_div < 1000) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				frac_div *= 10;
			}
	}
	while (*p == ' ')
		p++;
	for (size_t i = 0; i < n_units; i++) {
		if (strcasecmp(p, units[i].suffix) != 0)
			continue;
		uint64_t m = units[i].mult;
		if (whole > UINT64_MAX / m)
			return fail_with(ERANGE);
		*out = whole * m + (frac * m) / frac_div;
		return 0;
	}
	return fail_with(EINVAL);
}

int aj_parse_size(const char *s, uint64_t *out)
{
	return parse_scaled(s, size_units, sizeof size_units / sizeof size_units[0], out);
}

int aj_parse_duration_ms(const char *s, uint64_t *out)
{
	return parse_scaled(s, duration_units, sizeof duration_units / sizeof duration_units[0],
			    out);
}

int aj_parse_cpus_milli(const char *s, uint64_t *out)
{
	static const struct unit cpu_unit[] = {{"", 1000}};
	return parse_scaled(s, cpu_unit, 1, out);
}

int aj_parse_u64(const char *s, uint64_t *out)
{
	static const struct unit plain[] = {{"", 1}};
	const char *p;

	for (p = s; *p; p++)
		if (!isdigit((unsigned char)*p)) {
			errno = EINVAL;
			return -1;
		}
	return parse_scaled(s, plain, 1, out);
}

void aj_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned i = 0;
	uint64_t unit = 1;

	while (i + 1 < sizeof names / sizeof names[0] && bytes >= unit * 1024) {
		unit *= 1024;
		i++;
	}
	if (bytes % unit == 0)
		snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / unit), names[i]);
	else
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)unit, names[i]);
}

void aj_format_duration_ms(uint64_t ms, char *buf, size_t len)
{
	uint64_t h = ms / 3600000, m = (ms / 60000) % 60, s = (ms / 1000) % 60, r = ms % 1000;
	size_t off = 0;

	buf[0] = '\0';
	if (ms == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	if (h)
		off += (size_t)snprintf(buf + off, len - off, "%lluh", (unsigned long long)h);
	if (m && off < len)
		off += (size_t)snprintf(buf + off, len - off, "%llum", (unsigned long long)m);
	if (s && off < len)
		off += (size_t)snprintf(buf + off, len - off, "%llus", (unsigned long long)s);
	if (r && off < len)
		snprintf(buf + off, len - off, "%llums", (unsigned long long)r);
}
