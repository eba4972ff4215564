/*
 * libhook/heap.h: the allocator's internal interface between its files:
 * range headers (range.c), TLSF bins (bins.c), segments (segment.c), arenas
 * (arena.c), thread caches (cache.c), large blocks (large.c), the segment
 * registry (registry.c) and the counters (stats.c).
 *
 * Functions suffixed _locked need the owning arena's lock held by the caller.
 */
#ifndef HL_HEAP_H
#define HL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "block.h"
#include "internal.h"
#include "types.h"

#pragma GCC visibility push(hidden) /* as in internal.h */

/* ---- range.c / inline header helpers -------------------------------------- */

HL_INLINE struct hl_range *hl_range_of(const void *p)
{
	return (struct hl_range *)p - 1;
}

HL_INLINE void *hl_range_data(struct hl_range *r)
{
	return r + 1;
}

HL_INLINE struct hl_range *hl_range_next(struct hl_range *r)
{
	return (struct hl_range *)((char *)r + r->size);
}

HL_INLINE struct hl_range *hl_range_prev(struct hl_range *r)
{
	return (struct hl_range *)((char *)r - r->prev_size);
}

/* 8 bits from the header's address and size: a pointer that is not a block
 * start, or a header overwritten by the program, fails it 255 times in 256.
 * Cheap on purpose: free() computes it on every call (three operations).
 * Address and size bits 4..11 only: a wrong pointer's "header" is random
 * bytes, its check byte among them, so more bits would catch no more of
 * them; folding in size bits 12 and up took four more operations. */
HL_INLINE uint8_t hl_range_check_of(const struct hl_range *r, uint32_t size)
{
	return (uint8_t)((((uintptr_t)r ^ size) >> 4) ^ 0xa5u);
}

HL_INLINE bool hl_range_check_ok(const struct hl_range *r)
{
	return r->check == hl_range_check_of(r, r->size);
}

HL_INLINE unsigned hl_range_kind(const struct hl_range *r)
{
	return r->stack_kind & 15u;
}

HL_INLINE uint32_t hl_range_stack_id(const struct hl_range *r)
{
	return r->stack_kind >> 4;
}

/* Where a block freed in the default mode was freed from: the return
 * address into the program's caller of free (valgrind shows the whole free
 * stack; capturing it on every free cost +27% instructions on churn, this
 * costs one frame-pointer walk), kept in the block's body after the free
 * list's first link (HL_RANGE_MIN leaves 16 bytes of body: the link, then
 * this note), so that a double free can say where the first free was. The
 * arena's free lists put their second link there, so the note lasts while
 * the range waits in a thread cache (the recent frees); its top 16 bits, a
 * tag (a user address has at most 47 bits, a link's top bits are 0), tell
 * a note from a link. checks=full keeps the whole free stack (guard.c). */
#define HL_FREE_CALLER_TAG UINT64_C(0xa5c3) /* the note's top 16 bits */

HL_INLINE void hl_block_note_free_caller(struct hl_range *r, uintptr_t ip)
{
	uint64_t note = (uint64_t)ip | HL_FREE_CALLER_TAG << 48;
	memcpy((char *)hl_range_data(r) + sizeof(void *), &note, sizeof(note));
}

/* The caller kept by hl_block_note_free_caller, or 0. */
HL_INLINE uintptr_t hl_block_free_caller(const struct hl_range *r)
{
	uint64_t note;
	memcpy(&note, (const char *)(r + 1) + sizeof(void *), sizeof(note));
	return note >> 48 == HL_FREE_CALLER_TAG ? (uintptr_t)(note & ((UINT64_C(1) << 48) - 1)) : 0;
}
_Static_assert(HL_RANGE_MIN - sizeof(struct hl_range) >= 2 * sizeof(void *),
	       "the free caller fits beside the first link of the smallest range");

/* The block's allocation stack and kind; its family flag follows the kind
 * (the range is the caller's: live, or being handed out). */
HL_INLINE void hl_range_set_owner(struct hl_range *r, uint32_t stack_id, unsigned kind)
{
	hl_assert(stack_id <= HL_STACK_ID_MAX && kind < HL_KIND_COUNT);
	r->stack_kind = (stack_id << 4) | (kind & 15u);
	hl_range_hand_out(r, kind);
}

/* The allocation stack of a block already handed out with its kind (the
 * tracked paths record the stack after the allocator returned the block). */
