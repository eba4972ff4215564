/*
 * libhook/guard.c: checks=full, the heap misuse checks that cost memory:
 * guard bytes after every block (overflow) and a quarantine of freed blocks
 * (write after free, double free of a block already reused by the program's
 * next allocations).
 *
 * Guard bytes. Under checks=full an allocation of n bytes asks its size
 * class for n + redzone bytes (alloc.c), so at least `redzone` bytes, never
 * fewer than one, follow the block even when n fills its class exactly.
 * Every byte from n to the range's usable end is HL_GUARD_CANARY and the
 * range has HL_RANGE_CANARY. free, realloc, the exit and each on-demand leak
 * check read them back: a changed byte is an overflow, reported with the
 * first damaged byte, how far past the end the damage reaches and the
 * block's allocation stack. A write just before the block lands in its
 * header, whose check byte catches it (HL_PTR_CORRUPT, "heap underflow").
 * malloc_usable_size answers n: the guard bytes are not the program's.
 *
 * Quarantine. A freed segment block is not reused at once: the first 8
 * bytes of its body hold the free stack id and its complement (ASan keeps
 * free stacks in the freed chunk too), every other byte up to its usable
 * end is the fill byte, it has HL_RANGE_QUARANTINED (still ALLOCATED for its
 * arena, so never coalesced or handed out; not live for walks, scans and
 * free, so a second free is a double free with both stacks) and it joins a
 * FIFO bounded in bytes (quarantine=MiB, 20 by default as valgrind's
 * --freelist-vol). A block pushed out of the FIFO, and every block in it at
 * exit and at each leak check, is read back: a changed byte is a write
 * after free, reported with the alloc and free stacks.
 *
 * Blocks of more than 1 MiB (their own mapping) are quarantined the same
 * way while they are at most a quarter of the quarantine's bound (5 MiB by
 * default), so one block cannot flush the rest out; a bigger one goes back
 * to the mapping cache or the kernel at once, as ASan's do when they
 * exceed its quarantine.
 *
 * Limits, as valgrind's past --freelist-vol: once a block has left the
 * quarantine and been handed out again, a stale free of its address frees
 * the new block, and a stale write lands in it unseen.
 *
 * The FIFO is a ring of range pointers in the hook's own memory under
 * quarantine_lock (-> meta_lock for its growth); blocks pushed out are
 * checked and released after the lock is dropped, and errors are reported
 * with no lock held (reporting unwinds and may write to the socket).
 *
 * Threads. As ASan's per-thread quarantine caches: a free goes into its
 * thread's batch (hl_thread_cache.quarantine, under its own lock, which
 * only sweeps and fork contend for), and the batch joins the FIFO in one
 * lock round when it holds HL_QCACHE_BLOCKS blocks or HL_QCACHE_BYTES
 * bytes; one global lock per free made cross-thread frees (every free of
 * an 8-thread ring) slower than ASan. Costs: the FIFO is FIFO per batch, a
 * block joins it up to a batch late (it stays quarantined longer, never
 * shorter); the bound is the FIFO's, and each live thread's batch may hold
 * up to HL_QCACHE_BYTES plus one block more. A batch is checked by every
 * sweep (exit, leak check) in place, joins the FIFO when its thread exits
 * (hl_checks_cache_retire), and in a fork child the other threads' batches
 * (their locks held across fork) join the FIFO.
 */
#include <string.h>

#include "heap.h"

size_t hl_checks_redzone;

/* A guarded span never exceeds this (a large block may sit in a cached
 * mapping far bigger than it asked for: only its first bytes are guarded). */
#define GUARD_SPAN_MAX 16384u
/* Findings collected under a lock per pass of a sweep, then reported. */
#define FINDINGS_MAX 32u

/* The first 8 bytes of a quarantined block. */
struct free_note {
	uint32_t free_stack;
	uint32_t complement; /* ~free_stack: a write over the note is seen */
};

