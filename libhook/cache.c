/*
 * libhook/cache.c: per-thread caches of free ranges.
 *
 * malloc and free of blocks up to HL_CACHE_MAX bytes pop and push a
 * thread-local list and take no lock. When a bin overflows, half of it goes
 * back to the arena in one pass under its lock. An empty bin first takes back
 * the blocks other threads returned (below), then refills with a batch carved
 * side by side from one free range.
 *
 * A block freed by a thread of another arena goes home: it waits in the
 * freeing thread's packet for its arena (struct hl_remote_packet), and a
 * full packet is pushed, one compare-and-swap, onto the arena's remote_head.
 * The arena's own threads take the packets back into their bins, one packet
 * each time a bin runs dry (file_remote). Reusing such
 * blocks in the freeing thread's cache instead was cheaper per call, but
 * then blocks wandered from cache to cache, each arena's share of the blocks
 * in flight drifted, and every arena's segments grew to the largest share it
 * ever had: an 8-thread ring peaked at 1.6x glibc's RSS.
 *
 * A cached range keeps HL_RANGE_ALLOCATED (its arena must not coalesce it)
 * and has HL_RANGE_CACHED (heap walks and double-free checks skip it).
 */
#include <pthread.h>

#include "heap.h"
#include "tally_hook.h"

HL_TLS struct hl_thread_cache *hl_tcache;
HL_TLS struct hl_thread_cache *hl_fast_tcache;
HL_TLS bool hl_thread_exited;

static struct hl_lock caches_lock = HL_LOCK_INIT;
static struct hl_thread_cache *caches; /* every live thread cache */
static pthread_key_t cache_key;
static bool cache_key_ready;

static struct hl_range *next_of(struct hl_range *r)
{
	return ((struct hl_free_links *)hl_range_data(r))->next;
}

static void set_next(struct hl_range *r, struct hl_range *next)
{
	((struct hl_free_links *)hl_range_data(r))->next = next;
}

/* Blocks a bin may hold: about HL_CACHE_BIN_BYTES worth, at least 4 so big
 * blocks still batch, at most 64 so refills stay short. */
#ifndef HL_CACHE_BIN_BYTES
#define HL_CACHE_BIN_BYTES 16384
#endif
static uint32_t bin_limit(unsigned cls)
{
	size_t size = cls < HL_TLSF_LINEAR ? (size_t)cls * HL_ALIGN
		: ((size_t)HL_TLSF_SMALL << ((cls - HL_TLSF_LINEAR) / HL_TLSF_SUB));
	size_t limit = HL_CACHE_BIN_BYTES / (size ? size : HL_ALIGN);
	if (limit > 64)
		limit = 64;
	if (limit < 4)
		limit = 4;
	return (uint32_t)limit;
}

/* A packet is sent when full or holding this many bytes (so that blocks of
 * big classes do not idle in it); an arena's remote stack is drained into
 * the arena by a sender that finds more than HL_REMOTE_MAX_BYTES on it (the
 * arena's threads are not refilling: idle, or gone). */
#define HL_REMOTE_SEND_BYTES 16384u
#define HL_REMOTE_MAX_BYTES ((int64_t)1 << 20)
/* Emptied packets a thread keeps for its own sends. */
#define HL_SPARE_PACKETS_MAX 8u

static void cache_thread_exit(void *arg)
{
	struct hl_thread_cache *tc = arg;
	if (tc == NULL)
		return;
	if (hl_track_enabled)
		hl_track_thread_exit();
	hl_tcache = NULL;
	hl_fast_tcache = NULL;
	hl_thread_exited = true;
	hl_cache_destroy(tc);
}

/* Called from hl_start (a constructor): threads created before it cannot
 * allocate, so only the main thread's cache lacks the exit hook, and the
 * main thread's cache lives until the process ends anyway. */
void hl_cache_init_key(void)
{
	if (pthread_key_create(&cache_key, cache_thread_exit) == 0)
		cache_key_ready = true;
}

