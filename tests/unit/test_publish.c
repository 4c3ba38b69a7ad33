/* Published-port specs (src/rules/publish.c): docker's forms, the loopback default, IPv6 in
 * brackets, and every malformed form refused with a reason. */
#include <string.h>

#include "rules/publish.h"
#include "unit.h"

static void good(const char *spec, const char *ip, unsigned host_port, unsigned port)
{
	struct aj_publish p;
	char why[160] = "", text[80], again[80];

	CHECK(aj_publish_parse(spec, &p, why, sizeof why) == 0, "\"%s\" is taken (%s)", spec, why);
	CHECK_STR(p.host_ip, ip, "\"%s\": host address", spec);
	CHECK(p.host_port == host_port && p.port == port, "\"%s\": ports %u:%u (got %u:%u)", spec,
	      host_port, port, p.host_port, p.port);
	aj_publish_format(&p, text, sizeof text);
	CHECK(aj_publish_parse(text, &p, why, sizeof why) == 0, "\"%s\" reads back", text);
	aj_publish_format(&p, again, sizeof again);
	CHECK_STR(again, text, "\"%s\" formats the same after a round trip", spec);
}

static void bad(const char *spec, const char *reason)
{
	struct aj_publish p;
	char why[160] = "";

	CHECK(aj_publish_parse(spec, &p, why, sizeof why) < 0, "\"%s\" is refused", spec);
	CHECK_CONTAINS(why, reason, "\"%s\": the reason", spec);
}

int main(void)
{
	good("8000", "127.0.0.1", 0, 8000);
	good("8000/tcp", "127.0.0.1", 0, 8000);
	good("8080:8000", "127.0.0.1", 8080, 8000);
	good("0:8000", "127.0.0.1", 0, 8000);
	good("0.0.0.0:8080:8000", "0.0.0.0", 8080, 8000);
	good("127.0.0.1::8000", "127.0.0.1", 0, 8000);
	good("[::1]:8080:80", "::1", 8080, 80);
	good("[::]::80/tcp", "::", 0, 80);
	good("[0:0:0:0:0:0:0:1]:1:65535", "::1", 1, 65535);

	bad("", "empty");
	bad("0", "port inside");
	bad("65536", "port inside");
	bad("80/udp", "only TCP");
	bad("8000-8010", "ranges");
	bad("8080:", "port inside");
	bad(":80", "host port is empty");
	bad("x:80", "host port");
	bad("99999:80", "host port");
	bad("1.2.3:8080:80", "not an IPv4 address");
	bad("::1:8080:80", "in brackets");
	bad("[::1]:80", "needs a host port");
	bad("[::1:8080:80", "IPv6");
	bad("[1.2.3.4]:8080:80", "not an IPv6 address");
	bad("+80", "port inside");
	bad("::80", "host address before");
	bad("1.2.3.4:80", "HOSTIP::PORT");
	bad(" 80", "port inside");
	UNIT_EXIT();
}
