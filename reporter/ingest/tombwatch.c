/*
 * reporter/ingest/tombwatch.c: the watermark below which tombstones are forgotten
 * (see tombwatch.h).
 */
#include "tombwatch.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "state.h"
#include "util.h"

#define QUEUE_MIN 1024u
/* Unsent bytes of a thread behind the others that are read to pin their
 * addresses (an idle thread's few events; a busy one's are recent). */
#define PENDING_MAX 1024u
/* Pins at most: past this, threads keep their last ticks. */
#define PINS_MAX 16384u

void hl_tombwatch_init(struct hl_tombwatch *w)
{
	memset(w, 0, sizeof(*w));
	w->queue_from = HL_TOMBWATCH_FROM;
}

void hl_tombwatch_destroy(struct hl_tombwatch *w)
{
	free(w->threads);
	free(w->queue);
	free(w->pins);
	free(w->pinned_at);
	hl_tombwatch_init(w);
}

static struct hl_tomb_thread *thread_find(struct hl_tombwatch *w, uint32_t tid)
{
	for (size_t i = 0; i < w->nthreads; i++)
		if (w->threads[i].tid == tid)
			return &w->threads[i];
	return NULL;
}

void hl_tombwatch_batch(struct hl_tombwatch *w, uint32_t tid)
{
	w->cur = thread_find(w, tid);
	w->batches++;
}

void hl_tombwatch_thread_start(struct hl_tombwatch *w, uint32_t tid, uint64_t ticks)
{
	struct hl_tomb_thread *t = thread_find(w, tid);

	if (!t) {
		hl_grow((void **)&w->threads, &w->threads_cap, w->nthreads, sizeof(*w->threads));
		t = &w->threads[w->nthreads++];
		t->tid = tid;
		t->last = ticks;
	} else if (ticks < t->last) {
		t->last = ticks; /* a second START of a tid without its END: the older bound */
	}
	/* A new thread may be behind the others: the bound goes down at once. */
	if (ticks < w->watermark)
		w->watermark = ticks;
	w->cur = t;
}

void hl_tombwatch_thread_end(struct hl_tombwatch *w, uint32_t tid)
{
	struct hl_tomb_thread *t = thread_find(w, tid);

	/* Everything it buffered came before this record; what it sends
	 * later goes out alone, at once (tombwatch.h). */
	if (t)
		*t = w->threads[--w->nthreads];
	w->cur = NULL;
}

static size_t pin_slot(uint64_t address, size_t cap)
{
	return (size_t)((address >> 4) * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
}

void hl_tombwatch_pin(struct hl_tombwatch *w, uint64_t address)
{
	size_t i;

	if (!address || w->npins >= PINS_MAX)
		return;
	for (i = pin_slot(address, w->pins_cap); w->pins[i]; i = (i + 1) & (w->pins_cap - 1))
		if (w->pins[i] == address)
			return;
	w->pins[i] = address;
	w->pinned_at[w->npins++] = (uint32_t)i;
}

bool hl_tombwatch_pinned(const struct hl_tombwatch *w, uint64_t address)
{
	if (!w->npins)
		return false;
	for (size_t i = pin_slot(address, w->pins_cap); w->pins[i]; i = (i + 1) & (w->pins_cap - 1))
		if (w->pins[i] == address)
			return true;
	return false;
}

/* The least `last` over the known threads, a thread whose few unsent events
 * were pinned counting as at `now`; 0 (nothing is forgotten) when no thread
 * is known. */
static uint64_t watermark_of(struct hl_tombwatch *w, hl_tombwatch_pending_fn pending,
			     void *ctx, uint64_t now)
{
	uint64_t m = UINT64_MAX;

	if (!w->nthreads)
		return 0;
	if (!w->pins) {
		w->pins_cap = 2 * PINS_MAX; /* at most half full: probes stay short */
		w->pins = hl_xcalloc(w->pins_cap, sizeof(*w->pins));
		w->pinned_at = hl_xmalloc(PINS_MAX * sizeof(*w->pinned_at));
	}
	while (w->npins)
		w->pins[w->pinned_at[--w->npins]] = 0;
	for (size_t i = 0; i < w->nthreads; i++) {
		uint64_t at = w->threads[i].last;

		/* A read that fails half way leaves pins: they only keep
		 * tombstones a while longer. */
		if (at < now && at < m && pending && w->npins + PENDING_MAX / 2 <= PINS_MAX &&
		    pending(ctx, w, w->threads[i].tid, PENDING_MAX))
			at = now;
		if (at < m)
			m = at;
	}
	return m;
}

static void queue_grow(struct hl_tombwatch *w)
{
	size_t cap = w->cap ? w->cap * 2 : QUEUE_MIN;
	struct hl_tomb_entry *q = hl_xmalloc(cap * sizeof(*q));

	for (size_t i = 0; i < w->count; i++)
		q[i] = w->queue[(w->head + i) & (w->cap - 1)];
	free(w->queue);
	w->queue = q;
	w->cap = cap;
	w->head = 0;
}

void hl_tombwatch_push(struct hl_tombwatch *w, struct hl_tomb_entry e)
{
	if (!w->nthreads)
		return; /* nothing would ever be taken off the queue */
	if (w->count == w->cap) {
		if (w->cap >= HL_TOMBSTONES_MAX) {
			/* Let the oldest go unexamined: the count bound has it. */
			w->head = (w->head + 1) & (w->cap - 1);
			w->count--;
		} else {
			queue_grow(w);
		}
	}
	w->queue[(w->head + w->count) & (w->cap - 1)] = e;
	w->count++;
}

bool hl_tombwatch_expired(struct hl_tombwatch *w, struct hl_tomb_entry *out,
			  hl_tombwatch_pending_fn pending, void *ctx, uint64_t now)
{
	const struct hl_tomb_entry *e;

	if (!w->count)
		return false;
	e = &w->queue[w->head];
	if (e->ticks >= w->watermark) {
		/* Computed again at most once a batch, and with many threads
		 * once every nthreads / 16 batches: bounded work per batch. */
		if (!w->batches || w->batches < w->nthreads / 16)
			return false;
		w->batches = 0;
		w->watermark = watermark_of(w, pending, ctx, now);
		if (e->ticks >= w->watermark)
			return false;
	}
	*out = *e;
	w->head = (w->head + 1) & (w->cap - 1);
	w->count--;
	return true;
}
