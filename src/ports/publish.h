/* Published ports (`run -p`, `create -p`, network.publish) and port-forward: listening
 * sockets on the host, and each accepted connection relayed to the same port on the
 * sandbox's loopback (127.0.0.1, then ::1 when nothing listens there). Inbound only: the
 * sockets inside come from a dialer (ports/dialer.h) or the supervisor's control socket and
 * are connected to the sandbox's own loopback, nowhere else; nothing here gives the sandbox
 * a socket, a route or an address of the host's.
 *
 * Each connection is an event when it ends ("port.connection": host port, port, peer, bytes
 * each way, duration, or the error that ended it); connections still open when the ports are
 * freed end without one. Past the connection limit (AJ_PORTS_MAX_CONNS, lower when the
 * descriptor limit allows fewer: two descriptors each) a new connection is closed at once,
 * and one "port.refused" event says so until a connection ends. Out of descriptors, the
 * listeners pause for 100 ms.
 */
#ifndef AJ_PORTS_PUBLISH_H
#define AJ_PORTS_PUBLISH_H

#include <event2/event.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strv.h"
#include "rules/publish.h"

/* The default of network.publish's connection limit: every published port of a sandbox
 * together. */
#define AJ_PORTS_MAX_CONNS 4096

/* A socket in the sandbox's network namespace (family AF_INET or AF_INET6), or -1 with
 * err. */
typedef int (*aj_ports_socket_fn)(void *arg, int family, struct aj_err *err);
/* An event; fields are the callee's. */
typedef void (*aj_ports_emit_fn)(void *arg, const char *event, json_t *fields);

struct aj_ports;

struct aj_ports *aj_ports_new(void);
void aj_ports_free(struct aj_ports *ps);
/* Binds and listens on the host side of each spec ("[HOSTIP:][HOSTPORT:]PORT"), in order;
 * an ephemeral host port is chosen here. -1 with err naming the port (in use, privileged,
 * an address this host does not have); nothing stays bound then. */
int aj_ports_bind(struct aj_ports *ps, const struct aj_strv *specs, struct aj_err *err);
/* The other direction (network.host_ports): listens on fd (taken; a socket listening on the
 * sandbox's 127.0.0.1:port) and connects what comes to `port` on the loopback of the socket
 * callback's namespace (the host's); `event` names the connections' events. Before
 * aj_ports_start. */
void aj_ports_adopt(struct aj_ports *ps, int fd, uint16_t port, const char *event);
/* Starts accepting on the loop. */
int aj_ports_start(struct aj_ports *ps, struct event_base *base, aj_ports_socket_fn sock,
		   void *sock_arg, aj_ports_emit_fn emit, void *emit_arg, struct aj_err *err);
/* Called at every accepted connection (the persistent supervisor's activity clock). */
void aj_ports_set_touch(struct aj_ports *ps, void (*touch)(void *arg), void *arg);
/* Connections open now. */
size_t aj_ports_open_connections(const struct aj_ports *ps);
size_t aj_ports_count(const struct aj_ports *ps);
/* The i-th published port as bound (its host port chosen). */
const struct aj_publish *aj_ports_at(const struct aj_ports *ps, size_t i);
/* [{"host_ip", "host_port", "port"}...] */
json_t *aj_ports_json(const struct aj_ports *ps);

#endif
