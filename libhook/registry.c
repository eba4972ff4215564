/*
 * libhook/registry.c: which 4 MiB regions of the address space are ours.
 *
 * One byte per HL_SEGMENT_SIZE of the 47-bit user address space (32 MiB of
 * virtual memory, mapped on first use; only the pages that cover our
 * segments are ever touched). free() looks up its pointer here before it
 * reads any header, so a pointer into the stack, static data or another
 * allocator's memory is reported instead of followed.
 */
#include <stdatomic.h>

#include "heap.h"

_Atomic(_Atomic uint8_t *) hl_registry_table;

static _Atomic uint8_t *registry_get(void)
{
	_Atomic uint8_t *table = atomic_load_explicit(&hl_registry_table, memory_order_acquire);
	if (hl_likely(table != NULL))
		return table;
	_Atomic uint8_t *fresh = hl_os_map(HL_REGISTRY_ENTRIES);
	if (fresh == NULL)
		return NULL;
	_Atomic uint8_t *expected = NULL;
	if (!atomic_compare_exchange_strong(&hl_registry_table, &expected, fresh)) {
		hl_os_unmap((void *)fresh, HL_REGISTRY_ENTRIES); /* another thread won */
		return expected;
	}
	return fresh;
}

static void registry_set(const void *start, size_t bytes, uint8_t value)
{
	_Atomic uint8_t *table = registry_get();
	if (table == NULL || bytes == 0)
		return;
	uintptr_t first = (uintptr_t)start >> HL_SEGMENT_SHIFT;
	uintptr_t last = ((uintptr_t)start + bytes - 1) >> HL_SEGMENT_SHIFT;
	for (uintptr_t i = first; i <= last && i < HL_REGISTRY_ENTRIES; i++)
		atomic_store_explicit(&table[i], value, memory_order_release);
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
