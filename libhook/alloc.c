/*
 * libhook/alloc.c: the allocation and release paths under the public API.
 *
 * hl_alloc_core / hl_release_core do the allocator's work and keep the
 * counters; hl_allocate / hl_release add tracking on top. realloc (realloc.c)
 * uses the cores directly so that a moved block is reported as one REALLOC,
 * not as an unrelated alloc and free.
 *
 * Fast path: blocks up to HL_CACHE_MAX bytes come from and go to the calling
 * thread's cache without a lock. Medium blocks take their arena's lock;
 * large ones are mapped (large.c). A block realloc moves is taken from and
 * given back to the arena, past the cache (hl_alloc_core_growable,
 * hl_release_core_to_arena), so growing blocks reuse what they leave.
 */
#include <errno.h>
#include <string.h>

#include "dtv.h"
#include "fastpath.h"
#include "track_free.h"

size_t hl_block_requested(struct hl_range *r)
{
	if (hl_range_flags(r) & HL_RANGE_LARGE) /* a walk reads it while its owner caches */
		return hl_large_usable(r) - hl_large_of(r)->slack;
	return hl_range_usable(r) - r->slack;
}

static void *alloc_medium_slow(struct hl_thread_cache *tc, size_t size, bool *fresh)
{
	struct hl_arena *a = tc->arena;
	hl_lock(&a->lock);
	struct hl_range *r = hl_arena_alloc_locked(a, size);
	*fresh = r != NULL && a->last_fresh;
	hl_unlock(&a->lock);
	return r;
}

HL_NOINLINE static void *alloc_large_slow(struct hl_thread_cache *tc, size_t n, size_t want,
					  size_t alignment, unsigned kind, bool *fresh)
{
	void *p = hl_large_alloc(want, alignment, fresh);
	if (p == NULL)
		return NULL;
	hl_range_set_owner(hl_range_of(p), 0, kind);
	if (hl_unlikely(hl_checks_redzone != 0))
		hl_checks_arm(hl_range_of(p), n, kind);
	hl_stats_on_alloc(tc, n);
	return p;
}

HL_NOINLINE static struct hl_range *alloc_aligned_slow(struct hl_thread_cache *tc,
						       size_t size, size_t alignment)
{
	struct hl_arena *a = tc->arena;
	hl_lock(&a->lock);
	struct hl_range *r = hl_arena_alloc_aligned_locked(a, size, alignment);
	hl_unlock(&a->lock);
	return r;
}

/* Threads without a cache of their own — one whose cache was already given
 * back at thread exit (glibc frees the thread's own bookkeeping after the
 * key destructors ran), or one that could not get memory for a cache —
 * share this one under a lock. Its bins hold nothing (limit 0), so every
 * block goes straight back to its arena. */
static struct hl_lock orphan_lock = HL_LOCK_INIT;
static struct hl_thread_cache *orphan_cache;

static struct hl_thread_cache *orphan_acquire(void)
{
	hl_lock(&orphan_lock);
	if (orphan_cache == NULL) {
		orphan_cache = hl_cache_create_shared();
		if (orphan_cache == NULL)
			hl_unlock(&orphan_lock);
	}
	return orphan_cache;
}

static void orphan_release(void)
{
	hl_unlock(&orphan_lock);
}

void hl_alloc_fork_prepare(void)
{
	hl_lock(&orphan_lock);
}

void hl_alloc_fork_parent(void)
{
	hl_unlock(&orphan_lock);
}

/* The child's cache list keeps only the forking thread's cache (cache.c),
 * so the shared one is rebuilt on next use. */
void hl_alloc_fork_child(void)
{
	hl_lock_reset(&orphan_lock);
	orphan_cache = NULL;
}

static void *alloc_with_cache(struct hl_thread_cache *tc, size_t n, size_t alignment,
			      unsigned kind, bool *fresh);

/* A range becomes the program's block of n bytes, counted on tc. */
static void *hand_over(struct hl_thread_cache *tc, struct hl_range *r, size_t n, unsigned kind)
{
	r->slack = (uint16_t)(hl_range_usable(r) - n);
	hl_range_set_owner(r, 0, kind);
	if (hl_unlikely(hl_checks_redzone != 0))
		hl_checks_arm(r, n, kind);
	hl_stats_on_alloc(tc, n);
	return hl_range_data(r);
}

