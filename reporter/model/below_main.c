/*
 * reporter/model/below_main.c: where valgrind ends a stack it shows
 * (--show-below-main=no): at main, or at the C runtime's start code named
 * "(below main)". One rule for the text, the generated suppressions and the
 * suppression reader, so an entry written from a stack matches it again.
 */
#include <string.h>

#include "report.h"
#include "util.h"

/* valgrind's "below main" functions (m_debuginfo, get_fnname_kind): the C
 * runtime's start code that calls main. */
bool hl_report_is_below_main(const char *function)
{
	static const char *const names[] = {
		"__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl",
		"generic_start_main", "_start",
	};

	if (!function)
		return false;
	for (size_t i = 0; i < HL_ARRAY_SIZE(names); i++) {
		size_t n = strlen(names[i]);

		/* also "__libc_start_main@@GLIBC_2.34" and ".isra"-style clones */
		if (!strncmp(function, names[i], n) &&
		    (!function[n] || function[n] == '@' || function[n] == '.'))
			return true;
	}
	return false;
}

/* How many frames of s to print, and whether the last is shown as
 * "(below main)": valgrind's rule (--show-below-main=no): looking from the
 * outermost frame in, the stack ends at main; without main, at the
 * innermost start-code function, printed as "(below main)". */
size_t hl_report_frames_to_main(const struct hl_report_stack *s, bool *below_main)
{
	size_t n = s->nframes;

	*below_main = false;
	for (size_t i = s->nframes; i-- > 0;) {
		const char *function = s->frames[i].function;

		if (function && !strcmp(function, "main")) {
			*below_main = false;
			return i + 1;
		}
		if (hl_report_is_below_main(function)) {
			n = i + 1;
			*below_main = true;
		}
	}
	return n;
}
