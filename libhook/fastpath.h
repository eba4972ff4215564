/*
 * libhook/fastpath.h: the inline malloc and free paths for small blocks.
 *
 * The common case — a block of at most HL_TLSF_SMALL bytes, a thread cache
 * that has one, checks=full off — is a pop or push on a thread-local list.
 * With tracking on (the default) the same pop or push is followed by an
 * out-of-line tail that records the event; the full path's size-class
 * lookup, pointer classification and guard-byte tests are not paid again.
 * Any other case, and every doubt about a pointer, goes to the out-of-line
 * paths in alloc.c (hl_allocate, hl_release), which do the same work in full.
 */
#ifndef HL_FASTPATH_H
#define HL_FASTPATH_H

#include "heap.h"

/* Largest request the inline path serves: every range up to HL_CACHE_MAX
 * has a cache bin. */
#define HL_FAST_MAX (HL_CACHE_MAX - sizeof(struct hl_range))

/* The rare or tracked work after a fast allocation of p (n bytes, `kind`):
 * publishes tc's counters when `publish` (a multithreaded thread passed its
 * alloc_mark) and records the allocation when tracking is on; returns p.
 * Out of line and called in tail position, so the fast path needs no stack
 * frame. */
HL_NOINLINE void *hl_malloc_fast_tail(struct hl_thread_cache *tc, void *p, size_t n,
				      unsigned kind, bool publish);

/* The fast path found the bin for a request of n bytes empty: refills it
 * (blocks sent home by other threads, a neighbouring class, a carved
 * batch) and hands the block out as the fast path does, tail included; the
 * full path (hl_allocate) only when the arena has no memory. Called in
 * tail position. */
HL_NOINLINE void *hl_malloc_fast_miss(struct hl_thread_cache *tc, size_t n, unsigned kind);

/* r, just taken from tc's cache, handed to the program as a block of n
 * bytes of `kind`: the one spelling for the fast path and its refill. */
HL_INLINE void *hl_malloc_fast_hand_out(struct hl_thread_cache *tc, struct hl_range *r, size_t n,
					unsigned kind)
{
	hl_range_hand_out(r, kind);
	r->slack = (uint16_t)(hl_range_usable(r) - n);
	r->stack_kind = kind;
	bool publish = hl_stats_count_alloc(tc, n);
	if (hl_unlikely(publish || hl_track_enabled))
		return hl_malloc_fast_tail(tc, hl_range_data(r), n, kind, publish);
	return hl_range_data(r);
}

/* Largest request whose range is below HL_TLSF_SMALL (an exact class). */
#define HL_FAST_EXACT_MAX (HL_TLSF_SMALL - sizeof(struct hl_range) - HL_ALIGN + 1)

HL_INLINE void *hl_malloc_fast(size_t n, unsigned kind)
{
	struct hl_thread_cache *tc = hl_fast_tcache;
	struct hl_cache_bin *bin;
	if (hl_unlikely(tc == NULL)) {
		return hl_allocate(n, HL_ALIGN, kind);
	} else if (hl_likely(n < HL_FAST_EXACT_MAX)) {
		/* The range size, whose exact class's bin is at byte offset
		 * `size` (types.h). n == 0 gives 16, a bin that never holds a
		 * range (the smallest is HL_RANGE_MIN), so malloc(0) takes the
		 * full path. */
		size_t size = (n + sizeof(struct hl_range) + HL_ALIGN - 1) & ~(size_t)(HL_ALIGN - 1);
		bin = (struct hl_cache_bin *)((char *)tc->bins + size);
	} else if (n <= HL_FAST_MAX) {
		bin = &tc->bins[hl_class_floor(hl_range_size_for(n))];
	} else {
		return hl_allocate(n, HL_ALIGN, kind);
	}
	struct hl_range *r = bin->head;
	if (hl_unlikely(r == NULL))
		return hl_malloc_fast_miss(tc, n, kind);
	bin->head = ((struct hl_free_links *)hl_range_data(r))->next;
	bin->room++;
	return hl_malloc_fast_hand_out(tc, r, n, kind);
}

