/* The address guard (src/egress/addr.c): every refused class, public addresses next to
 * them, the IPv6 forms that carry an IPv4 address, and network.allow_private ranges. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "rules/addr.h"
#include "unit.h"

static socklen_t to_sa(const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		return sizeof(struct sockaddr_in);
	}
	if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		return sizeof(struct sockaddr_in6);
	}
	printf("# test bug: %s\n", text);
	return 0;
}

static const char *class_of(const char *text, char *buf, size_t len)
{
	struct sockaddr_storage ss;

	to_sa(text, &ss);
	return aj_egress_addr_class((struct sockaddr *)&ss, buf, len);
}

static void refused(const char *addr, const char *expect)
{
	char buf[200];
	const char *c = class_of(addr, buf, sizeof buf);

	CHECK(c != NULL, "%s is refused", addr);
	if (c)
		CHECK_CONTAINS(c, expect, "%s is classed as %s", addr, expect);
}

static void public_ok(const char *addr)
{
	char buf[200];
	const char *c = class_of(addr, buf, sizeof buf);

	CHECK(c == NULL, "%s is public (got %s)", addr, c ? c : "-");
}

static void classes(void)
{
	refused("127.0.0.1", "loopback");
	refused("127.255.255.254", "loopback");
	refused("10.0.0.1", "RFC 1918 10.0.0.0/8");
	refused("172.16.0.1", "RFC 1918 172.16.0.0/12");
	refused("172.31.255.255", "RFC 1918 172.16.0.0/12");
	refused("192.168.1.1", "RFC 1918 192.168.0.0/16");
	refused("100.64.0.1", "CGNAT");
	refused("100.100.100.200", "CGNAT"); /* Alibaba's metadata endpoint */
	refused("169.254.169.254", "metadata");
	refused("169.254.0.1", "link-local");
	refused("0.0.0.0", "unspecified");
	refused("224.0.0.1", "multicast");
	refused("239.255.255.250", "multicast");
	refused("255.255.255.255", "broadcast");
	refused("240.0.0.1", "reserved");
	refused("192.0.0.192", "IETF");
	refused("::", "unspecified");
	refused("::1", "loopback");
	refused("fc00::1", "unique-local");
	refused("fd00:ec2::254", "unique-local"); /* AWS's IPv6 metadata endpoint */
	refused("fe80::1", "link-local");
	refused("febf::1", "link-local");
	refused("fec0::1", "site-local");
	refused("ff02::1", "multicast");
	refused("64:ff9b:1::1", "local-use NAT64");
	refused("2001:0:4136:e378::1", "Teredo");
	public_ok("1.1.1.1");
	public_ok("8.8.8.8");
	public_ok("172.32.0.1");
	public_ok("100.128.0.1");
	public_ok("198.18.0.1");
	public_ok("169.253.255.255");
	public_ok("2606:4700::1111");
	public_ok("2001:db8::1");
}

static void embedded(void)
{
	refused("::ffff:127.0.0.1", "IPv4-mapped IPv6 form of loopback");
	refused("::ffff:169.254.169.254", "IPv4-mapped IPv6 form of the cloud metadata");
	refused("::ffff:10.1.2.3", "IPv4-mapped IPv6 form of private");
	refused("::127.0.0.1", "IPv4-compatible IPv6 form of loopback");
	refused("::10.0.0.1", "IPv4-compatible IPv6 form of private");
	refused("64:ff9b::7f00:1", "NAT64 64:ff9b::/96 form of loopback");
	refused("64:ff9b::a9fe:a9fe", "NAT64 64:ff9b::/96 form of the cloud metadata");
	refused("2002:7f00:1::1", "6to4 2002::/16 form of loopback");
	refused("2002:c0a8:101::", "6to4 2002::/16 form of private");
	refused("2002:a9fe:a9fe::1", "6to4 2002::/16 form of the cloud metadata");
	public_ok("::ffff:1.1.1.1");
	public_ok("64:ff9b::101:101");
	public_ok("2002:808:808::1");
}

static bool allowed(const char *addr, const char *const *cidrs, size_t n, char *why, size_t wl)
{
	struct aj_cidr c[8];
	struct sockaddr_storage ss;
	char e[200];

	for (size_t i = 0; i < n; i++)
		if (aj_egress_cidr_parse(cidrs[i], &c[i], e, sizeof e) < 0)
			printf("# test bug: %s: %s\n", cidrs[i], e);
	to_sa(addr, &ss);
	return aj_egress_addr_allowed((struct sockaddr *)&ss, c, n, why, wl);
}

static void private_ranges(void)
{
	static const char *const ranges[] = {"10.1.0.0/16", "fd00:1::/32", "127.0.0.1"};
	char why[300];

	CHECK(allowed("10.1.2.3", ranges, 3, why, sizeof why), "inside an allowed range");
	CHECK(!allowed("10.2.0.1", ranges, 3, why, sizeof why), "outside it");
	CHECK_CONTAINS(why, "10.2.0.1 (private, RFC 1918 10.0.0.0/8)", "the reason names both");
	CHECK(allowed("::ffff:10.1.9.9", ranges, 3, why, sizeof why),
	      "an IPv4 range admits the mapped form of its addresses");
	CHECK(allowed("fd00:1:2::3", ranges, 3, why, sizeof why), "an IPv6 range");
	CHECK(allowed("127.0.0.1", ranges, 3, why, sizeof why), "a single address");
	CHECK(!allowed("127.0.0.2", ranges, 3, why, sizeof why), "not its neighbour");
	CHECK(!allowed("169.254.169.254", ranges, 0, why, sizeof why), "no ranges: refused");
	CHECK(allowed("8.8.8.8", ranges, 0, why, sizeof why), "public needs no range");
}

static void cidr_syntax(void)
{
	static const char *const good[] = {"10.0.0.0/8", "0.0.0.0/0", "::/0", "fd00::/8",
					   "192.168.1.1", "::1", "10.1.2.3/32"};
	static const char *const bad[] = {"10.0.0.1/8", "10.0.0.0/33", "fd00::/129", "10.0.0.0/",
					  "10.0.0.0/-1", "/8", "host/8", "10.0.0.0/8/9", ""};
	struct aj_cidr c;
	char why[200];

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		CHECK(aj_egress_cidr_parse(good[i], &c, why, sizeof why) == 0, "range %s", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(aj_egress_cidr_parse(bad[i], &c, why, sizeof why) < 0, "range \"%s\" refused",
		      bad[i]);
}

static void unmap(void)
{
	struct sockaddr_storage ss;
	socklen_t len = to_sa("::ffff:93.184.216.34", &ss);
	char text[64];

	len = aj_egress_addr_unmap(&ss, len);
	aj_egress_addr_text((struct sockaddr *)&ss, text, sizeof text);
	CHECK(ss.ss_family == AF_INET && len == sizeof(struct sockaddr_in) &&
		      strcmp(text, "93.184.216.34") == 0,
	      "a mapped address is connected to as the IPv4 address it carries (%s)", text);
	len = to_sa("2001:db8::1", &ss);
	CHECK(aj_egress_addr_unmap(&ss, len) == len && ss.ss_family == AF_INET6,
	      "other IPv6 addresses stay as they are");
}

int main(void)
{
	classes();
	embedded();
	private_ranges();
	cidr_syntax();
	unmap();
	UNIT_EXIT();
}
