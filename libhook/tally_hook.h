/*
 * libhook/tally_hook.h: counting in the hook ("Counting in the hook",
 * wire.h): the tracking calls' inline path while a connected process
 * counts, in place of the ALLOC, FREE and REALLOC events. tally.c has the
 * rest. Never installed.
 *
 * While the process's one thread counts, the tally needs no lock and no
 * atomic. Before a second thread exists (pthread_create, clone with
 * CLONE_VM) the counting goes on per thread (mode THREADS): each thread
 * counts into its own delta (heapledger/tally.h, "threads") and merges it
 * under tally.c's lock. A thread that starts unseen, while one thread
 * counts alone, ends the counting at its first allocation (cache.c).
 *
 * A delta is changed by its thread alone, except at the end of counting
 * (exec, exit, a full tally), when the thread that ends it merges every
 * thread's. The handshake is an asymmetric Dekker: the owner marks its
 * delta busy with a plain store and then reads the mode; the ender sets
 * the mode OFF, makes every thread run a full barrier (membarrier), and
 * waits for each delta's busy to clear. So an owner either saw OFF (and
 * sends the event) or is seen busy (and is waited for): no per-event
 * atomic. Merges and every other change of the tally's own struct hold
 * tally.c's lock.
 */
#ifndef HL_TALLY_HOOK_H
#define HL_TALLY_HOOK_H

#include <stdbool.h>
#include <stdint.h>

#include "heapledger/tally.h"
#include "internal.h"

/* What each event reads, on the process's wipe-on-fork page (process.c):
 * a copy of the process made by a raw clone, which shares the area's
 * pages with us but runs no fork handler, finds mode OFF and sends events,
 * as a fork child does. A vfork child runs in our memory and on our heap:
 * what it allocates and frees is counted with ours, as its events would
 * have gone into our buffers. */
enum hl_tally_mode {
	HL_TALLY_MODE_OFF,     /* events are sent */
	HL_TALLY_MODE_ON,      /* the one thread counts into the tally */
	HL_TALLY_MODE_THREADS, /* each thread counts into its delta */
};
struct hl_tally_hot {
	uint32_t mode;   /* enum hl_tally_mode */
	uint32_t logged; /* stack ids below this have their frames in the log */
	struct hl_tally_view view;
};
_Static_assert(sizeof(struct hl_tally_hot) <= HL_PROCESS_OWN_PAGE_BYTES, "fits the page");
/* A zeroed default until counting begins (hidden: read directly). */
extern __attribute__((visibility("hidden"))) struct hl_tally_hot *hl_tally_hot;
#define hl_tally_on (hl_tally_hot->mode == HL_TALLY_MODE_ON)
#define hl_tally_view (hl_tally_hot->view)
#define hl_tally_logged (hl_tally_hot->logged)

/* The tracking calls' test: count this event? */
HL_INLINE bool hl_tally_counts(void)
{
	return hl_tally_hot->mode != HL_TALLY_MODE_OFF;
}

/* Threads: the thread's delta (NULL until its first count, and after its
 * end: then hl_tally_thread_slow counts under the lock). */
extern HL_TLS struct hl_tally_delta *hl_tally_tls_delta;

enum hl_tally_op { HL_TALLY_OP_ALLOC, HL_TALLY_OP_FREE, HL_TALLY_OP_REALLOC };
struct hl_tally_event {
	unsigned op, kind;
	uint64_t address, size; /* the new block's (an allocation, a realloc) */
	uint32_t id;
	uint64_t old_address, old_size; /* the freed block's (a free, a realloc) */
	uint32_t old_id;
};
/* An event of a thread without a delta; false: not counted (send it). */
bool hl_tally_thread_slow(const struct hl_tally_event *ev);
/* A realloc, counted by a thread (out of line: rarer than the rest). */
bool hl_tally_thread_realloc(const struct hl_tally_event *ev);
/* The thread's delta into the tally (it is full). */
void hl_tally_thread_merge(struct hl_tally_delta *d);
/* Before a second thread exists: the counting goes on per thread (or ends,
 * if the process cannot go on that way). */
void hl_tally_threads_begin(void);
/* The thread ends: its delta merged. */
void hl_tally_thread_exit(void);