/* A cache linked into the list of all caches, not yet bound to a thread. */
static struct hl_thread_cache *cache_new(bool shared)
{
	hl_init();
	struct hl_thread_cache *tc = hl_meta_alloc(sizeof(*tc));
	if (tc == NULL)
		return NULL;
	tc->arena = hl_arena_pick();
	for (unsigned cls = 0; cls < HL_CACHE_CLASSES; cls++) {
		tc->bins[cls].limit = shared ? 0 : bin_limit(cls);
		tc->bins[cls].room = (int32_t)tc->bins[cls].limit;
	}
	hl_lock(&caches_lock);
	bool second = caches != NULL && !hl_relaxed_load(&hl_multithreaded);
	if (second) {
		struct hl_thread_stats sum = { 0 };
		hl_caches_sum_locked(&sum);
		for (struct hl_thread_cache *other = caches; other; other = other->next) {
			int64_t in_use = hl_stats_in_use(&other->stats);
			hl_relaxed_store(&other->published_bytes, in_use);
			hl_relaxed_store(&other->alloc_mark, in_use + HL_PUBLISH_STEP);
			hl_stats_free_mark_set(other);
		}
		hl_stats_go_multithreaded_locked(&sum);
	}
	if (hl_relaxed_load(&hl_multithreaded)) {
		hl_relaxed_store(&tc->alloc_mark, HL_PUBLISH_STEP);
		hl_stats_free_mark_set(tc);
	} else {
		hl_relaxed_store(&tc->free_mark, UINT64_MAX);
	}
	tc->guard_countdown = hl_guard_countdown_start();
	tc->next = caches;
	if (caches)
		caches->prev = tc;
	caches = tc;
	hl_unlock(&caches_lock);
	if (second && hl_tally_hot->mode == HL_TALLY_MODE_ON)
		hl_tally_unseen_thread(); /* a thread pthread_create did not show us */
	return tc;
}

/* The inline fast paths (fastpath.h) serve a thread once the options are
 * known, unless checks=full is on (guard bytes and the quarantine are the
 * full path's). A thread whose cache was made before that (a library
 * constructor's thread) keeps the full path. */
static bool fast_paths_on;

static struct hl_thread_cache *fast_cache(struct hl_thread_cache *tc)
{
	/* guard_sample= counts allocations in the fast path's tail, which
	 * runs for every allocation only while tracking is on. */
	bool sampling_missed = hl_guard_on && !hl_track_enabled;
	return fast_paths_on && hl_checks_redzone == 0 && !hl_guard_all && !sampling_missed
		       ? tc
		       : NULL;
}

struct hl_thread_cache *hl_cache_create_shared(void)
{
	return cache_new(true);
}

struct hl_thread_cache *hl_cache_create(void)
{
	struct hl_thread_cache *tc = cache_new(false);
	if (tc == NULL)
		return NULL;
	hl_delay_attach(tc);
	hl_tcache = tc;
	hl_fast_tcache = fast_cache(tc);
	if (cache_key_ready)
		pthread_setspecific(cache_key, tc);
	return tc;
}

static void packet_recycle(struct hl_thread_cache *tc, struct hl_remote_packet *p)
{
	if (tc == NULL || tc->spare_packet_count >= HL_SPARE_PACKETS_MAX) {
		hl_meta_free(p, HL_REMOTE_PACKET_BYTES);
		return;
	}
	p->next = tc->spare_packets;
	tc->spare_packets = p;
	tc->spare_packet_count++;
}

static struct hl_remote_packet *packet_get(struct hl_thread_cache *tc)
{
	struct hl_remote_packet *p = tc->spare_packets;
	if (p == NULL)
		return hl_meta_alloc(HL_REMOTE_PACKET_BYTES);
	tc->spare_packets = p->next;
	tc->spare_packet_count--;
	p->next = NULL;
	p->count = 0;
	p->bytes = 0;
	return p;
}

