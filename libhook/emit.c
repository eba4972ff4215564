/*
 * libhook/emit.c: per-thread event buffers and the one socket writer.
 *
 * Each thread appends packed events (wire.h, "Packed events") to its own
 * buffer (hl_meta_alloc'd, linked in `buffers`) with no lock. A buffer is
 * written as one BATCH record naming the thread and carrying the events, in
 * one sendmsg under write_lock, so batches never interleave. Before every
 * batch the writer sends what other records name: MODULE_LOAD/UNLOAD
 * (modules.c) and STACKs with ids not yet sent (stack.c), so an id is always
 * defined before its first use.
 *
 * A buffer is flushed when full, when its oldest event is older than
 * FLUSH_TICKS, after a new thread's first event, at thread exit, at fork
 * (the forking thread), at exec and at exit (every thread's committed
 * records). Invariants:
 *  - the owner writes records at data[used..] and then publishes `used`
 *    (release); records in [sent, used) are complete;
 *  - `sent` and the reset of a buffer change only under write_lock; another
 *    thread (exit, exec) may send [sent, used) and advance `sent`;
 *  - no syscall per event, no malloc; errno is preserved by the callers.
 * The buffers are slots of a memfd shared with the reporter (shared.c;
 * wire.h, "Shared event buffers"): a process killed while a thread idles
 * loses none of the events that thread committed. `sending_end` and
 * `sending_sequence` let the reporter tell whether the batch being written at
 * the kill arrived. Nothing on the fast path changes: the same stores into
 * the same struct, in other pages.
 *
 * If a write fails (reporter gone: EPIPE, never SIGPIPE thanks to
 * MSG_NOSIGNAL) the connection is closed, one warning is printed and later
 * events are counted as dropped; the program keeps running.
 *
 * The program never waits on the reporter for long: the socket is
 * non-blocking, connect() retries a full backlog and a send polls a full
 * socket for at most wait_ms (HEAPLEDGER_OPTIONS) each time no byte goes out,
 * then the hook goes on standalone. Nothing is sent before SO_PEERCRED shows
 * the listener runs as our user or root (another user may have bound the
 * path first). The socket sits high in the descriptor table (fd.c) and is
 * checked before each send: a program that took its number gets neither our
 * bytes nor a close().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "leakcheck.h"
#include "lock.h"
#include "scan.h"
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
	uint8_t data[BUFFER_BYTES] __attribute__((aligned(64)));
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
};

static struct hl_lock write_lock;
/* enum emit_state. Once connected it lives on a page the kernel zeroes
 * (EMIT_OFF) in a child with a copy of our memory (MADV_WIPEONFORK): a raw
 * clone() child, which runs no atfork handler until its exit, so sees
 * EMIT_OFF and never appends to the buffers, which are shared with the
 * parent (shared.c), not copied. A vfork child sees the parent's. */
static _Atomic int state_static;
static _Atomic int *state_word = &state_static;
/* The state as this process image last set it, on ordinary memory: what a
 * fork child (or a raw clone child at its exit) inherited. write_lock */
static int state_mirror;
/* A wait for the reporter timed out: it is stopped or stuck, so a forked
 * child does not wait for it again (each would stall wait_ms). */
static bool reporter_stuck;
/* A second thread has had events since the process image (or fork child)
 * began: from then on every event reads the clock (see event_ticks). */
static _Atomic bool threaded;
static struct hl_fd sock = HL_FD_NONE;
static struct emit_buffer *buffers;      /* write_lock */
static uint64_t batch_sequence;          /* write_lock */
static uint64_t records_total;           /* records written; write_lock */
static uint32_t stacks_sent = 1;         /* ids below were sent; write_lock */
static _Atomic uint64_t dropped;
static uint64_t dropped_sent;            /* `dropped` as last told in DROPPED; write_lock */
static uint64_t lost_stacks_sent;        /* hl_stack_lost() as last told; write_lock */
static uint8_t scratch[SCRATCH_BYTES] __attribute__((aligned(8))); /* write_lock */
static size_t scratch_used;
static HL_TLS struct emit_buffer *tls_buffer;
static HL_TLS bool tls_exited;
static HL_TLS uint64_t tls_late[(LATE_BYTES + 7) / 8];
static const uint8_t zeros[8]; /* a batch's padding */

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t current_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

bool hl_emit_is_live(void)
{
	return atomic_load_explicit(state_word, memory_order_relaxed) == EMIT_LIVE;
}

bool hl_emit_was_lost(void)
{
	return atomic_load_explicit(state_word, memory_order_relaxed) == EMIT_LOST;
}

uint64_t hl_emit_dropped(void)
{
	return atomic_load_explicit(&dropped, memory_order_relaxed);
}

/* ---- the socket ------------------------------------------------------------ */

static int state_swap_locked(int s)
{
	hl_assert_held(&write_lock);
	state_mirror = s;
	return atomic_exchange(state_word, s);
}

/* The state's wipe-on-fork page, before the first connection; false if the
 * kernel has none (Linux < 4.14): then no buffer is shared either. */
static bool state_page_locked(void)
{
	hl_assert_held(&write_lock);
	if (state_word != &state_static)
		return true;
	size_t page = hl_os_page_size();
	_Atomic int *word = hl_os_map(page);
	if (word == NULL)
		return false;
	if (!hl_os_wipe_on_fork((void *)word, page)) {
		hl_os_unmap((void *)word, page);
		return false;
	}
	atomic_store(word, atomic_load(&state_static));
	state_word = word;
	return true;
}

