/*
 * libhook/tally.c: counting in the hook ("Counting in the hook", wire.h):
 * when it starts and ends, the threads' locked path, the stack log and the
 * timeline's samples. The one thread's per-event path is tally_hook.h's,
 * the counting itself heapledger/tally.h's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "dtv.h"
#include "heap.h"
#include "lock.h"
#include "tally_hook.h"
#include "track.h"

static struct hl_tally_hot off; /* mode OFF */
struct hl_tally_hot *hl_tally_hot = &off;

/* HL_TALLY_MODE_SHARED: held around every count and around the tally's end,
 * so the counts are those of one order of the threads' events: the peak
 * and the timeline are exact for it. Lock order: this, then
 * hl_emit_write_lock (a sample sends new stacks, the end sends TALLY). A
 * nested allocation (a signal handler's) never gets here: the tracking
 * guard is taken first. */
static struct hl_lock tally_lock = HL_LOCK_INIT;
/* Each thread's latest event's address if it was an allocation, for the
 * temporaries (the reporter keeps one per thread too), complemented: the
 * leak scan reads every thread's static TLS as a root, where the address
 * itself would make its block reachable. */
static HL_TLS uint64_t thread_last_alloc_complement;
/* This thread holds tally_lock: a signal handler that exits while it
 * counts must not wait for itself (tally_end). */
static HL_TLS bool thread_counting;

/* Threads that allocate at the same moment queue at the lock, and on two
 * cores a queued count costs several times the event it replaces (ring2:
 * 2.3x heapledger run's time with events). So the lock counts how often
 * an allocation found it held; over a share of a window of allocations the
 * tally hands over, and the threads send events (per-thread buffers, no
 * lock). Threads that seldom allocate at once keep counting; tally=2
 * never hands over for this. Under the lock. */
#define CONTENTION_WINDOW 4096u
#define CONTENTION_MAX (CONTENTION_WINDOW / 64u)
static uint32_t window_allocs, window_contended;

static bool count_lock(void)
{
	bool contended = !hl_trylock(&tally_lock);
	if (contended)
		hl_lock_slow(&tally_lock);
	thread_counting = true;
	return contended;
}

static void count_unlock(void)
{
	thread_counting = false;
	hl_unlock(&tally_lock);
}

static void mode_set(uint32_t mode)
{
	__atomic_store_n(&hl_tally_hot->mode, mode, __ATOMIC_RELAXED);
}

bool hl_tally_begin(uint32_t origin)
{
	struct hl_tally *t = hl_shared_tally();
	struct hl_tally_hot *hot = hl_process_own_page();
	hl_tally_stop();
	/* A fork child sends its inherited heap and its events as before; a
	 * process that already has threads cannot count without locks. */
	if (t == NULL || hot == NULL || !hl_options.tally || origin == HL_ORIGIN_FORK ||
	    hl_relaxed_load(&hl_multithreaded))
		return false;
	hl_tally_init(&hot->view, t);
	hot->logged = 1;
	__atomic_store_n(&t->state, HL_TALLY_COUNTING, __ATOMIC_RELEASE);
	hot->mode = HL_TALLY_MODE_ON;
	hl_tally_hot = hot;
	return true;
}

void hl_tally_threads_begin(void)
{
	/* Only the caller runs yet, and a vfork child's parent thread waits:
	 * no count is in flight. Its latest allocation goes with it. */
	if (hl_tally_mode() != HL_TALLY_MODE_ON || !hl_process_is_owner())
		return;
	thread_last_alloc_complement = ~hl_tally_view.t->last_alloc;
	hl_tally_view.t->last_alloc = 0;
	mode_set(HL_TALLY_MODE_SHARED);
}

static void hand_over_held(void);

/* The threads' path: the one thread's counting, under the lock, once the
 * mode is still SHARED there (the tally may have ended while this thread
 * waited: the event is then sent). */
bool hl_tally_take_alloc_shared(uint64_t address, uint64_t size, uint32_t id, unsigned kind)
{
	uint64_t last = ~thread_last_alloc_complement;
	window_contended += count_lock();
	bool counted = hl_tally_mode() == HL_TALLY_MODE_SHARED &&
		       hl_tally_alloc_counted(address, size, id, kind, &last);
	/* After an allocation, whose block the hand-over's walk then sends
	 * as counted; a free's block is still in the heap there. */
	if (counted && ++window_allocs == CONTENTION_WINDOW) {
		if (window_contended > CONTENTION_MAX && hl_options.tally == 1)
			hand_over_held();
		window_allocs = window_contended = 0;
	}
	count_unlock();
	thread_last_alloc_complement = ~last;
	return counted;
}

bool hl_tally_take_free_shared(uint64_t address, uint64_t size, uint32_t id)
{
	/* Threads' DTVs are freed only once threads exist, so only here: one
	 * was counted at the size its allocation reported (dtv.c). */
	size = hl_dtv_block_reported(id, size);
	uint64_t last = ~thread_last_alloc_complement;
	count_lock();
	bool counted = hl_tally_mode() == HL_TALLY_MODE_SHARED;
	if (counted)
		hl_tally_free_counted(address, size, id, &last);
	count_unlock();
	thread_last_alloc_complement = ~last;
	return counted;
}

bool hl_tally_take_realloc_shared(uint64_t old_address, uint64_t old_size, uint32_t old_id,
				  uint64_t address, uint64_t size, uint32_t id)
{
	uint64_t last = ~thread_last_alloc_complement;
	count_lock();
	bool counted = hl_tally_mode() == HL_TALLY_MODE_SHARED &&
		       hl_tally_realloc_counted(old_address, old_size, old_id, address, size, id,
						&last);
	count_unlock();
	thread_last_alloc_complement = ~last;
	return counted;
}

