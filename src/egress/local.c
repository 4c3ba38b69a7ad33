/* The host's own addresses, for the address guard (addr.h). Read with getifaddrs (a netlink
 * dump) at most once a second: often enough to see an address added by DHCP or an operator,
 * rarely enough to cost nothing per connection. */
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

#include "rules/addr.h"

#define MAX_LOCAL 256

static struct aj_cidr local[MAX_LOCAL];
static size_t n_local;
static struct timespec read_at;

static bool fresh(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (read_at.tv_sec && now.tv_sec == read_at.tv_sec)
		return true;
	read_at = now;
	return false;
}

static void add(const struct sockaddr *sa)
{
	struct aj_cidr *c = &local[n_local];

	if (sa->sa_family == AF_INET) {
		memcpy(c->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		c->prefix = 32;
	} else if (sa->sa_family == AF_INET6) {
		memcpy(c->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		c->prefix = 128;
	} else {
		return;
	}
	c->family = sa->sa_family;
	n_local++;
}

const struct aj_cidr *aj_egress_local_addrs(size_t *n)
{
	struct ifaddrs *list, *i;

	if (!fresh()) {
		n_local = 0;
		if (getifaddrs(&list) == 0) {
			for (i = list; i && n_local < MAX_LOCAL; i = i->ifa_next)
				if (i->ifa_addr)
					add(i->ifa_addr);
			freeifaddrs(list);
		}
	}
	*n = n_local;
	return local;
}
