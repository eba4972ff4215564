/*
 * include/heapledger/tally.h: the heap's counts as the reporter makes them of
 * a process's events (totals, per-stack aggregates, the size histogram,
 * temporaries, the sampled heap timeline with its per-stack series), kept
 * by the hook itself while its process has one thread ("Counting in the
 * hook", wire.h), in the shared area where the reporter reads them.
 *
 * Layout: struct hl_tally at the area's tally_offset; its arrays at offsets
 * from the struct's own address, each with its capacity, all inside
 * tally_bytes. Stack ids are the hook's wire ids (HL_TALLY_STACKS of them),
 * so is every stack a point or the tracked set names.
 *
 * The counting follows the reporter's rules to the letter (reporter/ingest/
 * state.c: live_add, live_remove, count_alloc, the timeline and the series),
 * so a process counted here is reported as if its events had been sent.
 * Header-only and allocation-free, so the preloaded hook can count too.
 */
#ifndef HEAPLEDGER_TALLY_H
#define HEAPLEDGER_TALLY_H

#include <stdbool.h>
#include <stdint.h>

#include "size_bins.h"

/* The per-event functions are on every allocation's path in the hook. */
#define HL_TALLY_INLINE static inline __attribute__((always_inline))

#define HL_TALLY_MAGIC 0x796c6c6174676c68ull /* "hlgtally" */
#define HL_TALLY_STACKS (1u << 16)  /* stack ids counted; past them the tally hands over */
#define HL_TALLY_SAMPLES 4096u      /* timeline samples, thinned by half when full */
#define HL_TALLY_TRACKED 64u        /* stacks with a series of their own */
/* Points: the reporter's series keep about HL_TALLY_TRACKED a sample once
 * ended series are compacted away (state.h, hl_stack_point). */
#define HL_TALLY_POINTS (HL_TALLY_TRACKED * HL_TALLY_SAMPLES + HL_TALLY_SAMPLES)
#define HL_TALLY_LOG_BYTES (16u << 20) /* frames of the stacks counted */
/* Threads ("threads", below): */
#define HL_DELTA_EVENTS 128u /* events a delta holds before it is merged */
#define HL_DELTA_SLOTS 256u  /* open-addressed by stack id; merged at half full */
/* Stacks a merge may change: its delta's (half the slots, and an event
 * names two), and the stack of a first free that was a temporary. */
#define HL_TALLY_JOURNAL (HL_DELTA_SLOTS / 2 + 4)

enum hl_tally_state {
	HL_TALLY_OFF = 0,      /* no tally: events are sent */
	HL_TALLY_COUNTING = 1, /* the hook counts (a reporter reading this was killed) */
	HL_TALLY_HANDED = 2,   /* handed over: TALLY sent, events follow */
	HL_TALLY_FINAL = 3,    /* at exit: TALLY sent, the LIVE set follows */
};

#define HL_TALLY_STACK_REALLOC 1u /* its blocks were made by realloc */

struct hl_tally_stack {
	uint64_t allocs, bytes, frees, temporaries;
	uint64_t live_bytes, live_blocks, peak_live_bytes;
	uint64_t at_peak_bytes, at_peak_gen; /* as hl_process_stack's */
	uint32_t point;         /* index + 1 of its newest point, 0: none */
	uint32_t tracked_since; /* 1 + the sample its series starts at, 0: untracked */
	uint8_t kind;           /* enum hl_alloc_kind of its first block */
	uint8_t flags;          /* HL_TALLY_STACK_* */
	uint8_t reserved[6];
};

struct hl_tally_sample {
	uint64_t ticks, in_use_bytes, in_use_blocks;
};

struct hl_tally_point {
	uint32_t sample, stack; /* stack: its wire id */
	uint64_t bytes;
};

/* One stack's frames in the log, as its STACK record has them: the killed
 * process's stacks (the STACK records go out with the next batch). Kept
 * while events are sent too (wire.h, "Counting in the hook"). */
struct hl_tally_log_entry {
	uint32_t stack_id;
	uint16_t depth;
	uint8_t truncated;
	uint8_t reserved;
	/* then depth uint64_t return addresses, innermost first */
};

