#include "sandbox/netif.h"

#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
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

int aj_netif_loopback_listener(unsigned port, const char *what, int *fd_out, struct aj_err *err)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "socket(AF_INET) for %s", what);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "bind %s to 127.0.0.1:%u", what, port);
	if (listen(fd, 4096) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "listen on 127.0.0.1:%u", port);
	*fd_out = aj_steal_fd(&fd);
	return 0;
}
