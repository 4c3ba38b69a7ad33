/* The control protocol (src/control/proto.c, client.c) over socket pairs in the test's own
 * process: messages and descriptors both ways, the limits, what a misbehaving peer's bytes
 * and descriptors turn into (EPROTO, nothing left open), errors across the socket, and the
 * request ids that let a client skip events and late answers to an earlier request. The
 * supervisor's side of a call is played by a thread. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fdpass.h"
#include "control/client.h"
#include "control/proto.h"
#include "unit.h"

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static int pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
}

static int send_raw(int fd, const char *bytes, size_t len, const int *fds, size_t nfds)
{
	struct iovec iov = {(void *)bytes, len};
	return aj_fdpass_send(fd, &iov, 1, fds, nfds) < 0 ? -1 : 0;
}

static void roundtrip(void)
{
	int sv[2], p[2], fds[AJ_CTL_MAX_FDS];
	size_t nfds = 9;
	json_t *msg = json_pack("{s:s, s:i, s:[s]}", "op", "ping", "n", 3, "args", "x"), *got;
	char c = 0;

	if (pair(sv) < 0 || pipe(p) < 0) {
		CHECK(0, "make a socket pair and a pipe");
		return;
	}
	CHECK(aj_ctl_send(sv[0], msg, NULL, 0) == 0, "a message is sent");
	CHECK(json_is_string(json_object_get(msg, "op")), "and not consumed");
	CHECK(aj_ctl_recv(sv[1], &got, fds, &nfds, 1000) == 0 && json_equal(got, msg) &&
		      nfds == 0,
	      "the same object arrives, without descriptors");
	json_decref(got);

	CHECK(aj_ctl_send(sv[0], msg, &p[0], 1) == 0, "a message with a descriptor");
	CHECK(aj_ctl_recv(sv[1], &got, fds, &nfds, 1000) == 0 && nfds == 1 && fds[0] != p[0],
	      "the descriptor arrives as a new one");
	if (nfds == 1) {
		CHECK(write(p[1], "z", 1) == 1 && read(fds[0], &c, 1) == 1 && c == 'z',
		      "and is the pipe that was sent");
		close(fds[0]);
	}
	json_decref(got);

	{
		int four[4] = {p[0], p[0], p[0], p[0]};
		errno = 0;
		CHECK(aj_ctl_send(sv[0], msg, four, 4) < 0 && errno == E2BIG,
		      "more than %d descriptors are refused (E2BIG)", AJ_CTL_MAX_FDS);
	}
	{
		char *big = malloc(AJ_CTL_MAX_MSG + 16);
		json_t *huge;
		memset(big, 'a', AJ_CTL_MAX_MSG + 15);
		big[AJ_CTL_MAX_MSG + 15] = '\0';
		huge = json_pack("{s:s}", "data", big);
		errno = 0;
		CHECK(aj_ctl_send(sv[0], huge, NULL, 0) < 0 && errno == E2BIG,
		      "a message over %d bytes is refused (E2BIG)", AJ_CTL_MAX_MSG);
		json_decref(huge);
		free(big);
	}
	errno = 0;
	CHECK(aj_ctl_recv(sv[1], &got, NULL, NULL, 50) < 0 && errno == ETIMEDOUT && got == NULL,
	      "nothing was sent for either: the receiver times out (ETIMEDOUT)");
	json_decref(msg);
	close(sv[0]);
	errno = 0;
	CHECK(aj_ctl_recv(sv[1], &got, NULL, NULL, 1000) < 0 && errno == EPIPE,
	      "a peer that is gone is EPIPE");
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

static void expect_eproto(const char *bytes, size_t len, const char *what)
{
	int sv[2], p[2], fds[AJ_CTL_MAX_FDS], before;
	size_t nfds = 9;
	json_t *got = (json_t *)1;

	if (pair(sv) < 0 || pipe(p) < 0) {
		CHECK(0, "make a socket pair and a pipe");
		return;
	}
	if (send_raw(sv[0], bytes, len, p, 2) < 0) {
		CHECK(0, "send %s", what);
		return;
	}
	before = open_fds();
	errno = 0;
	CHECK(aj_ctl_recv(sv[1], &got, fds, &nfds, 1000) < 0 && errno == EPROTO && got == NULL &&
		      nfds == 0,
	      "%s is EPROTO, with no message and no descriptors", what);
	CHECK(open_fds() == before, "the descriptors it carried are closed");
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

static void hostile(void)
{
	int sv[2], p[2], five[5], fds[AJ_CTL_MAX_FDS], before;
	size_t nfds = 0;
	json_t *got = NULL;

	expect_eproto("not json", 8, "text that is not JSON");
	expect_eproto("[1,2]", 5, "JSON that is not an object");
	expect_eproto("{\"a\":", 5, "a truncated object");
	expect_eproto("{\"a\":1}\0{}", 10, "an object followed by a NUL and more");

	if (pair(sv) < 0 || pipe(p) < 0) {
		CHECK(0, "make a socket pair and a pipe");
		return;
	}
	for (int i = 0; i < 5; i++)
		five[i] = p[0];
	before = open_fds();
	CHECK(send_raw(sv[0], "{}", 2, five, 5) == 0 &&
		      aj_ctl_recv(sv[1], &got, fds, &nfds, 1000) == 0 && nfds == AJ_CTL_MAX_FDS,
	      "a message with 5 descriptors is taken with the first %d", AJ_CTL_MAX_FDS);
	CHECK(open_fds() == before + AJ_CTL_MAX_FDS, "the others are closed");
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	json_decref(got);
	before = open_fds();
	CHECK(send_raw(sv[0], "{}", 2, five, 2) == 0 &&
		      aj_ctl_recv(sv[1], &got, NULL, &nfds, 1000) == 0 && nfds == 0 &&
		      open_fds() == before,
	      "descriptors a receiver did not ask for are closed");
	json_decref(got);
	errno = 0;
	CHECK(send_raw(sv[0], "", 0, NULL, 0) == 0 &&
		      aj_ctl_recv(sv[1], &got, NULL, NULL, 1000) < 0 && errno == EPIPE,
	      "an empty packet reads as the end of the connection (EPIPE)");
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

static void oversized_packet(void)
{
	int sv[2], size = 4 * AJ_CTL_MAX_MSG;
	size_t len = AJ_CTL_MAX_MSG + 100;
	char *big = malloc(len);
	json_t *got = (json_t *)1;

	if (!big || pair(sv) < 0)
		return;
	/* An object longer than the receive buffer: the JSON is valid, but cut. */
	memset(big, ' ', len);
	big[0] = '{';
	big[len - 1] = '}';
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
	if (send_raw(sv[0], big, len, NULL, 0) < 0) {
		printf("ok - a packet over the limit is EPROTO # SKIP cannot send %zu bytes: %s\n",
		       len, strerror(errno));
	} else {
		errno = 0;
		CHECK(aj_ctl_recv(sv[1], &got, NULL, NULL, 1000) < 0 && errno == EPROTO &&
			      got == NULL,
		      "a packet over the limit (truncated) is EPROTO, not a cut message");
	}
	free(big);
	close(sv[0]);
	close(sv[1]);
}