HL_INLINE void hl_range_set_stack(struct hl_range *r, uint32_t stack_id)
{
	hl_assert(stack_id <= HL_STACK_ID_MAX);
	r->stack_kind = (stack_id << 4) | (r->stack_kind & 15u);
}

/* Sets r's size and keeps the right neighbour's boundary tag in step. */
HL_INLINE void hl_range_set_size(struct hl_range *r, uint32_t size)
{
	hl_assert(size >= HL_RANGE_MIN && size % HL_ALIGN == 0);
	r->size = size;
	r->check = hl_range_check_of(r, size);
	hl_range_next(r)->prev_size = size;
}

/* Bytes the program may use in a segment range. */
HL_INLINE size_t hl_range_usable(const struct hl_range *r)
{
	return r->size - sizeof(struct hl_range);
}

/* ---- bins.c: TLSF size classes ------------------------------------------- */

/* Class a free range of `size` bytes is filed under (rounds down). */
HL_INLINE unsigned hl_class_floor(size_t size)
{
	if (size < HL_TLSF_SMALL)
		return (unsigned)(size >> 4);
	unsigned fl = 63u - (unsigned)__builtin_clzll(size);
	unsigned sl = (unsigned)(size >> (fl - HL_TLSF_SUB_SHIFT)) & (HL_TLSF_SUB - 1);
	return HL_TLSF_LINEAR + (fl - HL_TLSF_FIRST_SHIFT) * HL_TLSF_SUB + sl;
}

/* Range size for a block that the thread caches can serve: sizes up to
 * HL_CACHE_MAX are rounded up to their class's lower bound so that every range
 * filed under a class fits every request mapped to it. */
HL_INLINE size_t hl_class_round_up(size_t size)
{
	if (size < HL_TLSF_SMALL)
		return size;
	unsigned fl = 63u - (unsigned)__builtin_clzll(size);
	size_t step = (size_t)1 << (fl - HL_TLSF_SUB_SHIFT);
	return (size + step - 1) & ~(step - 1);
}

/* Range bytes (header included) for a request of n bytes, or 0 if n is too
 * big for a segment (then the block is large). */
HL_INLINE size_t hl_range_size_for(size_t n)
{
	if (n > HL_LARGE_THRESHOLD)
		return 0;
	size_t size = (n + sizeof(struct hl_range) + HL_ALIGN - 1) & ~(size_t)(HL_ALIGN - 1);
	if (size < HL_RANGE_MIN)
		size = HL_RANGE_MIN;
	if (size <= HL_CACHE_MAX)
		size = hl_class_round_up(size);
	return size;
}

void hl_bins_insert_locked(struct hl_arena *a, struct hl_range *r);
void hl_bins_remove_locked(struct hl_arena *a, struct hl_range *r);
/* Removes and returns a free range of at least `size` bytes, or NULL. */
struct hl_range *hl_bins_take_locked(struct hl_arena *a, size_t size);

/* ---- segment.c ---------------------------------------------------------- */

HL_INLINE struct hl_segment *hl_segment_of(const void *p)
{
	return (struct hl_segment *)((uintptr_t)p & ~(uintptr_t)(HL_SEGMENT_SIZE - 1));
}

/* The segment's first range, right after its header and block-start map. */
HL_INLINE struct hl_range *hl_segment_first_range(struct hl_segment *seg)
{
	return (struct hl_range *)((char *)(seg + 1) + HL_BLOCKMAP_BYTES);
}

/* Maps a new segment for arena a; returns its one free range (not filed). */
struct hl_range *hl_segment_new_locked(struct hl_arena *a);
/* r is a free range that covers its whole segment: it becomes a spare. */
void hl_segment_release_locked(struct hl_arena *a, struct hl_range *r);
/* Gives back to the OS the spares older than hl_options.retain_ms. */
void hl_segment_age_spares_locked(struct hl_arena *a);
/* Gives back every spare but one, trimmed to its first MiB (malloc_trim). */
void hl_segment_trim_locked(struct hl_arena *a);
/* Gives back every spare segment and cached large mapping now; true if
 * that unmapped anything. */
bool hl_heap_trim(void);
HL_INLINE bool hl_segment_is_spare(const struct hl_segment *seg)
{
	return seg->spare_since_ms != 0;
}
bool hl_segment_is_whole(struct hl_range *r);

/* ---- registry.c: which address ranges are ours ------------------------- */

