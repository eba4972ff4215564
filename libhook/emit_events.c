/*
 * libhook/emit_events.c: per-thread event buffers and the packed events.
 *
 * Each thread appends packed events (wire.h, "Packed events") to its own
 * buffer (hl_meta_alloc'd, linked in `hl_emit_buffers`) with no lock. A
 * buffer is written as one BATCH record naming the thread and carrying the
 * events, in one sendmsg under write_lock (emit_conn.c), so batches never
 * interleave, after the definitions they may name.
 *
 * A buffer is flushed when full, when its oldest event is older than
 * FLUSH_TICKS, after a new thread's first event, at thread exit, at fork
 * (the forking thread), at exec and at exit (every thread's committed
 * records). Invariants:
 *  - the owner writes records at data[used..] and then publishes `used`
 *    (release); records in [sent, used) are complete;
 *  - `sent` and the reset of a buffer change only under write_lock; another
 *    thread (exit, exec) may send [sent, used) and advance `sent`;
 *  - no syscall per event, no malloc; hl_emit_alloc, hl_emit_free and
 *    hl_emit_realloc keep errno on the paths that make system calls (their
 *    inline path makes none), so a free need not save it; the others'
 *    callers preserve it.
 * The buffers are slots of a memfd shared with the reporter (shared.c;
 * wire.h, "Shared event buffers"): a process killed while a thread idles
 * loses none of the events that thread committed. `sending_end` and
 * `sending_sequence` let the reporter tell whether the batch being written at
 * the kill arrived. Nothing on the fast path changes: the same stores into
 * the same struct, in other pages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>

#include "emit_event.h"
#include "emit_int.h"
#include "heap.h"
#include "lock.h"
#include "track.h"

_Atomic bool hl_emit_threaded;
struct emit_buffer *hl_emit_buffers;
HL_TLS struct emit_buffer *hl_emit_tls_buffer;
static HL_TLS bool tls_exited;
static HL_TLS uint64_t tls_late[(LATE_BYTES + 7) / 8];
static const uint8_t zeros[8]; /* a batch's padding */

/* Sends `bytes` of packed events of thread `tid` at `events` as one BATCH
 * record with the given bases. */
static bool send_batch_locked(uint32_t tid, const uint8_t *events, uint32_t bytes,
			      uint64_t base_ticks, uint64_t base_address)
{
	hl_assert_held(&hl_emit_write_lock);
	uint32_t padded = hl_wire_padded(bytes);
	struct hl_rec_batch batch = {
		.h = hl_wire_hdr(HL_REC_BATCH, 0, (uint32_t)sizeof(batch) + padded),
		.tid = tid,
		.packed_bytes = bytes,
		.ticks = hl_ticks(),
		.monotonic_ns = clock_ns(CLOCK_MONOTONIC),
		.realtime_ns = clock_ns(CLOCK_REALTIME),
		.sequence = hl_emit_batch_sequence++,
		.base_ticks = base_ticks,
		.base_address = base_address,
	};
	/* The definitions put before it go in the same write. */
	struct iovec iov[4] = { { hl_emit_scratch, hl_emit_scratch_used }, { &batch, sizeof(batch) },
				{ (void *)events, bytes }, { (void *)zeros, padded - bytes } };
	hl_emit_scratch_used = 0;
	return hl_emit_send_iov_locked(iov, 4);
}

/* Sends [sent, used) of `b` as one batch. Another thread may be appending
 * to it: bases do not change until the owner empties the buffer. */
static void buffer_send_locked(struct emit_buffer *b)
{
	hl_assert_held(&hl_emit_write_lock);
	uint32_t used = atomic_load_explicit(&b->used, memory_order_acquire);
	uint32_t records = atomic_load_explicit(&b->records, memory_order_relaxed);
	if (used == b->sent || !hl_emit_put_definitions_locked())
		goto out_mark;
	/* Killed while or after the batch goes out, before `sent` moves: the
	 * reporter tells by the sequence whether it got the batch. */
	b->sending_sequence = hl_emit_batch_sequence;
	b->sending_end = used;
	if (send_batch_locked(b->tid, b->data + b->sent, used - b->sent, b->first_ticks,
			      atomic_load_explicit(&b->base_address, memory_order_relaxed)))
		hl_emit_records_total += 1 + records - b->records_sent;
out_mark:
	if (hl_emit_was_lost())
		atomic_fetch_add_explicit(&hl_emit_dropped_count, records - b->records_sent, memory_order_relaxed);
	b->sent = used;
	b->sending_end = used;
	b->records_sent = records;
}