/* Tracking and a multithreaded program's frees: the work after a fast free
 * of `freed` (out of line, so the fast path needs no stack frame). r is the
 * range to file: `freed`'s, or, when the reuse delay held `freed`, the one
 * it pushed out (NULL if none). r is not in a bin yet: it may be another
 * arena's (only a multithreaded program has those), which goes home without
 * a push and a pop. */
HL_NOINLINE void hl_free_fast_tail(struct hl_thread_cache *tc, struct hl_range *r,
				   unsigned kind, uintptr_t caller, void *freed);

/* Releases p for a call of family `kind` given n bytes (a sized delete;
 * HL_SIZE_UNKNOWN otherwise, a constant that folds the test away). */
HL_INLINE void hl_free_fast_sized(void *p, unsigned kind, size_t n)
{
	struct hl_thread_cache *tc = hl_fast_tcache;
	/* The same tests as hl_ptr_classify, in the same order: a pointer this
	 * path turns away gets the full path's verdict. The alignment and the
	 * registry's bound are one test: aligned and below the top of the
	 * address space. */
	const uintptr_t outside = (HL_ALIGN - 1) | ~(((uintptr_t)1 << HL_ADDRESS_BITS) - 1);
	if (hl_likely(tc != NULL && ((uintptr_t)p & outside) == 0 &&
		      hl_registry_lookup_below_top(p) == HL_REGION_SEGMENT && hl_blockmap_test(p))) {
		struct hl_range *r = hl_range_of(p);
		uint32_t size = r->size;
		uint8_t flags = hl_range_flags(r);
		struct hl_cache_bin *bin = hl_likely(size < HL_TLSF_SMALL)
			? (struct hl_cache_bin *)((char *)tc->bins + size)
			: size <= HL_CACHE_MAX ? &tc->bins[hl_class_floor(size)] : NULL;
		size_t requested = size - sizeof(struct hl_range) - r->slack;
		/* free: live and of the C family in one test of the flags
		 * (HL_RANGE_CXX); a delete compares the kind itself. */
		bool accepted = kind == HL_KIND_MALLOC
			? hl_block_flags_live_c(flags)
			: hl_block_flags_live(flags) && hl_kind_matches(kind, hl_range_kind(r));
		if (hl_likely(accepted && bin != NULL && r->check == hl_range_check_of(r, size) &&
			      (n == HL_SIZE_UNKNOWN || n == requested))) {
			hl_counter_add(&tc->stats.frees, 1);
			hl_counter_add(&tc->stats.bytes_freed, requested);
			hl_range_set_flags(r, (uint8_t)(flags | HL_RANGE_CACHED));
			/* The reuse delay's ring for the size (delay[2], never
			 * attached, for sizes it does not hold). */
			struct hl_reuse_delay *d = hl_likely(size < HL_TLSF_SMALL)
				? &tc->delay[0]
				: &tc->delay[size <= HL_DELAY_BLOCK_MAX ? 1 : 2];
			if (hl_likely(d->ring != NULL)) {
				/* reuse_delay (delay.c): r takes the oldest held
				 * block's slot, and that block goes to its bin. */
				r = hl_delay_swap(d, r);
				if (hl_unlikely(r == NULL))
					goto tail; /* nothing pushed out: only the tail's bookkeeping */
				size = r->size;
				bin = hl_likely(size < HL_TLSF_SMALL)
					? (struct hl_cache_bin *)((char *)tc->bins + size)
					: &tc->bins[hl_class_floor(size)];
			}
			if (hl_unlikely(hl_relaxed_load(&hl_free_tail_on)))
				goto tail;
			((struct hl_free_links *)hl_range_data(r))->next = bin->head;
			bin->head = r;
			if (hl_likely(--bin->room >= 0))
				return;
			hl_cache_bin_overflow(tc, bin);
			return;
		tail:
			/* free()'s own return address: this is inlined into it */
			hl_free_fast_tail(tc, r, kind, (uintptr_t)__builtin_return_address(0), p);
			return;
		}
	}
	hl_release_sized(p, kind, n);
}

HL_INLINE void hl_free_fast(void *p, unsigned kind)
{
	hl_free_fast_sized(p, kind, HL_SIZE_UNKNOWN);
}

#endif /* HL_FASTPATH_H */
