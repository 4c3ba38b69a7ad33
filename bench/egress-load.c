/* Load generator and upstream server for bench/run-egress.sh (not part of agentjail).
 *
 *   egress-load serve ADDR PORT [COUNT]
 *       HTTP/1.1 keep-alive server on ports PORT..PORT+COUNT-1: GET /big?n=N answers N
 *       bytes, anything else "ok". Several ports let repeated connection storms use fresh
 *       4-tuples instead of colliding with the last storm's TIME_WAIT entries.
 *   egress-load lat  TARGET HOST PORT N            N sequential requests on one connection
 *   egress-load tput TARGET HOST PORT BYTES        one download of BYTES
 *   egress-load conc TARGET HOST PORT CONNS REQS   CONNS connections at once, REQS each
 *
 * TARGET is "direct" (connect to HOST:PORT) or "proxy:PORT" (absolute-URI requests to the
 * HTTP proxy on 127.0.0.1:PORT) or "connect:PORT" (a CONNECT tunnel through it, then plain
 * requests inside). Prints one JSON line of figures. Single-threaded, epoll.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char big[1 << 16];

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static int nodelay(int fd)
{
	int one = 1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---- server ------------------------------------------------------------------------------ */

struct sconn {
	int fd;
	char in[8192];
	size_t len;
	uint64_t left; /* body bytes still to send */
};

static void serve_reply(int fd, struct sconn *c, const char *req)
{
	char head[256];
	uint64_t n = 2;
	const char *q = strstr(req, "/big?n=");
	int hl;

	if (q && q < strstr(req, "\r\n"))
		n = strtoull(q + 7, NULL, 10);
	hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\n\r\n%s",
		      (unsigned long long)n, q ? "" : "ok");
	if (write(fd, head, (size_t)hl) < 0)
		return;
	c->left = q ? n : 0;
}

static void serve_pump(int fd, struct sconn *c)
{
	while (c->left) {
		size_t k = c->left < sizeof big ? c->left : sizeof big;
		ssize_t w = write(fd, big, k);
		if (w <= 0)
			return;
		c->left -= (uint64_t)w;
	}
}

/* Answers every complete request buffered, as long as no body is still being sent. */
static void serve_requests(int fd, struct sconn *c)
{
	char *end;

	serve_pump(fd, c);
	while (!c->left && (end = strstr(c->in, "\r\n\r\n"))) {
		size_t used = (size_t)(end + 4 - c->in);
		serve_reply(fd, c, c->in);
		memmove(c->in, c->in + used, c->len - used + 1);
		c->len -= used;
		serve_pump(fd, c);
	}
}

/* Edge-triggered: read until the socket is empty. */
static void serve_read(int ep, int fd, struct sconn *c)
{
	for (;;) {
		ssize_t r = read(fd, c->in + c->len, sizeof c->in - c->len - 1);
		if (r < 0 && errno == EAGAIN)
			break;
		if (r <= 0 || c->len + (size_t)r >= sizeof c->in - 1) {
			epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
			close(fd);
			free(c);
			return;
		}
		c->len += (size_t)r;
		c->in[c->len] = '\0';
		serve_requests(fd, c);
	}
}

/* Listening sockets are told apart from connections by a tagged pointer value. */
#define LISTENER_TAG(fd) ((void *)(uintptr_t)(((uintptr_t)(fd) << 1) | 1))

static int serve(const char *addr, int port, int count)
{
	struct epoll_event ev, evs[256];
	int one = 1, ep = epoll_create1(0);

	for (int i = 0; i < count; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons((uint16_t)(port + i))};
		int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		inet_pton(AF_INET, addr, &a.sin_addr);
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 16384) < 0)
			die("bind/listen");
		ev.events = EPOLLIN;
		ev.data.ptr = LISTENER_TAG(ls);
		epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) { /* until killed */
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			struct sconn *c = evs[i].data.ptr;
			if ((uintptr_t)c & 1) {
				int fd, ls = (int)((uintptr_t)c >> 1);
				while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLET};
					struct sconn *nc = calloc(1, sizeof *nc);
					nodelay(fd);
					nc->fd = fd;
					e.data.ptr = nc;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
				}
				continue;
			}
			if (evs[i].events & EPOLLOUT)
				serve_requests(c->fd, c);
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				serve_read(ep, c->fd, c);
		}
	}
	return 0;
}

/* ---- client ------------------------------------------------------------------------------ */

struct target {
	int proxy_port; /* 0: direct */
	bool tunnel;    /* CONNECT first */
	const char *host;
	int port;
};

static int dial(const struct target *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (t->proxy_port) {
		a.sin_port = htons((uint16_t)t->proxy_port);
		inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	} else {
		struct hostent *h = gethostbyname(t->host);
		if (!h)
			die("resolve");
		a.sin_port = htons((uint16_t)t->port);
		memcpy(&a.sin_addr, h->h_addr_list[0], 4);
	}
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("connect");
	nodelay(fd);
	return fd;
}

static void request(const struct target *t, const char *path, char *buf, size_t len)
{
	if (t->proxy_port && !t->tunnel)
		snprintf(buf, len, "GET http://%s:%d%s HTTP/1.1\r\nHost: %s\r\n\r\n", t->host,
			 t->port, path, t->host);
	else
		snprintf(buf, len, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, t->host);
}

