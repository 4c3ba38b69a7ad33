/* The supervisor-child messages (src/sandbox/sync.c) over a socket pair in the test's own
 * process: a peer that sends its last message and goes while one of ours sits unread in its
 * queue. The kernel then leaves ECONNRESET on our socket and reports it before anything
 * queued; the message the peer sent first (a child's ERROR, say) must still be read, then
 * end-of-file. That is what a child that fails in its root filesystem, after the supervisor
 * sent it its network namespace, leaves behind. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/sync.h"
#include "unit.h"

static int pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
}

static void peer_gone_unread(int with_fd)
{
	struct aj_sync_msg ours = {.type = AJ_SYNC_NETNS}, theirs = {.type = AJ_SYNC_ERROR}, got;
	const char *how = with_fd ? "recv_fd" : "recv";
	int sv[2], passed = -1, r;

	if (pair(sv) < 0) {
		CHECK(0, "%s: socketpair", how);
		return;
	}
	CHECK(aj_sync_send(sv[0], &ours) == 0, "%s: ours sent, never read by the peer", how);
	snprintf(theirs.err.msg, sizeof theirs.err.msg, "mount failed");
	CHECK(aj_sync_send(sv[1], &theirs) == 0, "%s: the peer's ERROR sent", how);
	close(sv[1]);
	memset(&got, 0, sizeof got);
	r = with_fd ? aj_sync_recv_fd(sv[0], &got, 1000, &passed) : aj_sync_recv(sv[0], &got, 1000);
	CHECK(r == 0, "%s: the peer's last message is read, not the reset (%s)", how,
	      r == 0 ? "read" : strerror(errno));
	CHECK(r == 0 && got.type == AJ_SYNC_ERROR && strcmp(got.err.msg, "mount failed") == 0,
	      "%s: it is the ERROR, whole", how);
	CHECK(passed == -1, "%s: no descriptor came with it", how);
	errno = 0;
	r = with_fd ? aj_sync_recv_fd(sv[0], &got, 1000, &passed) : aj_sync_recv(sv[0], &got, 1000);
	CHECK(r < 0 && errno == EPIPE, "%s: then end-of-file (EPIPE)", how);
	close(sv[0]);
}

int main(void)
{
	peer_gone_unread(0);
	peer_gone_unread(1);
	UNIT_EXIT();
}
