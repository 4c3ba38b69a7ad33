/* SOCKS5 parsing (egress/socks_parse.c): complete and partial messages, every refusal, and
 * names that must not be taken as they look. */
#include "egress/socks_parse.h"
#include "unit.h"

#define REQ(...) ((const unsigned char[]){__VA_ARGS__})

static void test_hello(void)
{
	bool noauth;

	CHECK(aj_socks_hello_parse(REQ(5), 1, &noauth) == 0, "hello: one byte needs more");
	CHECK(aj_socks_hello_parse(REQ(5, 2, 2), 3, &noauth) == 0,
	      "hello: fewer methods than announced needs more");
	CHECK(aj_socks_hello_parse(REQ(5, 2, 2, 0), 4, &noauth) == 4 && noauth,
	      "hello: no-authentication among the methods");
	CHECK(aj_socks_hello_parse(REQ(5, 1, 2, 9, 9), 5, &noauth) == 3 && !noauth,
	      "hello: only user/password offered; trailing bytes not consumed");
	CHECK(aj_socks_hello_parse(REQ(5, 0), 2, &noauth) == 2 && !noauth,
	      "hello: no methods at all");
}

static void test_request(void)
{
	struct aj_socks_target t;

	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 1, 127, 0, 0, 1, 0, 80), 10, &t) == 10 && t.valid &&
		      !strcmp(t.host, "127.0.0.1") && t.port == 80,
	      "IPv4 literal with its port (the guard decides on it later)");
	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 1, 127, 0, 0), 7, &t) == 0,
	      "a partial IPv4 request needs more");
	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 169,
					 254, 169, 254, 1, 187),
				     22, &t) == 22 &&
		      t.valid && !strcmp(t.host, "::ffff:169.254.169.254") && t.port == 443,
	      "IPv6 mapped literal kept as what it is");
	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 3, 11, 'E', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c',
					 'o', 'm', 0, 80),
				     18, &t) == 18 &&
		      t.valid && !strcmp(t.host, "example.com"),
	      "a name, normalized to lower case");
	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 3, 5, 'a', 0, 'b', '.', 'c', 0, 80), 12, &t) == 12 &&
		      !t.valid,
	      "a NUL inside a name: invalid, not truncated to \"a\"");
	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 3, 1, 'a', 0, 0), 8, &t) == 8 && !t.valid,
	      "port 0: invalid");
	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 3, 200, 'a'), 6, &t) == 0,
	      "a name longer than what came yet needs more");
	CHECK(aj_socks_request_parse(REQ(4, 1, 0, 1), 4, &t) == -AJ_SOCKS_R_FAIL,
	      "another version: general failure");
	CHECK(aj_socks_request_parse(REQ(5, 2, 0, 1, 1), 5, &t) == -AJ_SOCKS_R_CMD,
	      "BIND: command not supported");
	CHECK(aj_socks_request_parse(REQ(5, 3, 0, 1, 1), 5, &t) == -AJ_SOCKS_R_CMD,
	      "UDP ASSOCIATE: command not supported");
	CHECK(aj_socks_request_parse(REQ(5, 1, 0, 9, 0), 5, &t) == -AJ_SOCKS_R_ATYP,
	      "unknown address type refused");
}

int main(void)
{
	test_hello();
	test_request();
	UNIT_EXIT();
}