/* The totals a merge changes, as they were before it. */
struct hl_tally_totals {
	uint64_t allocs, frees, bytes_allocated, temporaries;
	uint64_t in_use_bytes, in_use_blocks, peak_bytes, peak_gen, events, last_alloc;
};

/* A stack as it was before a merge changed it. */
struct hl_tally_journal_entry {
	uint32_t stack_id, reserved;
	struct hl_tally_stack before;
};

struct hl_tally {
	uint64_t magic;       /* HL_TALLY_MAGIC */
	uint32_t state;       /* enum hl_tally_state, written last (release) */
	uint32_t stacks_used; /* one past the highest stack id counted */
	uint64_t allocs, frees, bytes_allocated, temporaries;
	uint64_t in_use_bytes, in_use_blocks, peak_bytes, peak_gen;
	uint64_t events, sample_every, sample_countdown;
	uint64_t last_alloc;  /* the latest event's address if it was an allocation */
	uint64_t track_floor;
	uint64_t nsamples, npoints;
	uint32_t ntracked, reserved;
	uint32_t tracked[HL_TALLY_TRACKED];      /* stack ids */
	uint64_t tracked_last[HL_TALLY_TRACKED]; /* as hl_process.tracked_last */
	struct hl_size_bins sizes;
	uint64_t stacks_offset, stacks_cap;   /* struct hl_tally_stack[], by stack id */
	uint64_t samples_offset, samples_cap; /* struct hl_tally_sample[] */
	uint64_t points_offset, points_cap;   /* struct hl_tally_point[] */
	uint64_t log_offset, log_cap, log_used; /* hl_tally_log_entry, 8-byte aligned */
	/* A merge's journal ("threads", below): set while a delta is merged */
	uint32_t merging, journal_n;
	struct hl_tally_totals journal_totals;      /* the totals before it */
	uint64_t journal_offset, journal_cap;       /* struct hl_tally_journal_entry[] */
};

/* The bytes a tally with room for everything takes, arrays included. */
#define HL_TALLY_ROUND8(n) (((n) + 7u) & ~(uint64_t)7u)
#define HL_TALLY_BYTES                                                                   \
	(HL_TALLY_ROUND8(sizeof(struct hl_tally)) +                                      \
	 (uint64_t)HL_TALLY_STACKS * sizeof(struct hl_tally_stack) +                     \
	 (uint64_t)HL_TALLY_SAMPLES * sizeof(struct hl_tally_sample) +                   \
	 (uint64_t)HL_TALLY_POINTS * sizeof(struct hl_tally_point) +                     \
	 (uint64_t)HL_TALLY_JOURNAL * sizeof(struct hl_tally_journal_entry) + HL_TALLY_LOG_BYTES)

/* The arrays of a tally, where the counting finds them. */
struct hl_tally_view {
	struct hl_tally *t;
	struct hl_tally_stack *stacks;
	struct hl_tally_sample *samples;
	struct hl_tally_point *points;
	struct hl_tally_journal_entry *journal;
};

/* Lays a tally out at t (HL_TALLY_BYTES, zeroed) and points v at it. */
static inline void hl_tally_init(struct hl_tally_view *v, struct hl_tally *t)
{
	uint64_t at = HL_TALLY_ROUND8(sizeof(*t));

	t->magic = HL_TALLY_MAGIC;
	t->sample_every = t->sample_countdown = 256; /* the reporter's start */
	t->stacks_offset = at;
	t->stacks_cap = HL_TALLY_STACKS;
	at += (uint64_t)HL_TALLY_STACKS * sizeof(struct hl_tally_stack);
	t->samples_offset = at;
	t->samples_cap = HL_TALLY_SAMPLES;
	at += (uint64_t)HL_TALLY_SAMPLES * sizeof(struct hl_tally_sample);
	t->points_offset = at;
	t->points_cap = HL_TALLY_POINTS;
	at += (uint64_t)HL_TALLY_POINTS * sizeof(struct hl_tally_point);
	t->journal_offset = at;
	t->journal_cap = HL_TALLY_JOURNAL;
	at += (uint64_t)HL_TALLY_JOURNAL * sizeof(struct hl_tally_journal_entry);
	t->log_offset = at;
	t->log_cap = HL_TALLY_LOG_BYTES;
	t->stacks_used = 1;
	v->t = t;
	v->stacks = (struct hl_tally_stack *)((char *)t + t->stacks_offset);
	v->samples = (struct hl_tally_sample *)((char *)t + t->samples_offset);
	v->points = (struct hl_tally_point *)((char *)t + t->points_offset);
	v->journal = (struct hl_tally_journal_entry *)((char *)t + t->journal_offset);
}

