/*
 * libhook/os.c: the only file that asks the kernel for memory.
 *
 * Every function keeps errno as it found it: free() must not change errno,
 * and the malloc entry points set ENOMEM themselves when they fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define HL_STR2(x) #x
#define HL_STR(x) HL_STR2(x)
#define HL_ADDRESS_TEXT "2^" HL_STR(HL_ADDRESS_BITS)

static size_t page_size_cached;

size_t hl_os_page_size(void)
{
	if (hl_unlikely(page_size_cached == 0)) {
		long page = sysconf(_SC_PAGESIZE);
		page_size_cached = page > 0 ? (size_t)page : 4096;
	}
	return page_size_cached;
}

static const char address_message[] =
	"heapledger: the kernel placed memory above the " HL_ADDRESS_TEXT " addresses "
	"heapledger can track (a 5-level page table or a wider address space?); "
	"that allocation fails with ENOMEM\n";

/* Once per process: the message for memory mapped out of reach. */
static void address_out_of_range(void)
{
	static _Atomic bool said;
	if (!atomic_exchange(&said, true)) {
		int saved = errno;
		ssize_t ignored = write(2, address_message, sizeof(address_message) - 1);
		(void)ignored;
		errno = saved;
	}
}

void hl_os_check_address_space(void)
{
	int local;
	if (!hl_os_address_fits(&local, sizeof(local)))
		address_out_of_range();
}

/* An anonymous private mapping, errno kept, refused (and unmapped) when
 * it lies where the block headers cannot address it. */
static void *map_checked(size_t bytes, int prot, int flags)
{
	int saved = errno;
	void *p = mmap(NULL, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	errno = saved;
	if (p == MAP_FAILED)
		return NULL;
	if (hl_unlikely(!hl_os_address_fits(p, bytes))) {
		hl_os_unmap(p, bytes);
		address_out_of_range();
		return NULL;
	}
	return p;
}

void *hl_os_map(size_t bytes)
{
	return map_checked(bytes, PROT_READ | PROT_WRITE, 0);
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
	if (q == MAP_FAILED)
		return NULL;
	if (hl_unlikely(!hl_os_address_fits(q, new_bytes))) {
		/* Moved out of reach: move it back, at its old size, to where it
		 * was (free now), and fail as for a new mapping; the caller then
		 * copies or reports ENOMEM, the block intact either way. */
		address_out_of_range();
		void *back = mremap(q, new_bytes, old_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, p);
		errno = saved;
		return back == MAP_FAILED ? q : NULL;
	}
	return q;
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

bool hl_os_wipe_on_fork(void *p, size_t bytes)
{
	int saved = errno;
	bool ok = madvise(p, bytes, MADV_WIPEONFORK) == 0;
	errno = saved;
	return ok;
}

void *hl_os_map_file_shared(int fd, size_t bytes, void *at)
{
	int saved = errno;
	void *p = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);
	errno = saved;
	if (p == MAP_FAILED)
		return NULL;
	if (hl_unlikely(!hl_os_address_fits(p, bytes))) {
		if (at == NULL)
			hl_os_unmap(p, bytes);
		return NULL;
	}
	return p;
}

bool hl_os_map_private_at(void *at, size_t bytes)
{
	int saved = errno;
	void *p = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0);
	errno = saved;
	return p == at;
}

void *hl_os_reserve(size_t bytes)
{
	return map_checked(bytes, PROT_NONE, MAP_NORESERVE);
}

bool hl_os_protect(void *p, size_t bytes, bool access)
{
	int saved = errno;
	bool ok = mprotect(p, bytes, access ? PROT_READ | PROT_WRITE : PROT_NONE) == 0;
	errno = saved;
	return ok;
}

bool hl_os_discard_inaccessible(void *p, size_t bytes)
{
	int saved = errno;
	void *q = mmap(p, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		       -1, 0);
	errno = saved;
	return q == p;
}
