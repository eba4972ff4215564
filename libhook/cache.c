/*
 * libhook/cache.c: per-thread caches of free ranges.
 *
 * malloc and free of blocks up to HL_CACHE_MAX bytes pop and push a
 * thread-local list and take no lock. A free of a block that another thread
 * allocated goes into the freeing thread's cache too (no remote queue): when a
 * bin overflows, half of it goes back to the owning arenas in one pass, taking
 * each arena's lock once per run of same-arena blocks. An empty bin refills
 * with a batch carved side by side from one free range.
 *
 * A cached range keeps HL_RANGE_ALLOCATED (its arena must not coalesce it)
 * and has HL_RANGE_CACHED (heap walks and double-free checks skip it).
 */
#include <pthread.h>

#include "heap.h"

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
	if (caches != NULL && !hl_multithreaded) {
		struct hl_thread_stats sum = { 0 };
		hl_caches_sum_locked(&sum);
		for (struct hl_thread_cache *other = caches; other; other = other->next) {
			other->published_bytes = hl_stats_in_use(&other->stats);
			other->alloc_mark = other->published_bytes + HL_PUBLISH_STEP;
		}
		hl_stats_go_multithreaded_locked(&sum);
	}
	if (hl_multithreaded)
		tc->alloc_mark = HL_PUBLISH_STEP;
	tc->next = caches;
	if (caches)
		caches->prev = tc;
	caches = tc;
	hl_unlock(&caches_lock);
	return tc;
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
	hl_tcache = tc;
	hl_fast_tcache = hl_track_enabled ? NULL : tc;
	if (cache_key_ready)
		pthread_setspecific(cache_key, tc);
	return tc;
}

struct hl_range *hl_cache_refill(struct hl_thread_cache *tc, unsigned cls, size_t size)
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
	for (unsigned i = 1; i < n; i++) {
		batch[i]->flags |= HL_RANGE_CACHED;
		set_next(batch[i], bin->head);
		bin->head = batch[i];
	}
	bin->room -= (int32_t)(n - 1);
	return batch[0];
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

void hl_cache_destroy(struct hl_thread_cache *tc)
{
	for (unsigned cls = 0; cls < HL_CACHE_CLASSES; cls++)
		hl_cache_flush(tc, cls, 0);
	hl_lock(&caches_lock);
	if (tc->prev)
		tc->prev->next = tc->next;
	else
		caches = tc->next;
	if (tc->next)
		tc->next->prev = tc->prev;
	hl_stats_retire_locked(tc);
	hl_unlock(&caches_lock);
	atomic_fetch_sub_explicit(&tc->arena->threads, 1, memory_order_relaxed);
	hl_meta_free(tc, sizeof(*tc));
}

void hl_cache_tracking_changed(void)
{
	hl_fast_tcache = hl_track_enabled ? NULL : hl_tcache;
}

void hl_caches_lock(void)
{
	hl_lock(&caches_lock);
}

void hl_caches_unlock(void)
{
	hl_unlock(&caches_lock);
}

void hl_caches_sum_locked(struct hl_thread_stats *out)
{
	for (struct hl_thread_cache *tc = caches; tc; tc = tc->next) {
		out->allocs += tc->stats.allocs;
		out->frees += tc->stats.frees;
		out->bytes_allocated += tc->stats.bytes_allocated;
		out->bytes_freed += tc->stats.bytes_freed;
	}
}

/* After fork only this thread runs. The other threads' caches may have been
 * mid-update, so their ranges are abandoned (they stay allocated in the
 * child) and their counters retired; this thread's cache stays. */
void hl_caches_fork_child(void)
{
	hl_lock_reset(&caches_lock);
	struct hl_thread_cache *self = hl_tcache;
	struct hl_thread_cache *tc = caches;
	while (tc != NULL) {
		struct hl_thread_cache *next = tc->next;
		if (tc != self)
			hl_stats_retire_locked(tc);
		tc = next;
	}
	caches = self;
	if (self) {
		self->next = self->prev = NULL;
	}
}