/* ---- the timeline and the per-stack series (state.c's, by stack id) ------- */

/* Ended series' points go and, if halve, samples 2i and 2i + 1 merge into
 * i (the later value stays): state.c points_compact. */
static inline void hl_tally_points_compact(struct hl_tally_view *v, bool halve)
{
	struct hl_tally *t = v->t;
	uint64_t n = 0;

	for (uint32_t i = 0; i < t->stacks_used; i++)
		v->stacks[i].point = 0;
	for (uint64_t i = 0; i < t->npoints; i++) {
		struct hl_tally_point pt = v->points[i];
		struct hl_tally_stack *s = &v->stacks[pt.stack];

		if (!s->tracked_since || pt.sample + 1 < s->tracked_since)
			continue;
		if (halve)
			pt.sample /= 2;
		if (s->point && v->points[s->point - 1].sample == pt.sample) {
			v->points[s->point - 1].bytes = pt.bytes;
			continue;
		}
		v->points[n++] = pt;
		s->point = (uint32_t)n;
	}
	t->npoints = n;
	for (uint32_t i = 0; halve && i < t->stacks_used; i++)
		if (v->stacks[i].tracked_since)
			v->stacks[i].tracked_since = (v->stacks[i].tracked_since - 1) / 2 + 1;
}

/* A point for stack id; false when there is no room even after the ended
 * series' points went (the tally must hand over). */
static inline bool hl_tally_point_add(struct hl_tally_view *v, uint32_t id)
{
	struct hl_tally *t = v->t;

	if (t->npoints == t->points_cap) {
		hl_tally_points_compact(v, false);
		if (t->npoints == t->points_cap)
			return false;
	}
	v->points[t->npoints++] = (struct hl_tally_point){ (uint32_t)t->nsamples, id,
							   v->stacks[id].live_bytes };
	v->stacks[id].point = (uint32_t)t->npoints;
	return true;
}

/* The sample due now (hl_tally_counted said so), at ticks; false: no room
 * for its points (hand over). */
static inline bool hl_tally_sample_take(struct hl_tally_view *v, uint64_t ticks)
{
	struct hl_tally *t = v->t;

	if (t->nsamples == t->samples_cap) {
		uint64_t half = t->nsamples / 2;

		for (uint64_t i = 0; i < half; i++)
			v->samples[i] = v->samples[2 * i + 1];
		t->nsamples = half;
		t->sample_every *= 2;
		t->sample_countdown = t->sample_every;
		hl_tally_points_compact(v, true);
	}
	for (uint32_t i = 0; i < t->ntracked; i++) {
		uint32_t id = t->tracked[i];

		if (v->stacks[id].live_bytes != t->tracked_last[i]) {
			t->tracked_last[i] = v->stacks[id].live_bytes;
			if (!hl_tally_point_add(v, id))
				return false;
		}
	}
	v->samples[t->nsamples] = (struct hl_tally_sample){ ticks, t->in_use_bytes,
							    t->in_use_blocks };
	t->nsamples++;
	return true;
}

