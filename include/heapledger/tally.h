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
};

/* The bytes a tally with room for everything takes, arrays included. */
#define HL_TALLY_ROUND8(n) (((n) + 7u) & ~(uint64_t)7u)
#define HL_TALLY_BYTES                                                                   \
	(HL_TALLY_ROUND8(sizeof(struct hl_tally)) +                                      \
	 (uint64_t)HL_TALLY_STACKS * sizeof(struct hl_tally_stack) +                     \
	 (uint64_t)HL_TALLY_SAMPLES * sizeof(struct hl_tally_sample) +                   \
	 (uint64_t)HL_TALLY_POINTS * sizeof(struct hl_tally_point) + HL_TALLY_LOG_BYTES)

/* The arrays of a tally, where the counting finds them. */
struct hl_tally_view {
	struct hl_tally *t;
	struct hl_tally_stack *stacks;
	struct hl_tally_sample *samples;
	struct hl_tally_point *points;
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
	t->log_offset = at;
	t->log_cap = HL_TALLY_LOG_BYTES;
	t->stacks_used = 1;
	v->t = t;
	v->stacks = (struct hl_tally_stack *)((char *)t + t->stacks_offset);
	v->samples = (struct hl_tally_sample *)((char *)t + t->samples_offset);
	v->points = (struct hl_tally_point *)((char *)t + t->points_offset);
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

#endif /* HEAPLEDGER_TALLY_H */