static void errors(void)
{
	struct aj_err in, out;
	json_t *j, *e;

	aj_err_set(&in, AJ_LAYER_MOUNT, EACCES, "bind \"/x\"");
	aj_err_hint(&in, "try --allow");
	j = aj_ctl_error(&in);
	e = json_object_get(j, "error");
	CHECK(json_is_false(json_object_get(j, "ok")), "an error reply says ok: false");
	CHECK_STR(json_string_value(json_object_get(e, "layer")), "mount", "with the layer's name");
	CHECK(json_integer_value(json_object_get(e, "errno")) == EACCES, "the errno");
	CHECK_STR(json_string_value(json_object_get(e, "message")), "bind \"/x\"", "the message");
	CHECK_STR(json_string_value(json_object_get(e, "hint")), "try --allow", "and the hint");
	CHECK(aj_ctl_take_error(j, &out) == -1 && out.layer == AJ_LAYER_MOUNT &&
		      out.errnum == EACCES && !strcmp(out.msg, in.msg) &&
		      !strcmp(out.hint, in.hint),
	      "the client gets the same error back");
	CHECK(out.cls == AJ_ERRC_NONE, "with no class of its own");
	json_decref(j);

	aj_err_set(&in, AJ_LAYER_EXEC, ENOENT, "no such command");
	j = aj_ctl_error(&in);
	CHECK(!json_is_string(json_object_get(json_object_get(j, "error"), "hint")),
	      "without a hint, no hint string");
	json_object_set_new(j, "exit_code", json_integer(127));
	CHECK(aj_ctl_take_error(j, &out) == -1 && out.cls == AJ_ERRC_NO_COMMAND && !out.hint[0],
	      "exit_code 127 is a command not found");
	json_object_set_new(j, "exit_code", json_integer(126));
	CHECK(aj_ctl_take_error(j, &out) == -1 && out.cls == AJ_ERRC_NO_EXEC,
	      "exit_code 126 is a command that cannot start");
	json_decref(j);

	j = json_pack("{s:b, s:{s:s, s:i}}", "ok", 0, "error", "layer", "bogus", "errno", 5);
	CHECK(aj_ctl_take_error(j, &out) == -1 && out.layer == AJ_LAYER_INTERNAL &&
		      out.errnum == 5 && strstr(out.msg, "refused"),
	      "an unknown layer is internal, and a missing message has a default");
	json_decref(j);
	j = json_pack("{s:b, s:s}", "ok", 0, "error", "a string");
	CHECK(aj_ctl_take_error(j, &out) == -1 && out.msg[0],
	      "an error that is no object still fills err");
	json_decref(j);
}

/* The supervisor's side of three calls: an event and a late answer to another request before
 * each real reply; the second reply is an error, the third carries no rid (older
 * supervisors). */
struct server {
	int fd, p;
	json_int_t rids[3];
	char ops[3][16];
};