static struct hl_lock quarantine_lock = HL_LOCK_INIT;
static struct hl_range **ring;  /* quarantine_lock: oldest at ring[head] */
/* ring_cap is 0 or a power of two: positions wrap with a mask, not a
 * division (a divide per push and pop was 5% of sqlite3's time). */
static size_t ring_cap, ring_head, ring_count;
static uint64_t ring_bytes;     /* range bytes in the ring */

/* Runs of the canary and of the fill byte, compared against with memcmp:
 * glibc's vector compare reads a freed 4 KiB block about 8 times faster
 * than a loop of 8-byte words. A mismatch (or a run not yet set) leaves
 * the rest to the byte loop, which finds the byte. */
#define PATTERN_BYTES 1024u
static uint8_t canary_run[PATTERN_BYTES], fill_run[PATTERN_BYTES];

void hl_checks_init(void)
{
	if (hl_options.checks == HL_CHECKS_FULL)
		hl_checks_redzone = hl_options.redzone ? hl_options.redzone : 1;
	memset(canary_run, HL_GUARD_CANARY, sizeof(canary_run));
	memset(fill_run, (int)hl_options.fill, sizeof(fill_run));
}

static size_t usable_of(struct hl_range *r)
{
	return (hl_range_flags(r) & HL_RANGE_LARGE) ? hl_large_usable(r) : hl_range_usable(r);
}

/* End of the guarded span of a block of n bytes, as an offset from its start. */
static size_t guard_end(struct hl_range *r, size_t n)
{
	size_t usable = usable_of(r);
	return usable - n > GUARD_SPAN_MAX ? n + GUARD_SPAN_MAX : usable;
}

/* First byte of [p, end) that is not b (HL_GUARD_CANARY or the fill byte),
 * or NULL. */
static const uint8_t *first_other(const uint8_t *p, const uint8_t *end, uint8_t b)
{
	const uint8_t *run = b == HL_GUARD_CANARY ? canary_run : fill_run;
	while (p < end) {
		size_t len = (size_t)(end - p) < PATTERN_BYTES ? (size_t)(end - p) : PATTERN_BYTES;
		if (memcmp(p, run, len) != 0)
			break;
		p += len;
	}
	for (; p < end; p++)
		if (*p != b)
			return p;
	return NULL;
}

/* Last byte of [start, end) that is not b; one is known to exist. */
static const uint8_t *last_other(const uint8_t *start, const uint8_t *end, uint8_t b)
{
	while (end > start && end[-1] == b)
		end--;
	return end - 1;
}

void hl_checks_arm(struct hl_range *r, size_t n, unsigned kind)
{
	if (hl_range_flags(r) & HL_RANGE_LARGE)
		hl_large_of(r)->slack = (uint32_t)(hl_large_usable(r) - n);
	uint8_t *data = hl_range_data(r);
	/* calloc zeroes after this, or counts on fresh pages being zero */
	if (hl_options.malloc_fill <= 255 && kind != HL_KIND_CALLOC)
		memset(data, (int)hl_options.malloc_fill, n);
	memset(data + n, HL_GUARD_CANARY, guard_end(r, n) - n);
	hl_range_mark(r, HL_RANGE_CANARY);
}

/* Whether a guarded block's guard bytes are intact; else fills *m. */
static bool guard_intact(struct hl_range *r, unsigned call, struct hl_misuse *m)
{
	size_t n = hl_block_requested(r);
	const uint8_t *data = hl_range_data(r);
	const uint8_t *end = data + guard_end(r, n);
	const uint8_t *first = first_other(data + n, end, HL_GUARD_CANARY);
	if (first == NULL)
		return true;
	const uint8_t *last = last_other(first, end, HL_GUARD_CANARY);
	*m = (struct hl_misuse){
		.kind = HL_ERROR_OVERFLOW, .call = call, .address = first, .block = data,
		.block_size = n, .alloc_stack = hl_range_stack_id(r), .alloc_kind = hl_range_kind(r),
		.detail = (uint64_t)(last - (data + n)) + 1,
	};
	return false;
}

