/*
 * libhook/arena.c: arenas, each a lock and a TLSF set of free ranges over its
 * own segments.
 *
 * Threads are spread over up to HL_MAX_ARENAS arenas (4 per CPU) so that
 * refills and flushes of different threads rarely meet on one lock; the
 * per-thread caches (cache.c) keep most malloc/free calls away from arenas
 * altogether. Every function here runs with the arena's lock held.
 *
 * Invariants: no two free ranges are neighbours (free coalesces both ways);
 * every free range is filed in exactly one class list; a range's size equals
 * its right neighbour's prev_size; the block-start map (block.h) has a bit
 * for exactly each range: set where one is cut, cleared where one merges.
 */
#include <string.h>
#include <unistd.h>

#include "heap.h"

struct hl_arena hl_arenas[HL_MAX_ARENAS];
/* Arenas in use (set once, by the first hl_arena_pick, before any thread
 * or fork): the loops over all arenas stop here, so unused arenas are
 * never touched. */
unsigned hl_arena_count;

static unsigned arena_count_for_machine(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1)
		cpus = 1;
	long n = cpus * 4;
	return n > HL_MAX_ARENAS ? HL_MAX_ARENAS : (unsigned)n;
}

/* The arena with the fewest threads: a new thread gets its own while there
 * are fewer threads than arenas. */
struct hl_arena *hl_arena_pick(void)
{
	/* Arenas past hl_arena_count are never touched: their pages (1.4 KiB
	 * each, 88 KiB in all) stay unmapped zero pages of .bss. */
	if (hl_arena_count == 0)
		hl_arena_count = arena_count_for_machine();
	struct hl_arena *best = &hl_arenas[0];
	uint32_t best_threads = UINT32_MAX;
	for (unsigned i = 0; i < hl_arena_count; i++) {
		uint32_t t = atomic_load_explicit(&hl_arenas[i].threads, memory_order_relaxed);
		if (t < best_threads) {
			best = &hl_arenas[i];
			best_threads = t;
		}
	}
	atomic_fetch_add_explicit(&best->threads, 1, memory_order_relaxed);
	return best;
}

/* Segment watermark (hl_segment.untouched), so calloc can skip zeroing
 * memory the kernel gave us zeroed. Invariant: above the watermark the only
 * bytes ever written are the first 32 of each free range there (its header
 * and its free-list links).
 *
 * Moves the watermark past a range being handed out; returns true, after
 * clearing the links, if the range's user bytes were all above it. */
static bool hand_out_locked(struct hl_range *r)
{
	struct hl_segment *seg = hl_segment_of(r);
	char *end = (char *)r + r->size;
	bool fresh = (char *)hl_range_data(r) >= seg->untouched;
	if (end > seg->untouched)
		seg->untouched = end;
	if (fresh)
		memset(hl_range_data(r), 0, sizeof(struct hl_free_links));
	return fresh;
}

/* A free range above the watermark is being merged into one that starts
 * below it: its old header and links become garbage inside the merged range,
 * so the watermark moves past them to keep the invariant. */
static void absorb_locked(struct hl_range *next)
{
	struct hl_segment *seg = hl_segment_of(next);
	char *dirty_end = (char *)next + sizeof(struct hl_range) + sizeof(struct hl_free_links);
	if (dirty_end > seg->untouched)
		seg->untouched = dirty_end;
}

/* Cuts `size` bytes off the front of free range r (not filed); the rest, if
 * big enough to stand alone, is filed as a free range. Returns r, allocated. */
static struct hl_range *split_front_locked(struct hl_arena *a, struct hl_range *r, size_t size)
{
	hl_assert(hl_block_is_free(r) && size <= r->size && size % HL_ALIGN == 0);
	size_t rest = r->size - size;
	r->flags |= HL_RANGE_ALLOCATED; /* before the tail is filed: no free neighbours */
	if (rest >= HL_RANGE_MIN) {
		struct hl_range *tail = (struct hl_range *)((char *)r + size);
		tail->flags = 0;
		hl_range_set_size(tail, (uint32_t)rest);
		hl_range_set_size(r, (uint32_t)size);
		hl_blockmap_set_locked(tail);
		hl_bins_insert_locked(a, tail);
	}
	a->last_fresh = hand_out_locked(r);
	return r;
}