enum hl_region {
	HL_REGION_NONE = 0,    /* not the allocator's */
	HL_REGION_SEGMENT = 1, /* a segment starts at this 4 MiB boundary */
	HL_REGION_LARGE = 2,   /* some large mapping touches this 4 MiB */
};
void hl_registry_mark(const void *start, size_t bytes, enum hl_region region);
void hl_registry_clear(const void *start, size_t bytes);

#define HL_REGISTRY_ENTRIES ((size_t)1 << (HL_ADDRESS_BITS - HL_SEGMENT_SHIFT))
extern _Atomic uint8_t hl_registry[HL_REGISTRY_ENTRIES];

/* The registry's entry for p, which the caller has checked is below
 * 1 << HL_ADDRESS_BITS (free's fast path tests that with the alignment,
 * one test for both). */
HL_INLINE enum hl_region hl_registry_lookup_below_top(const void *p)
{
	return (enum hl_region)atomic_load_explicit(&hl_registry[(uintptr_t)p >> HL_SEGMENT_SHIFT],
						    memory_order_acquire);
}

HL_INLINE enum hl_region hl_registry_lookup(const void *p)
{
	uintptr_t index = (uintptr_t)p >> HL_SEGMENT_SHIFT;
	if (hl_unlikely(index >= HL_REGISTRY_ENTRIES))
		return HL_REGION_NONE;
	return (enum hl_region)atomic_load_explicit(&hl_registry[index], memory_order_acquire);
}

/* ---- arena.c ------------------------------------------------------------ */

extern struct hl_arena hl_arenas[HL_MAX_ARENAS];
extern unsigned hl_arena_count;

struct hl_arena *hl_arena_pick(void);
/* A range of exactly `size` bytes (a multiple of 16, >= HL_RANGE_MIN) or a
 * little more when the rest is too small to stand alone; ALLOCATED set. */
struct hl_range *hl_arena_alloc_locked(struct hl_arena *a, size_t size);
/* Up to `want` ranges of `size` bytes cut back to back from one free range,
 * for a thread cache refill; returns how many were written to out[]. */
unsigned hl_arena_carve_locked(struct hl_arena *a, size_t size, unsigned want,
			       struct hl_range **out);
/* Gives an allocated range back: coalesces with free neighbours and files it. */
void hl_arena_free_locked(struct hl_arena *a, struct hl_range *r);
/* Splits an allocated range so it keeps `size` bytes; the tail is freed. */
void hl_arena_shrink_locked(struct hl_arena *a, struct hl_range *r, size_t size);
/* Grows an allocated range in place into a free right neighbour; false if the
 * neighbour is not free or too small. */
bool hl_arena_grow_locked(struct hl_arena *a, struct hl_range *r, size_t size);
/* An allocated range whose user pointer is aligned to `alignment`. */
struct hl_range *hl_arena_alloc_aligned_locked(struct hl_arena *a, size_t size,
					       size_t alignment);

HL_INLINE struct hl_arena *hl_arena_of(struct hl_range *r)
{
	return hl_segment_of(r)->arena;
}

/* Every invariant of the arena holds (walk.c); for tests and HL_DEBUG=2. */
bool hl_arena_is_valid_locked(struct hl_arena *a);
/* The same walk on every 256th call, else true: HL_DEBUG=2's check on each
 * free into an arena, which a walk per free made unusable on programs that
 * free much (an 8 MiB quarantine's test ran past 4 minutes, threads queued
 * on the lock the walk held). */
bool hl_arena_is_valid_sampled_locked(struct hl_arena *a);

void hl_arenas_lock_all(void);
void hl_arenas_unlock_all(void);
void hl_arenas_reset_locks(void);

/* ---- cache.c ------------------------------------------------------------ */

extern HL_TLS struct hl_thread_cache *hl_tcache;
/* The same cache for the inline fast paths, or NULL while they are off
 * (before the options are known, and under checks=full: then every call
 * takes the full path): one test instead of two on every call. */
extern HL_TLS struct hl_thread_cache *hl_fast_tcache;
/* The options are read: turns the fast paths on for the calling thread and
 * every cache made from now on. */
void hl_cache_options_known(void);

struct hl_thread_cache *hl_cache_create(void);
HL_NOINLINE struct hl_range *hl_cache_refill(struct hl_thread_cache *tc, unsigned cls,
					     size_t size);