/* Reads one response; returns body bytes. */
static uint64_t response(int fd)
{
	static char buf[1 << 16];
	size_t have = 0;
	char *end, *cl;
	uint64_t body, got;

	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - have - 1);
		if (r <= 0)
			die("read response");
		have += (size_t)r;
		buf[have] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")))
			break;
	}
	cl = strcasestr(buf, "Content-Length:");
	body = cl ? strtoull(cl + 15, NULL, 10) : 0;
	got = have - (size_t)(end + 4 - buf);
	while (got < body) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r <= 0)
			die("read body");
		got += (uint64_t)r;
	}
	return body;
}

static int open_target(const struct target *t)
{
	char req[512];
	int fd = dial(t);

	if (t->tunnel) {
		int n = snprintf(req, sizeof req, "CONNECT %s:%d HTTP/1.1\r\n\r\n", t->host, t->port);
		if (write(fd, req, (size_t)n) != n)
			die("write CONNECT");
		response(fd);
	}
	return fd;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void lat(const struct target *t, int n)
{
	double *v = calloc((size_t)n, sizeof *v), t0;
	char req[512];
	int fd = open_target(t);

	request(t, "/small", req, sizeof req);
	for (int i = 0; i < n; i++) {
		t0 = now_us();
		if (write(fd, req, strlen(req)) < 0)
			die("write");
		response(fd);
		v[i] = now_us() - t0;
	}
	qsort(v, (size_t)n, sizeof *v, cmp);
	printf("{\"requests\": %d, \"median_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f}\n", n,
	       v[n / 2], v[n * 9 / 10], v[n * 99 / 100]);
}

static void tput(const struct target *t, uint64_t bytes)
{
	char req[512], path[64];
	int fd = open_target(t);
	double t0;
	uint64_t got;

	snprintf(path, sizeof path, "/big?n=%llu", (unsigned long long)bytes);
	request(t, path, req, sizeof req);
	t0 = now_us();
	if (write(fd, req, strlen(req)) < 0)
		die("write");
	got = response(fd);
	printf("{\"bytes\": %llu, \"seconds\": %.3f, \"MBps\": %.1f}\n", (unsigned long long)got,
	       (now_us() - t0) / 1e6, (double)got / ((now_us() - t0) / 1e6) / 1e6);
}

struct cconn {
	int fd, left;
	double t0;
	char buf[4096];
	size_t have;
};

static void conc(const struct target *t, int conns, int reqs)
{
	struct cconn *c = calloc((size_t)conns, sizeof *c);
	double *v = calloc((size_t)conns * (size_t)reqs, sizeof *v), start;
	struct epoll_event ev, evs[512];
	int ep = epoll_create1(0), done = 0, nv = 0;
	char req[512];
	size_t rl;

	request(t, "/small", req, sizeof req);
	rl = strlen(req);
	start = now_us();
	for (int i = 0; i < conns; i++) {
		c[i].fd = open_target(t);
		c[i].left = reqs;
		ev.events = EPOLLIN;
		ev.data.u32 = (uint32_t)i;
		epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
	}
	double setup = now_us() - start;
	start = now_us();
	for (int i = 0; i < conns; i++) {
		c[i].t0 = now_us();
		if (write(c[i].fd, req, rl) < 0)
			die("write");
	}
	while (done < conns) {
		int n = epoll_wait(ep, evs, 512, 10000);
		if (n <= 0)
			die("epoll timeout");
		for (int k = 0; k < n; k++) {
			struct cconn *x = &c[evs[k].data.u32];
			ssize_t r = read(x->fd, x->buf + x->have, sizeof x->buf - x->have - 1);
			if (r <= 0)
				die("read");
			x->have += (size_t)r;
			x->buf[x->have] = '\0';
			/* "/small" answers are 2 bytes: a whole response ends in "\r\n\r\nok". */
			char *e = strstr(x->buf, "\r\n\r\nok");
			if (!e)
				continue;
			v[nv++] = now_us() - x->t0;
			x->have = 0;
			if (--x->left == 0) {
				done++;
				continue;
			}
			x->t0 = now_us();
			if (write(x->fd, req, rl) < 0)
				die("write");
		}
	}
	double secs = (now_us() - start) / 1e6;
	qsort(v, (size_t)nv, sizeof *v, cmp);
	printf("{\"connections\": %d, \"requests\": %d, \"setup_ms\": %.1f, \"req_per_s\": %.0f, "
	       "\"median_us\": %.1f, \"p99_us\": %.1f}\n",
	       conns, nv, setup / 1e3, nv / secs, v[nv / 2], v[nv * 99 / 100]);
}

int main(int argc, char **argv)
{
	struct target t = {0};

	memset(big, 'x', sizeof big);
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], atoi(argv[3]), argc == 5 ? atoi(argv[4]) : 1);
	if (argc < 6) {
		fprintf(stderr, "usage: see the header of bench/egress-load.c\n");
		return 2;
	}
	if (strncmp(argv[2], "proxy:", 6) == 0)
		t.proxy_port = atoi(argv[2] + 6);
	else if (strncmp(argv[2], "connect:", 8) == 0)
		t.proxy_port = atoi(argv[2] + 8), t.tunnel = true;
	t.host = argv[3];
	t.port = atoi(argv[4]);
	if (strcmp(argv[1], "lat") == 0)
		lat(&t, atoi(argv[5]));
	else if (strcmp(argv[1], "tput") == 0)
		tput(&t, strtoull(argv[5], NULL, 10));
	else if (strcmp(argv[1], "conc") == 0 && argc == 7)
		conc(&t, atoi(argv[5]), atoi(argv[6]));
	else
		return 2;
	return 0;
}
