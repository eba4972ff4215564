/*
 * libhook/api.c: the C malloc API that LD_PRELOAD puts in front of glibc's.
 *
 * glibc documents which functions a replacement malloc must provide
 * ("Replacing malloc" in its manual): malloc, free, calloc, realloc, and for
 * full coverage aligned_alloc, malloc_usable_size, memalign, posix_memalign,
 * pvalloc, valloc. glibc's own internal calls (strdup, getline, fopen...)
 * reach these through the dynamic symbol table, so they come here too.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "dtv.h"
#include "fastpath.h"

static bool is_power_of_two(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

HL_API void *malloc(size_t n)
{
	return hl_malloc_fast(n, HL_KIND_MALLOC);
}

HL_API void free(void *p)
{
	hl_free_fast(p, HL_KIND_MALLOC);
}

HL_API void *calloc(size_t count, size_t size)
{
	if (hl_unlikely(hl_dtv_may_be(count, size, (uintptr_t)__builtin_return_address(0))))
		return hl_allocate_dtv(count, size);
	return hl_allocate_zeroed(count, size);
}

HL_API void *realloc(void *p, size_t n)
{
	return hl_reallocate(p, n);
}

HL_API void *reallocarray(void *p, size_t count, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(count, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return hl_reallocate(p, n);
}

/* Alignments below 16 are satisfied by every block anyway. */
static void *allocate_aligned(size_t alignment, size_t n)
{
	if (alignment <= HL_ALIGN)
		return hl_allocate(n, HL_ALIGN, HL_KIND_ALIGNED);
	return hl_allocate(n, alignment, HL_KIND_ALIGNED);
}

HL_API int posix_memalign(void **out, size_t alignment, size_t n)
{
	if (!is_power_of_two(alignment) || alignment % sizeof(void *) != 0)
		return EINVAL;
	/* On failure errno is ENOMEM as well, as glibc leaves it. */
	void *p = allocate_aligned(alignment, n);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

/* glibc 2.38's rule (and C17's): an alignment that is not a power of two
 * fails with EINVAL. Older glibc (2.36 here) treats aligned_alloc as
 * memalign and rounds it up; this is the one entry point where the preload
 * answers differently from an older libc, on purpose. */
HL_API void *aligned_alloc(size_t alignment, size_t n)
{
	if (!is_power_of_two(alignment)) {
		errno = EINVAL;
		return NULL;
	}
	return allocate_aligned(alignment, n);
}

/* glibc's memalign rounds a non-power-of-two alignment up instead of failing. */
HL_API void *memalign(size_t alignment, size_t n)
{
	if (alignment > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	if (!is_power_of_two(alignment))
		alignment = alignment < 2 ? 1 : (size_t)1 << (64 - __builtin_clzll(alignment));
	return allocate_aligned(alignment, n);
}

HL_API void *valloc(size_t n)
{
	return allocate_aligned(hl_os_page_size(), n);
}

/* Rounds the size up to whole pages; pvalloc(0) asks for 0 bytes, page
 * aligned, as glibc's does. */
HL_API void *pvalloc(size_t n)
{
	size_t page = hl_os_page_size();
	if (n > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	size_t rounded = (n + page - 1) & ~(page - 1);
	return allocate_aligned(page, rounded);
}

HL_API size_t malloc_usable_size(void *p)
{
	return hl_usable_size(p);
}

/* glibc's malloc_trim: give retained free memory back to the OS now instead
 * of after retain_ms. Returns 1 if anything was unmapped, as glibc does. */
HL_API int malloc_trim(size_t pad)
{
	(void)pad; /* nothing is kept above the top of a heap, so no pad to keep */
	return hl_heap_trim() ? 1 : 0;
}

/* Old SunOS name some programs still call; glibc no longer declares it. */
HL_API void cfree(void *p);
HL_API void cfree(void *p)
{
	hl_release(p, HL_KIND_MALLOC);
}