/* Empties `b` after its events were sent; the next event sets new bases. */
void hl_emit_buffer_reset(struct emit_buffer *b)
{
	atomic_store_explicit(&b->used, 0, memory_order_relaxed);
	atomic_store_explicit(&b->records, 0, memory_order_relaxed);
	atomic_store_explicit(&b->base_address, 0, memory_order_relaxed);
	b->sent = 0;
	b->sending_end = 0;
	b->records_sent = 0;
}

/* The owner sends its buffer and empties it. Not in a process that does
 * not own the connection (a vfork child, a raw clone child): the buffer is
 * left as it is, and false returned. */
static HL_NOINLINE bool buffer_flush_own(struct emit_buffer *b)
{
	if (!hl_process_is_owner())
		return false;
	hl_lock(&hl_emit_write_lock);
	buffer_send_locked(b);
	hl_emit_buffer_reset(b);
	hl_unlock(&hl_emit_write_lock);
	return true;
}

/* ---- per-thread buffers ----------------------------------------------------- */

#define THREAD_EVENT_BYTES (HL_PACK_OP_BYTES + (uint32_t)sizeof(struct hl_rec_thread))

static void put_thread_record(struct emit_buffer *b, unsigned type, uint32_t tid)
{
	struct hl_rec_thread rec = { .h = hl_wire_hdr(type, 0, sizeof(rec)), .tid = tid,
				     .ticks = hl_ticks() };
	uint32_t len = hl_pack_write_record(b->data + b->used, &rec, sizeof(rec));
	atomic_store_explicit(&b->records, b->records + 1, memory_order_relaxed);
	atomic_store_explicit(&b->used, b->used + len, memory_order_release);
}

/* A thread's buffer begins with THREAD_START, and its first event is sent at
 * once (first_ticks is made FLUSH_TICKS old): the reporter learns of the
 * thread, and of a short-lived process's first allocation, even if the
 * process is then killed (SIGKILL, a crash) before anything else is
 * flushed. Later events wait for a full buffer or FLUSH_TICKS. The reporter
 * relies on that first send (wire.h, "Threads"). */
void hl_emit_buffer_start(struct emit_buffer *b, uint32_t tid)
{
	b->tid = tid;
	b->now = hl_ticks();
	b->first_ticks = b->now - FLUSH_TICKS - 1;
	put_thread_record(b, HL_REC_THREAD_START, tid);
}

/* A slot of the shared area (its head cleared: a thread before may have
 * used it), else private memory. */
static struct emit_buffer *buffer_alloc_locked(void)
{
	hl_assert_held(&hl_emit_write_lock);
	struct emit_buffer *b = hl_shared_slot_take_locked();
	if (b != NULL)
		memset(b, 0, offsetof(struct emit_buffer, data));
	return b;
}

void hl_emit_buffer_free_locked(struct emit_buffer *b)
{
	hl_assert_held(&hl_emit_write_lock);
	if (!hl_shared_slot_give_locked(b))
		hl_meta_free(b, sizeof(*b));
}

static HL_NOINLINE struct emit_buffer *buffer_create(void)
{
	hl_lock(&hl_emit_write_lock);
	struct emit_buffer *b = buffer_alloc_locked();
	hl_unlock(&hl_emit_write_lock);
	if (b == NULL && (b = hl_meta_alloc(sizeof(*b))) == NULL)
		return NULL;
	hl_emit_buffer_start(b, current_tid());
	hl_lock(&hl_emit_write_lock);
	b->next = hl_emit_buffers;
	if (hl_emit_buffers) {
		hl_emit_buffers->prev = b;
		/* Before this thread's first event is encoded. */
		atomic_store_explicit(&hl_emit_threaded, true, memory_order_relaxed);
	}
	hl_emit_buffers = b;
	hl_unlock(&hl_emit_write_lock);
	hl_emit_tls_buffer = b;
	return b;
}

static void buffer_unlink_locked(struct emit_buffer *b)
{
	hl_assert_held(&hl_emit_write_lock);
	if (b->prev)
		b->prev->next = b->next;
	else
		hl_emit_buffers = b->next;
	if (b->next)
		b->next->prev = b->prev;
}

/* Room for one event of at most `room` bytes in this thread's buffer, or
 * NULL when nothing is sent (counted as dropped after a lost connection).
 * *b is NULL for a thread past hl_emit_thread_exit: the event goes to
 * tls_late and is sent alone. *ticks is the event's time. */
