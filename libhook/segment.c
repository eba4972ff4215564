/*
 * libhook/segment.c: 4 MiB segments, the mappings that ranges are cut from.
 *
 * A segment belongs to one arena for life. When all its ranges are free
 * again it becomes one of the arena's *spares*: kept mapped and resident,
 * outside the bins, so a program that frees a burst and allocates it again
 * (a dict rebuilt each round, a per-request arena) pays neither mmap nor
 * page faults. A spare unused for `retain_ms` (default 100 ms) goes back to
 * the OS, checked whenever the arena next gets or gives back a segment or
 * refills a thread cache, so the program's RSS falls after it frees; the
 * last spare keeps its first MiB resident. malloc_trim() does the same at
 * once, without waiting: every spare but each arena's last goes back, and
 * the last keeps only its first MiB.
 *
 * Why a delay and not a count: unmapping at once turned a Python workload
 * that rebuilds 40 MB of dicts per round into 2x glibc's time, all of it in
 * page faults on memory just returned.
 */
#include "heap.h"

/* Bytes of the sentinel header that closes every segment. */
#define HL_SENTINEL_BYTES sizeof(struct hl_range)
#define HL_SPARE_RESIDENT ((size_t)1 << 20)

static void segment_link_locked(struct hl_arena *a, struct hl_segment *seg)
{
	hl_assert_held(&a->lock);
	seg->prev = NULL;
	seg->next = a->segments;
	if (a->segments)
		a->segments->prev = seg;
	a->segments = seg;
	if (++a->segment_count > a->segment_peak)
		a->segment_peak = a->segment_count;
}

static void segment_unlink_locked(struct hl_arena *a, struct hl_segment *seg)
{
	hl_assert_held(&a->lock);
	hl_assert(seg->arena == a && a->segment_count > 0);
	if (seg->prev)
		seg->prev->next = seg->next;
	else
		a->segments = seg->next;
	if (seg->next)
		seg->next->prev = seg->prev;
	a->segment_count--;
}

/* Cuts a fresh or spare segment into one free range and a sentinel. */
static struct hl_range *segment_format(struct hl_segment *seg)
{
	struct hl_range *r = hl_segment_first_range(seg);
	uint32_t size = (uint32_t)((char *)seg + HL_SEGMENT_SIZE - HL_SENTINEL_BYTES - (char *)r);
	struct hl_range *sentinel = (struct hl_range *)((char *)r + size);
	sentinel->size = 0;
	sentinel->flags = HL_RANGE_ALLOCATED | HL_RANGE_SENTINEL;
	r->prev_size = 0;
	r->flags = HL_RANGE_MAPPING_START;
	hl_range_set_size(r, size);
	if (!hl_blockmap_test(hl_range_data(r))) /* a spare's map has this bit alone */
		hl_blockmap_set_locked(r);
	return r;
}

static struct hl_segment *spare_pop_locked(struct hl_arena *a)
{
	hl_assert_held(&a->lock);
	struct hl_segment *seg = a->spares;
	if (seg != NULL) {
		a->spares = seg->spare_next;
		seg->spare_next = NULL;
		seg->spare_since_ms = 0;
		seg->spare_trimmed = 0;
	}
	return seg;
}

struct hl_range *hl_segment_new_locked(struct hl_arena *a)
{
	hl_assert_held(&a->lock);
	struct hl_segment *seg = spare_pop_locked(a);
	if (seg != NULL)
		return segment_format(seg);
	seg = hl_os_map_aligned(HL_SEGMENT_SIZE, HL_SEGMENT_SIZE);
	if (seg == NULL)
		return NULL;
	seg->magic = HL_SEGMENT_MAGIC ^ (uintptr_t)seg;
	seg->untouched = (char *)hl_segment_first_range(seg);
	seg->arena = a;
	segment_link_locked(a, seg);
	atomic_fetch_add_explicit(&hl_mapped_bytes, HL_SEGMENT_SIZE, memory_order_relaxed);
	hl_registry_mark(seg, HL_SEGMENT_SIZE, HL_REGION_SEGMENT);
	return segment_format(seg);
}