static void *serve(void *arg)
{
	struct server *sv = arg;

	for (int i = 0; i < 3; i++) {
		json_t *req = NULL, *reply;
		const char *op;

		if (aj_ctl_recv(sv->fd, &req, NULL, NULL, 5000) < 0)
			return NULL;
		sv->rids[i] = json_integer_value(json_object_get(req, "rid"));
		op = json_string_value(json_object_get(req, "op"));
		snprintf(sv->ops[i], sizeof sv->ops[i], "%s", op ? op : "");
		json_decref(req);
		reply = json_pack("{s:s}", "event", "output");
		aj_ctl_send(sv->fd, reply, NULL, 0);
		json_decref(reply);
		reply = json_pack("{s:b, s:I, s:i}", "ok", 1, "rid", sv->rids[i] + 1000, "stale",
				  1);
		aj_ctl_send(sv->fd, reply, NULL, 0);
		json_decref(reply);
		if (i == 0)
			reply = json_pack("{s:b, s:I, s:i}", "ok", 1, "rid", sv->rids[i], "answer",
					  42);
		else if (i == 1)
			reply = json_pack("{s:b, s:I, s:{s:s, s:s, s:i}}", "ok", 0, "rid",
					  sv->rids[i], "error", "layer", "cgroup", "message",
					  "frozen", "errno", EBUSY);
		else
			reply = json_pack("{s:b, s:i}", "ok", 1, "answer", 3);
		aj_ctl_send(sv->fd, reply, i == 0 ? &sv->p : NULL, i == 0);
		json_decref(reply);
	}
	return NULL;
}

static void calls(void)
{
	int s[2], p[2], rfds[AJ_CTL_MAX_FDS];
	size_t nrfds = 0;
	struct server sv = {0};
	pthread_t t;
	json_t *reply = NULL;
	struct aj_err err;

	if (pair(s) < 0 || pipe(p) < 0) {
		CHECK(0, "make a socket pair and a pipe");
		return;
	}
	sv.fd = s[1];
	sv.p = p[0];
	if (pthread_create(&t, NULL, serve, &sv) != 0) {
		CHECK(0, "start the server thread");
		return;
	}
	CHECK(aj_ctl_call(s[0], json_pack("{s:s}", "op", "one"), NULL, 0, &reply, rfds, &nrfds,
			  5000, &err) == 0 &&
		      json_integer_value(json_object_get(reply, "answer")) == 42,
	      "a call skips an event and a late answer to another request, and gets its own");
	CHECK(nrfds == 1, "with the descriptor that came with it");
	for (size_t i = 0; i < nrfds; i++)
		close(rfds[i]);
	json_decref(reply);
	CHECK(aj_ctl_call(s[0], json_pack("{s:s}", "op", "two"), NULL, 0, &reply, NULL, NULL, 5000,
			  &err) < 0 &&
		      err.layer == AJ_LAYER_CGROUP && err.errnum == EBUSY &&
		      !strcmp(err.msg, "frozen") && reply == NULL,
	      "an error reply fails the call with the supervisor's error");
	CHECK(aj_ctl_call(s[0], json_pack("{s:s}", "op", "three"), NULL, 0, &reply, NULL, NULL,
			  5000, &err) == 0 &&
		      json_integer_value(json_object_get(reply, "answer")) == 3,
	      "a reply without a request id is taken");
	json_decref(reply);
	pthread_join(t, NULL);
	CHECK(!strcmp(sv.ops[0], "one") && !strcmp(sv.ops[2], "three"),
	      "the requests arrived as sent");
	CHECK(sv.rids[0] > 0 && sv.rids[1] != sv.rids[0] && sv.rids[2] != sv.rids[1],
	      "each request carries a request id of its own");
	close(s[1]);
	CHECK(aj_ctl_call(s[0], json_pack("{s:s}", "op", "four"), NULL, 0, &reply, NULL, NULL,
			  1000, &err) < 0 &&
		      err.layer == AJ_LAYER_STATE && strstr(err.msg, "supervisor"),
	      "a call to a supervisor that is gone fails, saying so");
	close(s[0]);
	close(p[0]);
	close(p[1]);
}

static void connecting(void)
{
	char longpath[200];
	struct aj_err err;

	memset(longpath, 'a', sizeof longpath - 1);
	longpath[0] = '/';
	longpath[sizeof longpath - 1] = '\0';
	CHECK(aj_ctl_connect(longpath, &err) < 0 && err.errnum == EINVAL,
	      "a socket path too long for sun_path is EINVAL");
	CHECK(aj_ctl_connect("", &err) < 0 && err.errnum == EINVAL, "an empty one too");
	CHECK(aj_ctl_connect("/nonexistent/agentjail.sock", &err) < 0 && err.errnum == ENOENT &&
		      strstr(err.msg, "/nonexistent/agentjail.sock"),
	      "a missing socket is ENOENT, naming it");
}

int main(void)
{
	roundtrip();
	hostile();
	oversized_packet();
	errors();
	calls();
	connecting();
	UNIT_EXIT();
}
