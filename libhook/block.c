/*
 * libhook/block.c: searches of the block-start map (block.h) too long to
 * inline: which range holds an address.
 */
#include "heap.h"

/* Highest set bit at or below `bit` in map, or -1. */
static long highest_set_at_or_below(const uint64_t *map, uintptr_t bit)
{
	uintptr_t w = bit / 64;
	uint64_t word = __atomic_load_n(&map[w], __ATOMIC_RELAXED);
	unsigned shift = 63u - (unsigned)(bit % 64);
	word = (word << shift) >> shift; /* keep bits 0..bit%64 */
	for (;;) {
		if (word != 0)
			return (long)(w * 64 + 63u - (unsigned)__builtin_clzll(word));
		if (w == 0)
			return -1;
		word = __atomic_load_n(&map[--w], __ATOMIC_RELAXED);
	}
}

struct hl_range *hl_blockmap_find(const void *address)
{
	uintptr_t segment = (uintptr_t)address & ~(uintptr_t)(HL_SEGMENT_SIZE - 1);
	/* The range holding address has its header at or below it: its data
	 * granule is at most one past the address's. */
	uintptr_t bit = hl_blockmap_granule(address) + 1;
	if (bit >= HL_BLOCKMAP_BITS)
		bit = HL_BLOCKMAP_BITS - 1;
	long data = highest_set_at_or_below(hl_blockmap_of(segment), bit);
	if (data <= 0)
		return NULL;
	struct hl_range *r = (struct hl_range *)(segment + (uintptr_t)(data - 1) * HL_ALIGN);
	if ((const char *)address < (const char *)r || (const char *)address >= (char *)r + r->size)
		return NULL;
	return r;
}