/* Stack id reached a peak above track_floor: state.c stack_track. */
static inline void hl_tally_track(struct hl_tally_view *v, uint32_t id)
{
	struct hl_tally *t = v->t;
	uint32_t low = 0;

	if (t->ntracked < HL_TALLY_TRACKED) {
		low = t->ntracked++;
	} else {
		for (uint32_t i = 1; i < t->ntracked; i++)
			if (v->stacks[t->tracked[i]].peak_live_bytes <
			    v->stacks[t->tracked[low]].peak_live_bytes)
				low = i;
		t->track_floor = v->stacks[t->tracked[low]].peak_live_bytes;
		if (v->stacks[id].peak_live_bytes <= t->track_floor)
			return;
		v->stacks[t->tracked[low]].tracked_since = 0;
	}
	t->tracked[low] = id;
	t->tracked_last[low] = UINT64_MAX;
	v->stacks[id].tracked_since = (uint32_t)t->nsamples + 1;
}

/* ---- one event ----------------------------------------------------------- */

/* The event is counted; true when a timeline sample is due. */
HL_TALLY_INLINE bool hl_tally_counted(struct hl_tally *t)
{
	t->events++;
	if (--t->sample_countdown != 0)
		return false;
	t->sample_countdown = t->sample_every;
	return true;
}

/* What s held at the process's peak, kept before its first change after a
 * new one (state.c stack_changing). */
HL_TALLY_INLINE void hl_tally_changing(const struct hl_tally *t, struct hl_tally_stack *s)
{
	if (s->at_peak_gen != t->peak_gen) {
		s->at_peak_bytes = s->live_bytes;
		s->at_peak_gen = t->peak_gen;
	}
}

/* An allocation of size bytes at address from stack id (< stacks_used,
 * which the caller raises before an id's first use). */
HL_TALLY_INLINE void hl_tally_alloc(struct hl_tally_view *v, uint64_t address, uint64_t size,
				  uint32_t id, unsigned kind, bool by_realloc)
{
	struct hl_tally *t = v->t;
	struct hl_tally_stack *s = &v->stacks[id];

	if (s->allocs == 0) {
		s->kind = (uint8_t)kind;
		s->flags = by_realloc ? HL_TALLY_STACK_REALLOC : 0;
	}
	t->allocs++;
	t->bytes_allocated += size;
	hl_size_bins_count(&t->sizes, size);
	s->allocs++;
	s->bytes += size;
	hl_tally_changing(t, s);
	t->in_use_bytes += size;
	t->in_use_blocks++;
	if (t->in_use_bytes > t->peak_bytes) {
		t->peak_bytes = t->in_use_bytes;
		t->peak_gen++;
	}
	s->live_bytes += size;
	s->live_blocks++;
	if (s->live_bytes > s->peak_live_bytes) {
		s->peak_live_bytes = s->live_bytes;
		if (!s->tracked_since && s->peak_live_bytes > t->track_floor)
			hl_tally_track(v, id);
	}
	t->last_alloc = address;
}

/* A free of the live block at address, size bytes from stack id. Not an
 * event of its own when a realloc's (hl_tally_alloc follows). */
HL_TALLY_INLINE void hl_tally_free(struct hl_tally_view *v, uint64_t address, uint64_t size,
				 uint32_t id)
{
	struct hl_tally *t = v->t;
	struct hl_tally_stack *s = &v->stacks[id];

	t->frees++;
	if (address == t->last_alloc) {
		t->temporaries++;
		s->temporaries++;
	}
	t->last_alloc = 0;
	t->in_use_bytes -= size;
	t->in_use_blocks--;
	hl_tally_changing(t, s);
	s->live_bytes -= size;
	s->live_blocks--;
	s->frees++;
}