HL_NOINLINE void hl_cache_flush(struct hl_thread_cache *tc, unsigned cls, uint32_t keep);
/* A free pushed tc's bin past its limit: half of it goes back. */
HL_NOINLINE void hl_cache_bin_overflow(struct hl_thread_cache *tc, struct hl_cache_bin *bin);
/* Frees r, a block of arena a != tc->arena, towards its arena (cache.c). */
void hl_cache_free_remote(struct hl_thread_cache *tc, struct hl_range *r, struct hl_arena *a);
/* Sends the calling thread's unfilled packets, and gives every arena the
 * blocks other threads sent it (malloc_trim, fork child). */
void hl_caches_drain_remote(void);
/* Thread exit: every cached range goes back to its arena. */
void hl_cache_destroy(struct hl_thread_cache *tc);
/* Files a freed range (counted, validated, at most HL_CACHE_MAX bytes) into
 * tc's bin for its class, or sends it home to its arena. */
void hl_cache_put(struct hl_thread_cache *tc, struct hl_range *r);

/* ---- delay.c: reuse_delay, freed blocks held back from reuse ------------- */

/* The options are known: the delay's slots (0: off). */
void hl_delay_init(void);
/* Gives a thread's own cache its rings if the delay is on (shared caches,
 * which orphans borrow, have none). */
void hl_delay_attach(struct hl_thread_cache *tc);
/* Holds freed range r (counted, marked cached, at most HL_DELAY_BLOCK_MAX
 * bytes) back from reuse in tc's ring for its size; the oldest there goes
 * on to hl_cache_put. */
void hl_delay_push(struct hl_thread_cache *tc, struct hl_range *r);
/* Puts r in ring d and returns the range it pushes out (NULL while the ring
 * fills): the one swap both free paths make. The position moves on before
 * the slot is read, with a compiler fence between, so a signal handler that
 * frees on this thread meanwhile either makes its whole swap first (on the
 * slot this one then takes over, returning the handler's range) or takes
 * the next slot: no range is pushed out twice (into its bin twice, handed
 * to two mallocs). */
HL_INLINE struct hl_range *hl_delay_swap(struct hl_reuse_delay *d, struct hl_range *r)
{
	uint32_t pos = d->pos;

	d->pos = (pos + 1) & d->mask;
	atomic_signal_fence(memory_order_seq_cst);
	struct hl_range *old = d->ring[pos];
	d->ring[pos] = r;
	return old;
}
/* Every held range to hl_cache_put (malloc_trim, thread exit). */
void hl_delay_flush(struct hl_thread_cache *tc);
/* Frees the rings (thread exit, once no census can read them). */
void hl_delay_free_ring(struct hl_thread_cache *tc);
/* Calls fn on each held range; only tc's own thread may ask (mallinfo). A
 * thread's ring holds ranges of any arena: those it freed for other threads. */
void hl_delay_each(struct hl_thread_cache *tc, void (*fn)(struct hl_range *r, void *arg), void *arg);
void hl_caches_lock(void);
void hl_caches_unlock(void);
void hl_caches_fork_child(void);
/* First in a fork child: caches_lock held by the one thread there is. After
 * fork() the prepare handler's hold was copied; a raw clone child that
 * becomes a fork child at exit (process.c) had no prepare, so the lock is
 * in whatever state the clone found it. */
void hl_caches_fork_hold(void);
/* Adds every live cache's counters to *out; caller holds hl_caches_lock. */
void hl_caches_sum_locked(struct hl_thread_stats *out);
/* Whether the caller holds caches_lock (the owner in debug builds, lock.h;
 * the assertions of hl_stats_*_locked). */
bool hl_caches_lock_is_held(void);
/* Calls fn on every live cache; caller holds hl_caches_lock (or is the
 * only thread, in a fork child). */
void hl_caches_each_locked(void (*fn)(struct hl_thread_cache *tc, void *arg), void *arg);
/* Creates the pthread key whose destructor returns a thread's cache. */
void hl_cache_init_key(void);

/* A cache with empty bin limits for threads that have none (alloc.c). */
struct hl_thread_cache *hl_cache_create_shared(void);
/* Set when the thread's cache was given back at thread exit. */
extern HL_TLS bool hl_thread_exited;

/* Takes the first range off a non-empty bin; it is the caller's now. */
HL_INLINE struct hl_range *hl_bin_pop(struct hl_cache_bin *bin)
{
	struct hl_range *r = bin->head;
	bin->head = ((struct hl_free_links *)hl_range_data(r))->next;
	bin->room++;
	hl_range_unmark_cached(r);
	return r;
}

