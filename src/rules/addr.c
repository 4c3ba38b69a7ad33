#include "rules/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct v4_block {
	uint32_t net;
	int prefix;
	const char *what;
};

/* Order matters only where blocks nest: the metadata address before link-local. */
static const struct v4_block v4_blocks[] = {
	{0x00000000, 8, "unspecified, \"this network\" 0.0.0.0/8"},
	{0x0a000000, 8, "private, RFC 1918 10.0.0.0/8"},
	{0x64400000, 10, "shared address space, CGNAT 100.64.0.0/10"},
	{0x7f000000, 8, "loopback, 127.0.0.0/8"},
	{0xa9fea9fe, 32, "the cloud metadata endpoint, link-local 169.254.169.254"},
	{0xa9fe0000, 16, "link-local, 169.254.0.0/16"},
	{0xac100000, 12, "private, RFC 1918 172.16.0.0/12"},
	{0xc0000000, 24, "IETF protocol assignments, 192.0.0.0/24"},
	{0xc0a80000, 16, "private, RFC 1918 192.168.0.0/16"},
	{0xe0000000, 4, "multicast, 224.0.0.0/4"},
	{0xffffffff, 32, "broadcast, 255.255.255.255"},
	{0xf0000000, 4, "reserved, 240.0.0.0/4"},
};

struct v6_block {
	unsigned char net[16];
	int prefix;
	const char *what;
};

static const struct v6_block v6_blocks[] = {
	{{0}, 128, "unspecified, ::"},
	{{[15] = 1}, 128, "loopback, ::1"},
	{{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "local-use NAT64, 64:ff9b:1::/48"},
	{{0x20, 0x01, 0x00, 0x00}, 32, "Teredo tunnelling, 2001::/32"},
	{{0xfc}, 7, "unique-local, fc00::/7"},
	{{0xfe, 0x80}, 10, "link-local, fe80::/10"},
	{{0xfe, 0xc0}, 10, "site-local, fec0::/10"},
	{{0xff}, 8, "multicast, ff00::/8"},
};

static bool prefix_match(const unsigned char *a, const unsigned char *net, int prefix)
{
	int full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, net, (size_t)full) != 0)
		return false;
	if (!rest)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (a[full] & mask) == (net[full] & mask);
}

static const char *v4_class(uint32_t a)
{
	for (size_t i = 0; i < sizeof v4_blocks / sizeof v4_blocks[0]; i++) {
		uint32_t mask = v4_blocks[i].prefix ? ~0u << (32 - v4_blocks[i].prefix) : 0;
		if ((a & mask) == v4_blocks[i].net)
			return v4_blocks[i].what;
	}
	return NULL;
}

static uint32_t load32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The IPv4 address an IPv6 address carries, and the name of the form; false if none. */
static bool embedded_v4(const unsigned char *a, uint32_t *v4, const char **form)
{
	static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
	static const unsigned char nat64[12] = {0x00, 0x64, 0xff, 0x9b};
	static const unsigned char zero[12] = {0};

	if (memcmp(a, mapped, 12) == 0) {
		*form = "the IPv4-mapped IPv6 form";
		*v4 = load32(a + 12);
		return true;
	}
	if (memcmp(a, nat64, 12) == 0) {
		*form = "the NAT64 64:ff9b::/96 form";
		*v4 = load32(a + 12);
		return true;
	}
	/* IPv4-compatible (deprecated): ::a.b.c.d, but :: and ::1 are themselves. */
	if (memcmp(a, zero, 12) == 0 && load32(a + 12) > 1) {
		*form = "the IPv4-compatible IPv6 form";
		*v4 = load32(a + 12);
		return true;
	}
	if (a[0] == 0x20 && a[1] == 0x02) {
		*form = "the 6to4 2002::/16 form";
		*v4 = load32(a + 2);
		return true;
	}
	return false;
}

