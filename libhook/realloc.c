/*
 * libhook/realloc.c: resize a block, cheapest way first.
 *
 * In order: the block already has room (shrink in place, splitting off the
 * tail when it can stand alone); grow into a free right neighbour; mremap a
 * large block; and only then allocate, copy and free.
 *
 * glibc semantics: realloc(NULL, n) is malloc(n); realloc(p, 0) frees p and
 * returns NULL. A failed realloc leaves p untouched and sets ENOMEM.
 * Counters treat a resize like valgrind does: one allocation of the new size
 * and one free of the old block. Under checks=full every resize moves, so
 * the old block's guard bytes are checked and it goes into the quarantine;
 * under checks=guard too, and a guarded block (guard_sample=) always moves.
 */
#include <errno.h>
#include <string.h>

#include "heap.h"

/* The common resize, on the fast paths' terms: p is a live malloc-family
 * block of a segment (the tests of free's fast path, so a pointer this
 * turns away gets the full path's verdict) whose range already fits n and
 * would leave less than a range to split off. Then only its slack and the
 * counters change: no lock, no second cache lookup. Returns the block's
 * old size, or SIZE_MAX when it did not resize it. On the realloc benchmark
 * 89% of resizes stay in place, most of them so. */
static size_t resize_in_range(struct hl_thread_cache *tc, void *p, size_t n)
{
	const uintptr_t outside = (HL_ALIGN - 1) | ~(((uintptr_t)1 << HL_ADDRESS_BITS) - 1);
	if (((uintptr_t)p & outside) != 0 ||
	    hl_registry_lookup_below_top(p) != HL_REGION_SEGMENT || !hl_blockmap_test(p))
		return SIZE_MAX;
	struct hl_range *r = hl_range_of(p);
	uint32_t size = r->size;
	if (!hl_block_flags_live_c(hl_range_flags(r)) || r->check != hl_range_check_of(r, size) ||
	    size > HL_CACHE_MAX)
		return SIZE_MAX;
	size_t want = hl_range_size_for(n);
	if (want == 0 || want > size || size - want >= HL_RANGE_MIN * 2)
		return SIZE_MAX;
	size_t old_n = hl_range_usable(r) - r->slack;
	r->slack = (uint16_t)(hl_range_usable(r) - n);
	hl_counter_add(&tc->stats.frees, 1);
	hl_counter_add(&tc->stats.bytes_freed, old_n);
	return old_n;
}

/* After resize_in_range: the counters' alloc half, the publishing and the
 * event, out of line (the resize itself needs no frame). */
static HL_NOINLINE void *resized_in_range_tail(struct hl_thread_cache *tc, void *p, size_t n,
					       size_t old_n, bool publish)
{
	if (publish || hl_stats_free_publish_due(tc))
		hl_stats_publish(tc);
	if (hl_unlikely(hl_track_enabled)) {
		struct hl_range *r = hl_range_of(p);
		hl_range_set_stack(r, hl_track_realloc(p, p, n, old_n, hl_range_stack_id(r)));
	}
	return p;
}

/* Resizes a segment block in place; false when it has to move. */
static bool resize_small_in_place(struct hl_range *r, size_t n)
{
	size_t size = hl_range_size_for(n);
	if (size == 0)
		return false; /* becomes large */
	struct hl_arena *a = hl_arena_of(r);
	if (size <= r->size) {
		/* Only split when the tail is worth a range: a block that
		 * shrinks by a few bytes keeps them as slack. */
		if (r->size - size >= HL_RANGE_MIN * 2 || r->size > HL_CACHE_MAX) {
			hl_lock(&a->lock);
			hl_arena_shrink_locked(a, r, size);
			hl_unlock(&a->lock);
		}
	} else {
		hl_lock(&a->lock);
		bool grown = hl_arena_grow_locked(a, r, size);
		hl_unlock(&a->lock);
		if (!grown)
			return false;
	}
	r->slack = (uint16_t)(hl_range_usable(r) - n);
	return true;
}

