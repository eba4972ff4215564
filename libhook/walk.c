/*
 * libhook/walk.c: enumerate the blocks the program holds, and find the block
 * that contains an address. Used by the standalone leak list, the final LIVE
 * set sent to the reporter, and (issue 5) the reachability scan.
 *
 * Walks run with each arena's lock held in turn, so they see consistent
 * range chains; ranges in thread caches are skipped (they are ours, not the
 * program's). The callback must not allocate from the user heap.
 */
#include "heap.h"

static struct hl_range *segment_first(struct hl_segment *seg)
{
	return (struct hl_range *)(seg + 1);
}

static bool is_program_block(const struct hl_range *r)
{
	return (r->flags & (HL_RANGE_ALLOCATED | HL_RANGE_CACHED | HL_RANGE_SENTINEL)) ==
	       HL_RANGE_ALLOCATED;
}

static void walk_segment_locked(struct hl_segment *seg, hl_walk_fn fn, void *arg)
{
	for (struct hl_range *r = segment_first(seg); !(r->flags & HL_RANGE_SENTINEL);
	     r = hl_range_next(r)) {
		if (is_program_block(r))
			fn(hl_range_data(r), hl_block_requested(r), hl_range_stack_id(r),
			   hl_range_kind(r), arg);
	}
}

void hl_heap_walk(hl_walk_fn fn, void *arg)
{
	for (unsigned i = 0; i < HL_MAX_ARENAS; i++) {
		struct hl_arena *a = &hl_arenas[i];
		hl_lock(&a->lock);
		for (struct hl_segment *seg = a->segments; seg; seg = seg->next)
			if (seg != a->spare)
				walk_segment_locked(seg, fn, arg);
		hl_unlock(&a->lock);
	}
	hl_large_walk(fn, arg);
}

void *hl_heap_find(const void *address, size_t *size)
{
	if (hl_registry_lookup(address) != HL_REGION_SEGMENT)
		return hl_large_find(address, size);
	struct hl_segment *seg = hl_segment_of(address);
	struct hl_arena *a = seg->arena;
	void *found = NULL;
	hl_lock(&a->lock);
	for (struct hl_range *r = segment_first(seg); !(r->flags & HL_RANGE_SENTINEL);
	     r = hl_range_next(r)) {
		char *data = hl_range_data(r);
		if ((const char *)address < (char *)r + r->size) {
			if (is_program_block(r) && (const char *)address >= data) {
				found = data;
				*size = hl_block_requested(r);
			}
			break;
		}
	}
	hl_unlock(&a->lock);
	return found;
}
