/*
 * libhook/trace.c: whether this program reports at all.
 *
 * $HEAPLEDGER_TRACE and $HEAPLEDGER_EXCLUDE (set by `heapledger run --trace
 * / --exclude` and printed by `heapledger env`) hold ':'-separated globs
 * (*, ?, [...], \ escapes) matched against the executable's path, from
 * /proc/self/exe; a glob without '/' is matched against its last component.
 * A program is chosen when it matches a TRACE glob (or there is none) and
 * no EXCLUDE glob. One that is not chosen decides so once, in the
 * constructor, before anything is sent: it never connects to the reporter
 * and prints nothing at exit (no descriptor listing either), and runs as the plain allocator (no stacks, no
 * scan), so a test suite's shells and build tools cost almost nothing.
 * Each image decides for itself: a fork child keeps its parent's choice
 * (same executable), an exec'd image chooses again.
 *
 * children=0 (--trace-children=no of run, env and valgrind): only the image
 * `heapledger run` started, or each one a shell under `heapledger env`
 * started, reports, with its forks. That image is the one that finds
 * $HEAPLEDGER_PID as run and env export it, all zeros; every later image,
 * exec'd or started by a descendant (posix_spawn and system() included),
 * inherits the pid an earlier image wrote there.
 *
 * These are variables of their own, not HEAPLEDGER_OPTIONS keys: the
 * options table holds numbers and choices only. Nothing here allocates.
 */
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "procfs.h"

bool hl_trace_off;

/* The pattern element at p (a character, \c, ?, or [...]): its length, and
 * in *match whether c matches it. */
static size_t element(const char *p, const char *end, char c, bool *match)
{
	if (*p == '?') {
		*match = true;
		return 1;
	}
	if (*p == '\\' && p + 1 < end) {
		*match = p[1] == c;
		return 2;
	}
	if (*p == '[') {
		const char *q = p + 1, *first;
		bool negate = false, found = false;

		if (q < end && (*q == '!' || *q == '^')) {
			negate = true;
			q++;
		}
		for (first = q; q < end && (*q != ']' || q == first);) {
			if (q + 2 < end && q[1] == '-' && q[2] != ']') {
				found |= (unsigned char)q[0] <= (unsigned char)c &&
					 (unsigned char)c <= (unsigned char)q[2];
				q += 3;
			} else {
				found |= *q++ == c;
			}
		}
		if (q < end) {
			*match = found != negate;
			return (size_t)(q + 1 - p);
		}
		/* no closing ']': a plain '[' */
	}
	*match = *p == c;
	return 1;
}

/* Does s match the glob [p, end)? '*' matches any run of characters, '/'
 * included; the last '*' seen is retried one character further on a miss. */
bool hl_trace_glob_match(const char *p, const char *end, const char *s)
{
	const char *star_p = NULL, *star_s = NULL;

	for (;;) {
		bool match = false;
		size_t n = 0;

		if (p < end && *p == '*') {
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (!*s)
			break;
		if (p < end)
			n = element(p, end, *s, &match);
		if (match) {
			p += n;
			s++;
			continue;
		}
		if (!star_p)
			return false;
		p = star_p;
		s = ++star_s;
	}
	while (p < end && *p == '*')
		p++;
	return p == end;
}

/* Does any glob of the ':'-separated list match path (or base)? */
static bool any_match(const char *list, const char *path, const char *base)
{
	while (*list) {
		const char *end = strchr(list, ':');
		const char *slash;

		end = end ? end : list + strlen(list);
		slash = memchr(list, '/', (size_t)(end - list));
		if (end > list && hl_trace_glob_match(list, end, slash ? path : base))
			return true;
		list = *end ? end + 1 : end;
	}
	return false;
}

/* children=0: is this a later image than the one run started? */
static bool is_descendant_image(void)
{
	const char *pid = hl_env_get(HL_ENV_PID);

	while (pid && *pid == '0')
		pid++;
	return pid && *pid;
}

bool hl_trace_expects_children(void)
{
	const char *trace = hl_env_get(HL_ENV_TRACE), *exclude = hl_env_get(HL_ENV_EXCLUDE);

	return !hl_trace_off && hl_options.children && !(trace && *trace) &&
	       !(exclude && *exclude);
}

void hl_trace_choose(void)
{
	static char exe[4096];
	const char *trace = hl_env_get(HL_ENV_TRACE), *exclude = hl_env_get(HL_ENV_EXCLUDE);
	const char *base;
	ssize_t n;

	hl_trace_off = !hl_options.children && is_descendant_image();
	if (!hl_trace_off && ((trace && *trace) || (exclude && *exclude))) {
		n = hl_proc_readlink("exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
		hl_trace_off = (trace && *trace && !any_match(trace, exe, base)) ||
			       (exclude && *exclude && any_match(exclude, exe, base));
	}
	if (!hl_trace_off)
		return;
	hl_options.stack_depth = 0;
	hl_options.stacks = 0;
	hl_options.scan = 0;
	hl_options.freeres = 0;
	hl_options.summary = 0;
	hl_options.leaks = 0;
	hl_options.check_signal = 0;
	hl_options.track_fds = 0; /* valgrind lists nothing for an image it does not trace */
}
