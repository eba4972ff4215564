/*
 * libhook/emit_int.h: what the three parts of the event stream share.
 *
 * emit_conn.c owns the connection (state, socket, HELLO, definitions,
 * exec, fork), emit_events.c the per-thread buffers and the packed events,
 * emit_live.c the block sets sent outside the buffers (a fork child's heap,
 * the LIVE records of an exit or an on-demand check). Never installed.
 *
 * Invariants: everything named `_locked` here, the buffer list, the scratch
 * buffer, the batch sequence and the counters of what was sent change only
 * under hl_emit_write_lock; a thread's own buffer is appended to without it
 * (emit_events.c says how).
 */
#ifndef HL_EMIT_INT_H
#define HL_EMIT_INT_H

#include <stddef.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "heapledger/tally.h"
#include "lock.h"
#include "track.h"

/* Per thread, sent in one write when full. Each write costs the program a
 * system call on top of the copy (~10 us here): churn under `heapledger run`
 * makes 1,200 writes of 128 KiB instead of 4,900 of 32 KiB and runs 10%
 * faster; 256 KiB is past the socket's default buffer, so the writes wait
 * for the reporter, and was 50% slower. */
#define BUFFER_BYTES (128u * 1024)
/* ~100 ms: 1e8 TSC cycles is 20-100 ms at 1-5 GHz; 1e8 ns otherwise. */
#define FLUSH_TICKS 100000000u
/* Asked of the socket for data in flight (SO_SNDBUF): 8 threads' batches. */
#define SOCKET_BUFFER_BYTES (8 * (int)BUFFER_BYTES)
#define SCRATCH_BYTES (64u * 1024)
/* One event, after the thread's buffer is gone. */
#define LATE_BYTES (HL_PACK_OP_BYTES + HL_PACK_MAX_RECORD)

/* A thread's buffer: a slot of the shared area (shared.c) when there is
 * one, so it begins with the fields of struct hl_shared_slot (wire.h, "Shared
 * event buffers"), at the same offsets, which the reporter reads after a
 * kill; the rest is the hook's own. */
