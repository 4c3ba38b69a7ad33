/* The protocol between a persistent sandbox's supervisor and its init (PID 1 inside), over
 * the SOCK_SEQPACKET control pair set up at launch. One request or reply per packet: a fixed
 * header, then `len` bytes of payload; descriptors travel as SCM_RIGHTS.
 *
 * init executes commands and file operations on the supervisor's behalf. It runs inside the
 * sandbox under every restriction of it, as the sandbox user, so whatever it opens, creates
 * or removes is exactly what the sandbox itself could: symlinks resolve inside the sandbox,
 * Landlock and the mount tree apply. The supervisor treats init's replies as untrusted data.
 */
#ifndef AJ_SANDBOX_INITPROTO_H
#define AJ_SANDBOX_INITPROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#define AJ_INIT_MAX_PAYLOAD (200 * 1024)
#define AJ_INIT_MAX_FDS 3

enum aj_init_op {
	/* supervisor -> init */
	AJ_IOP_EXEC = 32, /* payload: cwd, argv..., env... (NUL-terminated), and with
			   * AJ_IEXEC_USER the user last; fds: stdin, stdout, stderr, or with
			   * AJ_IEXEC_TTY one terminal fd */
	AJ_IOP_SIGNAL,    /* arg: signal, id: the exec, sent to its process group */
	AJ_IOP_OPEN,      /* payload: path; flags: open(2) flags; arg: mode; reply carries fd */
	AJ_IOP_MKDIR,     /* payload: path; arg: mode; flags: AJ_IFILE_PARENTS */
	AJ_IOP_REMOVE,    /* payload: path; flags: AJ_IFILE_RECURSIVE */
	AJ_IOP_RENAME,    /* payload: from, to */
	AJ_IOP_WATCH,     /* payload: a directory; flags: inotify mask; fds: an inotify instance to
			   * add the watch to, or none for a new one. Reply: arg = the watch
			   * descriptor, with the new instance's fd when one was made */
	/* The gvisor tier's by-value operations (init runs inside gVisor's Sentry, which hands
	 * none of its own descriptors out; what crosses is bytes, over sockets the supervisor
	 * made and handed in). A terminal is AJ_IOP_EXEC with AJ_IEXEC_TTY | AJ_IEXEC_RELAY. */
	AJ_IOP_RESIZE,    /* id: an exec with a relayed terminal; arg: AJ_WINSIZE(rows, cols) */
	AJ_IOP_STREAM,    /* as AJ_IOP_OPEN (payload, flags, arg); fds: a SOCK_SEQPACKET socket
			   * init serves the opened file over (common/fsstream.h) */
	AJ_IOP_WATCH_STREAM, /* as AJ_IOP_WATCH; fds: a SOCK_SEQPACKET socket for a new
			      * instance's events, or none with arg = the instance to add to.
			      * Reply: arg = the watch descriptor, pid = the instance */
	/* init -> supervisor */
	AJ_IOP_STARTED = 64, /* id, pid or err */
	AJ_IOP_EXITED,       /* id, status, ru */
	AJ_IOP_DONE,         /* id, err (0 on success); OPEN: with one fd */
	AJ_IOP_UNWATCHED,    /* pid: a streamed inotify instance init closed (its reader left) */
};

#define AJ_IEXEC_TTY (1u << 0)
#define AJ_IEXEC_USER (1u << 1) /* the payload ends with USER[:GROUP] to run the command as */
/* With AJ_IEXEC_TTY: the one fd is a SOCK_STREAM socket of the supervisor's, no terminal. init
 * opens a pty pair of the sandbox's own devpts, runs the command on its peer and relays the
 * master's bytes both ways over the socket; arg: the window size (AJ_WINSIZE, 0: leave it).
 * The command's EXITED comes once the output it wrote is on the socket; the socket is closed
 * when no process holds the terminal any more. */
#define AJ_IEXEC_RELAY (1u << 2)
#define AJ_WINSIZE(rows, cols) ((int32_t)(((uint32_t)(rows) << 16) | ((uint32_t)(cols) & 0xffff)))
/* STARTED with an error: arg says which step failed. */
#define AJ_ISTAGE_EXEC 0
#define AJ_ISTAGE_CHDIR 1
#define AJ_ISTAGE_USER 2 /* no such user in the sandbox (ENOENT), or not one init can be */
#define AJ_IFILE_PARENTS (1u << 0)
#define AJ_IFILE_RECURSIVE (1u << 1)

struct aj_init_hdr {
	uint32_t op;
	uint32_t flags;
	uint64_t id;
	int32_t arg;
	int32_t err;    /* replies: errno, 0 on success */
	int32_t pid;    /* STARTED: the command's pid inside the sandbox */
	int32_t status; /* EXITED: wait status */
	uint32_t argc, envc;
	uint32_t len; /* payload bytes after the header */
	uint32_t pad;
	struct rusage ru; /* EXITED */
};

/* Sends header + payload + fds as one packet. */
int aj_init_send(int sock, const struct aj_init_hdr *h, const void *payload, const int *fds,
		 size_t nfds);
/* Receives one packet into *h and buf (cap bytes, NUL-terminated beyond len); fills up to
 * AJ_INIT_MAX_FDS received descriptors (rest closed). Returns 0, or -1 with errno (EPIPE when
 * the peer is gone, EPROTO for malformed packets). */
int aj_init_recv(int sock, struct aj_init_hdr *h, char *buf, size_t cap, int *fds,
		 size_t *nfds);

/* Splits a payload of NUL-terminated strings: out[] gets up to max pointers into buf.
 * Returns the number found, -1 if the payload does not end with a NUL. */
int aj_init_strings(char *buf, size_t len, char **out, size_t max);

#endif