/* Files a packet's blocks into tc's bins, flushing any that overflow. */
static void packet_file(struct hl_thread_cache *tc, struct hl_remote_packet *p)
{
	for (uint32_t i = 0; i < p->count; i++) {
		struct hl_range *r = p->blocks[i];
		unsigned cls = p->classes[i];
		struct hl_cache_bin *bin = &tc->bins[cls];
		set_next(r, bin->head);
		bin->head = r;
		if (--bin->room < 0)
			hl_cache_flush(tc, cls, bin->limit / 2);
	}
}

/* Gives a packet's blocks to their arena a, under its lock. */
static void packet_give_back(struct hl_arena *a, struct hl_remote_packet *p)
{
	hl_lock(&a->lock);
	a->remote_frees = true;
	for (uint32_t i = 0; i < p->count; i++)
		hl_arena_free_locked(a, p->blocks[i]);
	hl_unlock(&a->lock);
}

/* Takes every packet on a's remote stack (NULL if none), newest first. */
static struct hl_remote_packet *remote_take(struct hl_arena *a)
{
	if (atomic_load_explicit(&a->remote_head, memory_order_relaxed) == NULL)
		return NULL;
	struct hl_remote_packet *list = atomic_exchange_explicit(&a->remote_head, NULL,
								 memory_order_acquire);
	int64_t bytes = 0;
	for (struct hl_remote_packet *p = list; p != NULL; p = p->next)
		bytes += p->bytes;
	atomic_fetch_sub_explicit(&a->remote_bytes, bytes, memory_order_relaxed);
	return list;
}

/* Files the next packet of tc's inbox, first moving what other threads sent
 * its arena into the inbox if it is empty; false if there was none. A packet
 * at a time, when a bin runs dry: a thread that was descheduled finds many
 * packets waiting, and filing them all at once overflowed its bins into the
 * arena, from which it carved them again (an 8-thread ring on 2 CPUs spent a
 * fifth of its time in that). */
static bool file_remote(struct hl_thread_cache *tc)
{
	if (tc->inbox == NULL &&
	    (tc->inbox = remote_take(tc->arena)) == NULL)
		return false;
	struct hl_remote_packet *p = tc->inbox;
	tc->inbox = p->next;
	tc->borrows = true;
	packet_file(tc, p);
	hl_emit_clock_resync(); /* other threads' frees: ordered by ticks */
	packet_recycle(tc, p);
	return true;
}

/* Hands every packet on a's remote stack to the arena itself. */
static void drain_remote(struct hl_thread_cache *tc, struct hl_arena *a)
{
	struct hl_remote_packet *p = remote_take(a);
	while (p != NULL) {
		struct hl_remote_packet *next = p->next;
		packet_give_back(a, p);
		packet_recycle(tc, p);
		p = next;
	}
}

static void packet_send(struct hl_thread_cache *tc, struct hl_arena *a,
			struct hl_remote_packet *p)
{
	if (atomic_load_explicit(&a->threads, memory_order_relaxed) == 0) {
		packet_give_back(a, p); /* no thread would take it back */
		packet_recycle(tc, p);
		return;
	}
	uint32_t bytes = p->bytes;
	struct hl_remote_packet *old = atomic_load_explicit(&a->remote_head, memory_order_relaxed);
	do
		p->next = old;
	while (!atomic_compare_exchange_weak_explicit(&a->remote_head, &old, p,
						      memory_order_release,
						      memory_order_relaxed));
	if (atomic_fetch_add_explicit(&a->remote_bytes, bytes, memory_order_relaxed) + bytes >
	    HL_REMOTE_MAX_BYTES)
		drain_remote(tc, a);
}

/* tc has no packet for arena a yet: one for r, or r straight to the arena
 * when there is no memory for a packet. */
HL_NOINLINE static void free_remote_first(struct hl_thread_cache *tc, struct hl_range *r,
					  struct hl_arena *a)
{
	struct hl_remote_packet *p = tc->remote[a - hl_arenas] = packet_get(tc);
	if (p == NULL) {
		hl_lock(&a->lock);
		hl_arena_free_locked(a, r);
		hl_unlock(&a->lock);
		return;
	}
	hl_cache_free_remote(tc, r, a);
}

