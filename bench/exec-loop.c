/* exec-loop: the cost of one exec in a live sandbox, seen from a client that is already
 * connected (what the HTTP daemon and the MCP server do), next to a bare posix_spawn + wait of
 * the same program on the host, alternated round by round (A B A B ...).
 *
 * One connection to the sandbox's control socket; each round sends
 *   {"op":"exec","argv":[PROG],"env":{},"timeout_ms":0}
 * with /dev/null as stdin, stdout and stderr (SCM_RIGHTS), and times
 *   started: request sent -> reply {"ok":true,"exec":ID,"pid":P} received
 *   exec:    request sent -> event {"event":"exit","exec":ID,...} received
 * then the bare row: posix_spawn(PROG) with the same stdio -> waitpid returns; then
 *   ping:    {"op":"ping"} -> its reply, on the same connection (the control protocol's round
 *            trip without init: what an exec costs beyond starting the command).
 * The supervisor's own wall_ms (init's fork -> exit seen by the supervisor) is kept as well.
 *
 * usage: exec-loop SOCKET ROUNDS WARMUP [PROG]      (PROG: /bin/true)
 * Output: one JSON object per row on stdout; exit status 1 if any exec failed or exited
 * non-zero (the figures are still printed).
 *
 * The messages are read with string searches rather than a JSON library: the supervisor
 * writes compact JSON and the fields needed here are integers, so the program builds with
 * nothing but libc.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG_MAX 65536
#define RECV_TIMEOUT_MS 10000

extern char **environ;

struct row {
	const char *name;
	double *t;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int connect_ctl(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof a.sun_path) {
		fprintf(stderr, "exec-loop: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		fprintf(stderr, "exec-loop: connect %s: %s\n", path, strerror(errno));
		return -1;
	}
	return fd;
}

static int send_exec(int fd, const char *req, int devnull)
{
	int fds[3] = {devnull, devnull, devnull};
	char cbuf[CMSG_SPACE(sizeof fds)];
	struct iovec iov = {(void *)req, strlen(req)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			   .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;

	memset(cbuf, 0, sizeof cbuf);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(c), fds, sizeof fds);
	return sendmsg(fd, &m, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* One message into buf (NUL-terminated); descriptors that come with it are closed. */
static int recv_msg(int fd, char *buf, size_t cap)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = {buf, cap - 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			   .msg_controllen = sizeof cbuf};
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, RECV_TIMEOUT_MS) != 1) {
		fprintf(stderr, "exec-loop: no answer from the supervisor in %d ms\n",
			RECV_TIMEOUT_MS);
		return -1;
	}
	n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	if (n <= 0) {
		fprintf(stderr, "exec-loop: supervisor connection: %s\n",
			n == 0 ? "closed" : strerror(errno));
		return -1;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
				close(((int *)CMSG_DATA(c))[i]);
	buf[n] = '\0';
	return 0;
}

/* The number after "key": in a compact JSON object, or -1. */
static double field(const char *msg, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof pat, "\"%s\":", key);
	p = strstr(msg, pat);
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

/* One exec; fills the started and exit times (ms after the send) and the supervisor's wall
 * time. Returns the command's exit code, or -1 if the exchange failed. */
static int engine_once(int ctl, const char *req, int devnull, double *started, double *done,
		       double *sup_wall)
{
	static char buf[MSG_MAX];
	double t0 = now_ms();
	long id = -1;

	if (send_exec(ctl, req, devnull) < 0) {
		fprintf(stderr, "exec-loop: send: %s\n", strerror(errno));
		return -1;
	}
	for (;;) {
		if (recv_msg(ctl, buf, sizeof buf) < 0)
			return -1;
		if (strstr(buf, "\"ok\":false")) {
			fprintf(stderr, "exec-loop: refused: %s\n", buf);
			return -1;
		}
		if (strstr(buf, "\"ok\":true")) {
			*started = now_ms() - t0;
			id = (long)field(buf, "exec");
			continue;
		}
		if (strstr(buf, "\"event\":\"exit\"") && (long)field(buf, "exec") == id) {
			*done = now_ms() - t0;
			*sup_wall = field(buf, "wall_ms");
			return (int)field(buf, "exit_code");
		}
	}
}

static int ping_once(int ctl, double *done)
{
	static char buf[MSG_MAX];
	static const char req[] = "{\"op\":\"ping\"}";
	double t0 = now_ms();

	if (send(ctl, req, sizeof req - 1, MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "exec-loop: send: %s\n", strerror(errno));
		return -1;
	}
	do
		if (recv_msg(ctl, buf, sizeof buf) < 0)
			return -1;
	while (strstr(buf, "\"event\":")); /* a late event of an earlier exec */
	*done = now_ms() - t0;
	return strstr(buf, "\"ok\":true") ? 0 : -1;
}

