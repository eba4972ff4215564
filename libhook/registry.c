/*
 * libhook/registry.c: which 4 MiB regions of the address space are ours.
 *
 * One byte per HL_SEGMENT_SIZE of the user address space below
 * 2^HL_ADDRESS_BITS (internal.h; os.c maps nothing above it): a 32 MiB
 * (64 MiB on arm64) zero-initialised array in .bss, so only the pages that cover our segments
 * are ever touched, and free() looks its pointer up with one load and no
 * set-up check. free() asks here before it reads any header, so a pointer
 * into the stack, static data or another allocator's memory is reported
 * instead of followed.
 */
#include <stdatomic.h>

#include "heap.h"

_Atomic uint8_t hl_registry[HL_REGISTRY_ENTRIES];

static void registry_set(const void *start, size_t bytes, uint8_t value)
{
	if (bytes == 0)
		return;
	uintptr_t first = (uintptr_t)start >> HL_SEGMENT_SHIFT;
	uintptr_t last = ((uintptr_t)start + bytes - 1) >> HL_SEGMENT_SHIFT;
	for (uintptr_t i = first; i <= last && i < HL_REGISTRY_ENTRIES; i++)
		atomic_store_explicit(&hl_registry[i], value, memory_order_release);
}

/* Marks every 4 MiB region the range [start, start+bytes) touches. */
void hl_registry_mark(const void *start, size_t bytes, enum hl_region region)
{
	registry_set(start, bytes, (uint8_t)region);
}

void hl_registry_clear(const void *start, size_t bytes)
{
	registry_set(start, bytes, HL_REGION_NONE);
}