/* Bytes to ask the size classes for a block of n: n plus the guard bytes
 * under checks=full (SIZE_MAX, too big for anything, if that overflows). */
static size_t with_guard(size_t n)
{
	size_t want;
	return __builtin_add_overflow(n, hl_checks_redzone, &want) ? SIZE_MAX : want;
}

static void stats_on_alloc_any(struct hl_thread_cache *tc, size_t n)
{
	bool orphan = tc == NULL;
	if (orphan && (tc = orphan_acquire()) == NULL)
		return;
	hl_stats_on_alloc(tc, n);
	if (orphan)
		orphan_release();
}

/* checks=guard, or this thread's sampled allocation under guard_sample=: a
 * block against a guard page (guardpage.c), or NULL to allocate as usual. */
HL_NOINLINE static void *alloc_guarded_slow(struct hl_thread_cache *tc, size_t n,
					    size_t alignment, unsigned kind, bool *fresh)
{
	if (!hl_guard_wanted(tc))
		return NULL;
	if (!hl_guard_all)
		hl_guard_sampled(tc);
	void *p = hl_guard_alloc(n, alignment, kind);
	if (p == NULL)
		return NULL;
	hl_range_set_owner(hl_range_of(p), 0, kind);
	stats_on_alloc_any(tc, n);
	*fresh = true;
	return p;
}

/* Allocates without tracking. *fresh tells calloc the memory is known zero. */
void *hl_alloc_core(size_t n, size_t alignment, unsigned kind, bool *fresh)
{
	struct hl_thread_cache *tc = hl_cache_get();
	*fresh = false;
	void *p;
	if (hl_unlikely(hl_guard_on) && (p = alloc_guarded_slow(tc, n, alignment, kind, fresh)))
		return p;
	if (hl_likely(tc != NULL))
		return alloc_with_cache(tc, n, alignment, kind, fresh);
	tc = orphan_acquire();
	if (tc == NULL)
		return NULL;
	p = alloc_with_cache(tc, n, alignment, kind, fresh);
	orphan_release();
	return p;
}

static void *alloc_with_cache(struct hl_thread_cache *tc, size_t n, size_t alignment,
			      unsigned kind, bool *fresh)
{
	size_t want = with_guard(n);
	size_t size = hl_range_size_for(want);
	if (hl_unlikely(size == 0 ||
			(alignment > HL_ALIGN && size + alignment >= HL_LARGE_THRESHOLD)))
		return alloc_large_slow(tc, n, want, alignment, kind, fresh);
	struct hl_range *r;
	if (hl_unlikely(alignment > HL_ALIGN)) {
		r = alloc_aligned_slow(tc, size, alignment);
	} else if (hl_likely(size <= HL_CACHE_MAX)) {
		unsigned cls = hl_class_floor(size);
		struct hl_cache_bin *bin = &tc->bins[cls];
		r = hl_likely(bin->head != NULL) ? hl_bin_pop(bin) : hl_cache_refill(tc, cls, size);
	} else {
		r = alloc_medium_slow(tc, size, fresh);
	}
	if (hl_unlikely(r == NULL))
		return NULL;
	return hand_over(tc, r, n, kind);
}

HL_NOINLINE static void release_medium_slow(struct hl_range *r)
{
	struct hl_arena *a = hl_arena_of(r);
	hl_lock(&a->lock);
	hl_arena_free_locked(a, r);
	hl_unlock(&a->lock);
}

static void release_with_cache(struct hl_thread_cache *tc, struct hl_range *r, bool count);

static void release_core(struct hl_range *r, bool count)
{
	struct hl_thread_cache *tc = hl_cache_get();
	if (hl_likely(tc != NULL)) {
		release_with_cache(tc, r, count);
		return;
	}
	tc = orphan_acquire();
	if (tc == NULL)
		return; /* no memory even for bookkeeping: the block stays allocated */
	release_with_cache(tc, r, count);
	orphan_release();
}

/* Releases a block already validated by hl_ptr_classify (or known good). */
void hl_release_core(struct hl_range *r)
{
	release_core(r, true);
}

