/* HTTP/1.x message heads and body framing for the egress proxy. Pure (no I/O), so that the
 * unit tests and the fuzzer see exactly what the proxy parses.
 *
 * The parser is strict where leniency lets two parties disagree about where a message ends
 * (request smuggling): bare CR, obsolete line folding, NUL, both Content-Length and
 * Transfer-Encoding, several Content-Lengths and transfer codings other than a final
 * "chunked" are refused. A head owns its strings; aj_http_head_free() releases them.
 */
#ifndef AJ_EGRESS_HTTP_H
#define AJ_EGRESS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AJ_HTTP_HEAD_MAX (64 * 1024)

struct aj_http_field {
	char *name;
	char *value;
};

struct aj_http_head {
	/* Request: method, target, version. Response: version, status code, reason. */
	char *start[3];
	struct aj_http_field *f;
	size_t n, cap;
};

/* Parses a head: text[0..len) ends with the empty line. request selects the start line's
 * form. On error why (>= 128 bytes) says what is wrong. */
int aj_http_head_parse(const char *text, size_t len, bool request, struct aj_http_head *h,
		       char *why, size_t why_len);
void aj_http_head_free(struct aj_http_head *h);

/* Field access, names compared case-insensitively. get returns the first value. */
const char *aj_http_head_get(const struct aj_http_head *h, const char *name);
size_t aj_http_head_count(const struct aj_http_head *h, const char *name);
void aj_http_head_set(struct aj_http_head *h, const char *name, const char *value);
void aj_http_head_add(struct aj_http_head *h, const char *name, const char *value);
void aj_http_head_del(struct aj_http_head *h, const char *name);
/* True if a comma-separated header (Connection) lists token. */
bool aj_http_head_has_token(const struct aj_http_head *h, const char *name, const char *token);

/* The head as text, CRLF line ends and the empty line included (malloc'd, NUL-terminated). */
char *aj_http_head_format(const struct aj_http_head *h, size_t *len);

enum aj_http_body_kind {
	AJ_BODY_NONE = 0,
	AJ_BODY_LENGTH,  /* Content-Length bytes */
	AJ_BODY_CHUNKED, /* chunked coding, passed through as is */
	AJ_BODY_CLOSE,   /* until the connection closes (responses only) */
};

/* Where the chunked-coding scanner is (aj_http_body's own). */
enum aj_http_chunk_state {
	C_SIZE = 0, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_TRAILER_LF,
	C_TRAILER_LINE, C_TRAILER_LINE_LF
};

struct aj_http_body {
	enum aj_http_body_kind kind;
	uint64_t remaining; /* AJ_BODY_LENGTH */
	/* AJ_BODY_CHUNKED scanner state */
	enum aj_http_chunk_state cstate;
	uint64_t csize;
	int cdigits;
	bool done;
};

/* Framing of a request body; -1 with why when the request cannot be framed safely. */
int aj_http_request_body(const struct aj_http_head *h, struct aj_http_body *b, char *why,
			 size_t why_len);
/* Framing of a response body, given the request method and the status code. */
int aj_http_response_body(const struct aj_http_head *h, const char *method, int status,
			  struct aj_http_body *b, char *why, size_t why_len);

/* How many of the next len bytes belong to the body; sets b->done when it ended there.
 * -1 on malformed chunked coding. */
ssize_t aj_http_body_scan(struct aj_http_body *b, const unsigned char *buf, size_t len);

/* Whether the connection stays open after this message (version and Connection header). */
bool aj_http_keep_alive(const struct aj_http_head *h, bool request);

/* Splits an absolute "http://host[:port]/path" target into host (normalized), port and the
 * origin-form path ("/" when empty). -1 with why if it is not one. */
int aj_http_split_url(const char *target, char *host, size_t host_len, uint16_t *port,
		      const char **path, char *why, size_t why_len);
/* Splits a CONNECT target "host:port" / "[v6]:port". */
int aj_http_split_authority(const char *target, char *host, size_t host_len, uint16_t *port,
			    char *why, size_t why_len);

#endif
