/*
 * reporter/util/util.h: small helpers shared by the reporter's files: logging,
 * checked allocation, a bump arena for strings and frames, number formatting.
 *
 * The reporter is an ordinary program (it runs outside the process under
 * test), so it may use malloc and stdio freely; what it must never do is
 * crash on what a peer sends, so every size that comes from the wire is
 * checked before it reaches these helpers.
 */
#ifndef HL_REPORTER_UTIL_H
#define HL_REPORTER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HL_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* The reporter's assertions, the twin of the hook's hl_assert: an invariant
 * a header states in prose, checked where the code relies on it, when built
 * with -Dhl_debug=1 or more (HL_DEBUG); hl_invariant_expensive (walks of a
 * whole table) at 2. A failure names the expression and aborts. Not
 * assert(): release builds define NDEBUG, and the level is one option for
 * both sides. */
#ifndef HL_DEBUG
#define HL_DEBUG 0
#endif
__attribute__((cold, noreturn)) void hl_invariant_fail(const char *expr, const char *file,
							int line);
#if HL_DEBUG >= 1
#define hl_invariant(x) ((x) ? (void)0 : hl_invariant_fail(#x, __FILE__, __LINE__))
#else
#define hl_invariant(x) ((void)sizeof(!(x))) /* compiled, never run: no unused warnings */
#endif
#if HL_DEBUG >= 2
#define hl_invariant_expensive(x) hl_invariant(x)
#else
#define hl_invariant_expensive(x) ((void)sizeof(!(x)))
#endif
#define HL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* "heapledger: <message>\n" to stderr. */
void hl_log(const char *fmt, ...) HL_PRINTF(1, 2);
/* Set by -q / tests to silence hl_log (errors from bad peers included). */
extern bool hl_log_quiet;

/* malloc/calloc/realloc/strdup that abort with a message when memory runs
 * out: the reporter cannot do anything useful without memory. */
void *hl_xmalloc(size_t bytes);
void *hl_xcalloc(size_t count, size_t bytes);
void *hl_xrealloc(void *p, size_t bytes);
char *hl_xstrdup(const char *s);
/* Grows *array (of *capacity elements of `elem` bytes) so index `need` fits. */
void hl_grow(void **array, size_t *capacity, size_t need, size_t elem);

/* Bump allocator: many small allocations freed together. */
struct hl_bump_chunk;
struct hl_bump {
	struct hl_bump_chunk *head; /* newest chunk, linked to older ones */
	size_t used;                 /* bytes used in head */
	size_t size;                 /* usable bytes in head */
};
void hl_bump_init(struct hl_bump *a);
void *hl_bump_alloc(struct hl_bump *a, size_t bytes); /* 8-aligned, zeroed */
char *hl_bump_strdup(struct hl_bump *a, const char *s);
char *hl_bump_strndup(struct hl_bump *a, const char *s, size_t len);
void hl_bump_free(struct hl_bump *a);

/* *total += n, or *total = UINT64_MAX and true when the sum does not fit:
 * totals of records read from outside (an imported report's crafted
 * numbers) saturate and say so, never wrap to a small number. The gate and
 * the text LEAK SUMMARY both add with it, so they agree. */
static inline bool hl_add_saturating(uint64_t *total, uint64_t n)
{
	if (!__builtin_add_overflow(*total, n, total))
		return false;
	*total = UINT64_MAX;
	return true;
}

/* 1234567 -> "1,234,567" into buf (at least 32 bytes); returns buf. */
char *hl_fmt_grouped(char *buf, uint64_t v);

/* `one` when n is 1, else `many`: heapledger's own lines say "1 process",
 * never "1 processes". Lines in valgrind's words keep valgrind's wording
 * ("16 bytes in 1 blocks are definitely lost"), which its users' scripts
 * and CTest's parser match. */
static inline const char *hl_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* "1,024 bytes in 1 block" into buf (HL_BYTES_IN_BLOCKS_LEN bytes), grouped
 * and in heapledger's own plurals; returns buf. */
#define HL_BYTES_IN_BLOCKS_LEN 80
char *hl_fmt_bytes_in_blocks(char *buf, uint64_t bytes, uint64_t blocks);

/* `len` bytes as 2 * len lowercase hex digits and a NUL into buf (build-ids:
 * the database and the debug cache's file names); returns buf. */
char *hl_fmt_hex(char *buf, const uint8_t *bytes, size_t len);

/* In an array of n elements of `stride` bytes sorted by a uint64_t key at
 * `key_offset`, the index of the first element whose key is above x (the
 * element at or below x, if any, is the one before it). */
static inline size_t hl_upper_bound(const void *base, size_t n, size_t stride,
				    size_t key_offset, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;

		memcpy(&key, (const char *)base + mid * stride + key_offset, sizeof(key));
		if (key <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
#define HL_UPPER_BOUND(array, n, field, x) \
	hl_upper_bound((array), (n), sizeof(*(array)), offsetof(__typeof__(*(array)), field), (x))

/* Opens path read-only if it is a regular file, without ever blocking (a
 * FIFO or device named by a peer must not stall the reporter): returns the
 * fd, or -errno (-EINVAL for anything but a regular file). */
int hl_open_regular(const char *path);

/* CLOCK_REALTIME / CLOCK_MONOTONIC in nanoseconds. */
uint64_t hl_now_realtime_ns(void);
uint64_t hl_now_monotonic_ns(void);

#endif /* HL_REPORTER_UTIL_H */
