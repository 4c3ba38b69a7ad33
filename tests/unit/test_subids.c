/* /etc/subuid and /etc/subgid lines: which range a user gets (host/subids.h). */
#include <stdint.h>

#include "host/subids.h"
#include "unit.h"

static void ranges(void)
{
	uint32_t s = 0;
	const char *text = "# a comment\n"
			   "alice:100000:65536\n"
			   "bob:165536:1000\n"
			   "bob:300000:65536\n"
			   "2000:400000:70000\n"
			   "broken line\n"
			   "carol:0:65536\n"
			   "dave:4294960000:65536\n"
			   "erin:x:65536\n"
			   "frank:500000:65536";

	CHECK(aj_subids_parse(text, "alice", 1000, 65535, &s) == 0 && s == 100000,
	      "a user's range by name");
	CHECK(aj_subids_parse(text, "bob", 1001, 65535, &s) == 0 && s == 300000,
	      "a range too small is passed over for the next of the same user");
	CHECK(aj_subids_parse(text, "nobody-here", 2000, 65535, &s) == 0 && s == 400000,
	      "a range by the uid as a number");
	CHECK(aj_subids_parse(text, "carol", 1003, 65535, &s) < 0, "a range from id 0 is refused");
	CHECK(aj_subids_parse(text, "dave", 1004, 65535, &s) < 0,
	      "a range past the last id is refused");
	CHECK(aj_subids_parse(text, "erin", 1005, 65535, &s) < 0, "a start that is no number");
	CHECK(aj_subids_parse(text, "frank", 1006, 65535, &s) == 0 && s == 500000,
	      "the last line without a newline");
	CHECK(aj_subids_parse(text, "zed", 1007, 65535, &s) < 0, "no range: -1");
	CHECK(aj_subids_parse("", "alice", 1000, 65535, &s) < 0, "an empty file");
	CHECK(aj_subids_parse(text, "alic", 1000, 65535, &s) < 0, "a prefix of a name is not it");
}

int main(void)
{
	ranges();
	UNIT_EXIT();
}