/* ---- threads: a delta per thread, merged ----------------------------------
 *
 * Once the process has threads, each thread counts into a delta of its own
 * (struct hl_tally_delta, in its event buffer's slot of the shared area)
 * with no lock and no atomic, and merges it into the tally under the hook's
 * tally lock every HL_DELTA_EVENTS events, when half its slots are used, at
 * its end and at the process's. A merge gives the tally what the delta's
 * events would have made of it applied one by one right then: the totals and
 * each stack's counts add up; the process's peak is the tally's in-use plus
 * the highest the delta's own running sum reached, and what each stack held
 * then is the delta's value at that point (kept as hl_tally_changing keeps
 * it); a stack's peak the same way; a temporary is a free of the block the
 * same thread allocated just before (or, for a delta's first event, of the
 * tally's latest allocation); the timeline is sampled at merges. Deltas of
 * different threads merge in the order their threads reach a merge, so a
 * block freed by another thread than the one that made it may leave the
 * tally's counts below zero for a while: the merge compares signed.
 *
 * A process may be SIGKILLed at any instruction of any thread, and the
 * reporter then adds every delta not merged to the tally (recover.c):
 *  - in a delta, what must agree (allocations, frees, blocks and bytes
 *    live) is two pairs a stack, each changed by one 16-byte store, so a
 *    thread killed inside an event leaves its allocation or its free
 *    counted whole or not at all; the delta's totals are the sums of its
 *    stacks', made at the merge;
 *  - a merge first copies what it changes of the tally's totals and of
 *    each stack into the journal (merging set), marks the delta merged
 *    before it clears it, then clears merging: a reader that finds
 *    merging set and no delta marked merged takes the journal's values
 *    (the merge is undone) and adds the delta. */


/* A count and its bytes, changed together in one store. */
typedef uint64_t hl_tally_pair __attribute__((vector_size(16)));

struct hl_tally_delta_stack {
	uint32_t id; /* stack id + 1; 0: an empty slot */
	uint8_t kind, flags, reserved[2]; /* as hl_tally_stack's, from its first allocation here */
	hl_tally_pair made;  /* allocations and their bytes */
	hl_tally_pair freed; /* frees and their bytes */
	uint64_t temporaries;
	int64_t max_live; /* the highest live bytes (made - freed) reached */
	int64_t at_peak;  /* live bytes at the delta's peak, once changed after it */
	uint64_t gen;     /* the delta's peak generation at_peak belongs to */
};

struct hl_tally_delta {
	uint32_t busy;   /* the owner is changing it (the hook's handshake, tally.c) */
	uint32_t nused;  /* slots used, listed in used[] */
	uint32_t merged; /* in the tally, being cleared: not to be added again */
	uint32_t first_free_id;   /* the delta's first event, a free: its block's stack */
	uint64_t first_free;      /* and its address (0: no temporary to look for) */
	uint64_t first_free_set;
	uint64_t events;
	uint64_t frees_alone;     /* frees of blocks never counted (no stack's) */
	uint64_t temporaries;
	int64_t in_use_bytes;     /* the running sum since the last merge */
	int64_t max_in_use;       /* the highest it reached */
	uint64_t gen;             /* raised at each new max_in_use */
	uint64_t last_alloc;      /* this thread's latest event, if an allocation */
	uint64_t bins_used;       /* bit b: size bin b (and 64, with 0) counted */
	struct hl_size_bins sizes;
	uint16_t used[HL_DELTA_SLOTS];
	struct hl_tally_delta_stack slots[HL_DELTA_SLOTS];
};

HL_TALLY_INLINE int64_t hl_tally_delta_live(const struct hl_tally_delta_stack *e)
{
	return (int64_t)(e->made[1] - e->freed[1]);
}

/* The slot of stack id, taken if new (a delta is merged before half its
 * slots are used, so there is always an empty one). Listed after its id is
 * written: a reader counts the slots the list names. */
HL_TALLY_INLINE struct hl_tally_delta_stack *hl_tally_delta_slot(struct hl_tally_delta *d,
								 uint32_t id)
{
	uint32_t h = (id * 0x9e3779b1u) >> 24;

	for (;;) {
		struct hl_tally_delta_stack *e = &d->slots[h];

		if (e->id == id + 1)
			return e;
		if (e->id == 0) {
			e->id = id + 1;
			d->used[d->nused] = (uint16_t)h;
			d->nused++;
			return e;
		}
		h = (h + 1) & (HL_DELTA_SLOTS - 1);
	}
}

HL_TALLY_INLINE void hl_tally_delta_changing(const struct hl_tally_delta *d,
					     struct hl_tally_delta_stack *e)
{
	if (e->gen != d->gen) {
		e->at_peak = hl_tally_delta_live(e);
		e->gen = d->gen;
	}
}