/* The calling thread's cache, created on first use; NULL when the thread
 * has already exited its cache or no memory was left for one. */
HL_INLINE struct hl_thread_cache *hl_cache_get(void)
{
	struct hl_thread_cache *tc = hl_tcache;
	if (hl_unlikely(tc == NULL) && !hl_thread_exited)
		tc = hl_cache_create();
	return tc;
}

/* ---- large.c ------------------------------------------------------------ */

HL_INLINE struct hl_large *hl_large_of(struct hl_range *r)
{
	return (struct hl_large *)r - 1;
}

HL_INLINE size_t hl_large_usable(struct hl_range *r)
{
	struct hl_large *l = hl_large_of(r);
	return l->map_bytes - l->lead_bytes - sizeof(struct hl_large) - sizeof(struct hl_range);
}

/* A large block of n bytes aligned to `alignment`; *fresh is true when its
 * memory comes straight from the kernel (already zero). */
void *hl_large_alloc(size_t n, size_t alignment, bool *fresh);
/* Formats a block of n bytes at base + lead + 32 in memory the caller owns
 * (map_bytes from base: a guarded slot's pages) and adds it to the live set;
 * the block, or NULL when the set cannot grow. */
void *hl_large_adopt(char *base, size_t map_bytes, size_t lead, size_t n);
/* Takes an adopted block out of the live set. */
void hl_large_forget(struct hl_range *r);
void hl_large_free(struct hl_range *r);
/* Resizes a large block with mremap; NULL if it cannot. */
void *hl_large_resize(struct hl_range *r, size_t n);
/* True if p is the user pointer of a live large block. */
bool hl_large_owns(const void *p);
void hl_large_walk(hl_walk_fn fn, void *arg);
void *hl_large_find(const void *address, size_t *size);
typedef void (*hl_large_visit_fn)(void *base, size_t bytes, struct hl_range *r, void *arg);
void hl_large_visit_locked(hl_large_visit_fn fn, void *arg);
void hl_large_fork_prepare(void);
void hl_large_fork_parent(void);
void hl_large_fork_child(void);
uint64_t hl_large_mapped_bytes(void);
/* Unmaps every cached freed mapping (malloc_trim). */
void hl_large_trim(void);
/* Large blocks in glibc's terms of mmapped chunks (mallinfo.c). */
struct hl_large_census {
	size_t live_count;   /* live blocks, each its own mapping */
	size_t live_bytes;   /* their mapping bytes */
	size_t peak_count;   /* most live blocks at once */
	size_t peak_bytes;   /* most live mapping bytes at once */
	size_t cached_count; /* freed mappings kept for reuse */
	size_t cached_bytes;
};
void hl_large_census(struct hl_large_census *out);

/* ---- stats.c ------------------------------------------------------------ */

/* Set once a second thread has a cache: the global total is then kept by
 * publishing each thread's changes in steps of HL_PUBLISH_STEP bytes. While
 * one thread runs, that thread's own count is the total and the peak is
 * tracked exactly, without any shared write.
 *
 * Either way an allocation compares the thread's in-use bytes with one
 * number, its cache's alloc_mark (the peak so far, or where the next
 * publish is due), and does more only when it passes the mark: one compare
 * on malloc's fast path instead of a flag test and a second compare. */
#define HL_PUBLISH_STEP ((int64_t)64 << 10)
extern bool hl_multithreaded;
extern int64_t hl_single_thread_peak;
extern _Atomic uint64_t hl_mapped_bytes;
/* Sets tc's free_mark from its counters and published bytes (heap.h
 * hl_stats_free_publish_due). */
void hl_stats_free_mark_set(struct hl_thread_cache *tc);
/* Adds tc's change since its last publish to the global total and moves
 * its alloc_mark one step past its in-use bytes (and its free_mark). */
void hl_stats_publish(struct hl_thread_cache *tc);
/* A cache is going away: its counters join the retired totals (cache list
 * lock held). */
void hl_stats_retire_locked(struct hl_thread_cache *tc);
/* The second thread arrived: seed the global total (cache list lock held). */
void hl_stats_go_multithreaded_locked(struct hl_thread_stats *sum);
void hl_summary_write(int fd, bool at_exit);

/* A thread's counters and marks are written by that thread while others
 * read them (sums, the switch to multithreaded) and, once, written by the
 * thread that makes the program multithreaded: relaxed atomic accesses,
 * the same plain loads and stores on x86-64 and arm64 (no lock prefix, no
 * barrier), which make those accesses defined. Sums, not orderings: a sum
 * taken while a thread counts may miss its last few operations. */