/* Resizes a large block with mremap when it stays large; NULL to move. */
static void *resize_large(struct hl_range *r, size_t n)
{
	if (n <= HL_LARGE_THRESHOLD / 2)
		return NULL; /* much smaller: move it into a segment */
	size_t usable = hl_large_usable(r);
	/* In place only while the slack fits hl_large.slack: a block of 10 GiB
	 * shrunk to 5 GiB would keep 5 GiB of slack, cut to 1 GiB, and its free
	 * would subtract 4 GiB too much from the in-use bytes. */
	if (n <= usable && n >= usable / 2 && usable - n <= UINT32_MAX) {
		hl_large_of(r)->slack = (uint32_t)(usable - n);
		return hl_range_data(r);
	}
	return hl_large_resize(r, n);
}

static void *move_block(struct hl_range *r, size_t n, size_t old_n)
{
	void *q = hl_alloc_core_growable(n, hl_range_kind(r));
	if (q == NULL)
		return NULL;
	memcpy(q, hl_range_data(r), old_n < n ? old_n : n);
	if (hl_unlikely(hl_checks_redzone != 0))
		hl_checks_release(r, HL_CALL_REALLOC, true); /* into the quarantine */
	else
		hl_release_core_to_arena(r);
	return q;
}

static HL_NOINLINE void *reallocate_slow(void *p, size_t n);

void *hl_reallocate(void *p, size_t n)
{
	struct hl_thread_cache *tc = hl_fast_tcache;
	size_t old_n;
	if (hl_likely(tc != NULL && p != NULL && n != 0) &&
	    (old_n = resize_in_range(tc, p, n)) != SIZE_MAX) {
		bool publish = hl_stats_count_alloc(tc, n);
		if (hl_unlikely(publish || hl_relaxed_load(&hl_multithreaded) || hl_track_enabled))
			return resized_in_range_tail(tc, p, n, old_n, publish);
		return p;
	}
	return reallocate_slow(p, n);
}

/* Every other resize, and every doubt about p. */
static void *reallocate_slow(void *p, size_t n)
{
	if (p == NULL)
		return hl_allocate(n, HL_ALIGN, HL_KIND_MALLOC);
	if (n == 0) {
		hl_release(p, HL_KIND_MALLOC);
		return NULL;
	}
	enum hl_ptr_class c = hl_ptr_classify(p);
	if (hl_unlikely(c != HL_PTR_SMALL && c != HL_PTR_LARGE)) {
		hl_misuse_bad_pointer(HL_CALL_REALLOC, p, c);
		errno = ENOMEM;
		return NULL;
	}
	struct hl_range *r = hl_range_of(p);
	if (hl_unlikely(!hl_kind_matches(HL_KIND_MALLOC, hl_range_kind(r))))
		hl_misuse_release_mismatch(HL_CALL_REALLOC, p, HL_SIZE_UNKNOWN);
	size_t old_n = hl_block_requested(r);
	uint32_t old_id = hl_range_stack_id(r); /* the counting takes the old block away */
	void *q = NULL;
	if (hl_unlikely(hl_checks_redzone != 0)) {
		/* checks=full always moves, as valgrind does: a stale pointer to
		 * the old block then points into the quarantine. Its guard bytes
		 * are read first. */
		hl_checks_check_release(r, HL_CALL_REALLOC);
	} else if (hl_unlikely(hl_guard_all || hl_guard_owns(r))) {
		/* checks=guard always moves too: a stale pointer to the old
		 * block then faults; a guarded block's slot cannot grow. Its
		 * alignment gap's guard bytes are read first. */
		hl_checks_check_release(r, HL_CALL_REALLOC);
	} else if (c == HL_PTR_SMALL) {
		if (resize_small_in_place(r, n))
			q = p;
	} else {
		q = resize_large(r, n);
	}
	if (q != NULL) {
		hl_stats_on_resize(old_n, n);
	} else {
		q = move_block(r, n, old_n); /* the cores count both halves */
		if (q == NULL) {
			errno = ENOMEM;
			return NULL;
		}
	}
	if (hl_unlikely(hl_track_enabled)) {
		hl_range_set_stack(hl_range_of(q), hl_track_realloc(p, q, n, old_n, old_id));
	}
	return q;
}
