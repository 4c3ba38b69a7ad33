/* The file stream of the gvisor tier: how a file, a directory or a stat crosses the boundary
 * by value. The sandbox's init runs inside gVisor's Sentry, which hands none of its own
 * descriptors out, so in place of the descriptor it opened, init serves the object over a
 * SOCK_SEQPACKET socket the supervisor made (one end handed in with the request, the other to
 * the client with the answer): one packet per message, a header and a payload.
 *
 *   init -> client  AJ_FSS_STAT   the opened object's own status (first packet, always)
 *                   AJ_FSS_DATA   the file's bytes, at most AJ_FSS_MAX_DATA per packet
 *                   AJ_FSS_ENTRY  a directory's entry: its lstat, name and link text
 *                   AJ_FSS_END    the last packet: err 0, or the errno that ended it
 *   client -> init  AJ_FSS_DATA   bytes to write (the write modes), then AJ_FSS_END (err 0);
 *                   init answers with its own AJ_FSS_END: 0 once the file is closed, or the
 *                   errno of the write or close that failed
 *
 * A watch's socket carries no header: each packet is what one read of the inotify instance
 * inside gave (whole struct inotify_event records), so a reader parses it as it would parse
 * the instance itself.
 *
 * Packets from init are input from inside the sandbox: aj_fss_parse() checks every length,
 * type and name before anything else reads them (fuzzed: tests/fuzz/fuzz_fsstream.c). Pure:
 * nothing here does I/O.
 */
#ifndef AJ_COMMON_FSSTREAM_H
#define AJ_COMMON_FSSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define AJ_FSS_MAX_DATA (64 * 1024)
#define AJ_FSS_NAME_MAX 255
#define AJ_FSS_LINK_MAX 4095
/* Room for the largest packet: a header and a DATA payload, or a status with name and link. */
#define AJ_FSS_MAX_PACKET (AJ_FSS_MAX_DATA + 128)

enum aj_fss_type {
	AJ_FSS_STAT = 1,
	AJ_FSS_DATA,
	AJ_FSS_ENTRY,
	AJ_FSS_END,
};

struct aj_fss_hdr {
	uint32_t type; /* enum aj_fss_type */
	int32_t err;   /* AJ_FSS_END: 0 or an errno */
};

/* The fixed part of a STAT or ENTRY payload, then name_len bytes of name and link_len bytes
 * of link text (no NUL in either). */
struct aj_fss_stat {
	uint32_t mode, uid, gid, nlink;
	uint64_t ino, dev, rdev, size, blocks;
	int64_t atime_s, mtime_s, ctime_s;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint32_t blksize;
	uint16_t name_len, link_len;
	uint32_t pad;
};

/* A packet as received and checked: for STAT and ENTRY, st, name and link are filled (name
 * empty for STAT, link empty unless the object is a symlink whose text came); for DATA, data
 * and len point into the buffer parsed; err for END. */
struct aj_fss_packet {
	enum aj_fss_type type;
	int err;
	const char *data;
	size_t len;
	struct stat st;
	char name[AJ_FSS_NAME_MAX + 1];
	char link[AJ_FSS_LINK_MAX + 1];
	bool has_link;
};

/* Writes a STAT or ENTRY packet into buf (at least AJ_FSS_MAX_PACKET bytes): st, the entry's
 * name (NULL for STAT) and a symlink's text (NULL: none), each cut to its maximum. Returns the
 * packet's length. */
size_t aj_fss_stat_packet(char *buf, enum aj_fss_type type, const struct stat *st,
			  const char *name, const char *link);
/* Writes the header of a DATA (its payload follows at buf + sizeof(struct aj_fss_hdr)) or
 * END packet; returns the header's length. */
size_t aj_fss_header(char *buf, enum aj_fss_type type, int err);

/* Checks one received packet of n bytes. Returns 0 with *out filled, or -1 (errno EPROTO)
 * for anything malformed: a short header, an unknown type, a DATA packet over
 * AJ_FSS_MAX_DATA, a status whose lengths do not add up, a name that is empty, ".", "..",
 * or holds '/' or NUL, a link text with a NUL, an END whose errno is out of range. */
int aj_fss_parse(const char *buf, size_t n, struct aj_fss_packet *out);

#endif