static struct hl_range *take_or_grow_locked(struct hl_arena *a, size_t size)
{
	hl_assert_held(&a->lock);
	struct hl_range *r = hl_bins_take_locked(a, size);
	if (r == NULL)
		r = hl_segment_new_locked(a);
	return r;
}

struct hl_range *hl_arena_alloc_locked(struct hl_arena *a, size_t size)
{
	hl_assert_held(&a->lock);
	hl_segment_age_spares_locked(a);
	struct hl_range *r = take_or_grow_locked(a, size);
	if (r == NULL)
		return NULL;
	return split_front_locked(a, r, size);
}

/* Cuts up to `want` blocks of `size` off the front of free range r (not
 * filed) into out[]; files what is left. Returns how many it cut. */
static unsigned carve_from_locked(struct hl_arena *a, struct hl_range *r, size_t size,
				  unsigned want, struct hl_range **out)
{
	unsigned n = 0;
	hl_assert(hl_block_is_free(r) && size % HL_ALIGN == 0);
	while (n < want && r->size >= size) {
		size_t rest = r->size - size;
		if (rest < HL_RANGE_MIN) {
			out[n++] = split_front_locked(a, r, r->size);
			return n;
		}
		struct hl_range *tail = (struct hl_range *)((char *)r + size);
		tail->flags = 0;
		hl_range_set_size(tail, (uint32_t)rest);
		hl_range_set_size(r, (uint32_t)size);
		hl_blockmap_set_locked(tail);
		r->flags |= HL_RANGE_ALLOCATED;
		hand_out_locked(r);
		out[n++] = r;
		r = tail;
	}
	hl_bins_insert_locked(a, r);
	return n;
}

/* Whether all of r lies below its segment's watermark: memory that was
 * handed out before and is resident already. */
static bool range_is_recycled(struct hl_range *r)
{
	return (char *)r + r->size <= hl_segment_of(r)->untouched;
}

unsigned hl_arena_carve_locked(struct hl_arena *a, size_t size, unsigned want,
			       struct hl_range **out)
{
	hl_assert_held(&a->lock);
	hl_segment_age_spares_locked(a);
	/* Best: one recycled range that holds the whole batch, so the blocks
	 * sit side by side, which is what the program's next accesses like. */
	struct hl_range *r = hl_bins_take_locked(a, size * want);
	if (r != NULL) {
		if (range_is_recycled(r) || a->remote_frees)
			return carve_from_locked(a, r, size, want, out);
		hl_bins_insert_locked(a, r);
	}
	/* Else fill it from the best-fitting free ranges, holes left by earlier
	 * frees before untouched memory: always carving whole batches from
	 * fresh memory let small holes pile up, and churn's whole 4 MiB
	 * segment became resident for 2.7 MB of peak use (RSS 1.32x glibc's,
	 * now 1.1x). Not in arenas whose blocks other threads free: a hole's
	 * neighbours may then sit in another thread's cache, and sharing their
	 * cache lines made the 2-thread ring 2.3x slower. */
	unsigned n = 0;
	while (n < want) {
		r = hl_bins_take_locked(a, size);
		if (r == NULL && n == 0)
			r = hl_segment_new_locked(a);
		if (r == NULL)
			break;
		n += carve_from_locked(a, r, size, want - n, out + n);
	}
	return n;
}

/* What freeing r relies on: it is a range of this arena (header check,
 * owner), in use, and its boundary tags agree with both neighbours. */
static bool range_is_freeable(struct hl_arena *a, struct hl_range *r)
{
	uint8_t flags = hl_range_flags(r);
	return hl_range_check_ok(r) && hl_segment_of(r)->arena == a &&
	       (flags & HL_RANGE_ALLOCATED) && !(flags & (HL_RANGE_SENTINEL | HL_RANGE_LARGE)) &&
	       hl_range_next(r)->prev_size == r->size &&
	       ((flags & HL_RANGE_MAPPING_START) || hl_range_prev(r)->size == r->prev_size);
}