/* A block of size bytes from stack id was counted: one made while tracking
 * was suspended (by a nested call) was not, nor is a stack id the tally
 * never counted (HL_TALLY_STACKS: none). */
HL_INLINE bool hl_tally_holds(uint32_t id, uint64_t size)
{
	return id < hl_tally_logged && ((hl_tally_view.stacks[id].live_blocks != 0) &
					(hl_tally_view.stacks[id].live_bytes >= size));
}

/* A block another thread may have made was counted when its stack id is a
 * real one (a stack was captured and counted); id 0 is also the id of a
 * block made while tracking was suspended, which was not: for it the
 * tally's own count of stack 0 decides, as hl_tally_holds does. */
HL_INLINE bool hl_tally_thread_holds(uint32_t id, uint64_t size)
{
	if (id != 0)
		return id < __atomic_load_n(&hl_tally_hot->logged, __ATOMIC_RELAXED);
	return hl_tally_holds(0, size);
}

/* The owner's side of the handshake: d marked busy, then the mode read. */
HL_INLINE bool hl_tally_delta_enter(struct hl_tally_delta *d)
{
	__atomic_store_n(&d->busy, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the ender's membarrier orders the rest */
	if (hl_likely(__atomic_load_n(&hl_tally_hot->mode, __ATOMIC_RELAXED) ==
		      HL_TALLY_MODE_THREADS))
		return true;
	__atomic_store_n(&d->busy, 0, __ATOMIC_RELEASE);
	return false;
}

HL_INLINE void hl_tally_delta_leave(struct hl_tally_delta *d)
{
	d->events++;
	__atomic_store_n(&d->busy, 0, __ATOMIC_RELEASE);
	if (hl_unlikely(hl_tally_delta_full(d)))
		hl_tally_thread_merge(d);
}

/* One event counted by a thread of a threaded process, through its delta
 * (made if need be) or, without one, under the lock; false: send it. */
HL_INLINE bool hl_tally_thread_alloc(uint64_t address, uint64_t size, uint32_t id, unsigned kind)
{
	struct hl_tally_delta *d = hl_tally_tls_delta;
	if (hl_unlikely(d == NULL)) {
		struct hl_tally_event ev = { .op = HL_TALLY_OP_ALLOC, .kind = kind,
					     .address = address, .size = size, .id = id };
		return hl_tally_thread_slow(&ev);
	}
	if (hl_unlikely(!hl_tally_delta_enter(d)))
		return false;
	hl_tally_delta_alloc(d, address, size, id, kind, false);
	hl_tally_delta_leave(d);
	return true;
}

/* The free of a block of size bytes from stack id, into d. */
HL_INLINE void hl_tally_thread_freed(struct hl_tally_delta *d, uint64_t address, uint64_t size,
				     uint32_t id)
{
	if (hl_likely(hl_tally_thread_holds(id, size)))
		hl_tally_delta_free(d, address, size, id);
	else
		hl_tally_delta_free_alone(d);
}

HL_INLINE bool hl_tally_thread_free(uint64_t address, uint64_t size, uint32_t id)
{
	struct hl_tally_delta *d = hl_tally_tls_delta;
	if (hl_unlikely(d == NULL)) {
		struct hl_tally_event ev = { .op = HL_TALLY_OP_FREE, .old_address = address,
					     .old_size = size, .old_id = id };
		return hl_tally_thread_slow(&ev);
	}
	if (hl_unlikely(!hl_tally_delta_enter(d)))
		return false;
	hl_tally_thread_freed(d, address, size, id);
	hl_tally_delta_leave(d);
	return true;
}
/* Counting stops for good (the connection is gone). */
void hl_tally_stop(void);

/* Starts counting into the shared area's tally for a connection that is
 * about to say HELLO; false: events are sent (a fork child, threads, the
 * option off, no shared area). */
bool hl_tally_begin(uint32_t origin);
/* Ends counting before a second thread exists, or when the tally is full:
 * TALLY (HANDED), then the heap's blocks, then events. No-op when off. */
void hl_tally_hand_over(void);
/* Before exec: with one thread, the hand-over (the image's live set goes
 * out block by block). With threads the counting goes on: other threads
 * run until the kernel ends them at the exec, so no walk of the heap could
 * agree with their counts; the reporter reads the tally and every delta
 * when the stream ends with EXEC (its blocks by stack), and a failed exec
 * carries on counting. */
void hl_tally_exec(void);
/* Right after HELLO: TALLY (COUNTING), whose batch is the reporter's first
 * clock reading. */
void hl_tally_started(void);
/* At exit, before the LIVE set: TALLY (FINAL), in the buffers the exit
 * sends first. */
void hl_tally_finish(void);
/* A thread the hook did not see start allocates while the tally counts. */
void hl_tally_unseen_thread(void);
/* A fork child counts nothing (its area is new). */
void hl_tally_fork_child(void);

/* A stack just interned (the stack table's lock held): its frames into
 * the tally's stack log when events are sent, so a process killed before
 * its STACK record went out is reported with it (while the tally counts, a
 * stack is logged at its first count instead). */
struct hl_stack;
void hl_tally_log_interned(const struct hl_stack *s);

/* The slow paths: new stack ids (their frames logged; false: handed over,
 * send the event), a timeline sample due. */
bool hl_tally_new_stacks(uint32_t id);
void hl_tally_sample_due(void);

/* One allocation counted; false when the tally ended (the caller sends it). */
HL_INLINE bool hl_tally_take_alloc(uint64_t address, uint64_t size, uint32_t id, unsigned kind)
{
	if (hl_unlikely(id >= hl_tally_logged) && !hl_tally_new_stacks(id))
		return false;
	if (hl_tally_hot->mode == HL_TALLY_MODE_THREADS)
		return hl_tally_thread_alloc(address, size, id, kind);
	hl_tally_alloc(&hl_tally_view, address, size, id, kind, false);
	if (hl_unlikely(hl_tally_counted(hl_tally_view.t)))
		hl_tally_sample_due();
	return true;
}

/* The block at address freed; one the tally does not hold has nothing to
 * take away: the free alone is counted, as the reporter counts a free
 * whose allocation it never saw (finish.c finds it unmatched from the
 * totals). */
HL_INLINE void hl_tally_block_freed(uint64_t address, uint64_t size, uint32_t id)
{
	if (hl_likely(hl_tally_holds(id, size))) {
		hl_tally_free(&hl_tally_view, address, size, id);
	} else {
		hl_tally_view.t->frees++;
		hl_tally_view.t->last_alloc = 0;
	}
}

/* One free of the block at address, size bytes from stack id; false when
 * the tally ended (the caller sends it). */
HL_INLINE bool hl_tally_take_free(uint64_t address, uint64_t size, uint32_t id)
{
	if (hl_tally_hot->mode == HL_TALLY_MODE_THREADS)
		return hl_tally_thread_free(address, size, id);
	hl_tally_block_freed(address, size, id);
	if (hl_unlikely(hl_tally_counted(hl_tally_view.t)))
		hl_tally_sample_due();
	return true;
}

/* The heap's blocks for which known(address) is false (NULL: all), each
 * counted as an allocation: the blocks from before the connection. */
void hl_tally_heap_blocks(bool (*known)(uint64_t address));

/* A realloc: the old block (old_size bytes from old_id) freed and the new
 * one made by realloc, one event; false when the tally ended. */
HL_INLINE bool hl_tally_take_realloc(uint64_t old_address, uint64_t old_size, uint32_t old_id,
				     uint64_t address, uint64_t size, uint32_t id)
{
	if (hl_unlikely(id >= hl_tally_logged) && !hl_tally_new_stacks(id))
		return false;
	if (hl_tally_hot->mode == HL_TALLY_MODE_THREADS) {
		struct hl_tally_event ev = { .op = HL_TALLY_OP_REALLOC, .kind = HL_KIND_MALLOC,
					     .address = address, .size = size, .id = id,
					     .old_address = old_address, .old_size = old_size,
					     .old_id = old_id };
		return hl_tally_thread_realloc(&ev);
	}
	hl_tally_block_freed(old_address, old_size, old_id);
	hl_tally_alloc(&hl_tally_view, address, size, id, HL_KIND_MALLOC, true);
	if (hl_unlikely(hl_tally_counted(hl_tally_view.t)))
		hl_tally_sample_due();
	return true;
}

#endif
