/*
 * libhook/tally.c: counting in the hook ("Counting in the hook", wire.h):
 * when it starts and ends, the stack log and the timeline's samples. The
 * per-event path is tally_hook.h's, the counting itself heapledger/tally.h's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heap.h"
#include "lock.h"
#include "tally_hook.h"
#include "track.h"

static struct hl_tally_hot off; /* mode OFF */
struct hl_tally_hot *hl_tally_hot = &off;
HL_TLS struct hl_tally_delta *hl_tally_tls_delta;
static HL_TLS bool tls_ended; /* past hl_tally_thread_exit */
/* Threads: merges, new stacks' logging and every count outside a delta. */
static struct hl_lock tally_lock = HL_LOCK_INIT;

bool hl_tally_begin(uint32_t origin)
{
	struct hl_tally *t = hl_shared_tally();
	struct hl_tally_hot *hot = hl_process_own_page();
	hl_tally_stop();
	/* A fork child sends its inherited heap and its events as before; a
	 * process that already has threads cannot count without locks. */
	if (t == NULL || hot == NULL || !hl_options.tally || origin == HL_ORIGIN_FORK ||
	    hl_relaxed_load(&hl_multithreaded)) {
		/* Events are sent: the tally's stack log alone is kept (see
		 * hl_tally_log_interned), the counts stay zero and OFF. */
		if (t != NULL && t->magic != HL_TALLY_MAGIC) {
			struct hl_tally_hot laid = { .mode = HL_TALLY_MODE_OFF };
			hl_tally_init(&laid.view, t);
		}
		return false;
	}
	hl_tally_init(&hot->view, t);
	hot->logged = 1;
	__atomic_store_n(&t->state, HL_TALLY_COUNTING, __ATOMIC_RELEASE);
	hot->mode = HL_TALLY_MODE_ON;
	hl_tally_hot = hot;
	return true;
}

/* Frames of stack ids [from, to) into the log, so a killed process's
 * stacks are known though their STACK records never went out. A full log
 * just stops logging: those stacks are then missing only if the process is
 * killed (the reporter says a stack was not received). One writer at a
 * time: the counting thread while the tally counts, then each thread that
 * interns a stack, under the stack table's lock (hl_tally_log_interned). */