void hl_arena_free_locked(struct hl_arena *a, struct hl_range *r)
{
	hl_assert_held(&a->lock);
	hl_assert(range_is_freeable(a, r));
	r->flags &= HL_RANGE_MAPPING_START; /* the one flag a free range keeps */
	struct hl_range *next = hl_range_next(r);
	if (hl_block_is_free(next)) {
		hl_bins_remove_locked(a, next);
		absorb_locked(next);
		hl_range_set_size(r, r->size + next->size);
		hl_blockmap_clear_locked(next);
	}
	if (!(r->flags & HL_RANGE_MAPPING_START)) {
		struct hl_range *prev = hl_range_prev(r);
		if (hl_block_is_free(prev)) {
			hl_bins_remove_locked(a, prev);
			hl_range_set_size(prev, prev->size + r->size);
			hl_blockmap_clear_locked(r);
			r = prev;
		}
	}
	if (hl_segment_is_whole(r)) {
		hl_segment_release_locked(a, r);
		return;
	}
	hl_bins_insert_locked(a, r);
	hl_assert_expensive(hl_arena_is_valid_sampled_locked(a));
}

void hl_arena_shrink_locked(struct hl_arena *a, struct hl_range *r, size_t size)
{
	hl_assert_held(&a->lock);
	hl_assert(size <= r->size && size % HL_ALIGN == 0);
	size_t rest = r->size - size;
	if (rest < HL_RANGE_MIN)
		return;
	struct hl_range *tail = (struct hl_range *)((char *)r + size);
	tail->flags = HL_RANGE_ALLOCATED;
	hl_range_set_size(tail, (uint32_t)rest);
	hl_range_set_size(r, (uint32_t)size);
	hl_blockmap_set_locked(tail);
	hl_arena_free_locked(a, tail); /* coalesces with a free right neighbour */
}

bool hl_arena_grow_locked(struct hl_arena *a, struct hl_range *r, size_t size)
{
	hl_assert_held(&a->lock);
	hl_assert(size % HL_ALIGN == 0);
	struct hl_range *next = hl_range_next(r);
	if (!hl_block_is_free(next) || (size_t)r->size + next->size < size)
		return false;
	hl_bins_remove_locked(a, next);
	size_t total = (size_t)r->size + next->size;
	hl_range_set_size(r, (uint32_t)total);
	hl_blockmap_clear_locked(next);
	hand_out_locked(r);
	if (total - size >= HL_RANGE_MIN) {
		struct hl_range *tail = (struct hl_range *)((char *)r + size);
		tail->flags = 0;
		hl_range_set_size(tail, (uint32_t)(total - size));
		hl_range_set_size(r, (uint32_t)size);
		hl_blockmap_set_locked(tail);
		hl_bins_insert_locked(a, tail);
	}
	return true;
}

/* Takes size + alignment + HL_RANGE_MIN bytes so that the gap in front of the
 * aligned block is either empty or big enough to be a free range itself. */
struct hl_range *hl_arena_alloc_aligned_locked(struct hl_arena *a, size_t size,
					       size_t alignment)
{
	hl_assert_held(&a->lock);
	hl_assert(alignment > HL_ALIGN && (alignment & (alignment - 1)) == 0);
	struct hl_range *r = hl_arena_alloc_locked(a, size + alignment + HL_RANGE_MIN);
	if (r == NULL)
		return NULL;
	uintptr_t data = (uintptr_t)hl_range_data(r);
	uintptr_t aligned = (data + alignment - 1) & ~(uintptr_t)(alignment - 1);
	if (aligned != data && aligned - data < HL_RANGE_MIN)
		aligned += alignment;
	size_t gap = aligned - data;
	if (gap) {
		struct hl_range *block = (struct hl_range *)(aligned - sizeof(struct hl_range));
		block->flags = HL_RANGE_ALLOCATED;
		hl_range_set_size(block, (uint32_t)(r->size - gap));
		hl_range_set_size(r, (uint32_t)gap);
		hl_blockmap_set_locked(block);
		hl_arena_free_locked(a, r); /* the gap rejoins a free left neighbour */
		r = block;
	}
	hl_arena_shrink_locked(a, r, size);
	return r;
}

void hl_arenas_lock_all(void)
{
	for (unsigned i = 0; i < hl_arena_count; i++)
		hl_lock(&hl_arenas[i].lock);
}

void hl_arenas_unlock_all(void)
{
	for (unsigned i = 0; i < hl_arena_count; i++)
		hl_unlock(&hl_arenas[i].lock);
}

void hl_arenas_reset_locks(void)
{
	for (unsigned i = 0; i < hl_arena_count; i++)
		hl_lock_reset(&hl_arenas[i].lock);
}
