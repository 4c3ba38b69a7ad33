/* Published ports: `-p [HOSTIP:][HOSTPORT:]PORT[/tcp]` in docker's syntax, and
 * network.publish in the policy. Pure.
 *
 *   8000                   127.0.0.1, an ephemeral host port, to 8000 inside
 *   8080:8000              127.0.0.1:8080 to 8000
 *   0.0.0.0:8080:8000      every address of the host, port 8080
 *   127.0.0.1::8000        an ephemeral port on that address (docker's "HOSTIP::PORT")
 *   [::1]:8080:8000        an IPv6 host address, in brackets
 *
 * The host address defaults to loopback (docker's is every address: here what is reachable
 * from the network must be asked for). Only TCP; port ranges are not taken.
 */
#ifndef AJ_RULES_PUBLISH_H
#define AJ_RULES_PUBLISH_H

#include <stddef.h>
#include <stdint.h>

/* The most ports one sandbox publishes. */
#define AJ_PUBLISH_MAX 64

struct aj_publish {
	char host_ip[46]; /* numeric, without brackets */
	uint16_t host_port; /* 0: ephemeral, chosen when bound */
	uint16_t port;      /* inside the sandbox, on its loopback */
};

/* 0 with *out, or -1 with why ("the port inside is missing", ...). */
int aj_publish_parse(const char *spec, struct aj_publish *out, char *why, size_t why_len);

/* "127.0.0.1:8080:8000", "[::1]:0:8000": a spec aj_publish_parse reads back. */
void aj_publish_format(const struct aj_publish *p, char *buf, size_t len);

/* "127.0.0.1:8080", "[::1]:8080": the host side as a client names it. */
void aj_publish_host(const struct aj_publish *p, char *buf, size_t len);

#endif