HL_INLINE uint8_t *event_begin(uint32_t room, uint64_t *ticks, struct emit_buffer **out)
{
	int s = atomic_load_explicit(hl_emit_state_word, memory_order_relaxed);
	if (hl_unlikely(s != EMIT_LIVE) &&
	    (s != EMIT_DEFERRED || !hl_emit_fork_resolve(NULL))) {
		if (s == EMIT_LOST || s == EMIT_DEFERRED) /* DEFERRED: a vfork child's, unsendable */
			atomic_fetch_add_explicit(&hl_emit_dropped_count, 1, memory_order_relaxed);
		return NULL;
	}
	*out = NULL;
	if (hl_unlikely(tls_exited)) {
		*ticks = hl_ticks();
		return (uint8_t *)tls_late;
	}
	struct emit_buffer *b = hl_emit_tls_buffer;
	if (hl_unlikely(b == NULL) && (b = buffer_create()) == NULL) {
		atomic_fetch_add_explicit(&hl_emit_dropped_count, 1, memory_order_relaxed);
		return NULL;
	}
	*ticks = event_ticks(b, false);
	if (hl_unlikely(b->used + room > sizeof(b->data)) && !buffer_flush_own(b)) {
		atomic_fetch_add_explicit(&hl_emit_dropped_count, 1, memory_order_relaxed);
		return NULL;
	}
	if (b->used == 0)
		b->first_ticks = *ticks;
	*out = b;
	return b->data + b->used;
}

/* A thread past hl_emit_thread_exit sends each event at once. */
static HL_NOINLINE void send_late(uint32_t len, uint64_t base_ticks)
{
	hl_lock(&hl_emit_write_lock);
	if (hl_emit_put_definitions_locked() &&
	    send_batch_locked(current_tid(), (const uint8_t *)tls_late, len, base_ticks, 0))
		hl_emit_records_total += 2;
	hl_unlock(&hl_emit_write_lock);
}

/* Publishes the `len` bytes written at event_begin's pointer. */
HL_INLINE void event_end(struct emit_buffer *b, uint32_t len, uint64_t ticks)
{
	if (hl_unlikely(b == NULL)) {
		send_late(len, ticks);
		return;
	}
	atomic_store_explicit(&b->records, b->records + 1, memory_order_relaxed);
	atomic_store_explicit(&b->used, b->used + len, memory_order_release);
	if (hl_unlikely(b->now - b->first_ticks > FLUSH_TICKS))
		buffer_flush_own(b);
}

/* The bases `b`'s events are packed against (a late event's: its own time
 * and no address base). The first address packed after the buffer was
 * emptied becomes its base_address. */
HL_INLINE void event_bases(struct emit_buffer *b, uint64_t ticks, uint64_t address,
				  uint64_t *base_ticks, uint64_t *base_address)
{
	if (hl_unlikely(b == NULL)) {
		*base_ticks = ticks;
		*base_address = 0;
		return;
	}
	*base_ticks = b->first_ticks;
	*base_address = atomic_load_explicit(&b->base_address, memory_order_relaxed);
	if (hl_unlikely(*base_address == 0)) {
		*base_address = address;
		atomic_store_explicit(&b->base_address, address, memory_order_relaxed);
	}
}

/* One packed event through event_begin and event_end: hl_emit_event's cases
 * off its fast path (a thread with no buffer yet or past
 * hl_emit_thread_exit, a full buffer). Its first fields are its time and
 * its (first) address, packed against the buffer's bases; `rest` holds the
 * others as they go (by value: an array passed by address put the fast
 * path's whole prologue ahead of its first test, 16 instructions an
 * allocation of the standalone hook, which only tests the state). */
HL_NOINLINE void hl_emit_event_slow(unsigned event, unsigned kind, uint64_t address,
				    uint64_t rest0, uint64_t rest1, uint64_t rest2, unsigned nrest)
{
	const uint64_t rest[3] = { rest0, rest1, rest2 };
	struct emit_buffer *b;
	uint64_t ticks, bt, ba;
	int saved = errno; /* a buffer made, a batch sent */
	if (hl_unlikely(atomic_load_explicit(hl_emit_state_word, memory_order_relaxed) ==
			EMIT_DEFERRED)) {
		/* The block this event makes is no inherited one. (A realloc's
		 * track call sent the snapshot, with its old block, already; one
		 * still deferred is a vfork child's, which sends nothing.) */
		struct hl_snapshot_fix fix = { 0 };
		if (event == HL_PACK_ALLOC) {
			fix.skip = address;
		} else if (event == HL_PACK_FREE) {
			/* The free has taken the block off the walk's live
			 * ranges already; its header is as it was. */
			struct hl_range *r = hl_range_of((void *)(uintptr_t)address);
			fix.address = address;
			fix.size = hl_block_requested(r);
			fix.stack_id = hl_range_stack_id(r);
		}
		hl_emit_fork_resolve(&fix);
	}
	uint8_t *dst = event_begin(HL_PACK_MAX_EVENT, &ticks, &b);
	if (dst != NULL) {
		event_bases(b, ticks, address, &bt, &ba);
		uint64_t f[HL_PACK_MAX_FIELDS] = { ticks - bt, hl_zigzag(address - ba) };
		for (unsigned i = 0; i < nrest; i++)
			f[2 + i] = rest[i];
		event_end(b, hl_pack_write(dst, event, kind, f, 2 + nrest), ticks);
	}
	errno = saved;
}

