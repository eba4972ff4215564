/*
 * libhook/os.c: the only file that asks the kernel for memory.
 *
 * Every function keeps errno as it found it: free() must not change errno,
 * and the malloc entry points set ENOMEM themselves when they fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static size_t page_size_cached;

size_t hl_os_page_size(void)
{
	if (hl_unlikely(page_size_cached == 0)) {
		long page = sysconf(_SC_PAGESIZE);
		page_size_cached = page > 0 ? (size_t)page : 4096;
	}
	return page_size_cached;
}

void *hl_os_map(size_t bytes)
{
	int saved = errno;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = saved;
	return p == MAP_FAILED ? NULL : p;
}

/* Over-map by `alignment`, then give back the unaligned head and tail. */
void *hl_os_map_aligned(size_t bytes, size_t alignment)
{
	if (bytes + alignment < bytes)
		return NULL;
	char *raw = hl_os_map(bytes + alignment);
	if (raw == NULL)
		return NULL;
	uintptr_t start = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
	size_t head = start - (uintptr_t)raw;
	size_t tail = alignment - head;
	if (head)
		hl_os_unmap(raw, head);
	if (tail)
		hl_os_unmap((char *)start + bytes, tail);
	return (void *)start;
}

void hl_os_unmap(void *p, size_t bytes)
{
	int saved = errno;
	munmap(p, bytes);
	errno = saved;
}

void *hl_os_remap(void *p, size_t old_bytes, size_t new_bytes)
{
	int saved = errno;
	void *q = mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE);
	errno = saved;
	return q == MAP_FAILED ? NULL : q;
}

void hl_os_discard(void *p, size_t bytes)
{
	int saved = errno;
	madvise(p, bytes, MADV_DONTNEED);
	errno = saved;
}

uint64_t hl_os_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u + 1;
}
