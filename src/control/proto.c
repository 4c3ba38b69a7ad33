#include "control/proto.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/fdpass.h"

/* The receive buffer, one per thread (the HTTP daemon receives on several worker threads at
 * once), made at a thread's first message and freed with the thread. Not a static
 * thread-local array: the C library zeroes every thread's static TLS when the thread starts,
 * so 256 KiB of it cost every process 64 page faults at start, whether it ever used the
 * control socket or not. */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

static void buf_key_make(void)
{
	if (pthread_key_create(&buf_key, free) != 0)
		abort();
}

static char *recv_buffer(void)
{
	char *buf;

	pthread_once(&buf_once, buf_key_make);
	buf = pthread_getspecific(buf_key);
	if (!buf) {
		buf = aj_xmalloc(AJ_CTL_MAX_MSG + 1);
		if (pthread_setspecific(buf_key, buf) != 0)
			abort();
	}
	return buf;
}

int aj_ctl_send(int fd, json_t *msg, const int *fds, size_t nfds)
{
	char *text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(12));
	struct iovec iov;
	ssize_t n;

	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	iov.iov_base = text;
	iov.iov_len = strlen(text);
	if (iov.iov_len > AJ_CTL_MAX_MSG || nfds > AJ_CTL_MAX_FDS) {
		free(text);
		errno = E2BIG;
		return -1;
	}
	n = aj_fdpass_send(fd, &iov, 1, fds, nfds);
	free(text);
	return n < 0 ? -1 : 0;
}

int aj_ctl_recv(int fd, json_t **msg, int *fds, size_t *nfds, int timeout_ms)
{
	char *buf = recv_buffer();
	struct iovec iov = {buf, AJ_CTL_MAX_MSG};
	char cbuf[CMSG_SPACE(sizeof(int) * (AJ_CTL_MAX_FDS + 4))];
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			   .msg_controllen = sizeof cbuf};
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t got = 0;
	ssize_t n;
	int r;

	*msg = NULL;
	if (nfds)
		*nfds = 0;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		if (r == 0)
			errno = ETIMEDOUT;
		return -1;
	}
	do
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	got = aj_fdpass_take(&m, fds, fds ? AJ_CTL_MAX_FDS : 0);
	if (nfds)
		*nfds = got;
	if (n == 0) {
		errno = EPIPE;
		return -1;
	}
	buf[n] = '\0';
	*msg = (m.msg_flags & MSG_TRUNC) ? NULL : json_loadb(buf, (size_t)n, 0, NULL);
	if (!*msg || !json_is_object(*msg)) {
		json_decref(*msg);
		*msg = NULL;
		if (fds)
			aj_fds_close(fds, got);
		if (nfds)
			*nfds = 0;
		errno = EPROTO;
		return -1;
	}
	return 0;
}

json_t *aj_ctl_error(const struct aj_err *err)
{
	return json_pack("{s:b, s:{s:s, s:s, s:i, s:s?}}", "ok", 0, "error", "layer",
			 aj_layer_name(err->layer), "message", err->msg, "errno", err->errnum,
			 "hint", err->hint[0] ? err->hint : NULL);
}

int aj_ctl_take_error(json_t *reply, struct aj_err *err)
{
	json_t *e = json_object_get(reply, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *hint = json_string_value(json_object_get(e, "hint"));
	const char *layer = json_string_value(json_object_get(e, "layer"));
	int layer_id = AJ_LAYER_INTERNAL;

	for (int i = 0; layer && i < AJ_LAYER__COUNT; i++)
		if (strcmp(aj_layer_name(i), layer) == 0)
			layer_id = i;
	aj_err_set(err, (enum aj_layer)layer_id,
		   (int)json_integer_value(json_object_get(e, "errno")), "%s",
		   msg ? msg : "the supervisor refused the request");
	/* The supervisor says which exit status a command that could not start stands for: a
	 * missing working directory is ENOENT too, but 126, not "command not found". */
	switch (json_integer_value(json_object_get(reply, "exit_code"))) {
	case 127: aj_err_class(err, AJ_ERRC_NO_COMMAND); break;
	case 126: aj_err_class(err, AJ_ERRC_NO_EXEC); break;
	default: break;
	}
	if (hint)
		aj_err_hint(err, "%s", hint);
	return -1;
}