/* Goes on standalone; `reason` (enum hl_standalone) reaches the reporter
 * through the shared area, stored before the socket closes. */
static void disconnect_locked(uint32_t reason, const char *why)
{
	hl_assert_held(&write_lock);
	if (atomic_load_explicit(state_word, memory_order_relaxed) == EMIT_LIVE)
		hl_shared_note_standalone_locked(reason);
	hl_fd_release(&sock); /* closed only if the number is still ours */
	if (state_swap_locked(EMIT_LOST) == EMIT_LIVE) {
		hl_notice(why);
	}
}

/* Waits until fd takes more bytes (or `events` happen), at most wait_ms;
 * false on timeout. */
static bool wait_ready(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t start = hl_os_now_ms(), waited = 0;
	while (waited <= hl_options.wait_ms) {
		int n = poll(&p, 1, (int)(hl_options.wait_ms - waited));
		if (n > 0)
			return true;
		if (n == 0 || errno != EINTR)
			return false;
		waited = hl_os_now_ms() - start;
	}
	return false;
}

/* Sends iov[0..count) whole; `pass_fd` >= 0 rides along (SCM_RIGHTS) with
 * the first bytes. */
static bool send_iov_fd_locked(struct iovec *iov, int count, int pass_fd)
{
	hl_assert_held(&write_lock);
	if (atomic_load_explicit(state_word, memory_order_relaxed) != EMIT_LIVE)
		return false;
	if (hl_unlikely(!hl_process_is_owner()))
		return false; /* a vfork or raw clone child: the connection is not its own */
	if (!hl_fd_is_ours(&sock)) {
		disconnect_locked(HL_STANDALONE_DESCRIPTOR,
				  "the program took the reporter connection's descriptor; "
				  "continuing standalone, events are dropped");
		return false;
	}
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)count };
	union {
		struct cmsghdr h;
		char bytes[CMSG_SPACE(sizeof(int))];
	} control;
	if (pass_fd >= 0) {
		msg.msg_control = control.bytes;
		msg.msg_controllen = sizeof(control.bytes);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	while (msg.msg_iovlen > 0) {
		ssize_t n = sendmsg(sock.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (wait_ready(sock.fd, POLLOUT))
				continue;
			reporter_stuck = true;
			disconnect_locked(HL_STANDALONE_STALLED,
					  "the reporter stopped reading (wait_ms passed); "
					  "continuing standalone, events are dropped");
			return false;
		}
		if (n <= 0) {
			disconnect_locked(HL_STANDALONE_LOST,
					  "reporter connection lost; continuing standalone, "
					  "events are dropped");
			return false;
		}
		msg.msg_control = NULL; /* went with the first bytes */
		msg.msg_controllen = 0;
		while (msg.msg_iovlen > 0 && (size_t)n >= msg.msg_iov->iov_len) {
			n -= (ssize_t)msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen > 0) {
			msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + n;
			msg.msg_iov->iov_len -= (size_t)n;
		}
	}
	return true;
}

static bool send_iov_locked(struct iovec *iov, int count)
{
	hl_assert_held(&write_lock);
	return send_iov_fd_locked(iov, count, -1);
}

bool hl_emit_lock_is_held(void)
{
	return hl_lock_is_held(&write_lock);
}

bool hl_emit_send_locked(const void *data, size_t len)
{
	hl_assert_held(&write_lock);
	struct iovec iov = { (void *)data, len };
	return send_iov_locked(&iov, 1);
}

static bool scratch_flush_locked(void)
{
	hl_assert_held(&write_lock);
	bool ok = scratch_used == 0 || hl_emit_send_locked(scratch, scratch_used);
	scratch_used = 0;
	return ok;
}

/* Room for `len` bytes in the scratch buffer, flushing it first if needed. */
static void *scratch_reserve_locked(size_t len)
{
	hl_assert_held(&write_lock);
	if (scratch_used + len > sizeof(scratch) && !scratch_flush_locked())
		return NULL;
	void *p = scratch + scratch_used;
	scratch_used += len;
	return p;
}

/* Sends STACK records for ids not yet sent on this connection. */
static bool send_stacks_locked(void)
{
	hl_assert_held(&write_lock);
	uint32_t end = hl_stack_next_id();
	for (; stacks_sent < end; stacks_sent++) {
		const struct hl_stack *s = hl_stack_get(stacks_sent);
		uint32_t len = (uint32_t)(sizeof(struct hl_rec_stack) + s->depth * 8u);
		struct hl_rec_stack *rec = scratch_reserve_locked(len);
		if (rec == NULL)
			return false;
		rec->h = hl_wire_hdr(HL_REC_STACK, 0, len);
		rec->stack_id = s->id;
		rec->depth = s->depth;
		rec->truncated = s->truncated;
		memcpy(rec + 1, s->frames, s->depth * 8u);
		records_total++;
	}
	return scratch_flush_locked();
}

/* Events dropped on a live connection (no buffer for a new thread, a
 * vfork child's events past its parent's full buffer, a record too long to
 * pack, the early log past its bound) and stacks captured but not kept are
 * told in a DROPPED record before the next batch and before EXIT, so the
 * report says how much may be missing. */
