/*
 * libhook/walk.c: enumerate the blocks the program holds, and find the block
 * that contains an address. Used by the standalone leak list, the final LIVE
 * set sent to the reporter, and the leak scan.
 *
 * Walks run with each arena's lock held in turn, so they see consistent
 * range chains; ranges in thread caches are skipped (they are ours, not the
 * program's). The callback must not allocate from the user heap.
 */
#include "heap.h"

static void walk_segment_locked(struct hl_segment *seg, hl_walk_fn fn, void *arg)
{
	hl_assert_held(&seg->arena->lock);
	for (struct hl_range *r = hl_segment_first_range(seg); !(hl_range_flags(r) & HL_RANGE_SENTINEL);
	     r = hl_range_next(r)) {
		if (hl_block_is_live(r))
			fn(hl_range_data(r), hl_block_requested(r), hl_range_stack_id(r),
			   hl_range_kind(r), arg);
	}
}

void hl_heap_walk(hl_walk_fn fn, void *arg)
{
	for (unsigned i = 0; i < hl_arena_count; i++) {
		struct hl_arena *a = &hl_arenas[i];
		hl_lock(&a->lock);
		for (struct hl_segment *seg = a->segments; seg; seg = seg->next)
			if (!hl_segment_is_spare(seg))
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
	for (struct hl_range *r = hl_segment_first_range(seg); !(hl_range_flags(r) & HL_RANGE_SENTINEL);
	     r = hl_range_next(r)) {
		char *data = hl_range_data(r);
		if ((const char *)address < (char *)r + r->size) {
			if (hl_block_is_live(r) && (const char *)address >= data) {
				found = data;
				*size = hl_block_requested(r);
			}
			break;
		}
	}
	hl_unlock(&a->lock);
	return found;
}

static size_t blockmap_count(struct hl_segment *seg)
{
	const uint64_t *map = hl_blockmap_of((uintptr_t)seg);
	size_t n = 0;
	for (size_t i = 0; i < HL_BLOCKMAP_BITS / 64; i++)
		n += (size_t)__builtin_popcountll(map[i]);
	return n;
}

/* Checks an arena's invariants (types.h, arena.c): boundary tags agree,
 * headers pass their check, the block-start map has a bit for each range and
 * no other, no two free ranges touch, every free range is filed under its
 * class and every filed range is free. For tests and
 * HL_DEBUG=2; caller holds the lock. Returns false at the first violation. */
bool hl_arena_is_valid_sampled_locked(struct hl_arena *a)
{
	static _Atomic unsigned calls;
	if (atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) % 256 != 0)
		return true;
	return hl_arena_is_valid_locked(a);
}

bool hl_arena_is_valid_locked(struct hl_arena *a)
{
	hl_assert_held(&a->lock);
	size_t free_seen = 0, filed = 0;
	for (struct hl_segment *seg = a->segments; seg; seg = seg->next) {
		if (seg->arena != a || seg->magic != (HL_SEGMENT_MAGIC ^ (uintptr_t)seg))
			return false;
		if (hl_segment_is_spare(seg))
			continue;
		struct hl_range *prev = NULL;
		size_t ranges = 0;
		for (struct hl_range *r = hl_segment_first_range(seg); !(hl_range_flags(r) & HL_RANGE_SENTINEL);
		     r = hl_range_next(r)) {
			if (r->size < HL_RANGE_MIN || r->size % HL_ALIGN || !hl_range_check_ok(r))
				return false;
			if (!hl_blockmap_test(hl_range_data(r)))
				return false;
			ranges++;
			if ((prev == NULL) != ((r->flags & HL_RANGE_MAPPING_START) != 0))
				return false;
			if (prev && r->prev_size != prev->size)
				return false;
			if (prev && hl_block_is_free(prev) && hl_block_is_free(r))
				return false; /* should have been coalesced */
			if (hl_block_is_free(r))
				free_seen++;
			prev = r;
		}
		if (prev == NULL || hl_range_next(prev)->prev_size != prev->size)
			return false;
		if (blockmap_count(seg) != ranges)
			return false; /* a bit set where no range starts */
	}
	for (unsigned cls = 0; cls < HL_TLSF_CLASSES; cls++) {
		bool bit = (a->bitmap[cls / 64] >> (cls % 64)) & 1;
		if (bit != (a->free_heads[cls] != NULL))
			return false;
		for (struct hl_range *r = a->free_heads[cls]; r;
		     r = ((struct hl_free_links *)hl_range_data(r))->next) {
			if (!hl_block_is_free(r) || hl_class_floor(r->size) != cls)
				return false;
			filed++;
		}
	}
	return filed == free_seen;
}