bool hl_segment_is_whole(struct hl_range *r)
{
	return (hl_range_flags(r) & HL_RANGE_MAPPING_START) &&
	       (hl_range_flags(hl_range_next(r)) & HL_RANGE_SENTINEL);
}

static void segment_unmap_locked(struct hl_arena *a, struct hl_segment *seg)
{
	hl_assert_held(&a->lock);
	segment_unlink_locked(a, seg);
	hl_registry_clear(seg, HL_SEGMENT_SIZE);
	atomic_fetch_sub_explicit(&hl_mapped_bytes, HL_SEGMENT_SIZE, memory_order_relaxed);
	hl_os_unmap(seg, HL_SEGMENT_SIZE);
}

/* The last spare stays mapped with its first MiB resident: the next burst
 * then starts without an mmap call. */
static void spare_trim_locked(struct hl_segment *seg)
{
	hl_assert_held(&seg->arena->lock);
	if (seg->spare_trimmed)
		return;
	seg->spare_trimmed = 1;
	hl_os_discard((char *)seg + HL_SPARE_RESIDENT, HL_SEGMENT_SIZE - HL_SPARE_RESIDENT);
	if (seg->untouched > (char *)seg + HL_SPARE_RESIDENT)
		seg->untouched = (char *)seg + HL_SPARE_RESIDENT;
}

/* Gives back the spares that became spare at or before `cutoff_ms`. The list
 * is newest first, so they form its tail. */
static void spares_release_locked(struct hl_arena *a, uint64_t cutoff_ms)
{
	hl_assert_held(&a->lock);
	struct hl_segment **link = &a->spares;
	while (*link != NULL && (*link)->spare_since_ms > cutoff_ms)
		link = &(*link)->spare_next;
	struct hl_segment *old = *link;
	if (old == NULL)
		return;
	if (link == &a->spares) { /* every spare is old: keep one, trimmed */
		spare_trim_locked(old);
		link = &old->spare_next;
		old = old->spare_next;
	}
	*link = NULL;
	while (old != NULL) {
		struct hl_segment *next = old->spare_next;
		segment_unmap_locked(a, old);
		old = next;
	}
}

void hl_segment_age_spares_locked(struct hl_arena *a)
{
	hl_assert_held(&a->lock);
	if (a->spares == NULL)
		return;
	uint64_t now = hl_os_now_ms();
	if (now > hl_options.retain_ms)
		spares_release_locked(a, now - hl_options.retain_ms);
}

void hl_segment_trim_locked(struct hl_arena *a)
{
	hl_assert_held(&a->lock);
	spares_release_locked(a, UINT64_MAX);
}

void hl_segment_release_locked(struct hl_arena *a, struct hl_range *r)
{
	hl_assert_held(&a->lock);
	struct hl_segment *seg = hl_segment_of(r);
	hl_assert(hl_segment_is_whole(r) && hl_block_is_free(r) && seg->arena == a);
	hl_segment_age_spares_locked(a);
	seg->spare_since_ms = hl_os_now_ms();
	seg->spare_trimmed = 0;
	seg->spare_next = a->spares;
	a->spares = seg;
}

bool hl_heap_trim(void)
{
	uint64_t before = atomic_load_explicit(&hl_mapped_bytes, memory_order_relaxed) +
			  hl_large_mapped_bytes();
	if (hl_tcache != NULL)
		hl_delay_flush(hl_tcache); /* before its blocks of other arenas are sent */
	hl_caches_drain_remote();
	for (unsigned i = 0; i < hl_arena_count; i++) {
		struct hl_arena *a = &hl_arenas[i];
		hl_lock(&a->lock);
		hl_segment_trim_locked(a);
		hl_unlock(&a->lock);
	}
	hl_large_trim();
	return atomic_load_explicit(&hl_mapped_bytes, memory_order_relaxed) +
		       hl_large_mapped_bytes() < before;
}