static bool send_dropped_locked(void)
{
	hl_assert_held(&write_lock);
	uint64_t now = atomic_load_explicit(&dropped, memory_order_relaxed);
	uint64_t lost = hl_stack_lost();
	if (now == dropped_sent && lost == lost_stacks_sent)
		return true;
	struct hl_rec_dropped rec = { .h = hl_wire_hdr(HL_REC_DROPPED, 0, sizeof(rec)),
				      .events = now - dropped_sent,
				      .stacks = lost - lost_stacks_sent };
	if (!hl_emit_send_locked(&rec, sizeof(rec)))
		return false;
	dropped_sent = now;
	lost_stacks_sent = lost;
	records_total++;
	return true;
}

void hl_emit_count_dropped(uint64_t n)
{
	atomic_fetch_add_explicit(&dropped, n, memory_order_relaxed);
}

/* Everything a batch may name, sent before it (and the DROPPED count). */
static bool send_definitions_locked(void)
{
	hl_assert_held(&write_lock);
	return hl_modules_send_locked() && send_stacks_locked() && send_dropped_locked();
}

/* Sends `bytes` of packed events of thread `tid` at `events` as one BATCH
 * record with the given bases. */
static bool send_batch_locked(uint32_t tid, const uint8_t *events, uint32_t bytes,
			      uint64_t base_ticks, uint64_t base_address)
{
	hl_assert_held(&write_lock);
	uint32_t padded = hl_wire_padded(bytes);
	struct hl_rec_batch batch = {
		.h = hl_wire_hdr(HL_REC_BATCH, 0, (uint32_t)sizeof(batch) + padded),
		.tid = tid,
		.packed_bytes = bytes,
		.ticks = hl_ticks(),
		.monotonic_ns = clock_ns(CLOCK_MONOTONIC),
		.realtime_ns = clock_ns(CLOCK_REALTIME),
		.sequence = batch_sequence++,
		.base_ticks = base_ticks,
		.base_address = base_address,
	};
	struct iovec iov[3] = { { &batch, sizeof(batch) }, { (void *)events, bytes },
				{ (void *)zeros, padded - bytes } };
	return send_iov_locked(iov, 3);
}

/* Sends [sent, used) of `b` as one batch. Another thread may be appending
 * to it: bases do not change until the owner empties the buffer. */
static void buffer_send_locked(struct emit_buffer *b)
{
	hl_assert_held(&write_lock);
	uint32_t used = atomic_load_explicit(&b->used, memory_order_acquire);
	uint32_t records = atomic_load_explicit(&b->records, memory_order_relaxed);
	if (used == b->sent || !send_definitions_locked())
		goto out_mark;
	/* Killed while or after the batch goes out, before `sent` moves: the
	 * reporter tells by the sequence whether it got the batch. */
	b->sending_sequence = batch_sequence;
	b->sending_end = used;
	if (send_batch_locked(b->tid, b->data + b->sent, used - b->sent, b->first_ticks,
			      atomic_load_explicit(&b->base_address, memory_order_relaxed)))
		records_total += 1 + records - b->records_sent;
out_mark:
	if (hl_emit_was_lost())
		atomic_fetch_add_explicit(&dropped, records - b->records_sent, memory_order_relaxed);
	b->sent = used;
	b->sending_end = used;
	b->records_sent = records;
}

/* Empties `b` after its events were sent; the next event sets new bases. */
static void buffer_reset(struct emit_buffer *b)
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
	hl_lock(&write_lock);
	buffer_send_locked(b);
	buffer_reset(b);
	hl_unlock(&write_lock);
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
static void buffer_start(struct emit_buffer *b, uint32_t tid)
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
	hl_assert_held(&write_lock);
	struct emit_buffer *b = hl_shared_slot_take_locked();
	if (b != NULL)
		memset(b, 0, offsetof(struct emit_buffer, data));
	return b;
}

static void buffer_free_locked(struct emit_buffer *b)
{
	hl_assert_held(&write_lock);
	if (!hl_shared_slot_give_locked(b))
		hl_meta_free(b, sizeof(*b));
}

static HL_NOINLINE struct emit_buffer *buffer_create(void)
{
	hl_lock(&write_lock);
	struct emit_buffer *b = buffer_alloc_locked();
	hl_unlock(&write_lock);
	if (b == NULL && (b = hl_meta_alloc(sizeof(*b))) == NULL)
		return NULL;
	buffer_start(b, current_tid());
	hl_lock(&write_lock);
	b->next = buffers;
	if (buffers) {
		buffers->prev = b;
		/* Before this thread's first event is encoded. */
		atomic_store_explicit(&threaded, true, memory_order_relaxed);
	}
	buffers = b;
	hl_unlock(&write_lock);
	tls_buffer = b;
	return b;
}

static void buffer_unlink_locked(struct emit_buffer *b)
{
	hl_assert_held(&write_lock);
	if (b->prev)
		b->prev->next = b->next;
	else
		buffers = b->next;
	if (b->next)
		b->next->prev = b->prev;
}

/* Reading the TSC costs ~11 ns here, as much as the rest of an event's
 * encoding. A process with one thread needs ticks only for time (the
 * timeline), not to order its events (the stream does), so while its events
 * are dense the next REUSE_EVENTS events take the last reading: ~4% of
 * `heapledger run` on churn. Dense: 8 readings in a row each within
 * DENSE_TICKS / 8 of the one before, and then, while reusing, each reading
 * within DENSE_TICKS of the last. Ticks so stay non-decreasing, never ahead
 * of their event, and at most REUSE_EVENTS events behind (more than a
 * moment only for the first events after a pause that follows a dense run).
 * Once a second thread has events, the reporter orders threads by ticks, so
 * every event reads the clock: a thread that still saw `threaded` false
 * cannot be handed a block of the new thread's without the synchronisation
 * that makes the flag visible. */