void hl_emit_clock_resync(void)
{
	struct emit_buffer *b = hl_emit_tls_buffer;
	if (b != NULL)
		b->reuse_left = 0;
}

/* The buffer's oldest event is FLUSH_TICKS old: sent now. */
HL_NOINLINE void hl_emit_flush_aged(struct emit_buffer *b)
{
	int saved = errno;
	buffer_flush_own(b);
	errno = saved;
}

void hl_emit_alloc(uint64_t address, uint64_t size, uint32_t stack_id, unsigned kind)
{
	hl_emit_alloc_inline(address, size, stack_id, kind, false);
}

void hl_emit_free(uint64_t address, unsigned kind)
{
	hl_emit_free_inline(address, kind);
}

void hl_emit_realloc(uint64_t old_address, uint64_t new_address, uint64_t size,
		     uint32_t stack_id)
{
	hl_emit_event(HL_PACK_REALLOC, 0, old_address, hl_zigzag(new_address - old_address), size,
		      stack_id, 3, false);
}

void hl_emit_record(const void *rec, uint32_t len)
{
	struct emit_buffer *b;
	uint64_t ticks;
	if (len > HL_PACK_MAX_RECORD) {
		atomic_fetch_add_explicit(&hl_emit_dropped_count, 1, memory_order_relaxed);
		return;
	}
	uint8_t *dst = event_begin(HL_PACK_OP_BYTES + len, &ticks, &b);
	if (dst != NULL)
		event_end(b, hl_pack_write_record(dst, rec, len), ticks);
}

struct hl_tally_delta *hl_emit_thread_delta(void)
{
	struct emit_buffer *b = hl_emit_tls_buffer;
	int s = atomic_load_explicit(hl_emit_state_word, memory_order_relaxed);
	if (tls_exited || s != EMIT_LIVE)
		return NULL;
	if (b == NULL && (b = buffer_create()) == NULL)
		return NULL;
	if (!b->delta_ready) {
		/* A thread before in this slot may have left a delta it could
		 * not merge; cleared here, not at every buffer's start: a
		 * process that never counts threads leaves its pages alone. */
		memset(&b->delta, 0, sizeof(b->delta));
		b->delta_ready = true;
	}
	return &b->delta;
}

void hl_emit_each_delta_locked(void (*fn)(struct hl_tally_delta *d))
{
	hl_assert_held(&hl_emit_write_lock);
	for (struct emit_buffer *b = hl_emit_buffers; b; b = b->next)
		fn(&b->delta);
}

void hl_emit_each_delta(void (*fn)(struct hl_tally_delta *d))
{
	hl_lock(&hl_emit_write_lock);
	hl_emit_each_delta_locked(fn);
	hl_unlock(&hl_emit_write_lock);
}

void hl_emit_counting_end(void (*end)(void), const void *rec, uint32_t len)
{
	hl_lock(&hl_emit_write_lock);
	hl_emit_flush_all_locked(); /* what was sent while counting: before rec */
	end();
	/* Every stack counted was interned before end(): their STACK records
	 * before rec, which takes each stack's counts by its id. */
	hl_emit_send_definitions_locked();
	void *at = hl_emit_scratch_reserve_locked(len);
	if (at != NULL) {
		memcpy(at, rec, len);
		hl_emit_records_total++;
	}
	hl_emit_scratch_flush_locked();
	hl_unlock(&hl_emit_write_lock);
}

void hl_emit_thread_exit(void)
{
	struct emit_buffer *b = hl_emit_tls_buffer;
	tls_exited = true;
	if (b == NULL)
		return;
	hl_lock(&hl_emit_write_lock);
	if (b->used + THREAD_EVENT_BYTES > sizeof(b->data)) {
		buffer_send_locked(b);
		hl_emit_buffer_reset(b);
	}
	put_thread_record(b, HL_REC_THREAD_END, b->tid);
	buffer_send_locked(b);
	buffer_unlink_locked(b);
	hl_emit_tls_buffer = NULL;
	hl_emit_buffer_free_locked(b);
	hl_unlock(&hl_emit_write_lock);
}

void hl_emit_flush_all_locked(void)
{
	hl_assert_held(&hl_emit_write_lock);
	for (struct emit_buffer *b = hl_emit_buffers; b; b = b->next)
		buffer_send_locked(b);
}

void hl_emit_flush_all(void)
{
	if (!hl_emit_is_live())
		return;
	hl_lock(&hl_emit_write_lock);
	hl_emit_flush_all_locked();
	hl_unlock(&hl_emit_write_lock);
}