void hl_release_core_uncounted(struct hl_range *r)
{
	release_core(r, false);
}

/* realloc's moves bypass the thread cache both ways. Through the cache, a
 * moved block landed in a cached range or a freshly carved batch, between
 * allocated neighbours, and the range it left stayed cached: out of reach of
 * coalescing and of its neighbour's growth, so growing blocks kept leaving
 * holes behind and the heap kept growing. Taken from the arena (a free range
 * split, its remainder free behind the block) and given back to it
 * (coalesced), they reuse what they leave: the realloc benchmark's peak RSS
 * fell from 1.37x glibc's to 1.08x, and it got ~3% faster; test_alloc's
 * builders grow a fresh heap by 1.43x what they hold, 2.55x before. */
void *hl_alloc_core_growable(size_t n, unsigned kind)
{
	struct hl_thread_cache *tc = hl_cache_get();
	size_t size = hl_range_size_for(with_guard(n));
	bool fresh;
	void *p;
	if (hl_unlikely(hl_guard_on) && (p = alloc_guarded_slow(tc, n, HL_ALIGN, kind, &fresh)))
		return p;
	if (tc == NULL || size == 0 || size > HL_CACHE_MAX)
		return hl_alloc_core(n, HL_ALIGN, kind, &fresh);
	struct hl_range *r = alloc_medium_slow(tc, size, &fresh);
	return r != NULL ? hand_over(tc, r, n, kind) : NULL;
}

void hl_release_core_to_arena(struct hl_range *r)
{
	struct hl_thread_cache *tc = hl_cache_get();
	if (tc == NULL || (r->flags & HL_RANGE_LARGE)) {
		hl_release_core(r);
		return;
	}
	hl_stats_on_free(tc, hl_block_requested(r));
	release_medium_slow(r);
}

void hl_stats_on_release(size_t n)
{
	struct hl_thread_cache *tc = hl_cache_get();
	bool orphan = tc == NULL;
	if (orphan && (tc = orphan_acquire()) == NULL)
		return;
	hl_stats_on_free(tc, n);
	if (orphan)
		orphan_release();
}

/* Counts a resize done in place (realloc.c) on the right cache. */
void hl_stats_on_resize(size_t old_n, size_t n)
{
	struct hl_thread_cache *tc = hl_cache_get();
	bool orphan = tc == NULL;
	if (orphan && (tc = orphan_acquire()) == NULL)
		return;
	hl_stats_on_free(tc, old_n);
	hl_stats_on_alloc(tc, n);
	if (orphan)
		orphan_release();
}

static void release_with_cache(struct hl_thread_cache *tc, struct hl_range *r, bool count)
{
	if (count)
		hl_stats_on_free(tc, hl_block_requested(r));
	if (hl_unlikely(r->flags & HL_RANGE_LARGE)) {
		hl_large_free(r);
		return;
	}
	if (hl_unlikely(r->size > HL_CACHE_MAX)) {
		release_medium_slow(r);
		return;
	}
	if (tc->delay[r->size >= HL_TLSF_SMALL].ring != NULL && r->size <= HL_DELAY_BLOCK_MAX) {
		hl_range_mark_cached(r);
		hl_delay_push(tc, r);
		return;
	}
	hl_cache_put(tc, r);
}

/* Where p points, judged from the registry and the header, without ever
 * reading memory that is not ours. */
enum hl_ptr_class hl_ptr_classify(const void *p)
{
	/* a guarded block starts as its size allows (guardpage.c) */
	if (((uintptr_t)p & (HL_ALIGN - 1)) != 0 && !hl_guard_owns(p))
		return HL_PTR_FOREIGN;
	switch (hl_registry_lookup(p)) {
	case HL_REGION_SEGMENT: {
		if (!hl_blockmap_test(p))
			return HL_PTR_FOREIGN; /* no range starts here */
		struct hl_range *r = hl_range_of(p);
		if (!hl_block_is_live(r))
			return HL_PTR_FREED;
		if (!hl_range_check_ok(r))
			return HL_PTR_CORRUPT;
		return HL_PTR_SMALL;
	}
	case HL_REGION_LARGE:
		if (!hl_large_owns(p)) {
			struct hl_misuse freed;
			return hl_guard_describe_freed(p, &freed) ? HL_PTR_FREED : HL_PTR_FOREIGN;
		}
		return hl_block_is_live(hl_range_of(p)) ? HL_PTR_LARGE : HL_PTR_FREED;
	default:
		return HL_PTR_FOREIGN;
	}
}

