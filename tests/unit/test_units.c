/* Sizes, durations and CPU counts: the syntax shared by policy files and CLI flags. */
#include <errno.h>
#include <stdint.h>

#include "common/units.h"
#include "unit.h"

static void sizes(void)
{
	uint64_t v = 0;

	CHECK(aj_parse_size("512MiB", &v) == 0 && v == 512ULL << 20, "512MiB is 512 * 2^20");
	CHECK(aj_parse_size("2G", &v) == 0 && v == 2ULL << 30, "2G is 2 * 2^30");
	CHECK(aj_parse_size("2gb", &v) == 0 && v == 2ULL << 30, "units are case-insensitive");
	CHECK(aj_parse_size("1.5k", &v) == 0 && v == 1536, "fractions scale");
	CHECK(aj_parse_size("4096", &v) == 0 && v == 4096, "a bare number is bytes");
	CHECK(aj_parse_size("", &v) < 0 && errno == EINVAL, "empty is rejected");
	CHECK(aj_parse_size("-1", &v) < 0, "negative is rejected");
	CHECK(aj_parse_size("12 parsecs", &v) < 0, "unknown unit is rejected");
	CHECK(aj_parse_size("1MiBx", &v) < 0, "trailing garbage is rejected");
	CHECK(aj_parse_size("99999999999999999999", &v) < 0 && errno == ERANGE,
	      "overflow is ERANGE");
	CHECK(aj_parse_size("20000000000T", &v) < 0 && errno == ERANGE,
	      "overflow through the unit is ERANGE");
}

static void durations(void)
{
	uint64_t v = 0;

	CHECK(aj_parse_duration_ms("30s", &v) == 0 && v == 30000, "30s");
	CHECK(aj_parse_duration_ms("5m", &v) == 0 && v == 300000, "5m");
	CHECK(aj_parse_duration_ms("250ms", &v) == 0 && v == 250, "250ms");
	CHECK(aj_parse_duration_ms("1.5", &v) == 0 && v == 1500, "a bare number is seconds");
	CHECK(aj_parse_duration_ms("2h", &v) == 0 && v == 7200000, "2h");
	CHECK(aj_parse_duration_ms("soon", &v) < 0, "words are rejected");
}

static void cpus(void)
{
	uint64_t v = 0;

	CHECK(aj_parse_cpus_milli("0.5", &v) == 0 && v == 500, "0.5 CPUs");
	CHECK(aj_parse_cpus_milli("2", &v) == 0 && v == 2000, "2 CPUs");
	CHECK(aj_parse_cpus_milli("1.", &v) < 0, "a dangling point is rejected");
}

static void formatting(void)
{
	char buf[32];

	aj_format_size(4ULL << 30, buf, sizeof buf);
	CHECK_STR(buf, "4 GiB", "format 4 GiB");
	aj_format_size(1536, buf, sizeof buf);
	CHECK_STR(buf, "1.5 KiB", "format 1.5 KiB");
	aj_format_duration_ms(90500, buf, sizeof buf);
	CHECK_STR(buf, "1m30s500ms", "format 1m30s500ms");
}

int main(void)
{
	sizes();
	durations();
	cpus();
	formatting();
	UNIT_EXIT();
}