const char *aj_egress_addr_class(const struct sockaddr *sa, char *buf, size_t len)
{
	const unsigned char *a;
	const char *form, *what;
	uint32_t v4;

	if (sa->sa_family == AF_INET)
		return v4_class(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return "not an IP address";
	a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	for (size_t i = 0; i < sizeof v6_blocks / sizeof v6_blocks[0]; i++)
		if (prefix_match(a, v6_blocks[i].net, v6_blocks[i].prefix))
			return v6_blocks[i].what;
	if (embedded_v4(a, &v4, &form) && (what = v4_class(v4))) {
		snprintf(buf, len, "%s of %s", form, what);
		return buf;
	}
	return NULL;
}

static bool cidr_contains(const struct aj_cidr *c, const struct sockaddr *sa)
{
	unsigned char v4[4];
	const unsigned char *a6;
	const char *form;
	uint32_t e;

	if (sa->sa_family == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return c->family == AF_INET && prefix_match(v4, c->addr, c->prefix);
	}
	a6 = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	if (c->family == AF_INET6)
		return prefix_match(a6, c->addr, c->prefix);
	/* An IPv4 range also admits the IPv6 forms of its addresses. */
	if (!embedded_v4(a6, &e, &form))
		return false;
	v4[0] = (unsigned char)(e >> 24);
	v4[1] = (unsigned char)(e >> 16);
	v4[2] = (unsigned char)(e >> 8);
	v4[3] = (unsigned char)e;
	return prefix_match(v4, c->addr, c->prefix);
}

bool aj_egress_addr_in(const struct sockaddr *sa, const struct aj_cidr *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cidr_contains(&set[i], sa))
			return true;
	return false;
}

void aj_egress_addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = sa->sa_family == AF_INET
				? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
				: (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;

	if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
	    !inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

bool aj_egress_addr_allowed(const struct sockaddr *sa, const struct aj_cidr *allow, size_t n,
			    char *why, size_t why_len)
{
	char cls[160], text[INET6_ADDRSTRLEN];
	const char *what = aj_egress_addr_class(sa, cls, sizeof cls);

	if (!what || aj_egress_addr_in(sa, allow, n))
		return true;
	aj_egress_addr_text(sa, text, sizeof text);
	snprintf(why, why_len, "%s (%s)", text, what);
	return false;
}

static int not_a_range(const char *text, char *why, size_t why_len)
{
	snprintf(why, why_len, "\"%s\" is not an address range such as 10.1.0.0/16 or fd00::/8",
		 text);
	return -1;
}

int aj_egress_cidr_parse(const char *text, struct aj_cidr *out, char *why, size_t why_len)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(text, '/');
	size_t n = slash ? (size_t)(slash - text) : strlen(text);
	int max;

	memset(out, 0, sizeof *out);
	if (n == 0 || n >= sizeof addr)
		return not_a_range(text, why, why_len);
	memcpy(addr, text, n);
	addr[n] = '\0';
	if (inet_pton(AF_INET, addr, out->addr) == 1)
		out->family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, addr, out->addr) == 1)
		out->family = AF_INET6, max = 128;
	else
		return not_a_range(text, why, why_len);
	out->prefix = max;
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (!slash[1] || *end || p < 0 || p > max || slash[1] == '+' || slash[1] == '-')
			return not_a_range(text, why, why_len);
		out->prefix = (int)p;
	}
	for (int bit = out->prefix; bit < max; bit++)
		if (out->addr[bit / 8] & (0x80 >> (bit % 8))) {
			snprintf(why, why_len, "\"%s\" has bits set past the /%d prefix", text,
				 out->prefix);
			return -1;
		}
	return 0;
}

socklen_t aj_egress_addr_unmap(struct sockaddr_storage *ss, socklen_t len)
{
	static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in s4;

	if (ss->ss_family != AF_INET6 || memcmp(s6->sin6_addr.s6_addr, mapped, 12) != 0)
		return len;
	memset(&s4, 0, sizeof s4);
	s4.sin_family = AF_INET;
	s4.sin_port = s6->sin6_port;
	memcpy(&s4.sin_addr, s6->sin6_addr.s6_addr + 12, 4);
	memset(ss, 0, sizeof *ss);
	memcpy(ss, &s4, sizeof s4);
	return sizeof s4;
}