void hl_checks_check_release(struct hl_range *r, unsigned call)
{
	if (!hl_block_is_guarded(r))
		return;
	struct hl_misuse m;
	bool intact = guard_intact(r, call, &m);
	/* Unguarded first: under on_error=abort the report does not return,
	 * and the exit's sweep must not find the same damage again. */
	hl_range_unmark(r, HL_RANGE_CANARY);
	if (!intact)
		hl_misuse_report(&m);
}

/* ---- quarantine ------------------------------------------------------------ */

uint32_t hl_checks_free_stack(struct hl_range *r)
{
	struct free_note note;
	memcpy(&note, hl_range_data(r), sizeof(note));
	return note.complement == ~note.free_stack ? note.free_stack : 0;
}

/* Whether a quarantined block still holds its note and fill; else fills *m. */
static bool fill_intact(struct hl_range *r, unsigned call, struct hl_misuse *m)
{
	const uint8_t *data = hl_range_data(r);
	struct free_note note;
	memcpy(&note, data, sizeof(note));
	const uint8_t *first = NULL;
	if (note.complement != ~note.free_stack)
		first = data; /* somewhere in the note: its start is all we can say */
	else
		first = first_other(data + sizeof(note), data + usable_of(r),
				    (uint8_t)hl_options.fill);
	if (first == NULL)
		return true;
	*m = (struct hl_misuse){
		.kind = HL_ERROR_USE_AFTER_FREE, .call = call, .address = first, .block = data,
		.block_size = hl_block_requested(r), .alloc_stack = hl_range_stack_id(r),
		.free_stack = hl_checks_free_stack(r), .alloc_kind = hl_range_kind(r),
	};
	return false;
}

/* Fills a block freed with free stack `stack` for the quarantine. */
static void quarantine_fill(struct hl_range *r, uint32_t stack)
{
	uint8_t *data = hl_range_data(r);
	struct free_note note = { stack, ~stack };
	memset(data + sizeof(note), (int)hl_options.fill, usable_of(r) - sizeof(note));
	memcpy(data, &note, sizeof(note));
}

/* A block leaves the quarantine: checked, then given back for reuse. A
 * block whose header was overwritten stays out of the heap for good: its
 * size cannot be trusted to give it back. */
static void quarantine_leave(struct hl_range *r, unsigned call)
{
	struct hl_misuse m;
	if (!hl_range_check_ok(r)) {
		m = (struct hl_misuse){ .kind = HL_ERROR_HEADER_CORRUPT, .call = call,
					.address = hl_range_data(r), .block = hl_range_data(r) };
		hl_misuse_report(&m);
		return;
	}
	if (!fill_intact(r, call, &m))
		hl_misuse_report(&m);
	hl_range_unmark(r, HL_RANGE_QUARANTINED);
	hl_release_core_uncounted(r);
}

/* The index of the i-th oldest block. */
static size_t ring_slot(size_t i)
{
	return (ring_head + i) & (ring_cap - 1);
}

/* Doubles the ring; false if there is no memory for it. */
static bool ring_grow_locked(void)
{
	hl_assert_held(&quarantine_lock);
	size_t cap = ring_cap ? ring_cap * 2 : 4096;
	struct hl_range **bigger = hl_meta_alloc(cap * sizeof(*bigger));
	if (bigger == NULL)
		return false;
	for (size_t i = 0; i < ring_count; i++)
		bigger[i] = ring[ring_slot(i)];
	if (ring != NULL)
		hl_meta_free(ring, ring_cap * sizeof(*ring));
	ring = bigger;
	ring_cap = cap;
	ring_head = 0;
	return true;
}

/* The bytes a quarantined block holds back: its range, or its mapping's
 * usable bytes for a large block (whose range size is 0). */
static uint64_t held_bytes(struct hl_range *r)
{
	return (hl_range_flags(r) & HL_RANGE_LARGE) ? hl_large_usable(r) : r->size;
}

