#include "sandbox/netif.h"

#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"

/* An ioctl rather than netlink: no netlink socket is needed, and the seccomp profile denies
 * AF_NETLINK to what runs later anyway. */
int aj_netif_loopback_up(struct aj_err *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;

	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "socket(AF_INET) for loopback setup");
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "bring lo up");
	return 0;
}

int aj_netif_set_hostname(const char *name, struct aj_err *err)
{
	if (sethostname(name, strlen(name)) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "sethostname \"%s\"", name);
	return 0;
}
