#include "rules/publish.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A port number 0-65535, decimal digits only (no sign, no spaces, no "0x"). */
static bool port_text(const char *s, size_t n, uint16_t *out)
{
	unsigned long v = 0;

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

static int fail(char *why, size_t len, const char *msg)
{
	snprintf(why, len, "%s", msg);
	return -1;
}

/* The host address: "" (the default), a dotted IPv4 address or a bracketed IPv6 one. */
static int host_ip(const char *s, size_t n, struct aj_publish *out, char *why, size_t len)
{
	unsigned char bin[16];
	char text[64];

	if (n == 0) {
		snprintf(out->host_ip, sizeof out->host_ip, "127.0.0.1");
		return 0;
	}
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']')
			return fail(why, len, "an IPv6 host address needs its closing bracket");
		s++;
		n -= 2;
		if (n >= sizeof text)
			return fail(why, len, "the host address is not an IPv6 address");
		memcpy(text, s, n);
		text[n] = '\0';
		if (inet_pton(AF_INET6, text, bin) != 1)
			return fail(why, len, "the host address is not an IPv6 address");
		inet_ntop(AF_INET6, bin, out->host_ip, sizeof out->host_ip);
		return 0;
	}
	if (n >= sizeof text)
		return fail(why, len, "the host address is not an IPv4 address");
	memcpy(text, s, n);
	text[n] = '\0';
	if (inet_pton(AF_INET, text, bin) != 1)
		return fail(why, len,
			    strchr(text, ':') ? "an IPv6 host address goes in brackets ([::1]:8080:80)"
					      : "the host address is not an IPv4 address");
	inet_ntop(AF_INET, bin, out->host_ip, sizeof out->host_ip);
	return 0;
}

int aj_publish_parse(const char *spec, struct aj_publish *out, char *why, size_t why_len)
{
	const char *end, *colon, *ip_end;
	size_t n = strlen(spec);

	memset(out, 0, sizeof *out);
	if (n == 0)
		return fail(why, why_len, "empty");
	/* The protocol suffix: only TCP is relayed. */
	end = spec + n;
	if (n > 4 && !strcmp(end - 4, "/tcp"))
		end -= 4;
	else if (strchr(spec, '/'))
		return fail(why, why_len, "only TCP ports can be published (PORT or PORT/tcp)");
	/* The port inside: after the last colon (an IPv6 address is in brackets, so its colons
	 * come before a ']'). */
	colon = NULL;
	for (const char *c = end; c > spec; c--)
		if (c[-1] == ':' || c[-1] == ']') {
			colon = c[-1] == ':' ? c - 1 : NULL;
			break;
		}
	if (memchr(spec, '-', (size_t)(end - spec)))
		return fail(why, why_len, "port ranges are not taken: one -p per port");
	if (!port_text(colon ? colon + 1 : spec, (size_t)(end - (colon ? colon + 1 : spec)),
		       &out->port) ||
	    out->port == 0)
		return fail(why, why_len, "the port inside must be a number from 1 to 65535");
	if (!colon) {
		snprintf(out->host_ip, sizeof out->host_ip, "127.0.0.1");
		return 0;
	}
	/* HOSTPORT before it, and HOSTIP before that when there is another colon outside
	 * brackets. */
	ip_end = NULL;
	for (const char *c = colon; c > spec; c--)
		if (c[-1] == ':' || c[-1] == ']') {
			ip_end = c[-1] == ':' ? c - 1 : NULL;
			break;
		}
	if (ip_end == spec)
		return fail(why, why_len, "the host address before \"::\" is empty");
	if (!ip_end && spec[0] == '[')
		return fail(why, why_len, "an IPv6 host address needs a host port after it "
					  "([::1]:8080:80, or [::1]::80 for an ephemeral one)");
	{
		const char *hp = ip_end ? ip_end + 1 : spec;
		size_t hn = (size_t)(colon - hp);
		if (hn == 0 && !ip_end)
			return fail(why, why_len, "the host port is empty (PORT, HOSTPORT:PORT or "
						  "HOSTIP::PORT)");
		if (hn && !port_text(hp, hn, &out->host_port))
			return fail(why, why_len,
				    memchr(hp, '.', hn)
					    ? "HOSTIP:PORT is not a form: HOSTIP:HOSTPORT:PORT, or "
					      "HOSTIP::PORT for an ephemeral host port"
					    : "the host port must be a number from 0 to 65535");
	}
	return host_ip(spec, ip_end ? (size_t)(ip_end - spec) : 0, out, why, why_len);
}

void aj_publish_host(const struct aj_publish *p, char *buf, size_t len)
{
	bool v6 = strchr(p->host_ip, ':') != NULL;

	snprintf(buf, len, "%s%s%s:%u", v6 ? "[" : "", p->host_ip, v6 ? "]" : "",
		 (unsigned)p->host_port);
}

void aj_publish_format(const struct aj_publish *p, char *buf, size_t len)
{
	char host[64];

	aj_publish_host(p, host, sizeof host);
	snprintf(buf, len, "%s:%u", host, (unsigned)p->port);
}