HL_NOINLINE static void free_remote_send(struct hl_thread_cache *tc, struct hl_arena *a,
					 struct hl_remote_packet *p)
{
	tc->remote[a - hl_arenas] = NULL;
	packet_send(tc, a, p);
}

/* Every free of a block another arena's thread allocated (a ring of
 * threads: every free) comes here: no frame on the way that only adds the
 * block to its packet, the packet's first block and its sending are calls
 * in tail position. */
void hl_cache_free_remote(struct hl_thread_cache *tc, struct hl_range *r, struct hl_arena *a)
{
	struct hl_remote_packet *p = tc->remote[a - hl_arenas];
	if (hl_unlikely(p == NULL)) {
		free_remote_first(tc, r, a);
		return;
	}
	hl_range_mark_cached(r);
	uint32_t count = p->count;
	uint32_t size = r->size;
	p->blocks[count] = r;
	p->classes[count] = (uint8_t)hl_class_floor(size);
	uint32_t bytes = p->bytes + size;
	p->bytes = bytes;
	p->count = ++count;
	/* Sent when full, or at once when no thread of the arena is left to
	 * take it back (packet_send then gives it to the arena): unsent, it
	 * would wait in this thread, and so would one begun before the
	 * arena's last thread exited. */
	if (count == HL_REMOTE_PACKET_BLOCKS || bytes >= HL_REMOTE_SEND_BYTES ||
	    atomic_load_explicit(&a->threads, memory_order_relaxed) == 0)
		free_remote_send(tc, a, p);
}

/* An empty bin of an exact class may take a block of one of the next
 * HL_BORROW_CLASSES classes (at most 32 bytes more) before carving new
 * ones. Blocks come home in packets of mixed sizes, so one class can run dry
 * while its neighbours hold plenty; carving then grew the heap for nothing
 * (8-thread ring: peak RSS 1.16x glibc's without, 1.10x with). Only a thread
 * that has filed packets borrows: elsewhere borrowing wore the small
 * classes away (a borrowed block comes back to its own, bigger class, so
 * the class it served stays empty and borrows again): 17.6k of churn's 18.2k
 * refills at 2% were borrows, 679 refills without them, same peak RSS. */
#define HL_BORROW_CLASSES 2u

/* A batch carved for tc's empty bin cls; the first range is the caller's. */
HL_NOINLINE static struct hl_range *refill_carve(struct hl_thread_cache *tc, unsigned cls,
						 size_t size)
{
	struct hl_range *batch[64];
	struct hl_cache_bin *bin = &tc->bins[cls];
	unsigned want = bin->limit / 2;
	if (want > 64)
		want = 64;
	if (want == 0)
		want = 1;
	struct hl_arena *a = tc->arena;
	hl_lock(&a->lock);
	unsigned n = hl_arena_carve_locked(a, size, want, batch);
	hl_unlock(&a->lock);
	if (n == 0)
		return NULL;
	hl_emit_clock_resync(); /* the arena's ranges: other threads may have freed them */
	for (unsigned i = 1; i < n; i++) {
		hl_range_mark_cached(batch[i]);
		set_next(batch[i], bin->head);
		bin->head = batch[i];
	}
	bin->room -= (int32_t)(n - 1);
	return batch[0];
}

/* Whether other threads sent tc's arena blocks that tc has not filed. */
static bool remote_waiting(const struct hl_thread_cache *tc)
{
	return tc->inbox != NULL ||
	       atomic_load_explicit(&tc->arena->remote_head, memory_order_relaxed) != NULL;
}

/* The order is the heap's: blocks sent home first (else they wait while the
 * heap grows), then a neighbour's, then new ones. Borrowing is most refills
 * on churn (17.6k of 18.2k at 2%), so it comes without a frame for the
 * carving's batch. */