static struct hl_range *ring_pop_locked(void)
{
	hl_assert_held(&quarantine_lock);
	struct hl_range *r = ring[ring_head];
	ring_head = ring_slot(1);
	ring_count--;
	ring_bytes -= held_bytes(r);
	return r;
}

/* Appends a block to the FIFO; false if there is no room to remember it. */
static bool ring_push_locked(struct hl_range *r)
{
	hl_assert_held(&quarantine_lock);
	if (ring_count == ring_cap && !ring_grow_locked())
		return false;
	ring[ring_slot(ring_count)] = r;
	ring_count++;
	ring_bytes += held_bytes(r);
	return true;
}

/* Blocks taken out of the FIFO under the lock, checked after it. */
#define OUT_MAX (HL_QCACHE_BLOCKS + FINDINGS_MAX)

/* Appends n blocks (a block with no room goes straight through to out),
 * then takes out the oldest while the FIFO is over its bound, up to OUT_MAX
 * blocks in all; returns how many are in out. */
static unsigned ring_put_locked(struct hl_range *const *in, unsigned n, struct hl_range **out)
{
	hl_assert_held(&quarantine_lock);
	uint64_t limit = (uint64_t)hl_options.quarantine_mib << 20;
	unsigned nout = 0;
	for (unsigned i = 0; i < n; i++)
		if (!ring_push_locked(in[i]))
			out[nout++] = in[i];
	while (ring_bytes > limit && nout < OUT_MAX)
		out[nout++] = ring_pop_locked();
	return nout;
}

/* Blocks leave the FIFO 20 MiB of frees after they entered it: their
 * headers and bodies are in memory, not in any cache, and reading them back
 * one after the other waited for each miss in turn (memcmp was 18% of
 * sqlite3's time under checks=full). ring_leave knows which blocks come
 * next, so it prefetches: a header PREFETCH_AHEAD blocks ahead, and half as
 * far ahead, once that header is in to give the size, the first
 * PREFETCH_BODY bytes of the body and the next range's header, which the
 * release reads to coalesce. A prefetch never faults, so a damaged size
 * costs nothing but a useless prefetch. */
#define PREFETCH_AHEAD 8u
#define PREFETCH_BODY 512u

static void prefetch_body(struct hl_range *r)
{
	const char *data = hl_range_data(r);
	size_t n = PREFETCH_BODY;
	if (!(hl_range_flags(r) & HL_RANGE_LARGE)) {
		__builtin_prefetch((const char *)r + r->size);
		if (hl_range_usable(r) < n)
			n = hl_range_usable(r);
	}
	for (size_t at = 0; at < n; at += 64)
		__builtin_prefetch(data + at);
}

/* Checks and releases the blocks taken out, with no lock held; then, while
 * a pass took all it could, takes out more until the FIFO is within its
 * bound. */
static void ring_leave(struct hl_range **out, unsigned nout, unsigned call)
{
	for (;;) {
		for (unsigned i = 0; i < nout && i < PREFETCH_AHEAD; i++)
			__builtin_prefetch(out[i]);
		for (unsigned i = 0; i < nout && i < PREFETCH_AHEAD / 2; i++)
			prefetch_body(out[i]);
		for (unsigned i = 0; i < nout; i++) {
			if (i + PREFETCH_AHEAD < nout)
				__builtin_prefetch(out[i + PREFETCH_AHEAD]);
			if (i + PREFETCH_AHEAD / 2 < nout)
				prefetch_body(out[i + PREFETCH_AHEAD / 2]);
			quarantine_leave(out[i], call);
		}
		if (nout < OUT_MAX)
			return;
		hl_lock(&quarantine_lock);
		nout = ring_put_locked(NULL, 0, out);
		hl_unlock(&quarantine_lock);
	}
}

/* Moves a thread's batch into the FIFO (q->lock held by the caller, taken
 * before quarantine_lock); returns the blocks to check and release. */
static unsigned cache_flush_locked(struct hl_quarantine_cache *q, struct hl_range **out)
{
	hl_assert_held(&q->lock);
	hl_lock(&quarantine_lock);
	unsigned nout = ring_put_locked(q->blocks, q->count, out);
	hl_unlock(&quarantine_lock);
	q->count = 0;
	q->bytes = 0;
	return nout;
}

