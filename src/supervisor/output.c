#include "supervisor/output.h"

size_t aj_output_admit(struct aj_output *o, enum aj_stream stream, size_t n)
{
	uint64_t room;

	o->received[stream] += n;
	if (!o->cap) {
		o->passed += n;
		return n;
	}
	room = o->cap > o->passed ? o->cap - o->passed : 0;
	if (n > room) {
		o->truncated = true;
		n = (size_t)room;
	}
	o->passed += n;
	return n;
}
