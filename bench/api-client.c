/* A minimal HTTP/1.1 client for bench/run-api.sh: keep-alive connections to agentjail serve's
 * unix socket, one per thread, timing each operation.
 *
 *   api-client SOCKET OP N CONCURRENCY [ARGS]
 *   SOCKET: a unix socket's path, or tcp:HOST:PORT (IPv4, TCP_NODELAY); AJ_BENCH_HEADER, if
 *   set, is one more header line sent with every request (e.g. "X-API-Key: KEY")
 *     cycle POLICY_JSON        POST /v1/sandboxes {"name": "bench-T-I", "policy": ...} then
 *                              DELETE ...?force=true; one sample per create+delete pair
 *     create POLICY_JSON [MS]  the same, the sample the create alone, then MS milliseconds
 *                              of pause (a warm pool's refill)
 *     e2b-create TEMPLATE [MS] the E2B API's POST /sandboxes {"templateID": TEMPLATE}, the
 *                              sample the create alone, then an untimed DELETE
 *                              /sandboxes/ID and MS milliseconds of pause
 *     get NAME                 GET /v1/sandboxes/NAME
 *     read NAME PATH           GET /v1/sandboxes/NAME/files?path=PATH
 *     health                   GET /v1/health
 *     exec NAME                POST /v1/sandboxes/NAME/exec of /bin/true, the stream read to
 *                              its exit line
 *     exec-paired NAME         the same, each one followed by a bare posix_spawn + waitpid of
 *                              /bin/true on the host (stdio /dev/null): adds anchor_p50_ms
 *                              (the bare spawn's median) and ratio_p50 (the median over rounds
 *                              of exec / bare in the same round); one client only
 *
 * Prints one JSON line: op, n, concurrency, errors, per_s (operations per second of wall time),
 * p50_ms, p90_ms, p99_ms, max_ms. Exit status 1 if any request failed.
 */
#define _GNU_SOURCE /* strcasestr */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *sock_path, *op, *arg1, *arg2, *extra_header;
static int per_thread;

struct worker {
	int id;
	double *lat, *anchor, *ratio;
	int n, errors;
	pthread_t t;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dial(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct sockaddr_in in = {.sin_family = AF_INET};
	const char *colon = strrchr(sock_path, ':');
	int fd, one = 1;

	if (!strncmp(sock_path, "tcp:", 4) && colon && colon > sock_path + 4) {
		char host[64];
		snprintf(host, sizeof host, "%.*s", (int)(colon - sock_path - 4), sock_path + 4);
		in.sin_port = htons((uint16_t)atoi(colon + 1));
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || inet_pton(AF_INET, host, &in.sin_addr) != 1 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
		    connect(fd, (struct sockaddr *)&in, sizeof in) < 0) {
			perror("connect");
			exit(2);
		}
		return fd;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("connect");
		exit(2);
	}
	return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads one response (Content-Length bodies only: what these operations get). Returns the
 * status, or -1. */
static __thread const char *last_body; /* the body of the last response read */

static int read_response(int fd)
{
	static __thread char buf[1 << 20];
	size_t len = 0, need = 0;
	char *end = NULL;
	bool chunked = false;
	int status;

	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
		if (r <= 0)
			return -1;
		len += (size_t)r;
		buf[len] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			char *cl = strcasestr(buf, "\r\nContent-Length:");
			chunked = strcasestr(buf, "\r\nTransfer-Encoding: chunked") != NULL;
			need = (size_t)(end + 4 - buf) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
		}
		/* A streamed (chunked) body ends with its zero-length chunk. */
		if (end && (chunked ? len >= 5 && !strcmp(buf + len - 5, "0\r\n\r\n") : len >= need))
			break;
		if (len == sizeof buf - 1)
			return -1;
	}
	if (sscanf(buf, "HTTP/1.1 %d", &status) != 1)
		return -1;
	last_body = end + 4;
	/* exec: the stream must end with the command's exit, and a clean one. */
	if (chunked && (!strstr(buf, "\"type\":\"exit\"") || !strstr(buf, "\"exit_code\":0,")))
		return -1;
	return status;
}