#define hl_relaxed_load(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define hl_relaxed_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* Adds v to a counter only the calling thread writes. */
HL_INLINE void hl_counter_add(uint64_t *counter, uint64_t v)
{
	hl_relaxed_store(counter, hl_relaxed_load(counter) + v);
}

HL_INLINE int64_t hl_stats_in_use(const struct hl_thread_stats *ts)
{
	return (int64_t)(hl_relaxed_load(&ts->bytes_allocated) - hl_relaxed_load(&ts->bytes_freed));
}

/* Counts an allocation of n bytes; true when tc just passed its alloc_mark
 * in a multithreaded program, so the caller must hl_stats_publish(tc).
 * (Returning that instead of publishing keeps the call out of malloc's
 * fast path, which then needs no stack frame.) */
HL_INLINE bool hl_stats_count_alloc(struct hl_thread_cache *tc, size_t n)
{
	hl_counter_add(&tc->stats.allocs, 1);
	/* the sum kept in a register: a relaxed load after the store would
	 * read it again */
	uint64_t allocated = hl_relaxed_load(&tc->stats.bytes_allocated) + n;
	hl_relaxed_store(&tc->stats.bytes_allocated, allocated);
	int64_t in_use = (int64_t)(allocated - hl_relaxed_load(&tc->stats.bytes_freed));
	if (hl_likely(in_use <= hl_relaxed_load(&tc->alloc_mark)))
		return false;
	if (hl_relaxed_load(&hl_multithreaded))
		return true;
	hl_relaxed_store(&tc->alloc_mark, in_use);
	hl_relaxed_store(&hl_single_thread_peak, in_use);
	return false;
}

HL_INLINE void hl_stats_on_alloc(struct hl_thread_cache *tc, size_t n)
{
	if (hl_unlikely(hl_stats_count_alloc(tc, n)))
		hl_stats_publish(tc);
}

/* The exact test behind hl_stats_free_publish_due, once tc's freed bytes
 * passed its free_mark; moves the mark when it is not due yet. */
HL_NOINLINE bool hl_stats_free_recheck(struct hl_thread_cache *tc);

/* After a free: in a multithreaded program, whether tc's in-use bytes fell
 * a step below what it last published, so it must hl_stats_publish(tc).
 * Due when published - (allocated - freed) > HL_PUBLISH_STEP, that is when
 * freed > HL_PUBLISH_STEP + allocated - published; tc->free_mark is that
 * bound with `allocated` as it was when the mark was set, never above the
 * true one (allocated only grows), so a free compares its freed bytes with
 * one number and does the exact test only past it. UINT64_MAX while the
 * program is single-threaded: the same compare, never taken. */
HL_INLINE bool hl_stats_free_publish_due(struct hl_thread_cache *tc)
{
	if (hl_likely(hl_relaxed_load(&tc->stats.bytes_freed) <= hl_relaxed_load(&tc->free_mark)))
		return false;
	return hl_stats_free_recheck(tc);
}

HL_INLINE void hl_stats_on_free(struct hl_thread_cache *tc, size_t n)
{
	hl_counter_add(&tc->stats.frees, 1);
	hl_counter_add(&tc->stats.bytes_freed, n);
	if (hl_stats_free_publish_due(tc))
		hl_stats_publish(tc);
}

/* ---- alloc.c, realloc.c --------------------------------------------------- */

/* Allocates without tracking; *fresh is true when the memory is known zero. */
void *hl_alloc_core(size_t n, size_t alignment, unsigned kind, bool *fresh);
/* Releases a valid block without tracking. */
void hl_release_core(struct hl_range *r);
void *hl_allocate_zeroed(size_t count, size_t size);
/* calloc of a thread's DTV (dtv.c, hl_dtv_may_be). */
void *hl_allocate_dtv(size_t count, size_t size);
void *hl_reallocate(void *p, size_t n);
void hl_alloc_fork_prepare(void);
void hl_alloc_fork_parent(void);
void hl_alloc_fork_child(void);
/* For realloc's moves: a block with free room after it, taken from the arena
 * (not the thread cache), and the old block given back to its arena,
 * coalesced (not cached). See alloc.c. */