void *hl_allocate(size_t n, size_t alignment, unsigned kind)
{
	bool fresh;
	void *p = hl_alloc_core(n, alignment, kind, &fresh);
	if (hl_unlikely(p == NULL)) {
		errno = ENOMEM;
		return NULL;
	}
	if (hl_unlikely(hl_track_enabled))
		hl_range_set_stack(hl_range_of(p), hl_track_alloc(p, n, kind));
	return p;
}

void hl_release(void *p, unsigned kind)
{
	hl_release_sized(p, kind, HL_SIZE_UNKNOWN);
}

void hl_release_sized(void *p, unsigned kind, size_t n)
{
	if (p == NULL)
		return;
	enum hl_ptr_class c = hl_ptr_classify(p);
	if (hl_unlikely(c != HL_PTR_SMALL && c != HL_PTR_LARGE)) {
		hl_misuse_bad_pointer(hl_misuse_call_of(kind), p, c);
		return;
	}
	struct hl_range *r = hl_range_of(p);
	if (hl_unlikely(!hl_kind_matches(kind, hl_range_kind(r)) ||
			(n != HL_SIZE_UNKNOWN && n != hl_block_requested(r))))
		/* the wrong family is named first, as valgrind names it: a
		 * malloc'd int released by `delete` is a mismatched free, whatever
		 * size the compiler passed to the sized delete */
		hl_misuse_release_mismatch(hl_misuse_call_of(kind), p,
					   hl_kind_matches(kind, hl_range_kind(r)) ? n
										   : HL_SIZE_UNKNOWN);
	/* checks=full's blocks and checks=guard's, whose alignment gap holds
	 * guard bytes: one flag of the header already read */
	if (hl_unlikely(hl_block_is_guarded(r)))
		hl_checks_check_release(r, hl_misuse_call_of(kind));
	if (hl_unlikely(hl_track_frees))
		hl_track_free(p, kind, 0);
	if (hl_unlikely(hl_checks_redzone != 0))
		hl_checks_release(r, hl_misuse_call_of(kind), false);
	else
		hl_release_core(r);
}

/* A thread's DTV (dtv.c): reported without the hook's modules' entries. */
static HL_NOINLINE void track_dtv(void *p, size_t n)
{
	uint32_t id = hl_track_alloc(p, hl_dtv_reported(n), HL_KIND_CALLOC);
	hl_dtv_note_stack(id);
	hl_range_set_stack(hl_range_of(p), id);
}

/* calloc: zeroing is skipped for memory fresh from the kernel. dtv: the
 * block is a thread's DTV (inlined into both entry points, so calloc's
 * common path keeps nothing more live across the allocation). */