static int bare_once(const char *prog, double *done)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = {(char *)prog, NULL};
	double t0;
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	for (int i = 0; i < 3; i++)
		posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDWR, 0);
	t0 = now_ms();
	if (posix_spawn(&pid, prog, &fa, NULL, argv, environ) != 0 ||
	    waitpid(pid, &st, 0) != pid) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	*done = now_ms() - t0;
	posix_spawn_file_actions_destroy(&fa);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p)
{
	return sorted[(int)(p * (n - 1) + 0.5)];
}

static void report(const struct row *r, const struct row *ref, int n, int failures)
{
	double *s = malloc(sizeof *s * (size_t)n), *ratio = malloc(sizeof *s * (size_t)n);
	double sum = 0;

	for (int i = 0; i < n; i++) {
		s[i] = r->t[i];
		sum += r->t[i];
		ratio[i] = r->t[i] / ref->t[i];
	}
	qsort(s, (size_t)n, sizeof *s, cmp);
	qsort(ratio, (size_t)n, sizeof *ratio, cmp);
	printf("{\"name\": \"%s\", \"median_ms\": %.4f, \"p90_ms\": %.4f, \"p99_ms\": %.4f, "
	       "\"min_ms\": %.4f, \"max_ms\": %.4f, \"mean_ms\": %.4f, \"paired_ratio_vs_%s\": "
	       "%.3f, \"failures\": %d, \"rounds\": %d}\n",
	       r->name, pct(s, n, 0.5), pct(s, n, 0.9), pct(s, n, 0.99), s[0], s[n - 1], sum / n,
	       ref->name, pct(ratio, n, 0.5), failures, n);
	free(s);
	free(ratio);
}

int main(int argc, char **argv)
{
	const char *prog = argc > 4 ? argv[4] : "/bin/true";
	struct row started = {.name = "engine-started"}, exec = {.name = "engine-exec"},
		   sup = {.name = "supervisor-wall"}, bare = {.name = "bare-posix_spawn"},
		   ping = {.name = "ping-roundtrip"};
	int rounds, warmup, ctl, devnull, efail = 0, bfail = 0, pfail = 0;
	char req[4200];

	if (argc < 4) {
		fprintf(stderr, "usage: %s SOCKET ROUNDS WARMUP [PROG]\n", argv[0]);
		return 2;
	}
	rounds = atoi(argv[2]);
	warmup = atoi(argv[3]);
	if (rounds < 1 || warmup < 0 || strlen(prog) > 4000 || strpbrk(prog, "\"\\")) {
		fprintf(stderr, "exec-loop: bad ROUNDS, WARMUP or PROG\n");
		return 2;
	}
	snprintf(req, sizeof req,
		 "{\"op\":\"exec\",\"argv\":[\"%s\"],\"env\":{},\"timeout_ms\":0}", prog);
	ctl = connect_ctl(argv[1]);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (ctl < 0 || devnull < 0)
		return 1;
	started.t = calloc((size_t)rounds, sizeof(double));
	exec.t = calloc((size_t)rounds, sizeof(double));
	sup.t = calloc((size_t)rounds, sizeof(double));
	bare.t = calloc((size_t)rounds, sizeof(double));
	ping.t = calloc((size_t)rounds, sizeof(double));
	for (int r = -warmup; r < rounds; r++) {
		double a = 0, b = 0, w = 0, d = 0, q = 0;
		int ec = engine_once(ctl, req, devnull, &a, &b, &w);
		int bc, pc;

		if (ec < 0)
			return 1; /* the connection is unusable: no point going on */
		bc = bare_once(prog, &d);
		pc = ping_once(ctl, &q);
		if (r < 0)
			continue;
		efail += ec != 0;
		bfail += bc != 0;
		pfail += pc != 0;
		ping.t[r] = q;
		started.t[r] = a;
		exec.t[r] = b;
		sup.t[r] = w;
		bare.t[r] = d;
	}
	report(&bare, &bare, rounds, bfail);
	report(&exec, &bare, rounds, efail);
	report(&started, &bare, rounds, efail);
	report(&sup, &bare, rounds, efail);
	report(&ping, &bare, rounds, pfail);
	return efail || bfail || pfail ? 1 : 0;
}
