/*
 * reporter/ingest/tombwatch.h: when a remembered free (a tombstone, state.h) can be
 * forgotten because no event older than it can arrive any more.
 *
 * Why: a tombstone lives until its address is allocated again or the count
 * bound prunes it. Under checks=full the quarantine holds freed addresses
 * back from reuse, so with several threads every free left one: half a
 * million of them, a block table of 64 MiB, and a cache miss on most events
 * (the reporter spent twice the CPU of the default checks on 8 threads).
 *
 * What is safe: a tombstone at ticks T matters only to an event older than T
 * that is still to arrive (an allocation it must tell stale). A thread's
 * events arrive in its order with ticks that never decrease (wire.h,
 * "Clock"), so a known thread sends nothing older than the last ticks we had
 * from it; the watermark, the least of those over the threads that have not
 * ended, bounds every event still to come from them. Events of the other
 * threads need no bound: a thread's first event is sent before the call
 * that made it returns (the hook flushes a new thread's buffer at once), so
 * it arrives before anything the program did with that block; a thread
 * past THREAD_END sends each event alone, at once, likewise; and THREAD_END
 * comes after every event the thread buffered. So a tombstone older than the
 * watermark is dropped; the result is the one keeping it would give.
 *
 * A thread counts as known from its THREAD_START record (the first record of
 * every thread's buffer) until its THREAD_END. A stream without THREAD_START
 * records (old hooks, tests) knows no thread, has watermark 0 and forgets
 * nothing this way.
 *
 * An idle thread would hold the watermark back for good (a main thread
 * waiting in pthread_join). So a known thread behind the others is looked at
 * in its shared event buffer (wire.h, "Shared event buffers"): when the
 * batches sent from it have all arrived and at most PENDING_MAX bytes of
 * its events are unsent, those few events are read; the addresses they
 * allocate are pinned (their tombstones stay), and the thread counts as at
 * `now`, the clock of the latest batch received. Sound because an event
 * committed after that reading belongs to a call that had not returned when
 * the buffer was read, which was after the batch at `now` was sent: whatever
 * the program then does with that block (free it, get the address again,
 * free it again) happens later, so any tombstone that event could need is
 * newer than `now`. (A few events in a row may share one clock reading.
 * Once a second thread has events, which is when tombstones begin, only
 * allocations from the thread's own cache do, and their ticks are never
 * older than their address's last free: that thread made it, or it came
 * before the reading reused. So no tombstone judges one stale.) Without the
 * buffers (no memfd), or with more unsent, the thread keeps its last ticks,
 * and the count bound (HL_TOMBSTONES_MAX) still applies.
 *
 * Tombstones are queued in the order they are made; the queue is read from
 * its head while the head is older than the watermark (frees of different
 * threads interleave, so a newer head can hold older ones back a moment).
 * The queue is bounded like the tombstones: past HL_TOMBSTONES_MAX entries
 * the oldest is let go unexamined (its tombstone is left to the count bound).
 *
 * Only while a process has HL_TOMBWATCH_FROM tombstones or more are new ones
 * queued: below that the table stays in the caches and most tombstones are
 * soon replaced by the address's next allocation, so queueing and checking
 * each cost more than forgetting saves (8 threads passing blocks with the
 * default checks keep about 32k: queueing them took 8-11% more reporter
 * CPU). The others wait for reuse or the count bound, as before.
 */
#ifndef HL_REPORTER_TOMBWATCH_H
#define HL_REPORTER_TOMBWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hl_tomb_thread {
	uint32_t tid;
	uint64_t last; /* ticks of its newest event received (a lower bound before) */
};

struct hl_tomb_entry {
	uint64_t address, ticks;
	uint32_t slot;       /* its index in the block table ... */
	uint32_t generation; /* ... while the table has this generation */
};

#define HL_TOMBWATCH_FROM 65536u

struct hl_tombwatch {
	uint64_t queue_from;            /* HL_TOMBWATCH_FROM (0 in tests: every one) */
	struct hl_tomb_thread *threads; /* known threads, no order */
	size_t nthreads, threads_cap;
	struct hl_tomb_thread *cur;     /* the thread of the current BATCH, or NULL */
	uint64_t watermark;             /* <= the least `last` of `threads` */
	uint32_t batches;               /* since the watermark was computed */
	struct hl_tomb_entry *queue;    /* ring, cap a power of two */
	size_t head, count, cap;
	uint64_t *pins;                 /* open addressing, 0 = free; npins used */
	uint32_t *pinned_at;            /* the slots of pins in use, to clear them */
	size_t npins, pins_cap;
};

/* Reads what thread tid has unsent (at most max_bytes of packed events) and
 * pins each address it allocates with hl_tombwatch_pin; false if it cannot. */
typedef bool (*hl_tombwatch_pending_fn)(void *ctx, struct hl_tombwatch *w, uint32_t tid,
					uint32_t max_bytes);

/* Zeroed memory is not ready: queue_from must be set. */
void hl_tombwatch_init(struct hl_tombwatch *w);
void hl_tombwatch_destroy(struct hl_tombwatch *w);
/* A BATCH of tid: its events belong to that thread until the next BATCH. */
void hl_tombwatch_batch(struct hl_tombwatch *w, uint32_t tid);
/* THREAD_START / THREAD_END of tid at ticks (in the current batch). */
void hl_tombwatch_thread_start(struct hl_tombwatch *w, uint32_t tid, uint64_t ticks);
void hl_tombwatch_thread_end(struct hl_tombwatch *w, uint32_t tid);
/* A tombstone was made (e: its address, ticks and place in the table). */
void hl_tombwatch_push(struct hl_tombwatch *w, struct hl_tomb_entry e);
/* The queued entry `ahead` places after the head, or NULL (to prefetch). */
static inline const struct hl_tomb_entry *hl_tombwatch_peek(const struct hl_tombwatch *w,
							    size_t ahead)
{
	return ahead < w->count ? &w->queue[(w->head + ahead) & (w->cap - 1)] : NULL;
}
/* The oldest queued tombstone older than the watermark, taken off the
 * queue: false if there is none. When the watermark is computed, pending
 * (may be NULL) is asked about each known thread behind `now`, the clock of
 * the latest batch received. */
bool hl_tombwatch_expired(struct hl_tombwatch *w, struct hl_tomb_entry *out,
			  hl_tombwatch_pending_fn pending, void *ctx, uint64_t now);
/* For pending: address is allocated by an event still to come. */
void hl_tombwatch_pin(struct hl_tombwatch *w, uint64_t address);
/* Whether a tombstone at address must stay (pinned when the watermark was
 * last computed). */
bool hl_tombwatch_pinned(const struct hl_tombwatch *w, uint64_t address);

/* An ALLOC, FREE or REALLOC of the current batch's thread at ticks. */
static inline void hl_tombwatch_event(struct hl_tombwatch *w, uint64_t ticks)
{
	if (w->cur && ticks > w->cur->last)
		w->cur->last = ticks;
}

#endif /* HL_REPORTER_TOMBWATCH_H */
