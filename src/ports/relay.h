/* A TCP connection relayed between two sockets inside the kernel with splice(2), for the
 * ports module's connections (published ports, port-forward). One pipe serves every relay
 * of an event loop (struct aj_relay_pipe): a wake-up splices what one socket holds into it
 * and at once out into the other; only what the other side cannot take now is read out of
 * the pipe into that direction's buffer, so the pipe is empty between wake-ups and a relay
 * costs its two sockets. A direction with buffered bytes reads no more until they are out.
 * End of file on one side becomes a shutdown of the other's write half; the relay ends when
 * both directions ended, either socket fails, nothing moved for 15 minutes, or 30 s after
 * one side ended without the other. At most 64 KiB is taken from a socket at a time, so a
 * relay holds at most that much per direction for a side that does not read.
 */
#ifndef AJ_PORTS_RELAY_H
#define AJ_PORTS_RELAY_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

struct aj_relay_pipe {
	int fd[2];
	size_t size;
};

/* 0, or -1 with errno. */
int aj_relay_pipe_open(struct aj_relay_pipe *p);
void aj_relay_pipe_close(struct aj_relay_pipe *p);

struct aj_relay;
/* Called once when a relay ends (then freed): bytes a -> b and b -> a. */
typedef void (*aj_relay_done_fn)(void *arg, uint64_t a_to_b, uint64_t b_to_a);

/* What may follow `first` from a (the daemon's port proxy, where first is an HTTP request
 * the daemon checked and cleaned; a later request on the same connection must never pass
 * unchecked). */
enum aj_relay_gate {
	AJ_RELAY_OPEN = 0, /* anything: a plain TCP relay */
	AJ_RELAY_ONE,      /* nothing: a's next byte ends the relay (b's answer still flows) */
	AJ_RELAY_UPGRADE,  /* an upgrade: a's bytes flow once b's answer starts with "HTTP/1.x
			    * 101"; any other answer makes it AJ_RELAY_ONE */
};

/* Relays between the connected non-blocking sockets a and b (taken: closed at the end);
 * first (NULL: none) holds bytes that go to b before anything read from a, and is emptied;
 * gate says what of a's may follow. NULL when the loop cannot watch them (both closed, done
 * not called). */
struct aj_relay *aj_relay_start(struct event_base *base, struct aj_relay_pipe *pipe, int a,
				int b, struct evbuffer *first, enum aj_relay_gate gate,
				aj_relay_done_fn done, void *arg);
/* Ends a relay without calling done (teardown). */
void aj_relay_free(struct aj_relay *r);

#endif
