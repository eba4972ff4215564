/*
 * libhook/emit_event.h: the packed event's inline path (emit_events.c has
 * the rest), in a header so that the tracking calls (track.c) take it in
 * their own frame: a call into emit_events.c for it cost each event ~10
 * instructions of call, frame and return, and the standalone hook a call
 * only to test the state. Never installed.
 */
#ifndef HL_EMIT_EVENT_H
#define HL_EMIT_EVENT_H

#include <stdatomic.h>
#include <stdint.h>

#include "emit_int.h"

/* One packed event off the inline path (a thread with no buffer yet or past
 * hl_emit_thread_exit, a full buffer), with errno kept. */
void hl_emit_event_slow(unsigned event, unsigned kind, uint64_t address, uint64_t rest0,
			uint64_t rest1, uint64_t rest2, unsigned nrest);
/* The buffer's oldest event is FLUSH_TICKS old: sent now, errno kept. */
void hl_emit_flush_aged(struct emit_buffer *b);

/* Reading the TSC costs ~11-14 ns here, as much as the rest of an event's
 * encoding. A process with one thread needs ticks only for time (the
 * timeline), not to order its events (the stream does), so while its events
 * are dense the next REUSE_EVENTS events take the last reading: ~4% of
 * `heapledger run` on churn. Dense: 8 readings in a row each within
 * DENSE_TICKS / 8 of the one before, and then, while reusing, each reading
 * within DENSE_TICKS of the last. Ticks so stay non-decreasing, never ahead
 * of their event, and at most REUSE_EVENTS events behind (more than a
 * moment only for the first events after a pause that follows a dense run).
 *
 * Once a second thread has events, the reporter orders threads' events on
 * one address by ticks (wire.h, "Clock"): an event must not carry ticks
 * older than those of another thread's event on its block that happened
 * before it. A free (of a block another thread may have allocated), a
 * realloc and an allocation off the thread cache's inline path read the
 * clock. An allocation the thread's cache serves (`own_cache`) may still
 * take the last reading: a cached block was put there either by this
 * thread's own free, which read the clock (so `now` is at least its ticks),
 * or by a refill from the arena or other threads' returns, after which
 * hl_emit_clock_resync makes the next event read the clock (so `now` is
 * past every free that gave those blocks up). In ring 8 this takes 7 of
 * 8 allocations' readings away, about 10% of the program's CPU under
 * `heapledger run`. A thread that still saw `threaded` false cannot be
 * handed a block of the new thread's without the synchronisation that makes
 * the flag visible. */
#define REUSE_EVENTS 7u
#define DENSE_READS 8u
#define DENSE_TICKS (1u << 16) /* 20-30 us of TSC, 65 us of nanoseconds */

HL_INLINE uint64_t event_ticks(struct emit_buffer *b, bool own_cache)
{
	if (b->reuse_left != 0 &&
	    (own_cache || !atomic_load_explicit(&hl_emit_threaded, memory_order_relaxed))) {
		b->reuse_left--;
		return b->now;
	}
	uint64_t t = hl_ticks();
	bool reusing = b->close_reads >= DENSE_READS;
	if (t - b->now < (reusing ? DENSE_TICKS : DENSE_TICKS / DENSE_READS)) {
		if (!reusing)
			b->close_reads++;
	} else {
		b->close_reads = 0;
	}
	b->reuse_left = b->close_reads >= DENSE_READS ? REUSE_EVENTS : 0;
	b->now = t;
	return t;
}

/* hl_emit_event_slow's work where the thread's buffer exists and has room
 * (all but one event in thousands), in one straight line: event_begin,
 * event_bases and event_end each tested again what the one before had
 * settled (the late thread, the buffer, `used` reloaded), ~15 of the ~70
 * instructions an event took around its packing. The same stores in the
 * same order. `own_cache`: see event_ticks. */
HL_INLINE void hl_emit_event(unsigned event, unsigned kind, uint64_t address, uint64_t rest0,
			     uint64_t rest1, uint64_t rest2, unsigned nrest, bool own_cache)
{
	int s = atomic_load_explicit(hl_emit_state_word, memory_order_relaxed);
	if (hl_unlikely(s != EMIT_LIVE)) {
		if (s == EMIT_LOST)
			atomic_fetch_add_explicit(&hl_emit_dropped_count, 1, memory_order_relaxed);
		else if (s == EMIT_DEFERRED) /* a fork child's first event: its snapshot first */
			hl_emit_event_slow(event, kind, address, rest0, rest1, rest2, nrest);
		return;
	}
	/* NULL too past hl_emit_thread_exit (tls_exited) */
	struct emit_buffer *b = hl_emit_tls_buffer;
	uint32_t used;
	if (hl_unlikely(b == NULL) ||
	    hl_unlikely((used = atomic_load_explicit(&b->used, memory_order_relaxed)) +
				HL_PACK_MAX_EVENT > sizeof(b->data))) {
		hl_emit_event_slow(event, kind, address, rest0, rest1, rest2, nrest);
		return;
	}
	uint64_t ticks = event_ticks(b, own_cache);
	uint64_t first = b->first_ticks;
	if (used == 0)
		b->first_ticks = first = ticks;
	uint64_t base = atomic_load_explicit(&b->base_address, memory_order_relaxed);
	if (hl_unlikely(base == 0)) {
		base = address;
		atomic_store_explicit(&b->base_address, address, memory_order_relaxed);
	}
	uint64_t f[HL_PACK_MAX_FIELDS] = { ticks - first, hl_zigzag(address - base), rest0, rest1,
					   rest2 };
	uint32_t len = hl_pack_write(b->data + used, event, kind, f, 2 + nrest);
	atomic_store_explicit(&b->records, b->records + 1, memory_order_relaxed);
	atomic_store_explicit(&b->used, used + len, memory_order_release);
	if (hl_unlikely(ticks - first > FLUSH_TICKS)) /* b->now is ticks */
		hl_emit_flush_aged(b);
}

/* hl_emit_alloc and hl_emit_free (track.h), inline. `own_cache`: the block
 * came off this thread's cache (event_ticks). */
HL_INLINE void hl_emit_alloc_inline(uint64_t address, uint64_t size, uint32_t stack_id,
				    unsigned kind, bool own_cache)
{
	hl_emit_event(HL_PACK_ALLOC, kind, address, size, stack_id, 0, 2, own_cache);
}

HL_INLINE void hl_emit_free_inline(uint64_t address, unsigned kind)
{
	hl_emit_event(HL_PACK_FREE, kind, address, 0, 0, 0, 0, false);
}

#endif
