/* The gvisor tier's file stream packets (see fsstream.h). */
#include "common/fsstream.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

size_t aj_fss_header(char *buf, enum aj_fss_type type, int err)
{
	struct aj_fss_hdr h = {.type = (uint32_t)type, .err = err};

	memcpy(buf, &h, sizeof h);
	return sizeof h;
}

static uint16_t cut(const char *s, size_t max)
{
	size_t n = s ? strnlen(s, max) : 0;

	return (uint16_t)n;
}

size_t aj_fss_stat_packet(char *buf, enum aj_fss_type type, const struct stat *st,
			  const char *name, const char *link)
{
	struct aj_fss_stat r;
	size_t off = aj_fss_header(buf, type, 0);

	memset(&r, 0, sizeof r);
	r.mode = st->st_mode;
	r.uid = st->st_uid;
	r.gid = st->st_gid;
	r.nlink = (uint32_t)st->st_nlink;
	r.ino = st->st_ino;
	r.dev = st->st_dev;
	r.rdev = st->st_rdev;
	r.size = (uint64_t)st->st_size;
	r.blocks = (uint64_t)st->st_blocks;
	r.blksize = (uint32_t)st->st_blksize;
	r.atime_s = st->st_atim.tv_sec;
	r.atime_ns = (uint32_t)st->st_atim.tv_nsec;
	r.mtime_s = st->st_mtim.tv_sec;
	r.mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	r.ctime_s = st->st_ctim.tv_sec;
	r.ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	r.name_len = cut(name, AJ_FSS_NAME_MAX);
	r.link_len = cut(link, AJ_FSS_LINK_MAX);
	memcpy(buf + off, &r, sizeof r);
	off += sizeof r;
	if (r.name_len)
		memcpy(buf + off, name, r.name_len);
	off += r.name_len;
	if (r.link_len)
		memcpy(buf + off, link, r.link_len);
	return off + r.link_len;
}

static void to_stat(const struct aj_fss_stat *r, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_mode = r->mode;
	st->st_uid = r->uid;
	st->st_gid = r->gid;
	st->st_nlink = r->nlink;
	st->st_ino = r->ino;
	st->st_dev = r->dev;
	st->st_rdev = r->rdev;
	st->st_size = (off_t)(r->size > INT64_MAX ? INT64_MAX : r->size);
	st->st_blocks = (blkcnt_t)(r->blocks > INT64_MAX ? INT64_MAX : r->blocks);
	st->st_blksize = (blksize_t)r->blksize;
	st->st_atim.tv_sec = r->atime_s;
	st->st_atim.tv_nsec = r->atime_ns % 1000000000u;
	st->st_mtim.tv_sec = r->mtime_s;
	st->st_mtim.tv_nsec = r->mtime_ns % 1000000000u;
	st->st_ctim.tv_sec = r->ctime_s;
	st->st_ctim.tv_nsec = r->ctime_ns % 1000000000u;
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || memchr(s, '/', n) || memchr(s, '\0', n))
		return false;
	return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

static int bad(void)
{
	errno = EPROTO;
	return -1;
}

static int parse_stat(const char *p, size_t n, struct aj_fss_packet *out)
{
	struct aj_fss_stat r;

	if (n < sizeof r)
		return bad();
	memcpy(&r, p, sizeof r);
	if (r.name_len > AJ_FSS_NAME_MAX || r.link_len > AJ_FSS_LINK_MAX ||
	    n != sizeof r + r.name_len + r.link_len)
		return bad();
	p += sizeof r;
	if (out->type == AJ_FSS_ENTRY ? !name_ok(p, r.name_len) : r.name_len != 0)
		return bad();
	memcpy(out->name, p, r.name_len);
	out->name[r.name_len] = '\0';
	p += r.name_len;
	if (memchr(p, '\0', r.link_len))
		return bad();
	memcpy(out->link, p, r.link_len);
	out->link[r.link_len] = '\0';
	out->has_link = r.link_len > 0;
	to_stat(&r, &out->st);
	return 0;
}

int aj_fss_parse(const char *buf, size_t n, struct aj_fss_packet *out)
{
	struct aj_fss_hdr h;
	const char *p = buf + sizeof h;

	memset(out, 0, sizeof *out);
	if (n < sizeof h)
		return bad();
	memcpy(&h, buf, sizeof h);
	n -= sizeof h;
	out->type = (enum aj_fss_type)h.type;
	switch (h.type) {
	case AJ_FSS_STAT:
	case AJ_FSS_ENTRY:
		return parse_stat(p, n, out);
	case AJ_FSS_DATA:
		if (n > AJ_FSS_MAX_DATA)
			return bad();
		out->data = p;
		out->len = n;
		return 0;
	case AJ_FSS_END:
		if (n != 0 || h.err < 0 || h.err > 4095)
			return bad();
		out->err = h.err;
		return 0;
	default:
		return bad();
	}
}