struct hl_range *hl_cache_refill(struct hl_thread_cache *tc, unsigned cls, size_t size)
{
	struct hl_cache_bin *bin = &tc->bins[cls];
	while (bin->head == NULL && remote_waiting(tc) && file_remote(tc))
		;
	if (bin->head != NULL)
		return hl_bin_pop(bin);
	if (tc->borrows && cls + HL_BORROW_CLASSES < HL_TLSF_LINEAR) {
		for (unsigned up = 1; up <= HL_BORROW_CLASSES; up++)
			if (tc->bins[cls + up].head != NULL)
				return hl_bin_pop(&tc->bins[cls + up]);
	}
	return refill_carve(tc, cls, size);
}

/* Returns ranges to their arenas, holding each arena's lock across a run.
 * `own` is the flushing thread's arena: ranges of any other arena were
 * allocated by another thread, which the arena remembers (carve). */
static void give_back(struct hl_range *list, struct hl_arena *own)
{
	struct hl_arena *held = NULL;
	while (list != NULL) {
		struct hl_range *r = list;
		list = next_of(r);
		struct hl_arena *a = hl_arena_of(r);
		if (a != held) {
			if (held)
				hl_unlock(&held->lock);
			hl_lock(&a->lock);
			held = a;
			if (a != own)
				a->remote_frees = true;
		}
		hl_arena_free_locked(a, r);
	}
	if (held)
		hl_unlock(&held->lock);
}

void hl_cache_flush(struct hl_thread_cache *tc, unsigned cls, uint32_t keep)
{
	struct hl_cache_bin *bin = &tc->bins[cls];
	if ((int64_t)bin->limit - bin->room <= (int64_t)keep)
		return;
	/* Keep the most recently freed (hottest) `keep` at the head. */
	struct hl_range *last_kept = NULL;
	struct hl_range *r = bin->head;
	for (uint32_t i = 0; i < keep; i++) {
		last_kept = r;
		r = next_of(r);
	}
	if (last_kept)
		set_next(last_kept, NULL);
	else
		bin->head = NULL;
	bin->room = (int32_t)(bin->limit - keep);
	give_back(r, tc->arena);
}

void hl_cache_bin_overflow(struct hl_thread_cache *tc, struct hl_cache_bin *bin)
{
	hl_cache_flush(tc, (unsigned)(bin - tc->bins), bin->limit / 2);
}

void hl_cache_put(struct hl_thread_cache *tc, struct hl_range *r)
{
	struct hl_arena *a = hl_arena_of(r);
	if (a != tc->arena) {
		hl_cache_free_remote(tc, r, a);
		return;
	}
	unsigned cls = hl_class_floor(r->size);
	struct hl_cache_bin *bin = &tc->bins[cls];
	hl_range_mark_cached(r);
	set_next(r, bin->head);
	bin->head = r;
	if (hl_unlikely(--bin->room < 0))
		hl_cache_flush(tc, cls, bin->limit / 2);
}

void hl_cache_destroy(struct hl_thread_cache *tc)
{
	hl_checks_cache_retire(tc);
	hl_delay_flush(tc);
	for (unsigned i = 0; i < hl_arena_count; i++) {
		struct hl_remote_packet *p = tc->remote[i];
		if (p != NULL) {
			packet_give_back(&hl_arenas[i], p);
			hl_meta_free(p, HL_REMOTE_PACKET_BYTES);
			tc->remote[i] = NULL;
		}
	}
	while (file_remote(tc))
		;
	/* The arena's last thread takes what was pushed meanwhile into the
	 * arena; senders that see no thread left give to the arena directly.
	 * (A packet pushed by a sender that looked just before the count fell
	 * waits for the arena's next thread, or for malloc_trim.) */
	if (atomic_fetch_sub_explicit(&tc->arena->threads, 1, memory_order_relaxed) == 1)
		drain_remote(tc, tc->arena);
	for (unsigned cls = 0; cls < HL_CACHE_CLASSES; cls++)
		hl_cache_flush(tc, cls, 0);
	while (tc->spare_packets != NULL) {
		struct hl_remote_packet *p = tc->spare_packets;
		tc->spare_packets = p->next;
		hl_meta_free(p, HL_REMOTE_PACKET_BYTES);
	}
	hl_lock(&caches_lock);
	if (tc->prev)
		tc->prev->next = tc->next;
	else
		caches = tc->next;
	if (tc->next)
		tc->next->prev = tc->prev;
	hl_stats_retire_locked(tc);
	hl_unlock(&caches_lock);
	hl_delay_free_ring(tc);
	hl_meta_free(tc, sizeof(*tc));
}