static int request(int fd, const char *method, const char *path, const char *body, int want)
{
	char req[8192];
	int n = snprintf(req, sizeof req,
			 "%s %s HTTP/1.1\r\nHost: aj\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
			 method, path, extra_header ? extra_header : "", extra_header ? "\r\n" : "",
			 body ? "Content-Type: application/json\r\n" : "", body ? strlen(body) : 0,
			 body ? body : "");

	if (write_all(fd, req, (size_t)n) < 0)
		return -1;
	return read_response(fd) == want ? 0 : -1;
}

static int one(int fd, struct worker *w, int i, double *t_end)
{
	char path[4300], body[4096];

	if (!strcmp(op, "create")) {
		snprintf(body, sizeof body, "{\"name\": \"bench-%d-%d\", \"policy\": %s}", w->id, i,
			 arg1);
		if (request(fd, "POST", "/v1/sandboxes", body, 201) < 0)
			return -1;
		*t_end = now_ms();
		snprintf(path, sizeof path, "/v1/sandboxes/bench-%d-%d?force=true", w->id, i);
		if (request(fd, "DELETE", path, NULL, 204) < 0)
			return -1;
		usleep((useconds_t)(atoi(arg2) * 1000));
		return 0;
	}
	if (!strcmp(op, "e2b-create")) {
		const char *id;
		size_t len;
		snprintf(body, sizeof body, "{\"templateID\": \"%s\"}", arg1);
		if (request(fd, "POST", "/sandboxes", body, 201) < 0)
			return -1;
		*t_end = now_ms();
		if (!(id = strstr(last_body, "\"sandboxID\":\"")))
			return -1;
		id += 13;
		len = strcspn(id, "\"");
		snprintf(path, sizeof path, "/sandboxes/%.*s", (int)len, id);
		if (request(fd, "DELETE", path, NULL, 204) < 0)
			return -1;
		usleep((useconds_t)(atoi(arg2) * 1000));
		return 0;
	}
	if (!strcmp(op, "cycle")) {
		snprintf(body, sizeof body, "{\"name\": \"bench-%d-%d\", \"policy\": %s}", w->id, i,
			 arg1);
		if (request(fd, "POST", "/v1/sandboxes", body, 201) < 0)
			return -1;
		snprintf(path, sizeof path, "/v1/sandboxes/bench-%d-%d?force=true", w->id, i);
		return request(fd, "DELETE", path, NULL, 204);
	}
	if (!strcmp(op, "cycle-exec")) {
		snprintf(body, sizeof body, "{\"name\": \"bench-%d-%d\", \"policy\": %s}", w->id, i,
			 arg1);
		if (request(fd, "POST", "/v1/sandboxes", body, 201) < 0)
			return -1;
		snprintf(path, sizeof path, "/v1/sandboxes/bench-%d-%d/exec", w->id, i);
		if (request(fd, "POST", path, "{\"argv\": [\"/bin/true\"]}", 200) < 0)
			return -1;
		snprintf(path, sizeof path, "/v1/sandboxes/bench-%d-%d?force=true", w->id, i);
		return request(fd, "DELETE", path, NULL, 204);
	}
	if (!strcmp(op, "exec") || !strcmp(op, "exec-paired")) {
		snprintf(path, sizeof path, "/v1/sandboxes/%s/exec", arg1);
		return request(fd, "POST", path, "{\"argv\": [\"/bin/true\"]}", 200);
	}
	if (!strcmp(op, "get")) {
		snprintf(path, sizeof path, "/v1/sandboxes/%s", arg1);
		return request(fd, "GET", path, NULL, 200);
	}
	if (!strcmp(op, "read")) {
		snprintf(path, sizeof path, "/v1/sandboxes/%s/files?path=%s", arg1, arg2);
		return request(fd, "GET", path, NULL, 200);
	}
	return request(fd, "GET", "/v1/health", NULL, 200);
}

extern char **environ;

