/* SOCKS5 message parsing (socks_parse.h). Every length is checked against what was received
 * before a byte is read: the bytes come from the sandbox. */
#include <arpa/inet.h>
#include <string.h>

#include "egress/socks_parse.h"

enum { CMD_CONNECT = 1, A_IPV4 = 1, A_NAME = 3, A_IPV6 = 4 };

size_t aj_socks_hello_parse(const unsigned char *buf, size_t have, bool *noauth)
{
	size_t len;

	*noauth = false;
	if (have < 2)
		return 0;
	len = 2u + buf[1];
	if (have < len)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (buf[i] == AJ_SOCKS_M_NOAUTH)
			*noauth = true;
	return len;
}

/* Length of the whole request once its fixed part is in; 0 if more is needed; -1 for an
 * unknown address type. */
static long request_len(const unsigned char *r, size_t have)
{
	if (have < 5)
		return 0;
	switch (r[3]) {
	case A_IPV4: return 4 + 4 + 2;
	case A_IPV6: return 4 + 16 + 2;
	case A_NAME: return 4 + 1 + r[4] + 2;
	default: return -1;
	}
}

static void read_target(const unsigned char *r, struct aj_socks_target *t)
{
	char name[256];
	const unsigned char *port;

	t->valid = false;
	t->host[0] = '\0';
	switch (r[3]) {
	case A_IPV4:
		inet_ntop(AF_INET, r + 4, t->host, sizeof t->host);
		port = r + 8;
		break;
	case A_IPV6:
		inet_ntop(AF_INET6, r + 4, t->host, sizeof t->host);
		port = r + 20;
		break;
	default:
		memcpy(name, r + 5, r[4]);
		name[r[4]] = '\0';
		port = r + 5 + r[4];
		/* A NUL inside the name would make the checked name differ from the sent one. */
		if (strlen(name) != r[4] || !aj_egress_host_normalize(name, t->host, sizeof t->host))
			return;
	}
	t->port = (uint16_t)(port[0] << 8 | port[1]);
	t->valid = t->port != 0;
}

long aj_socks_request_parse(const unsigned char *buf, size_t have, struct aj_socks_target *t)
{
	long need = request_len(buf, have);

	if (have >= 2 && buf[0] != AJ_SOCKS_VERSION)
		return -AJ_SOCKS_R_FAIL;
	if (have >= 2 && buf[1] != CMD_CONNECT)
		return -AJ_SOCKS_R_CMD;
	if (need < 0)
		return -AJ_SOCKS_R_ATYP;
	if (need == 0 || have < (size_t)need)
		return 0;
	read_target(buf, t);
	return need;
}