static void log_range(struct hl_tally *t, uint32_t from, uint32_t to)
{
	for (uint32_t id = from; id < to; id++) {
		const struct hl_stack *s = hl_stack_get(id);
		if (s == NULL)
			continue;
		hl_assert(s->id == id);
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
}

/* Counting: stack ids up to id logged at their first count. */
static void log_stacks(uint32_t id)
{
	log_range(hl_tally_view.t, hl_tally_logged, id + 1);
	hl_tally_logged = id + 1;
	hl_tally_view.t->stacks_used = hl_tally_logged;
}

/* Only the area's own process logs: a copy made by a raw clone shares the
 * area's pages but numbers its stacks on its own (its ids would name the
 * owner's later stacks), and a vfork child's stacks are the owner's, which
 * sends them. */
void hl_tally_log_interned(const struct hl_stack *s)
{
	struct hl_tally *t;
	if (hl_tally_counts() || (t = hl_shared_tally()) == NULL || t->magic != HL_TALLY_MAGIC ||
	    !hl_process_is_owner())
		return;
	log_range(t, s->id, s->id + 1);
}

bool hl_tally_new_stacks(uint32_t id)
{
	if (id >= HL_TALLY_STACKS) {
		hl_tally_hand_over();
		return false;
	}
	if (hl_tally_hot->mode != HL_TALLY_MODE_THREADS) {
		log_stacks(id);
		return true;
	}
	int saved = errno;
	hl_lock(&tally_lock);
	bool on = hl_tally_hot->mode == HL_TALLY_MODE_THREADS;
	if (on && id >= hl_tally_logged)
		log_stacks(id);
	hl_unlock(&tally_lock);
	errno = saved;
	return on;
}

void hl_tally_sample_due(void)
{
	if (!hl_tally_sample_take(&hl_tally_view, hl_ticks())) {
		hl_tally_hand_over(); /* the series have no room left */
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
	if (hl_tally_on && (sink->known == NULL || !sink->known((uintptr_t)address)))
		hl_tally_take_alloc((uintptr_t)address, size, stack_id, kind);
}

void hl_tally_heap_blocks(bool (*known)(uint64_t address))
{
	struct heap_sink sink = { known };
	hl_heap_walk(heap_block, &sink);
}

/* ---- threads ("threads", heapledger/tally.h) ------------------------------ */

/* The delta into the tally, tally_lock held; false when the series had no
 * room (the caller hands over). *sampled: a timeline sample was taken. */
static bool merge_locked(struct hl_tally_delta *d, bool *sampled)
{
	hl_assert_held(&tally_lock);
	uint64_t before = hl_tally_view.t->nsamples;
	bool room = hl_tally_merge(&hl_tally_view, d, hl_ticks());
	*sampled = hl_tally_view.t->nsamples != before;
	return room;
}

/* What a merge that took a sample or found no room does next, the lock
 * released: the new stacks go out (as hl_tally_sample_due sends them), or
 * the tally hands over. */
static void after_merge(bool room, bool sampled)
{
	if (!room)
		hl_tally_hand_over();
	else if (sampled)
		hl_emit_send_new_stacks();
}

void hl_tally_thread_merge(struct hl_tally_delta *d)
{
	int saved = errno;
	bool room = true, sampled = false;
	hl_lock(&tally_lock);
	if (hl_tally_hot->mode == HL_TALLY_MODE_THREADS)
		room = merge_locked(d, &sampled);
	hl_unlock(&tally_lock);
	after_merge(room, sampled);
	errno = saved;
}

/* ev's free and allocation into d (a realloc is both, one event). */
static void delta_apply(struct hl_tally_delta *d, const struct hl_tally_event *ev)
{
	if (ev->op != HL_TALLY_OP_ALLOC)
		hl_tally_thread_freed(d, ev->old_address, ev->old_size, ev->old_id);
	if (ev->op != HL_TALLY_OP_FREE)
		hl_tally_delta_alloc(d, ev->address, ev->size, ev->id, ev->kind,
				     ev->op == HL_TALLY_OP_REALLOC);
}

/* ev into the thread's delta d; false: the counting ended (send it). */
static bool thread_event(struct hl_tally_delta *d, const struct hl_tally_event *ev)
{
	if (!hl_tally_delta_enter(d))
		return false;
	delta_apply(d, ev);
	hl_tally_delta_leave(d);
	return true;
}

bool hl_tally_thread_realloc(const struct hl_tally_event *ev)
{
	struct hl_tally_delta *d = hl_tally_tls_delta;
	return d != NULL ? thread_event(d, ev) : hl_tally_thread_slow(ev);
}

bool hl_tally_thread_slow(const struct hl_tally_event *ev)
{
	struct hl_tally_delta *d = tls_ended ? NULL : hl_emit_thread_delta();
	if (d != NULL) {
		hl_tally_tls_delta = d;
		return thread_event(d, ev);
	}
	/* No delta (the thread has ended, or it has no buffer): counted in a
	 * delta of the lock's and merged at once, journaled as every merge. */
	static struct hl_tally_delta spare;
	int saved = errno;
	bool on, sampled = false, room = true;
	hl_lock(&tally_lock);
	on = hl_tally_hot->mode == HL_TALLY_MODE_THREADS;
	if (on) {
		delta_apply(&spare, ev);
		spare.events++;
		room = merge_locked(&spare, &sampled);
	}
	hl_unlock(&tally_lock);
	after_merge(room, sampled);
	errno = saved;
	return on;
}

void hl_tally_threads_begin(void)
{
	if (hl_tally_hot->mode != HL_TALLY_MODE_ON || !hl_process_is_owner())
		return;
	/* The end of counting needs every thread to pass a full barrier
	 * (tally_hook.h); without membarrier, events are sent. Captured
	 * stacks tell a block counted (hl_tally_thread_holds); with stacks=0
	 * every block has id 0, so events are sent too. */
	if (hl_options.stack_depth == 0 ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
		hl_tally_hand_over();
		return;
	}
	/* One thread yet: the tally's counts are whole and nobody is in a
	 * delta. */
	__atomic_store_n(&hl_tally_hot->mode, HL_TALLY_MODE_THREADS, __ATOMIC_RELEASE);
}

void hl_tally_thread_exit(void)
{
	struct hl_tally_delta *d = hl_tally_tls_delta;
	tls_ended = true;
	hl_tally_tls_delta = NULL;
	if (d == NULL)
		return;
	bool room = true, sampled = false;
	hl_lock(&tally_lock);
	if (hl_tally_hot->mode == HL_TALLY_MODE_THREADS)
		room = merge_locked(d, &sampled);
	hl_tally_delta_clear(d); /* its slot may go to another thread */
	hl_unlock(&tally_lock);
	after_merge(room, sampled);
}

/* How long the end of counting waits for a thread to leave its delta: the
 * owner is only ever a few instructions inside, unless the kernel stopped
 * it (SIGSTOP, a debugger). */
#define BUSY_WAIT_YIELDS 100000

static void merge_ended(struct hl_tally_delta *d)
{
	bool sampled;
	for (unsigned i = 0; __atomic_load_n(&d->busy, __ATOMIC_ACQUIRE); i++) {
		if (d == hl_tally_tls_delta || i == BUSY_WAIT_YIELDS) {
			/* Our own, interrupted (the end of counting from a
			 * signal handler), or a thread that never came back:
			 * its counts are lost, and said so. */
			hl_emit_count_dropped(d->events + 1);
			return;
		}
		sched_yield();
	}
	hl_lock(&tally_lock);
	(void)merge_locked(d, &sampled); /* no room: the hand-over follows anyway */
	hl_unlock(&tally_lock);
}

/* Counting per thread ends: no thread counts from here on, and every
 * delta is in the tally. */
static void threads_stop_counting(void)
{
	__atomic_store_n(&hl_tally_hot->mode, HL_TALLY_MODE_OFF, __ATOMIC_RELAXED);
	syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

static void threads_end(void)
{
	threads_stop_counting();
	hl_emit_each_delta(merge_ended);
}

/* The exit's end of counting with threads, write_lock held. */
static void finish_threads_locked(void)
{
	threads_stop_counting();
	hl_emit_each_delta_locked(merge_ended);
	__atomic_store_n(&hl_tally_view.t->state, HL_TALLY_FINAL, __ATOMIC_RELEASE);
}

void hl_tally_hand_over(void)
{
	/* A vfork child runs in our memory: the tally is its parent's. */
	if (!hl_tally_counts() || !hl_process_is_owner())
		return;
	int saved = errno;
	hl_guard_enter();
	if (hl_tally_hot->mode == HL_TALLY_MODE_THREADS)
		threads_end();
	/* Stacks interned while counting but not counted yet: from now on
	 * each new one is logged as it is interned. */
	log_range(hl_tally_view.t, hl_tally_logged, hl_stack_next_id());
	hl_tally_hot->mode = HL_TALLY_MODE_OFF;
	if (hl_emit_is_live()) {
		__atomic_store_n(&hl_tally_view.t->state, HL_TALLY_HANDED, __ATOMIC_RELEASE);
		tally_record(HL_TALLY_HANDED);
		hl_emit_tally_handed();
	}
	hl_guard_leave();
	errno = saved;
}

void hl_tally_exec(void)
{
	if (hl_tally_hot->mode != HL_TALLY_MODE_THREADS)
		hl_tally_hand_over();
}

void hl_tally_started(void)
{
	if (hl_tally_counts())
		tally_record(HL_TALLY_COUNTING); /* the first batch: a clock reading */
}

void hl_tally_finish(void)
{
	if (!hl_tally_counts() || !hl_process_is_owner())
		return;
	if (hl_tally_hot->mode == HL_TALLY_MODE_THREADS) {
		/* Threads may go on allocating: their events go after FINAL. */
		struct hl_rec_tally rec = { .h = hl_wire_hdr(HL_REC_TALLY, 0, sizeof(rec)),
					    .state = HL_TALLY_FINAL };
		hl_emit_counting_end(finish_threads_locked, &rec, sizeof(rec));
		return;
	}
	hl_tally_hot->mode = HL_TALLY_MODE_OFF;
	__atomic_store_n(&hl_tally_view.t->state, HL_TALLY_FINAL, __ATOMIC_RELEASE);
	tally_record(HL_TALLY_FINAL);
}

void hl_tally_unseen_thread(void)
{
	/* The first thread may be counting at this very moment: what it
	 * counts now may be lost, which the reporter then finds as frees
	 * without their allocation. Threads glibc starts itself (timer_create's
	 * SIGEV_THREAD helper) are the only ones that can get here. */
	hl_tally_hand_over();
}

void hl_tally_fork_child(void)
{
	/* The thread's delta is still the parent's slot, shared until the
	 * child's area replaces it (hl_shared_fork_child): left alone. */
	hl_tally_tls_delta = NULL;
	hl_tally_stop();
}

void hl_tally_stop(void)
{
	hl_tally_hot->mode = HL_TALLY_MODE_OFF;
	hl_tally_hot = &off;
}