/* Puts a freed segment block into the quarantine: into this thread's batch,
 * which joins the global FIFO when full (one lock round per batch, not per
 * free: a global lock per free made cross-thread frees slower than ASan's);
 * a thread without a cache puts it into the FIFO directly. */
static void quarantine_put(struct hl_range *r, unsigned call)
{
	struct hl_range *out[OUT_MAX];
	unsigned nout;
	uint32_t free_stack = hl_track_free_stack();
	struct hl_thread_cache *tc = hl_tcache;
	if (tc == NULL) {
		quarantine_fill(r, free_stack);
		hl_range_mark(r, HL_RANGE_QUARANTINED);
		hl_lock(&quarantine_lock);
		nout = ring_put_locked(&r, 1, out);
		hl_unlock(&quarantine_lock);
	} else {
		struct hl_quarantine_cache *q = &tc->quarantine;
		/* Filled with the lock held: a locked instruction waits for every
		 * store before it, and the fill's stores to a block another thread
		 * wrote last (every free of a ring of threads) miss the cache. */
		hl_lock(&q->lock);
		quarantine_fill(r, free_stack);
		hl_range_mark(r, HL_RANGE_QUARANTINED);
		q->blocks[q->count++] = r;
		q->bytes += held_bytes(r);
		if (q->count < HL_QCACHE_BLOCKS && q->bytes < HL_QCACHE_BYTES) {
			hl_unlock(&q->lock);
			return;
		}
		nout = cache_flush_locked(q, out);
		hl_unlock(&q->lock);
	}
	ring_leave(out, nout, call);
}

void hl_checks_cache_retire(struct hl_thread_cache *tc)
{
	struct hl_quarantine_cache *q = &tc->quarantine;
	struct hl_range *out[OUT_MAX];
	hl_lock(&q->lock);
	unsigned nout = q->count != 0 ? cache_flush_locked(q, out) : 0;
	hl_unlock(&q->lock);
	ring_leave(out, nout, HL_CALL_FREE);
}

void hl_checks_release(struct hl_range *r, unsigned call, bool to_arena)
{
	uint64_t limit = (uint64_t)hl_options.quarantine_mib << 20;
	if (hl_checks_redzone != 0 && limit != 0 && !hl_guard_owns(r) &&
	    (!(hl_range_flags(r) & HL_RANGE_LARGE) || held_bytes(r) <= limit / 4)) {
		hl_stats_on_release(hl_block_requested(r));
		quarantine_put(r, call);
	} else if (to_arena) {
		hl_release_core_to_arena(r);
	} else {
		hl_release_core(r);
	}
}

/* ---- sweeps: at exit and at each leak check ---------------------------------- */

struct sweep {
	unsigned call;
	unsigned count;
	struct hl_misuse found[FINDINGS_MAX];
};

/* Walk callback (an arena's or the large lock held): collects damaged guard
 * bytes and repairs them, so the next pass and the next check see only new
 * damage. */
static void sweep_block(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	(void)stack_id;
	(void)kind;
	struct sweep *s = arg;
	struct hl_range *r = hl_range_of(address);
	if (s->count == FINDINGS_MAX || !hl_block_is_guarded(r))
		return;
	if (!guard_intact(r, s->call, &s->found[s->count])) {
		s->count++;
		memset((uint8_t *)address + size, HL_GUARD_CANARY, guard_end(r, size) - size);
	}
}

/* Checks one quarantined block for a sweep; repairs damage it found. */
static void sweep_one(struct hl_range *r, struct sweep *s)
{
	if (s->count < FINDINGS_MAX && hl_range_check_ok(r) &&
	    !fill_intact(r, s->call, &s->found[s->count])) {
		s->count++;
		quarantine_fill(r, hl_checks_free_stack(r));
	}
}