/* hl_tally_alloc, into a delta. */
HL_TALLY_INLINE void hl_tally_delta_alloc(struct hl_tally_delta *d, uint64_t address,
					  uint64_t size, uint32_t id, unsigned kind,
					  bool by_realloc)
{
	struct hl_tally_delta_stack *e = hl_tally_delta_slot(d, id);
	int64_t live;

	if (e->made[0] == 0) {
		e->kind = (uint8_t)kind;
		e->flags = by_realloc ? HL_TALLY_STACK_REALLOC : 0;
	}
	unsigned bin = hl_size_bin(size);

	d->sizes.allocs[bin]++;
	d->sizes.bytes[bin] += size;
	d->bins_used |= 1ull << (bin & 63);
	hl_tally_delta_changing(d, e);
	e->made += (hl_tally_pair){ 1, size };
	d->in_use_bytes += (int64_t)size;
	if (d->in_use_bytes > d->max_in_use) {
		d->max_in_use = d->in_use_bytes;
		d->gen++;
	}
	live = hl_tally_delta_live(e);
	if (live > e->max_live)
		e->max_live = live;
	d->last_alloc = address;
}

/* A free the delta cannot match with its allocation (hl_tally_block_freed's
 * other case): counted alone. */
HL_TALLY_INLINE void hl_tally_delta_free_alone(struct hl_tally_delta *d)
{
	d->frees_alone++;
	if (d->events == 0 && !d->first_free_set)
		d->first_free_set = 1; /* first_free 0: no temporary */
	d->last_alloc = 0;
}

/* hl_tally_free, into a delta. */
HL_TALLY_INLINE void hl_tally_delta_free(struct hl_tally_delta *d, uint64_t address,
					 uint64_t size, uint32_t id)
{
	struct hl_tally_delta_stack *e = hl_tally_delta_slot(d, id);

	if (address == d->last_alloc) {
		d->temporaries++;
		e->temporaries++;
	} else if (d->events == 0 && !d->first_free_set) {
		d->first_free = address;
		d->first_free_id = id;
		d->first_free_set = 1;
	}
	d->last_alloc = 0;
	d->in_use_bytes -= (int64_t)size;
	hl_tally_delta_changing(d, e);
	e->freed += (hl_tally_pair){ 1, size };
}

/* The delta is due for a merge. */
HL_TALLY_INLINE bool hl_tally_delta_full(const struct hl_tally_delta *d)
{
	return d->events >= HL_DELTA_EVENTS || d->nused >= HL_DELTA_SLOTS / 2;
}

/* Empties d for its next events (the slots it used, not the whole table). */
static inline void hl_tally_delta_clear(struct hl_tally_delta *d)
{
	for (uint32_t i = 0; i < d->nused && i < HL_DELTA_SLOTS; i++)
		d->slots[d->used[i]] = (struct hl_tally_delta_stack){ 0 };
	d->nused = 0;
	d->events = d->frees_alone = d->temporaries = 0;
	d->in_use_bytes = d->max_in_use = 0;
	d->gen = d->last_alloc = d->first_free = d->first_free_set = 0;
	d->first_free_id = 0;
	for (uint64_t m = d->bins_used; m; m &= m - 1) {
		unsigned b = (unsigned)__builtin_ctzll(m);

		d->sizes.allocs[b] = d->sizes.bytes[b] = 0;
		if (b == 0)
			d->sizes.allocs[64] = d->sizes.bytes[64] = 0;
	}
	d->bins_used = 0;
}

/* The journal entry for stack id, before a merge changes it. */
static inline void hl_tally_journal_add(struct hl_tally_view *v, uint32_t id)
{
	struct hl_tally *t = v->t;

	if (t->journal_n < HL_TALLY_JOURNAL) {
		v->journal[t->journal_n] = (struct hl_tally_journal_entry){ id, 0, v->stacks[id] };
		t->journal_n++;
	}
}

/* d's events into the tally, then d emptied; the caller holds the tally
 * lock and has logged every stack id d names (< stacks_used). ticks: the
 * merge's time, a sample's if one is due. False when a sample was due and
 * the series had no room (the tally must hand over). */