void *hl_alloc_core_growable(size_t n, unsigned kind);
void hl_release_core_to_arena(struct hl_range *r);
/* Releases a block whose free was already counted (hl_stats_on_release): a
 * block leaving the quarantine. */
void hl_release_core_uncounted(struct hl_range *r);
/* Counts a free of n bytes on the calling thread's cache. */
void hl_stats_on_release(size_t n);
/* Counts a block resized in place: a free of old_n and an alloc of n. */
void hl_stats_on_resize(size_t old_n, size_t n);
size_t hl_usable_size(const void *p);

/* ---- validation of user pointers (alloc.c) ------------------------------ */

enum hl_ptr_class {
	HL_PTR_SMALL,   /* a live segment block */
	HL_PTR_LARGE,   /* a live large block */
	HL_PTR_FREED,   /* a block start that is free, cached or quarantined: double free */
	HL_PTR_CORRUPT, /* a live block whose header was overwritten */
	HL_PTR_FOREIGN, /* not a block start of ours (interior, misaligned, foreign) */
};
enum hl_ptr_class hl_ptr_classify(const void *p);
/* Asked-for bytes of a live block. */
size_t hl_block_requested(struct hl_range *r);

/* ---- misuse.c: heap misuse reports ---------------------------------------- */

/* The size a release call was given when it was not (free, unsized delete). */
#define HL_SIZE_UNKNOWN SIZE_MAX
/* on_error= (options.h) */
#define HL_ON_ERROR_ABORT 1u

/* One error, as found. */
struct hl_misuse {
	unsigned kind;        /* enum hl_error_kind (wire.h) */
	unsigned call;        /* enum hl_error_call */
	const void *address;  /* the pointer the program passed */
	const void *block;    /* start of the block it concerns, NULL if none */
	size_t block_size;    /* bytes the program asked for */
	uint32_t alloc_stack; /* the block's allocation stack id, 0 if unknown */
	uint32_t free_stack;  /* the block's free stack id, 0 if unknown */
	unsigned alloc_kind;  /* enum hl_alloc_kind of the block */
	uint64_t detail;      /* SIZE_MISMATCH: the size delete was given; OVERFLOW: bytes
			       * past the end the damage reaches; READ/WRITE calls: the
			       * access's size, 0 if unknown */
	bool at_exit;         /* found by the exit's check: report, never abort */
	uintptr_t fault_pc;   /* READ/WRITE calls: the faulting instruction, whose
			       * stack (from the signal frame) is the error's */
};
/* An error found by a faulting read or write (checks=guard), not a call. */
HL_INLINE bool hl_misuse_is_access(const struct hl_misuse *m)
{
	return m->call == HL_CALL_READ || m->call == HL_CALL_WRITE;
}
/* Reports a pointer that a release call cannot accept (the call is then
 * ignored), with hl_ptr_classify's verdict. */
HL_COLD void hl_misuse_bad_pointer(unsigned call, const void *p, enum hl_ptr_class c);
/* Reports a live block released by the wrong family (delete_size
 * HL_SIZE_UNKNOWN), or by its own family's sized delete of another size
 * (delete_size); the caller releases it. */
HL_COLD void hl_misuse_release_mismatch(unsigned call, const void *p, size_t delete_size);
/* Counts, sends or prints one error; aborts under on_error=abort. */
HL_COLD void hl_misuse_report(const struct hl_misuse *m);
/* enum hl_error_call of a release of kind `release_kind`. */
unsigned hl_misuse_call_of(unsigned release_kind);
/* Misuse errors found so far in this process. */
uint64_t hl_misuse_error_count(void);
/* "ERROR SUMMARY: N errors from M contexts" (standalone, at exit). */
void hl_misuse_print_summary(int fd);
void hl_misuse_fork_prepare(void);
void hl_misuse_fork_parent(void);
void hl_misuse_fork_child(void);

/* ---- guardpage.c: checks=guard, guard_sample= (blocks against PROT_NONE) ---- */

/* checks= (options.h) */
#define HL_CHECKS_FULL 1u
#define HL_CHECKS_GUARD 2u

/* The guard pool's address range ([0, 0) while no block is guarded). */
extern uintptr_t hl_guard_lo, hl_guard_hi;
/* checks=guard: every block up to guard_max is guarded. */
extern bool hl_guard_all;
/* checks=guard or guard_sample=: the allocation paths ask hl_guard_alloc. */
extern bool hl_guard_on;