/* Frames of stack ids [hl_tally_logged, id] into the log, so a killed
 * process's stacks are known though their STACK records never went out.
 * A full log just stops logging: those stacks are then missing only if
 * the process is killed (the reporter says a stack was not received). */
static void log_stacks(uint32_t id)
{
	struct hl_tally *t = hl_tally_view.t;
	for (; hl_tally_logged <= id; hl_tally_logged++) {
		const struct hl_stack *s = hl_stack_get(hl_tally_logged);
		if (s == NULL)
			continue;
		hl_assert(s->id == hl_tally_logged);
		uint64_t need = sizeof(struct hl_tally_log_entry) + (uint64_t)s->depth * 8;
		if (t->log_used + need > t->log_cap)
			continue;
		char *at = (char *)t + t->log_offset + t->log_used;
		struct hl_tally_log_entry e = { .stack_id = s->id, .depth = s->depth,
						.truncated = s->truncated };
		memcpy(at, &e, sizeof(e));
		memcpy(at + sizeof(e), s->frames, (size_t)s->depth * 8);
		/* Published after its bytes: a reader after a kill takes what
		 * log_used covers. */
		__atomic_store_n(&t->log_used, t->log_used + need, __ATOMIC_RELEASE);
	}
	t->stacks_used = hl_tally_logged;
}

bool hl_tally_new_stacks(uint32_t id)
{
	if (id >= HL_TALLY_STACKS) {
		hand_over_held();
		return false;
	}
	log_stacks(id);
	return true;
}

void hl_tally_sample_due(void)
{
	if (!hl_tally_sample_take(&hl_tally_view, hl_ticks())) {
		hand_over_held(); /* the series have no room left */
		return;
	}
	/* At most one send a sample, and only when stacks are new: the
	 * reporter symbolizes them while the program runs, not after. */
	hl_emit_send_new_stacks();
}

/* TALLY rides in the thread's buffer: the batch that carries it gives the
 * reporter a clock reading (the events mode's batches would have). */
static void tally_record(unsigned state)
{
	struct hl_rec_tally rec = { .h = hl_wire_hdr(HL_REC_TALLY, 0, sizeof(rec)),
				    .state = state };
	hl_emit_record(&rec, sizeof(rec));
}

struct heap_sink {
	bool (*known)(uint64_t address);
};

static void heap_block(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	const struct heap_sink *sink = arg;
	/* Once handed over (a stack past the bound), the hand-over's own walk
	 * has sent the rest. */
	if (hl_tally_counts() && (sink->known == NULL || !sink->known((uintptr_t)address)))
		hl_tally_take_alloc((uintptr_t)address, size, stack_id, kind);
}

void hl_tally_heap_blocks(bool (*known)(uint64_t address))
{
	struct heap_sink sink = { known };
	hl_heap_walk(heap_block, &sink);
}

/* The end of the tally, by the one thread or under the lock (the counting
 * paths' own callers hold it). */
static void hand_over_held(void)
{
	/* A vfork child runs in our memory: the tally is its parent's. */
	if (!hl_tally_counts() || !hl_process_is_owner())
		return;
	int saved = errno;
	hl_guard_enter();
	if (hl_emit_is_live()) {
		__atomic_store_n(&hl_tally_view.t->state, HL_TALLY_HANDED, __ATOMIC_RELEASE);
		tally_record(HL_TALLY_HANDED);
		/* TALLY, then the heap's blocks, while the other threads wait
		 * at the lock: the events they send once they find the tally
		 * off come after both (wire.h). */
		hl_emit_tally_handed();
	}
	mode_set(HL_TALLY_MODE_OFF);
	hl_guard_leave();
	errno = saved;
}

/* Runs end() with the lock held if the threads count under it (and this
 * thread, interrupted by a signal that exits, does not hold it already:
 * its counts may then be half made, as the one thread's would be). */
static void tally_end(void (*end)(void))
{
	bool lock = hl_tally_mode() == HL_TALLY_MODE_SHARED && !thread_counting;
	if (lock)
		count_lock();
	end();
	if (lock)
		count_unlock();
}

void hl_tally_hand_over(void)
{
	if (hl_tally_counts())
		tally_end(hand_over_held);
}

void hl_tally_started(void)
{
	if (hl_tally_counts())
		tally_record(HL_TALLY_COUNTING); /* the first batch: a clock reading */
}

static void finish_held(void)
{
	if (!hl_tally_counts() || !hl_process_is_owner())
		return;
	__atomic_store_n(&hl_tally_view.t->state, HL_TALLY_FINAL, __ATOMIC_RELEASE);
	tally_record(HL_TALLY_FINAL);
	/* Threads still running send what they do from now on: TALLY goes
	 * out before any of it, while they wait at the lock. */
	if (hl_tally_mode() == HL_TALLY_MODE_SHARED)
		hl_emit_flush_all();
	mode_set(HL_TALLY_MODE_OFF);
}

void hl_tally_finish(void)
{
	if (hl_tally_counts())
		tally_end(finish_held);
}

void hl_tally_unseen_thread(void)
{
	/* The first thread may be counting without the lock at this very
	 * moment: what it counts now may be lost, which the reporter then
	 * finds as frees without their allocation. Threads glibc starts
	 * itself (timer_create's SIGEV_THREAD helper) are the only ones that
	 * can get here; once threads count under the lock, it joins them. */
	if (hl_tally_mode() == HL_TALLY_MODE_ON)
		hl_tally_hand_over();
}

void hl_tally_fork_child(void)
{
	/* Another thread may have held it at fork; the child counts nothing. */
	hl_lock_reset(&tally_lock);
	hl_tally_stop();
}

void hl_tally_stop(void)
{
	mode_set(HL_TALLY_MODE_OFF);
	hl_tally_hot = &off;
}