struct emit_buffer {
	uint32_t tid;              /* owner's kernel thread id */
	_Atomic uint32_t used;     /* bytes of complete records; owner publishes */
	uint32_t sent;             /* bytes already written; write_lock */
	uint32_t sending_end;      /* end of the batch being written, else == sent; write_lock */
	uint64_t sending_sequence; /* that batch's sequence; write_lock */
	uint64_t first_ticks;      /* ticks of the oldest record; base_ticks of its batches */
	/* base_address of the batches sent from this buffer: the first address
	 * packed since it was last emptied, 0 until then. Only the owner sets it
	 * (before publishing the event), a sender reads it. */
	_Atomic uint64_t base_address;
	struct emit_buffer *next;  /* all buffers; write_lock */
	struct emit_buffer *prev;
	_Atomic uint32_t records;  /* records in [0, used); owner publishes */
	uint32_t records_sent;     /* records already written; write_lock */
	uint64_t now;              /* ticks of the latest event */
	uint16_t reuse_left;       /* events that may still take `now` (event_ticks) */
	uint16_t close_reads;      /* clock readings in a row close to the one before */
	bool delta_ready;          /* delta cleared for this thread (hl_emit_thread_delta) */
	uint8_t data[BUFFER_BYTES] __attribute__((aligned(64)));
	/* The thread's counts while a threaded process counts in the hook
	 * (heapledger/tally.h, "threads"): in the slot, so the reporter adds
	 * what a killed process's threads had not merged yet. */
	struct hl_tally_delta delta __attribute__((aligned(64)));
};
#define SLOT_FIELD(hook, wire) \
	_Static_assert(offsetof(struct emit_buffer, hook) == offsetof(struct hl_shared_slot, wire) && \
		       sizeof(((struct emit_buffer *)0)->hook) == sizeof(((struct hl_shared_slot *)0)->wire), \
		       "emit_buffer." #hook " is hl_shared_slot." #wire)
SLOT_FIELD(tid, tid);
SLOT_FIELD(used, used);
SLOT_FIELD(sent, sent);
SLOT_FIELD(sending_end, sending_end);
SLOT_FIELD(sending_sequence, sending_sequence);
SLOT_FIELD(first_ticks, base_ticks);
SLOT_FIELD(base_address, base_address);
#undef SLOT_FIELD

enum emit_state {
	EMIT_OFF = 0,  /* never connected: standalone */
	EMIT_LIVE = 1, /* connected */
	EMIT_LOST = 2, /* the reporter went away: events are dropped */
	EMIT_DONE = 3, /* EXIT was sent */
	/* A fork child connected whose snapshot of the heap waits for its
	 * first record (wire.h, HL_HOOK_FORK_SNAPSHOT): the event paths and
	 * hl_emit_is_live() send it (hl_emit_fork_resolve), then go on LIVE. */
	EMIT_DEFERRED = 4,
};

/* What the deferred snapshot sends otherwise than the heap walk finds it:
 * the block whose event made it go out. */
struct hl_snapshot_fix {
	uint64_t skip;     /* a block the walk leaves out (its ALLOC follows), 0: none */
	uint64_t address;  /* a block sent as it was before a free or realloc, 0: none */
	uint64_t size;
	uint32_t stack_id;
};
/* Sends a deferred snapshot (definitions, then the heap's blocks flagged
 * HL_ALLOC_INHERITED, amended by fix, which may be NULL) and goes on LIVE;
 * false if the connection is not LIVE then. Takes write_lock unless the
 * caller holds it. */
bool hl_emit_fork_resolve(const struct hl_snapshot_fix *fix);
/* hl_emit_send_heap_blocks's walk for the snapshot, write_lock held. */
void hl_emit_send_snapshot_locked(const struct hl_snapshot_fix *fix);

/* Declared hidden, as they are defined (-fvisibility=hidden): the event
 * path then reads them directly, not through the GOT (one instruction an
 * event, measured on churn). */
#define EMIT_SHARED extern __attribute__((visibility("hidden")))

/* ---- emit_conn.c ------------------------------------------------------------ */

EMIT_SHARED struct hl_lock hl_emit_write_lock;
/* enum emit_state. Once connected it lives on a page the kernel zeroes
 * (EMIT_OFF) in a child with a copy of our memory (MADV_WIPEONFORK): a raw
 * clone() child, which runs no atfork handler until its exit, so sees
 * EMIT_OFF and never appends to the buffers, which are shared with the
 * parent (shared.c), not copied. A vfork child sees the parent's. */
EMIT_SHARED _Atomic int *hl_emit_state_word;
EMIT_SHARED struct hl_fd hl_emit_sock;
EMIT_SHARED uint64_t hl_emit_batch_sequence;     /* write_lock */
EMIT_SHARED uint64_t hl_emit_records_total;      /* records written; write_lock */
EMIT_SHARED uint32_t hl_emit_stacks_sent;        /* ids below were sent; write_lock */
EMIT_SHARED _Atomic uint64_t hl_emit_dropped_count;
EMIT_SHARED uint8_t hl_emit_scratch[SCRATCH_BYTES]; /* write_lock */
EMIT_SHARED size_t hl_emit_scratch_used;

int hl_emit_state_swap_locked(int s);
bool hl_emit_send_iov_locked(struct iovec *iov, int count);
bool hl_emit_scratch_flush_locked(void);
void *hl_emit_scratch_reserve_locked(size_t len);
bool hl_emit_send_stacks_locked(void);
/* Put: into the scratch buffer, for the next send; send: and flushed. */
bool hl_emit_put_definitions_locked(void);
bool hl_emit_send_definitions_locked(void);

/* ---- emit_events.c ---------------------------------------------------------- */

EMIT_SHARED struct emit_buffer *hl_emit_buffers; /* write_lock */
/* A second thread has had events since the process image (or fork child)
 * began: from then on every event reads the clock (see event_ticks). */
EMIT_SHARED _Atomic bool hl_emit_threaded;
EMIT_SHARED HL_TLS struct emit_buffer *hl_emit_tls_buffer;

void hl_emit_buffer_reset(struct emit_buffer *b);
void hl_emit_buffer_start(struct emit_buffer *b, uint32_t tid);
void hl_emit_buffer_free_locked(struct emit_buffer *b);
void hl_emit_flush_all_locked(void);

/* ---- emit_live.c ------------------------------------------------------------ */

void hl_emit_send_heap_blocks(uint16_t flags, bool (*known)(uint64_t address));

/* ---- helpers ---------------------------------------------------------------- */

static inline uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint32_t current_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

#endif