/* posix_spawn + waitpid of /bin/true with /dev/null as stdio: the anchor of exec-paired. */
static double bare_true_ms(void)
{
	char *argv[] = {"/bin/true", NULL};
	posix_spawn_file_actions_t fa;
	double t0;
	pid_t pid;
	int st, null = open("/dev/null", O_RDWR | O_CLOEXEC);

	posix_spawn_file_actions_init(&fa);
	for (int i = 0; i < 3; i++)
		posix_spawn_file_actions_adddup2(&fa, null, i);
	t0 = now_ms();
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0 ||
	    waitpid(pid, &st, 0) != pid || st != 0)
		t0 = -1;
	t0 = t0 < 0 ? -1 : now_ms() - t0;
	posix_spawn_file_actions_destroy(&fa);
	close(null);
	return t0;
}

static void *run(void *varg)
{
	struct worker *w = varg;
	int fd = dial();

	for (int i = 0; i < per_thread; i++) {
		double t0 = now_ms(), t1 = 0;
		if (one(fd, w, i, &t1) < 0) {
			w->errors++;
			close(fd);
			fd = dial();
			continue;
		}
		w->lat[w->n] = (t1 ? t1 : now_ms()) - t0;
		if (w->anchor) {
			double b = bare_true_ms();
			if (b <= 0) {
				w->errors++;
				continue;
			}
			w->anchor[w->n] = b;
			w->ratio[w->n] = w->lat[w->n] / b;
		}
		w->n++;
	}
	close(fd);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double p)
{
	return n ? v[(int)((n - 1) * p + 0.5)] : 0;
}

int main(int argc, char **argv)
{
	int n, conc, total = 0, errors = 0;
	struct worker *w;
	double *all, t0, wall;

	if (argc < 5) {
		fprintf(stderr, "usage: api-client SOCKET OP N CONCURRENCY [ARGS]\n");
		return 2;
	}
	sock_path = argv[1];
	extra_header = getenv("AJ_BENCH_HEADER");
	op = argv[2];
	n = atoi(argv[3]);
	conc = atoi(argv[4]) > 0 ? atoi(argv[4]) : 1;
	arg1 = argc > 5 ? argv[5] : "{}";
	arg2 = argc > 6 ? argv[6] : "";
	per_thread = (n + conc - 1) / conc;
	w = calloc((size_t)conc, sizeof *w);
	all = calloc((size_t)per_thread * (size_t)conc, sizeof *all);
	t0 = now_ms();
	for (int i = 0; i < conc; i++) {
		w[i].id = i;
		w[i].lat = calloc((size_t)per_thread, sizeof(double));
		if (!strcmp(op, "exec-paired")) {
			w[i].anchor = calloc((size_t)per_thread, sizeof(double));
			w[i].ratio = calloc((size_t)per_thread, sizeof(double));
		}
		pthread_create(&w[i].t, NULL, run, &w[i]);
	}
	for (int i = 0; i < conc; i++) {
		pthread_join(w[i].t, NULL);
		memcpy(all + total, w[i].lat, (size_t)w[i].n * sizeof(double));
		total += w[i].n;
		errors += w[i].errors;
	}
	wall = now_ms() - t0;
	qsort(all, (size_t)total, sizeof *all, cmp);
	printf("{\"op\": \"%s\", \"n\": %d, \"concurrency\": %d, \"errors\": %d, \"per_s\": %.1f, "
	       "\"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f",
	       op, total, conc, errors, total / (wall / 1e3), pct(all, total, 0.5),
	       pct(all, total, 0.9), pct(all, total, 0.99), total ? all[total - 1] : 0);
	if (w[0].anchor) { /* one client: its arrays are the whole sample */
		qsort(w[0].anchor, (size_t)w[0].n, sizeof(double), cmp);
		qsort(w[0].ratio, (size_t)w[0].n, sizeof(double), cmp);
		printf(", \"anchor_p50_ms\": %.3f, \"ratio_p50\": %.3f", pct(w[0].anchor, w[0].n, 0.5),
		       pct(w[0].ratio, w[0].n, 0.5));
	}
	printf("}\n");
	return errors ? 1 : 0;
}
