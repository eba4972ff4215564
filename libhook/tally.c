/*
 * libhook/tally.c: counting in the hook ("Counting in the hook", wire.h):
 * when it starts and ends, the stack log and the timeline's samples. The
 * per-event path is tally_hook.h's, the counting itself heapledger/tally.h's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "heap.h"
#include "tally_hook.h"
#include "track.h"

static struct hl_tally_hot off; /* mode OFF */
struct hl_tally_hot *hl_tally_hot = &off;

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
	log_stacks(id);
	return true;
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

void hl_tally_hand_over(void)
{
	/* A vfork child runs in our memory: the tally is its parent's. */
	if (!hl_tally_counts() || !hl_process_is_owner())
		return;
	int saved = errno;
	hl_guard_enter();
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

void hl_tally_started(void)
{
	if (hl_tally_counts())
		tally_record(HL_TALLY_COUNTING); /* the first batch: a clock reading */
}

void hl_tally_finish(void)
{
	if (!hl_tally_counts() || !hl_process_is_owner())
		return;
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
	hl_tally_stop();
}

void hl_tally_stop(void)
{
	hl_tally_hot->mode = HL_TALLY_MODE_OFF;
	hl_tally_hot = &off;
}