HL_INLINE void *allocate_zeroed(size_t count, size_t size, bool dtv)
{
	size_t n;
	if (__builtin_mul_overflow(count, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	bool fresh;
	void *p = hl_alloc_core(n, HL_ALIGN, HL_KIND_CALLOC, &fresh);
	if (hl_unlikely(p == NULL)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!fresh)
		memset(p, 0, n);
	if (hl_unlikely(hl_track_enabled)) {
		if (dtv)
			track_dtv(p, n);
		else
			hl_range_set_stack(hl_range_of(p), hl_track_alloc(p, n, HL_KIND_CALLOC));
	}
	return p;
}

void *hl_allocate_zeroed(size_t count, size_t size)
{
	return allocate_zeroed(count, size, false);
}

void *hl_allocate_dtv(size_t count, size_t size)
{
	return allocate_zeroed(count, size, true);
}

size_t hl_usable_size(const void *p)
{
	if (p == NULL)
		return 0;
	enum hl_ptr_class c = hl_ptr_classify(p);
	if (hl_unlikely(c <= HL_PTR_LARGE &&
			(hl_block_is_guarded(hl_range_of(p)) || hl_guard_owns(p))))
		return hl_block_requested(hl_range_of(p)); /* the guard bytes are not the program's */
	if (c == HL_PTR_SMALL)
		return hl_range_usable(hl_range_of(p));
	if (c == HL_PTR_LARGE)
		return hl_large_usable(hl_range_of(p));
	hl_misuse_bad_pointer(HL_CALL_USABLE_SIZE, p, c);
	return 0;
}

/* guard_sample=: this allocation is the sampled one. The block the fast
 * path took goes back to its bin (counted once: the guarded block has the
 * same size). */
HL_NOINLINE static void *sample_swap(struct hl_thread_cache *tc, void *p, size_t n, unsigned kind)
{
	hl_guard_sampled(tc);
	void *q = hl_guard_alloc(n, HL_ALIGN, kind);
	if (q == NULL)
		return p;
	hl_emit_clock_resync(); /* q is no block of this thread's cache */
	hl_range_set_owner(hl_range_of(q), 0, kind);
	hl_release_core_uncounted(hl_range_of(p));
	return q;
}

void *hl_malloc_fast_tail(struct hl_thread_cache *tc, void *p, size_t n, unsigned kind,
			  bool publish)
{
	if (publish)
		hl_stats_publish(tc);
	/* off: one test of a flag that is never written (no store, as a
	 * countdown kept at UINT64_MAX would need) */
	if (hl_unlikely(hl_guard_on) && --tc->guard_countdown == 0)
		p = sample_swap(tc, p, n, kind);
	if (hl_unlikely(hl_track_enabled))
		return hl_track_alloc_block(p, n, kind); /* a jump */
	return p;
}

/* Through hl_allocate a miss cost ~300 instructions before the refill's own
 * work (a second cache lookup, the guard and alignment tests, the size
 * classes again, hand_over): on churn 9% of mallocs miss, most of them an
 * exact class that borrows from its neighbour (cache.c). n == 0 comes here
 * too (its fast bin never holds a range): its size is HL_RANGE_MIN's. */
void *hl_malloc_fast_miss(struct hl_thread_cache *tc, size_t n, unsigned kind)
{
	size_t size = hl_range_size_for(n);
	struct hl_range *r = hl_cache_refill(tc, hl_class_floor(size), size);
	if (hl_unlikely(r == NULL))
		return hl_allocate(n, HL_ALIGN, kind); /* errno, and any other way */
	return hl_malloc_fast_hand_out(tc, r, n, kind);
}

/* The free tail's work after the event (or without one): r goes to its bin,
 * or home to its arena (hl_cache_put); a multithreaded thread publishes its
 * counters when it fell a step below what it last published. */
HL_INLINE void free_tail_rest(struct hl_thread_cache *tc, struct hl_range *r)
{
	if (hl_stats_free_publish_due(tc))
		hl_stats_publish(tc);
	if (r != NULL)
		hl_cache_put(tc, r);
}

/* A tracked free's tail, reached by a jump: the event's path inline here
 * would make every free tail save the registers it uses, the standalone
 * hook's too (ring 8: 74 M -> 81 M). */
static HL_NOINLINE void free_tail_tracked(struct hl_thread_cache *tc, struct hl_range *r,
					  unsigned kind, uintptr_t caller, void *freed)
{
	/* Before the block can reach a bin (free_tail_rest): another thread
	 * that gets it must report its allocation after this free. (With the
	 * reuse delay, `freed` is in the delay and r is the block the delay
	 * pushed out, freed long before.) */
	hl_track_free_inline(freed, kind, caller);
	free_tail_rest(tc, r);
}

static HL_NOINLINE void free_tail_untracked(struct hl_thread_cache *tc, struct hl_range *r)
{
	free_tail_rest(tc, r);
}

/* Two jumps and no frame: a frame here was made before the test (gcc 12
 * does not wrap it), costing the tracked free a third one. */
void hl_free_fast_tail(struct hl_thread_cache *tc, struct hl_range *r, unsigned kind,
		       uintptr_t caller, void *freed)
{
	if (hl_track_frees) {
		free_tail_tracked(tc, r, kind, caller, freed);
		return;
	}
	free_tail_untracked(tc, r);
}
