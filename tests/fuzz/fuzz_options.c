/*
 * tests/fuzz/fuzz_options.c: libFuzzer target for the HEAPLEDGER_OPTIONS
 * parser (libhook/options.c). The parser reads the environment before main()
 * runs, so any byte string must leave the program running: no crash, no read
 * past the string, and every field within its key's range afterwards.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_range(unsigned v, unsigned min, unsigned max)
{
	if (v < min || v > max)
		abort();
}

/* Every field within the table's range: a bad entry never sets a value. */
static void check_ranges(void)
{
#define HL_OPTION_CHECK(key, field, min, max, def, values, help) \
	check_range(hl_options.field, (min), (max));
	HL_OPTION_TABLE(HL_OPTION_CHECK)
#undef HL_OPTION_CHECK
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hl_options defaults;
	static int have_defaults;
	char *text = malloc(size + 1);

	if (!have_defaults) {
		defaults = hl_options;
		have_defaults = 1;
	}
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0'; /* the environment's strings end at their NUL */
	hl_options = defaults;
	hl_options_parse(text);
	check_ranges();
	free(text);
	return 0;
}
