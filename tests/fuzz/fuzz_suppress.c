/*
 * tests/fuzz/fuzz_suppress.c: libFuzzer target for the suppression reader
 * and matcher. Any file may be rejected (with a file:line message), none may
 * crash, hang or leak; what is read is then matched against a fixed stack.
 */
#include <stdint.h>
#include <string.h>

#include "suppress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct hl_frame_info frames[] = {
		{ .function = "leak_a", .module = "/p/prog", .file = "/p/a.c", .line = 1 },
		{ .function = NULL, .module = "/lib/libfoo.so.1" },
		{ .function = "main", .module = "/p/prog" },
	};
	struct hl_suppressions set;
	char err[512];

	hl_supp_init(&set);
	if (hl_supp_parse(&set, (const char *)data, size, "fuzz", err, sizeof(err)) == 0) {
		hl_supp_match(&set, frames, 3, HL_CLASS_DEFINITE, 1, 1);
		hl_supp_match(&set, frames, 3, HL_CLASS_UNKNOWN, 1, 1);
		hl_supp_match(&set, frames + 1, 2, HL_CLASS_REACHABLE, 1, 1);
	} else if (strncmp(err, "fuzz:", 5)) {
		__builtin_trap(); /* every error names file:line */
	}
	hl_supp_destroy(&set);
	return 0;
}
