/* The address guard: which resolved addresses the proxy may connect to. Pure.
 *
 * Refused unless network.allow_private names them: loopback, RFC 1918 private ranges, CGNAT
 * (100.64.0.0/10), link-local (169.254.0.0/16 with the cloud metadata endpoint, fe80::/10),
 * unique-local (fc00::/7), site-local (fec0::/10), multicast, unspecified, broadcast and the
 * other reserved IPv4 blocks (0/8, 192.0.0/24, 240/4), local-use NAT64 (64:ff9b:1::/48) and
 * Teredo (2001::/32). IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:0:0/96,
 * IPv4-compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address
 * they carry, so that "[::ffff:127.0.0.1]" is loopback.
 */
#ifndef AJ_RULES_ADDR_H
#define AJ_RULES_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct aj_cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	int prefix;
};

/* "10.0.0.0/8", "fd00::/8", or a single address (a /32 or /128). Host bits must be zero. */
int aj_egress_cidr_parse(const char *text, struct aj_cidr *out, char *why, size_t why_len);

/* NULL if the address is public; otherwise its class ("loopback", "private (RFC 1918)", ...,
 * prefixed with the embedding for IPv6 forms: "IPv4-mapped IPv6 form of loopback"). buf holds
 * the text when one is built. */
const char *aj_egress_addr_class(const struct sockaddr *sa, char *buf, size_t len);

/* Whether the proxy may connect to sa: true if public or inside one of allow[0..n). When
 * refused, why holds "ADDRESS (CLASS)". */
bool aj_egress_addr_allowed(const struct sockaddr *sa, const struct aj_cidr *allow, size_t n,
			    char *why, size_t why_len);

/* Whether sa lies in one of set[0..n); an IPv4 range also holds the IPv6 forms of its
 * addresses. */
bool aj_egress_addr_in(const struct sockaddr *sa, const struct aj_cidr *set, size_t n);

/* The addresses of this host's interfaces, as /32 and /128 ranges, read with getifaddrs and
 * kept for a second. The proxy runs outside the sandbox, so the host's own public address
 * would reach the host's services: it is refused like loopback. Not pure (the only function
 * here that is not; local.c). *n is 0 when the interfaces cannot be read. */
const struct aj_cidr *aj_egress_local_addrs(size_t *n);

/* The address as text (no port), brackets not added. */
void aj_egress_addr_text(const struct sockaddr *sa, char *buf, size_t len);

/* If sa is an IPv6 form carrying an IPv4 address that the kernel would reach over IPv4
 * (IPv4-mapped), rewrites it as the plain AF_INET address: the proxy connects to what it
 * checked, in the family it checked. Returns the (possibly new) length. */
socklen_t aj_egress_addr_unmap(struct sockaddr_storage *ss, socklen_t len);

#endif
