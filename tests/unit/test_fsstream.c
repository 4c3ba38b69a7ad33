/* The gvisor tier's file stream packets (src/common/fsstream.c): what init writes reads back
 * the same, and every malformed packet from inside the sandbox is refused. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/fsstream.h"
#include "unit.h"

static char buf[AJ_FSS_MAX_PACKET];

static size_t entry(const char *name, const char *link)
{
	struct stat st;

	memset(&st, 0, sizeof st);
	st.st_mode = S_IFLNK | 0777;
	st.st_uid = 1000;
	st.st_gid = 1001;
	st.st_size = 12345678901LL;
	st.st_mtim.tv_sec = 1700000000;
	st.st_mtim.tv_nsec = 123456789;
	st.st_ino = 42;
	return aj_fss_stat_packet(buf, AJ_FSS_ENTRY, &st, name, link);
}

static void refused(size_t n, const char *what)
{
	struct aj_fss_packet pk;

	errno = 0;
	CHECK(aj_fss_parse(buf, n, &pk) < 0 && errno == EPROTO, "refused: %s", what);
}

/* The record of the last entry() with one field changed. */
static void poke(size_t off, const void *v, size_t len)
{
	memcpy(buf + sizeof(struct aj_fss_hdr) + off, v, len);
}

int main(void)
{
	struct aj_fss_packet pk;
	struct stat st;
	size_t n;
	uint16_t big = AJ_FSS_NAME_MAX + 1, zero = 0;
	int32_t e;

	n = entry("a name", "../target");
	CHECK(aj_fss_parse(buf, n, &pk) == 0 && pk.type == AJ_FSS_ENTRY, "an entry reads back");
	CHECK_STR(pk.name, "a name", "its name");
	CHECK_STR(pk.link, "../target", "its link text");
	CHECK(pk.has_link && S_ISLNK(pk.st.st_mode) && pk.st.st_uid == 1000 &&
		      pk.st.st_gid == 1001 && pk.st.st_size == 12345678901LL &&
		      pk.st.st_mtim.tv_sec == 1700000000 && pk.st.st_mtim.tv_nsec == 123456789 &&
		      pk.st.st_ino == 42,
	      "its status");

	memset(&st, 0, sizeof st);
	st.st_mode = S_IFREG | 0644;
	n = aj_fss_stat_packet(buf, AJ_FSS_STAT, &st, NULL, NULL);
	CHECK(aj_fss_parse(buf, n, &pk) == 0 && pk.type == AJ_FSS_STAT && !pk.has_link &&
		      pk.name[0] == '\0' && S_ISREG(pk.st.st_mode),
	      "a status without name or link");
	n = aj_fss_stat_packet(buf, AJ_FSS_STAT, &st, "x", NULL);
	refused(n, "a status with a name");

	n = aj_fss_header(buf, AJ_FSS_DATA, 0);
	memcpy(buf + n, "hello", 5);
	CHECK(aj_fss_parse(buf, n + 5, &pk) == 0 && pk.type == AJ_FSS_DATA && pk.len == 5 &&
		      memcmp(pk.data, "hello", 5) == 0,
	      "data");
	CHECK(aj_fss_parse(buf, n, &pk) == 0 && pk.len == 0, "empty data");
	refused(n + AJ_FSS_MAX_DATA + 1, "data over AJ_FSS_MAX_DATA");

	n = aj_fss_header(buf, AJ_FSS_END, ENOSPC);
	CHECK(aj_fss_parse(buf, n, &pk) == 0 && pk.type == AJ_FSS_END && pk.err == ENOSPC,
	      "an end with its errno");
	refused(n + 1, "an end with a payload");
	e = -1;
	memcpy(buf + 4, &e, 4);
	refused(n, "an end with a negative errno");

	refused(3, "a short header");
	n = aj_fss_header(buf, (enum aj_fss_type)99, 0);
	refused(n, "an unknown type");

	n = entry("ok", NULL);
	refused(n - 1, "a status cut short");
	refused(n + 1, "a status with bytes beyond its lengths");
	for (const char *const *bad = (const char *const[]){"", ".", "..", "a/b", NULL}; *bad; bad++) {
		n = entry(*bad, NULL);
		refused(n, *bad[0] ? "an entry named with a slash or a dot name" : "an empty name");
	}
	n = entry("ab", NULL);
	buf[n - 1] = '\0';
	refused(n, "a name holding a NUL");
	n = entry("ab", "xy");
	buf[n - 1] = '\0';
	refused(n, "a link text holding a NUL");
	n = entry("ab", NULL);
	poke(offsetof(struct aj_fss_stat, name_len), &big, sizeof big);
	refused(n, "a name longer than NAME_MAX");
	n = entry("ab", NULL);
	poke(offsetof(struct aj_fss_stat, name_len), &zero, sizeof zero);
	refused(n, "lengths that do not add up");
	UNIT_EXIT();
}