#define REUSE_EVENTS 7u
#define DENSE_READS 8u
#define DENSE_TICKS (1u << 16) /* 20-30 us of TSC, 65 us of nanoseconds */

HL_INLINE uint64_t event_ticks(struct emit_buffer *b)
{
	if (b->reuse_left != 0 && !atomic_load_explicit(&threaded, memory_order_relaxed)) {
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

/* Room for one event of at most `room` bytes in this thread's buffer, or
 * NULL when nothing is sent (counted as dropped after a lost connection).
 * *b is NULL for a thread past hl_emit_thread_exit: the event goes to
 * tls_late and is sent alone. *ticks is the event's time. */
HL_INLINE uint8_t *event_begin(uint32_t room, uint64_t *ticks, struct emit_buffer **out)
{
	int s = atomic_load_explicit(state_word, memory_order_relaxed);
	if (hl_unlikely(s != EMIT_LIVE)) {
		if (s == EMIT_LOST)
			atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return NULL;
	}
	*out = NULL;
	if (hl_unlikely(tls_exited)) {
		*ticks = hl_ticks();
		return (uint8_t *)tls_late;
	}
	struct emit_buffer *b = tls_buffer;
	if (hl_unlikely(b == NULL) && (b = buffer_create()) == NULL) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return NULL;
	}
	*ticks = event_ticks(b);
	if (hl_unlikely(b->used + room > sizeof(b->data)) && !buffer_flush_own(b)) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
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
	hl_lock(&write_lock);
	if (send_definitions_locked() &&
	    send_batch_locked(current_tid(), (const uint8_t *)tls_late, len, base_ticks, 0))
		records_total += 2;
	hl_unlock(&write_lock);
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

/* One packed event: its first fields are its time and its (first) address,
 * packed against the buffer's bases; `rest` holds the others as they go. */
HL_INLINE void emit_event(unsigned event, unsigned kind, uint64_t address, const uint64_t *rest,
			  unsigned nrest)
{
	struct emit_buffer *b;
	uint64_t ticks, bt, ba;
	uint8_t *dst = event_begin(HL_PACK_MAX_EVENT, &ticks, &b);
	if (dst == NULL)
		return;
	event_bases(b, ticks, address, &bt, &ba);
	uint64_t f[HL_PACK_MAX_FIELDS] = { ticks - bt, hl_zigzag(address - ba) };
	for (unsigned i = 0; i < nrest; i++)
		f[2 + i] = rest[i];
	event_end(b, hl_pack_write(dst, event, kind, f, 2 + nrest), ticks);
}

void hl_emit_alloc(uint64_t address, uint64_t size, uint32_t stack_id, unsigned kind)
{
	uint64_t rest[2] = { size, stack_id };
	emit_event(HL_PACK_ALLOC, kind, address, rest, 2);
}

void hl_emit_free(uint64_t address, unsigned kind)
{
	emit_event(HL_PACK_FREE, kind, address, NULL, 0);
}

void hl_emit_realloc(uint64_t old_address, uint64_t new_address, uint64_t size,
		     uint32_t stack_id)
{
	uint64_t rest[3] = { hl_zigzag(new_address - old_address), size, stack_id };
	emit_event(HL_PACK_REALLOC, 0, old_address, rest, 3);
}

void hl_emit_record(const void *rec, uint32_t len)
{
	struct emit_buffer *b;
	uint64_t ticks;
	if (len > HL_PACK_MAX_RECORD) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return;
	}
	uint8_t *dst = event_begin(HL_PACK_OP_BYTES + len, &ticks, &b);
	if (dst != NULL)
		event_end(b, hl_pack_write_record(dst, rec, len), ticks);
}

void hl_emit_thread_exit(void)
{
	struct emit_buffer *b = tls_buffer;
	tls_exited = true;
	if (b == NULL)
		return;
	hl_lock(&write_lock);
	if (b->used + THREAD_EVENT_BYTES > sizeof(b->data)) {
		buffer_send_locked(b);
		buffer_reset(b);
	}
	put_thread_record(b, HL_REC_THREAD_END, b->tid);
	buffer_send_locked(b);
	buffer_unlink_locked(b);
	tls_buffer = NULL;
	buffer_free_locked(b);
	hl_unlock(&write_lock);
}

static void flush_all_locked(void)
{
	hl_assert_held(&write_lock);
	for (struct emit_buffer *b = buffers; b; b = b->next)
		buffer_send_locked(b);
}

void hl_emit_flush_all(void)
{
	if (!hl_emit_is_live())
		return;
	hl_lock(&write_lock);
	flush_all_locked();
	hl_unlock(&write_lock);
}

/* ---- connection ------------------------------------------------------------- */

/* /proc/self/cmdline into buf: NUL-terminated strings; returns bytes and
 * sets *argc. Truncated at a string boundary if longer than the buffer. */
static uint32_t read_cmdline(char *buf, uint32_t cap, uint32_t *argc)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	uint32_t used = 0;
	ssize_t n = 1;
	while (fd >= 0 && used < cap && n > 0) {
		n = read(fd, buf + used, cap - used);
		if (n > 0)
			used += (uint32_t)n;
	}
	if (fd >= 0)
		close(fd);
	while (used > 0 && buf[used - 1] != '\0')
		used--; /* drop a cut-off last string */
	*argc = 0;
	for (uint32_t i = 0; i < used; i++)
		*argc += buf[i] == '\0';
	return used;
}