static inline bool hl_tally_merge(struct hl_tally_view *v, struct hl_tally_delta *d,
				  uint64_t ticks)
{
	struct hl_tally *t = v->t;
	int64_t in0 = (int64_t)t->in_use_bytes;
	bool peak = in0 + d->max_in_use > (int64_t)t->peak_bytes;
	bool room = true;

	if (d->events == 0 && d->nused == 0)
		return true;
	t->journal_totals = (struct hl_tally_totals){
		t->allocs, t->frees, t->bytes_allocated, t->temporaries, t->in_use_bytes,
		t->in_use_blocks, t->peak_bytes, t->peak_gen, t->events, t->last_alloc };
	t->journal_n = 0;
	__atomic_store_n(&t->merging, 1, __ATOMIC_RELEASE);
	if (d->first_free_set && d->first_free != 0 && d->first_free == t->last_alloc &&
	    d->first_free_id < t->stacks_used) {
		hl_tally_journal_add(v, d->first_free_id);
		t->temporaries++;
		v->stacks[d->first_free_id].temporaries++;
	}
	t->frees += d->frees_alone;
	t->temporaries += d->temporaries;
	for (uint64_t m = d->bins_used; m; m &= m - 1) {
		unsigned b = (unsigned)__builtin_ctzll(m);

		t->sizes.allocs[b] += d->sizes.allocs[b];
		t->sizes.bytes[b] += d->sizes.bytes[b];
		if (b == 0) {
			t->sizes.allocs[64] += d->sizes.allocs[64];
			t->sizes.bytes[64] += d->sizes.bytes[64];
		}
	}
	if (peak) {
		t->peak_bytes = (uint64_t)(in0 + d->max_in_use);
		t->peak_gen++;
	}
	for (uint32_t i = 0; i < d->nused && i < HL_DELTA_SLOTS; i++) {
		const struct hl_tally_delta_stack *e = &d->slots[d->used[i]];
		uint32_t id = e->id - 1;
		struct hl_tally_stack *s;
		int64_t live0, live = hl_tally_delta_live(e);

		if (e->id == 0 || id >= t->stacks_used)
			continue;
		hl_tally_journal_add(v, id);
		s = &v->stacks[id];
		live0 = (int64_t)s->live_bytes;
		if (s->allocs == 0 && e->made[0] != 0) {
			s->kind = e->kind;
			s->flags = e->flags;
		}
		t->allocs += e->made[0];
		t->bytes_allocated += e->made[1];
		t->frees += e->freed[0];
		t->in_use_bytes += e->made[1] - e->freed[1];
		t->in_use_blocks += e->made[0] - e->freed[0];
		s->allocs += e->made[0];
		s->bytes += e->made[1];
		s->frees += e->freed[0];
		s->temporaries += e->temporaries;
		if (peak) {
			s->at_peak_bytes = (uint64_t)(live0 + (e->gen == d->gen ? e->at_peak : live));
			s->at_peak_gen = t->peak_gen;
		} else {
			hl_tally_changing(t, s);
		}
		s->live_bytes += e->made[1] - e->freed[1];
		s->live_blocks += e->made[0] - e->freed[0];
		if (live0 + e->max_live > (int64_t)s->peak_live_bytes) {
			s->peak_live_bytes = (uint64_t)(live0 + e->max_live);
			if (!s->tracked_since && s->peak_live_bytes > t->track_floor)
				hl_tally_track(v, id);
		}
	}
	t->last_alloc = d->last_alloc;
	t->events += d->events;
	if (d->events >= t->sample_countdown) {
		t->sample_countdown = t->sample_every;
		room = hl_tally_sample_take(v, ticks);
	} else {
		t->sample_countdown -= d->events;
	}
	__atomic_store_n(&d->merged, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&t->merging, 0, __ATOMIC_RELEASE);
	hl_tally_delta_clear(d);
	__atomic_store_n(&d->merged, 0, __ATOMIC_RELEASE);
	return room;
}

#endif /* HEAPLEDGER_TALLY_H */
