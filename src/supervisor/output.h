/* The output cap: stdout and stderr of a sandbox together may pass max bytes to the caller;
 * what comes after is counted and discarded (or ends the sandbox, per policy). Pure
 * bookkeeping, so it can be tested in-process; the supervisor does the I/O. */
#ifndef AJ_SUPERVISOR_OUTPUT_H
#define AJ_SUPERVISOR_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum aj_stream { AJ_STREAM_STDOUT = 0, AJ_STREAM_STDERR = 1 };

struct aj_output {
	uint64_t cap;         /* 0: none */
	uint64_t received[2]; /* bytes the sandbox wrote, per stream */
	uint64_t passed;      /* bytes let through to the caller, both streams */
	uint64_t undelivered; /* of those, what could not be written to the caller */
	bool truncated;
};

/* Records n new bytes on `stream` and returns how many of them may pass. Sets truncated the
 * first time bytes are held back. */
size_t aj_output_admit(struct aj_output *o, enum aj_stream stream, size_t n);

#endif