/* Whether p is in the guard pool (a guarded block, its header or a slot). */
HL_INLINE bool hl_guard_owns(const void *p)
{
	return (uintptr_t)p - hl_guard_lo < hl_guard_hi - hl_guard_lo;
}
/* Reads checks=, guard_sample=, guard_max=; reserves the pool and claims
 * SIGSEGV when a mode is on (the constructor, after hl_checks_init). */
void hl_guard_init(void);
/* The first countdown of a thread's sampling (UINT64_MAX: never). */
uint64_t hl_guard_countdown_start(void);
/* A guarded block of n bytes for an allocation of `kind`, or NULL (too big,
 * the pool full, the kernel refusing): the caller allocates as usual. Its
 * memory is zero. Counts nothing, tracks nothing. */
HL_COLD void *hl_guard_alloc(size_t n, size_t alignment, unsigned kind);
/* Whether this allocation is guarded: always under checks=guard, one in N
 * (tc's countdown) under guard_sample=N. */
HL_INLINE bool hl_guard_wanted(struct hl_thread_cache *tc)
{
	return hl_guard_all || (tc != NULL && --tc->guard_countdown == 0);
}
/* A sampled allocation: the next countdown for tc. */
void hl_guard_sampled(struct hl_thread_cache *tc);
/* Releases a guarded block (out of the large live set already): its pages
 * become PROT_NONE, its slot joins the quarantine with its stacks. */
HL_COLD void hl_guard_release(struct hl_range *r);
/* A block start in the guard pool that was freed: fills m's block, size,
 * kind and stacks from the slot's record and returns true (the block's own
 * header is PROT_NONE and must not be read). */
struct hl_misuse;
bool hl_guard_describe_freed(const void *p, struct hl_misuse *m);
void hl_guard_fork_prepare(void);
void hl_guard_fork_parent(void);
void hl_guard_fork_child(void);

/* ---- guard.c: checks=full (guard bytes, quarantine) ------------------------ */

/* Guard bytes after a block are this byte (MSVC's "no man's land"). */
#define HL_GUARD_CANARY 0xfdu
/* Extra bytes every allocation asks for: redzone= under checks=full, else 0
 * (then no guard and no quarantine: everything below is skipped). */
extern size_t hl_checks_redzone;
/* Reads checks= and redzone= (after the options, before any cache). */
void hl_checks_init(void);
/* Fills a fresh block of n bytes' guard bytes and marks it guarded; fills
 * its body with malloc_fill= unless it is calloc's (kind). */
HL_COLD void hl_checks_arm(struct hl_range *r, size_t n, unsigned kind);
/* A block is about to be released: reports an overflow if its guard bytes
 * changed (before the release is tracked: on_error=abort stops there) and
 * unguards it. */
HL_COLD void hl_checks_check_release(struct hl_range *r, unsigned call);
/* Releases a validated, counted-in-use, checked block under checks=full:
 * into the quarantine (segment blocks) or given back (to its arena past the
 * thread cache if to_arena, as realloc's moves do). */
HL_COLD void hl_checks_release(struct hl_range *r, unsigned call, bool to_arena);
/* The free stack of a quarantined block, 0 if unknown. */
uint32_t hl_checks_free_stack(struct hl_range *r);
/* Checks every guarded live block and every quarantined one (call:
 * HL_CALL_EXIT or HL_CALL_CHECK). */
void hl_checks_sweep(unsigned call);
/* Range bytes held in the quarantine: the global FIFO plus every thread's
 * batch (each under HL_QCACHE_BYTES plus one block). */
uint64_t hl_checks_quarantined_bytes(void);
/* A thread cache goes away: its quarantine batch moves to the global FIFO. */
void hl_checks_cache_retire(struct hl_thread_cache *tc);
void hl_checks_fork_prepare(void);
void hl_checks_fork_parent(void);
void hl_checks_fork_child(void);

/* Whether a block allocated as alloc_kind may be released as release_kind:
 * free takes any C allocation, each delete only its own new. A constant
 * mask at each call site, so one shift and test on free's fast path. */
HL_INLINE bool hl_kind_matches(unsigned release_kind, unsigned alloc_kind)
{
	unsigned accepted = release_kind == HL_KIND_MALLOC
				    ? 1u << HL_KIND_MALLOC | 1u << HL_KIND_ALIGNED | 1u << HL_KIND_CALLOC
				    : 1u << release_kind;
	return (accepted >> alloc_kind) & 1u;
}

#pragma GCC visibility pop

#endif /* HL_HEAP_H */