static void sweep_cache(struct hl_thread_cache *tc, void *arg)
{
	struct hl_quarantine_cache *q = &tc->quarantine;
	hl_lock(&q->lock);
	for (uint32_t i = 0; i < q->count; i++)
		sweep_one(q->blocks[i], arg);
	hl_unlock(&q->lock);
}

/* Every thread's batch, then the FIFO. A batch that moves into the FIFO
 * between the two is seen twice (found damage was repaired the first time),
 * never missed: it moves under its own lock and the FIFO's. */
static void sweep_quarantine(struct sweep *s)
{
	hl_caches_lock();
	hl_caches_each_locked(sweep_cache, s);
	hl_caches_unlock();
	hl_lock(&quarantine_lock);
	for (size_t i = 0; i < ring_count && s->count < FINDINGS_MAX; i++)
		sweep_one(ring[ring_slot(i)], s);
	hl_unlock(&quarantine_lock);
}

static void report_all(struct sweep *s, bool at_exit)
{
	for (unsigned i = 0; i < s->count; i++) {
		s->found[i].at_exit = at_exit;
		hl_misuse_report(&s->found[i]);
	}
}

void hl_checks_sweep(unsigned call)
{
	/* checks=guard's and guard_sample's blocks have guard bytes too: their
	 * alignment gap (guardpage.c) */
	if (hl_checks_redzone == 0 && !hl_guard_on)
		return;
	bool at_exit = call == HL_CALL_EXIT;
	struct sweep s = { .call = call };
	do {
		s.count = 0;
		hl_heap_walk(sweep_block, &s);
		report_all(&s, at_exit);
	} while (s.count == FINDINGS_MAX);
	do {
		s.count = 0;
		sweep_quarantine(&s);
		report_all(&s, at_exit);
	} while (s.count == FINDINGS_MAX);
}

static void cache_lock(struct hl_thread_cache *tc, void *arg)
{
	(void)arg;
	hl_lock(&tc->quarantine.lock);
}

static void cache_unlock(struct hl_thread_cache *tc, void *arg)
{
	(void)arg;
	hl_unlock(&tc->quarantine.lock);
}

/* In the child: the other threads are gone, their batches (consistent: their
 * locks were held across fork) join the FIFO; blocks pushed over the bound
 * leave at the next free (the arenas' locks are not reset yet here). */
static void cache_adopt(struct hl_thread_cache *tc, void *arg)
{
	(void)arg;
	struct hl_quarantine_cache *q = &tc->quarantine;
	hl_lock_reset(&q->lock);
	if (tc == hl_tcache)
		return;
	for (uint32_t i = 0; i < q->count; i++)
		(void)ring_push_locked(q->blocks[i]); /* no room: stays out of the heap */
	q->count = 0;
	q->bytes = 0;
}

static void cache_bytes(struct hl_thread_cache *tc, void *arg)
{
	hl_lock(&tc->quarantine.lock);
	*(uint64_t *)arg += tc->quarantine.bytes;
	hl_unlock(&tc->quarantine.lock);
}

uint64_t hl_checks_quarantined_bytes(void)
{
	uint64_t bytes = 0;
	hl_caches_lock();
	hl_caches_each_locked(cache_bytes, &bytes);
	hl_caches_unlock();
	hl_lock(&quarantine_lock);
	bytes += ring_bytes;
	hl_unlock(&quarantine_lock);
	return bytes;
}

/* Called with caches_lock held (init.c takes it first). */
void hl_checks_fork_prepare(void)
{
	hl_caches_each_locked(cache_lock, NULL);
	hl_lock(&quarantine_lock);
}

void hl_checks_fork_parent(void)
{
	hl_unlock(&quarantine_lock);
	hl_caches_each_locked(cache_unlock, NULL);
}

void hl_checks_fork_child(void)
{
	hl_lock_reset(&quarantine_lock);
	hl_lock(&quarantine_lock); /* the only thread: for ring_push_locked's assert */
	hl_caches_each_locked(cache_adopt, NULL);
	hl_unlock(&quarantine_lock);
}