static uint64_t run_id_from_env(void)
{
	const char *s = getenv(HL_ENV_RUN_ID);
	uint64_t v = 0;
	while (s && *s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	return v;
}

/* HELLO in scratch: header, exe path, argv strings, padding. */
static bool send_hello_locked(uint32_t origin, uint32_t ppid)
{
	hl_assert_held(&write_lock);
	const char *exe = hl_modules_exe_path();
	uint32_t exe_len = (uint32_t)strlen(exe) + 1, argc;
	struct hl_rec_hello *hello = (void *)scratch;
	char *text = (char *)(hello + 1);
	memcpy(text, exe, exe_len);
	uint32_t argv_len = read_cmdline(text + exe_len,
					 SCRATCH_BYTES - sizeof(*hello) - exe_len - 8 -
						 sizeof(struct hl_rec_options), &argc);
	/* The test's name, set by the runner, names the process under a daemon. */
	const char *test = hl_env_get(HL_ENV_TEST_NAME);
	uint32_t test_len = test && *test ? (uint32_t)strnlen(test, HL_WIRE_MAX_TEST_NAME - 1) + 1 : 0;
	if (sizeof(*hello) + exe_len + argv_len + test_len + 8 + sizeof(struct hl_rec_options) >
	    SCRATCH_BYTES)
		test_len = 0;
	if (test_len) {
		memcpy(text + exe_len + argv_len, test, test_len - 1);
		text[exe_len + argv_len + test_len - 1] = 0;
	}
	uint32_t len = hl_wire_padded((uint32_t)sizeof(*hello) + exe_len + argv_len + test_len);
	memset(text + exe_len + argv_len + test_len, 0,
	       len - sizeof(*hello) - exe_len - argv_len - test_len);
	*hello = (struct hl_rec_hello){
		.h = hl_wire_hdr(HL_REC_HELLO, 0, len),
		.pid = (uint32_t)getpid(),
		.ppid = ppid,
		.start_realtime_ns = clock_ns(CLOCK_REALTIME),
		.run_id = run_id_from_env(),
		.origin = origin,
		.argc = argc,
		.exe_len = exe_len,
		.argv_len = argv_len,
		.stack_depth = hl_options.stack_depth,
		.pointer_bytes = sizeof(void *),
		.hook_flags = (hl_options.stack_depth ? HL_HOOK_STACKS : 0) | HL_TICKS_FLAGS |
			      (origin == HL_ORIGIN_FORK ? HL_HOOK_FORK_SNAPSHOT : 0),
		.test_len = test_len,
	};
	/* OPTIONS rides in the same write, so the reporter knows them before
	 * it can report anything of this process. */
	struct hl_rec_options *options = (void *)(scratch + len);
	*options = (struct hl_rec_options){
		.h = hl_wire_hdr(HL_REC_OPTIONS, 0, sizeof(*options)),
		.given = hl_options_given & (1ull << HL_OPTION_INDEX_max_leaks) ?
				 HL_OPTIONS_MAX_LEAKS : 0,
		.max_leaks = hl_options.max_leaks,
	};
	len += (uint32_t)sizeof(*options);
	records_total = 2;
	scratch_used = 0;
	/* The shared buffers' memfd goes with HELLO; ours is closed at once. */
	int area_fd = !state_page_locked() ? -1 :
		hl_shared_fd_take(sizeof(struct emit_buffer),
				  (uint32_t)offsetof(struct emit_buffer, data), BUFFER_BYTES);
	struct iovec iov = { scratch, len };
	bool ok = send_iov_fd_locked(&iov, 1, area_fd);
	if (area_fd >= 0) {
		int saved = errno;
		close(area_fd);
		errno = saved;
	}
	return ok;
}

/* A fresh connection on `fd`: nothing was sent on it yet. */
static bool start_locked(int fd, uint32_t origin, uint32_t ppid)
{
	hl_assert_held(&write_lock);
	if (!hl_fd_keep(&sock, fd))
		return false;
	state_swap_locked(EMIT_LIVE);
	hl_track_frees = true; /* a reporter now keeps the live set */
	batch_sequence = 0;
	stacks_sent = 1;
	atomic_store(&dropped, 0);
	dropped_sent = 0;
	lost_stacks_sent = hl_stack_lost(); /* a fork child's: from here on */
	hl_modules_reset_sent_locked();
	return send_hello_locked(origin, ppid);
}

bool hl_emit_connect_fd(int fd, uint32_t origin, uint32_t ppid)
{
	/* Room for several threads' batches in flight: with the default
	 * (208 KiB, one 128 KiB batch) a thread whose batch found the socket
	 * full waited for the reporter holding write_lock, and every other
	 * thread that had to send waited behind it (8 threads passing blocks
	 * under --checks full: 98 such waits, 8 after; 5-9% less CPU). The
	 * kernel caps it at net.core.wmem_max. */
	int sndbuf = SOCKET_BUFFER_BYTES;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	hl_lock(&write_lock);
	bool ok = start_locked(fd, origin, ppid);
	hl_unlock(&write_lock);
	return ok;
}

bool hl_emit_peer_trusted(uint32_t peer_uid, uint32_t own_uid)
{
	return peer_uid == own_uid || peer_uid == 0;
}

/* connect() without blocking for long: a reporter whose backlog is full
 * (it is not accepting: stopped, or at its descriptor limit) makes a
 * non-blocking AF_UNIX connect fail with EAGAIN at once, so it is retried
 * every few ms until wait_ms have passed. 0 or -errno. */
static int connect_bounded(int fd, const struct sockaddr_un *addr)
{
	uint64_t start = hl_os_now_ms();
	for (;;) {
		if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0)
			return 0;
		if (errno == EINPROGRESS) {
			int err = 0;
			socklen_t len = sizeof(err);
			if (!wait_ready(fd, POLLOUT))
				return -ETIMEDOUT;
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
			return -err;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (hl_os_now_ms() - start > hl_options.wait_ms)
			return -ETIMEDOUT;
		struct timespec pause = { 0, 5 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
}

/* Whoever listens must be our user or root: a socket another user bound
 * first would otherwise receive our argv, paths and addresses. */
static bool peer_is_trusted(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	return hl_emit_peer_trusted(cred.uid, (uint32_t)geteuid());
}

bool hl_emit_connect(const char *path, uint32_t origin, uint32_t ppid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	const char *why = "cannot reach the reporter at " HL_ENV_SOCKET "; standalone";
	if (len >= sizeof(addr.sun_path)) {
		hl_notice("reporter socket path too long; standalone");
		return false;
	}
	memcpy(addr.sun_path, path, len + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto out_fail;
	fd = hl_fd_move_high(fd);
	int err = connect_bounded(fd, &addr);
	reporter_stuck = err == -ETIMEDOUT;
	if (err == -ETIMEDOUT)
		why = "the reporter at " HL_ENV_SOCKET " is not accepting (wait_ms passed); "
		      "standalone";
	else if (err == 0 && !peer_is_trusted(fd))
		why = "the socket at " HL_ENV_SOCKET " belongs to another user; nothing sent, "
		      "standalone";
	else if (err == 0)
		return hl_emit_connect_fd(fd, origin, ppid);
	close(fd);
out_fail:
	hl_notice(why);
	return false;
}

/* ---- blocks from before the connection ------------------------------------ */

struct early_sink {
	uint64_t ticks;
	uint16_t flags; /* HL_ALLOC_INHERITED for a fork child's snapshot */
	bool started;   /* the BATCH record is out */
	bool (*known)(uint64_t address); /* blocks already sent, or NULL */
};

/* One ALLOC record per block, in a batch of the calling thread. */
static void early_block(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	struct early_sink *sink = arg;
	if (sink->known != NULL && sink->known((uintptr_t)address))
		return;
	if (!sink->started) {
		struct hl_rec_batch *batch = scratch_reserve_locked(sizeof(*batch));
		if (batch == NULL)
			return;
		*batch = (struct hl_rec_batch){
			.h = hl_wire_hdr(HL_REC_BATCH, 0, sizeof(*batch)), .tid = current_tid(),
			.ticks = sink->ticks, .monotonic_ns = clock_ns(CLOCK_MONOTONIC),
			.realtime_ns = clock_ns(CLOCK_REALTIME), .sequence = batch_sequence++ };
		records_total++;
		sink->started = true;
	}
	struct hl_rec_alloc *rec = scratch_reserve_locked(sizeof(*rec));
	if (rec == NULL)
		return;
	*rec = (struct hl_rec_alloc){ .h = hl_wire_hdr(HL_REC_ALLOC, kind | sink->flags,
						       sizeof(*rec)),
				      .address = (uintptr_t)address, .size = size,
				      .ticks = sink->ticks,
				      .stack_id = stack_id < stacks_sent ? stack_id : 0 };
	records_total++;
}

/* Every block of the heap but the known ones as an ALLOC record with `flags`. */
static void send_heap_blocks(uint16_t flags, bool (*known)(uint64_t address))
{
	if (!hl_emit_is_live())
		return;
	hl_lock(&write_lock);
	struct early_sink sink = { .ticks = hl_ticks(), .flags = flags, .known = known };
	if (send_definitions_locked()) {
		hl_heap_walk(early_block, &sink);
		scratch_flush_locked();
	}
	hl_unlock(&write_lock);
}

void hl_emit_send_early_blocks(void)
{
	send_heap_blocks(0, NULL);
}

void hl_emit_send_heap_blocks_except(bool (*known)(uint64_t address))
{
	send_heap_blocks(0, known);
}

/* ---- exit ------------------------------------------------------------------- */

/* Indirect entries a LIVE record collects before it is closed. */
#define LIVE_INDIRECT_MAX 32

struct live_sink {
	struct hl_rec_live *rec; /* record being filled in scratch, or NULL */
	struct hl_unstopped unstopped; /* the scan's threads that did not stop */
	uint16_t flags;          /* HL_LIVE_* of its records */
	uint32_t nindirect;      /* entries for rec's tail (wire.h) */
	struct hl_wire_live_indirect indirect[LIVE_INDIRECT_MAX];
};

/* Ends the open LIVE record with its indirect entries (room was kept). */
static void live_close(struct live_sink *sink)
{
	if (sink->rec != NULL && sink->nindirect > 0) {
		size_t bytes = sink->nindirect * sizeof(sink->indirect[0]);
		memcpy(scratch + scratch_used, sink->indirect, bytes);
		scratch_used += bytes;
		sink->rec->h.length += (uint32_t)bytes;
	}
	sink->nindirect = 0;
	sink->rec = NULL;
}

static void live_append(struct live_sink *sink, void *address, size_t size, uint32_t stack_id,
			unsigned kind, unsigned leak_class, uint64_t indirect)
{
	if (hl_unlikely(stack_id >= stacks_sent)) {
		/* Interned by another thread after the walk began: define it
		 * first, outside any LIVE record. */
		live_close(sink);
		scratch_flush_locked();
		send_stacks_locked();
	}
	/* Room for this block and every indirect entry the record may end with. */
	size_t tail = (sink->nindirect + (indirect != 0)) * sizeof(struct hl_wire_live_indirect);
	if (sink->rec == NULL || sink->rec->count == HL_WIRE_MAX_LIVE_PER_RECORD ||
	    (indirect != 0 && sink->nindirect == LIVE_INDIRECT_MAX) ||
	    scratch_used + sizeof(struct hl_wire_live_block) + tail > sizeof(scratch)) {
		live_close(sink);
		if (scratch_used + sizeof(struct hl_rec_live) + sizeof(struct hl_wire_live_block) +
			    sizeof(struct hl_wire_live_indirect) >
		    sizeof(scratch))
			scratch_flush_locked();
		sink->rec = scratch_reserve_locked(sizeof(struct hl_rec_live));
		if (sink->rec == NULL)
			return;
		*sink->rec = (struct hl_rec_live){ .h = hl_wire_hdr(HL_REC_LIVE, sink->flags,
								   sizeof(struct hl_rec_live)) };
		records_total++;
	}
	struct hl_wire_live_block *blk = (void *)(scratch + scratch_used);
	scratch_used += sizeof(*blk);
	*blk = (struct hl_wire_live_block){ .address = (uintptr_t)address, .size = size,
					   .stack_id = stack_id, .kind = (uint8_t)kind,
					   .leak_class = (uint8_t)leak_class };
	if (indirect != 0)
		sink->indirect[sink->nindirect++] =
			(struct hl_wire_live_indirect){ .index = sink->rec->count, .bytes = indirect };
	sink->rec->count++;
	sink->rec->h.length += sizeof(*blk);
}

static void live_block(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	live_append(arg, address, size, stack_id, kind, HL_CLASS_UNKNOWN, 0);
}

/* The scan's blocks with their classes, while the world is stopped: only
 * the lock-free stack table and the scratch buffer (write lock held). */
static void live_scanned(struct hl_scan *s, void *arg)
{
	struct live_sink *sink = arg;
	sink->flags |= HL_LIVE_SCANNED | (s->unstopped ? HL_LIVE_UNSTOPPED : 0);
	sink->unstopped.count = s->unstopped;
	memcpy(sink->unstopped.tids, s->unstopped_tids, sizeof(sink->unstopped.tids));
	for (size_t i = 0; i < s->nblocks; i++) {
		struct hl_range *r = s->blocks[i];
		live_append(sink, hl_range_data(r), hl_block_requested(r), hl_range_stack_id(r),
			    hl_range_kind(r), hl_scan_class(s, i), hl_scan_indirect_bytes(s, i));
	}
	live_close(sink);
	scratch_flush_locked();
}

/* The tids of the threads a scan could not stop, after a record's fixed
 * part (wire.h); returns the bytes they take, padded with zeros. */
static uint32_t unstopped_tail(const struct hl_unstopped *u)
{
	return hl_wire_padded(hl_unstopped_named(u) * (uint32_t)sizeof(uint32_t));
}

static void unstopped_write(void *at, const struct hl_unstopped *u)
{
	memset(at, 0, unstopped_tail(u));
	memcpy(at, u->tids, hl_unstopped_named(u) * sizeof(uint32_t));
}

static void send_exit_locked(unsigned how, int status, const struct hl_unstopped *unstopped)
{
	hl_assert_held(&write_lock);
	uint32_t len = (uint32_t)sizeof(struct hl_rec_exit) + unstopped_tail(unstopped);
	struct hl_rec_exit *rec = scratch_reserve_locked(len);
	if (rec == NULL)
		return;
	records_total++;
	*rec = (struct hl_rec_exit){ .h = hl_wire_hdr(HL_REC_EXIT, 0, len),
				     .how = how, .status = status, .ticks = hl_ticks(),
				     .events_sent = records_total };
	unstopped_write(rec + 1, unstopped);
	scratch_flush_locked();
}

bool hl_emit_finish(unsigned how, int status)
{
	if (!hl_emit_is_live())
		return false;
	hl_lock(&write_lock);
	flush_all_locked();
	/* Stacks interned during the walk are sent before the records naming
	 * them: definitions first, then LIVE blocks whose ids are all older. */
	send_definitions_locked();
	struct live_sink sink = { .flags = 0 };
	struct hl_unstopped unstopped = { 0 };
	if (!hl_leakcheck_scans_at(how) || !hl_leakcheck_run(NULL, live_scanned, &sink, &unstopped)) {
		sink = (struct live_sink){ .flags = 0 };
		hl_heap_walk(live_block, &sink);
		live_close(&sink);
	}
	send_exit_locked(how, status, &sink.unstopped);
	bool ok = hl_emit_is_live();
	hl_fd_release(&sock);
	state_swap_locked(ok ? EMIT_DONE : EMIT_LOST);
	hl_unlock(&write_lock);
	return ok;
}

/* An on-demand leak check: every buffered event and definition first, so the
 * set is the live state right after them; then the set, then CHECK. The
 * caller holds hl_leakcheck_lock. */
bool hl_emit_check(const struct hl_scan_origin *origin, uint32_t seq, uint32_t flags)
{
	if (!hl_emit_is_live())
		return false;
	hl_lock(&write_lock);
	flush_all_locked();
	send_definitions_locked();
	struct live_sink sink = { .flags = HL_LIVE_CHECK };
	uint64_t ticks = hl_ticks();
	struct hl_unstopped unstopped = { 0 };
	bool ok = hl_leakcheck_run(origin, live_scanned, &sink, &unstopped);
	if (ok) {
		uint32_t len = (uint32_t)sizeof(struct hl_rec_check) + unstopped_tail(&unstopped);
		struct hl_rec_check *rec = scratch_reserve_locked(len);
		if (rec) {
			records_total++;
			*rec = (struct hl_rec_check){
				.h = hl_wire_hdr(HL_REC_CHECK, 0, len), .seq = seq,
				.flags = flags | (unstopped.count ? HL_CHECK_UNSTOPPED : 0),
				.ticks = ticks };
			unstopped_write(rec + 1, &unstopped);
		}
		scratch_flush_locked();
	}
	ok = ok && hl_emit_is_live();
	hl_unlock(&write_lock);
	return ok;
}

/* Every buffered event, then EXEC naming path (wire.h): the last record of
 * this image if the exec succeeds. */
void hl_emit_exec(const char *path)
{
	size_t len = strnlen(path ? path : "", HL_WIRE_MAX_PATH - 1) + 1;
	size_t padded = hl_wire_padded((uint32_t)(sizeof(struct hl_rec_exec) + len));
	if (!hl_emit_is_live())
		return;
	hl_lock(&write_lock);
	flush_all_locked();
	struct hl_rec_exec *rec = scratch_reserve_locked(padded);
	if (rec != NULL) {
		records_total++;
		memset(rec, 0, padded);
		*rec = (struct hl_rec_exec){ .h = hl_wire_hdr(HL_REC_EXEC, 0, (uint32_t)padded),
					     .path_len = (uint32_t)len };
		memcpy(rec + 1, path ? path : "", len - 1);
	}
	scratch_flush_locked();
	hl_unlock(&write_lock);
}

/* ---- fork ------------------------------------------------------------------- */

void hl_emit_fork_prepare(void)
{
	/* write_lock is held across fork so the child finds the buffer list
	 * and the scratch buffer consistent. The child does not depend on the
	 * parent's stream: it sends its own heap (HL_HOOK_FORK_SNAPSHOT, see
	 * hl_emit_fork_child); other threads keep appending to their buffers
	 * until fork, and those events reach the reporter on the parent's
	 * connection only. Flushing here just sends the parent's committed
	 * events before the child's HELLO. */
	hl_lock(&write_lock);
	if (hl_emit_is_live())
		flush_all_locked();
}

void hl_emit_fork_parent(void)
{
	hl_unlock(&write_lock);
}

void hl_emit_fork_record(pid_t child)
{
	struct hl_rec_fork rec = { .h = hl_wire_hdr(HL_REC_FORK, 0, sizeof(rec)),
				   .child_pid = (uint32_t)child, .ticks = hl_ticks() };
	hl_emit_record(&rec, sizeof(rec));
}

/* Only this thread exists now: other threads' buffers are forgotten, the
 * parent's connection is closed without a byte written to it, and this
 * thread's unflushed events (the parent's) are dropped. */
void hl_emit_fork_child(void)
{
	/* Held since prepare, and this thread is the only one: kept while the
	 * buffers are sorted, as the _locked calls below assert. */
	hl_lock_reset(&write_lock);
	hl_lock(&write_lock);
	struct emit_buffer *own = tls_buffer;
	/* First, before a byte is written: the shared buffers are the parent's
	 * pages until the child has its own. */
	if (!hl_shared_fork_child(own))
		own = tls_buffer = NULL; /* still the parent's: left alone */
	for (struct emit_buffer *b = buffers, *next; b; b = next) {
		next = b->next;
		if (b != own)
			buffer_free_locked(b);
	}
	buffers = NULL;
	atomic_store_explicit(&threaded, false, memory_order_relaxed); /* only this thread now */
	if (own) {
		own->next = own->prev = NULL;
		buffers = own;
		buffer_reset(own);
		buffer_start(own, current_tid());
	}
	hl_fd_release(&sock);
	int was = state_mirror; /* the page of state_word reads EMIT_OFF here */
	state_swap_locked(EMIT_OFF);
	hl_unlock(&write_lock);
	const char *path = hl_env_get(HL_ENV_SOCKET);
	/* The child's heap is an exact copy of the parent's at the instant of
	 * fork, blocks other threads were busy with included: it is sent as the
	 * child's starting state (HL_HOOK_FORK_SNAPSHOT). */
	if ((was == EMIT_LIVE || (was == EMIT_LOST && !reporter_stuck)) && path && *path &&
	    hl_emit_connect(path, HL_ORIGIN_FORK, (uint32_t)getppid()))
		send_heap_blocks(HL_ALLOC_INHERITED, NULL);
	hl_shared_fd_drop(); /* no HELLO took it: the program's table as it was */
}