void hl_caches_drain_remote(void)
{
	struct hl_thread_cache *tc = hl_tcache;
	for (unsigned i = 0; tc != NULL && i < hl_arena_count; i++) {
		struct hl_remote_packet *p = tc->remote[i];
		tc->remote[i] = NULL;
		if (p != NULL)
			packet_send(tc, &hl_arenas[i], p);
	}
	for (unsigned i = 0; i < hl_arena_count; i++)
		if (atomic_load_explicit(&hl_arenas[i].remote_head, memory_order_relaxed) != NULL)
			drain_remote(NULL, &hl_arenas[i]);
}

void hl_cache_options_known(void)
{
	fast_paths_on = true;
	hl_delay_init();
	if (hl_tcache != NULL) {
		hl_tcache->guard_countdown = hl_guard_countdown_start();
		hl_delay_attach(hl_tcache);
	}
	hl_fast_tcache = fast_cache(hl_tcache);
}

void hl_caches_lock(void)
{
	hl_lock(&caches_lock);
}

void hl_caches_unlock(void)
{
	hl_unlock(&caches_lock);
}

bool hl_caches_lock_is_held(void)
{
	return hl_lock_is_held(&caches_lock) && hl_lock_is_mine(&caches_lock);
}

void hl_caches_sum_locked(struct hl_thread_stats *out)
{
	hl_assert_held(&caches_lock);
	for (struct hl_thread_cache *tc = caches; tc; tc = tc->next) {
		out->allocs += hl_relaxed_load(&tc->stats.allocs);
		out->frees += hl_relaxed_load(&tc->stats.frees);
		out->bytes_allocated += hl_relaxed_load(&tc->stats.bytes_allocated);
		out->bytes_freed += hl_relaxed_load(&tc->stats.bytes_freed);
	}
}

void hl_caches_each_locked(void (*fn)(struct hl_thread_cache *tc, void *arg), void *arg)
{
	hl_assert_held(&caches_lock);
	for (struct hl_thread_cache *tc = caches; tc; tc = tc->next)
		fn(tc, arg);
}

/* After fork only this thread runs. The other threads' caches may have been
 * mid-update, so their ranges are abandoned (they stay allocated in the
 * child) and their counters retired; this thread's cache stays. */
void hl_caches_fork_hold(void)
{
	hl_lock_reset(&caches_lock);
	hl_lock(&caches_lock);
}

void hl_caches_fork_child(void)
{
	hl_lock_reset(&caches_lock);
	hl_lock(&caches_lock); /* the only thread: for the _locked calls' asserts */
	struct hl_thread_cache *self = hl_tcache;
	struct hl_thread_cache *tc = caches;
	while (tc != NULL) {
		struct hl_thread_cache *next = tc->next;
		if (tc != self)
			hl_stats_retire_locked(tc);
		tc = next;
	}
	caches = self;
	hl_unlock(&caches_lock);
	/* Only this thread is left to take packets back: an arena that had
	 * other threads now has none, and senders give to it directly. */
	for (unsigned i = 0; i < hl_arena_count; i++)
		atomic_store_explicit(&hl_arenas[i].threads, 0, memory_order_relaxed);
	if (self) {
		self->next = self->prev = NULL;
		atomic_store_explicit(&self->arena->threads, 1, memory_order_relaxed);
	}
	/* Packets sent to the other threads' arenas would wait for a thread
	 * that no longer exists here. */
	hl_caches_drain_remote();
}
