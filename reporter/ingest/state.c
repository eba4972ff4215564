/*
 * reporter/ingest/state.c: applies validated records to a process's live state and
 * reconciles out-of-order alloc/free pairs by ticks (see state.h): the run's
 * processes, their stacks and modules, the timeline, the block table's
 * reconciliation and each record's effect, the record dispatcher. The hot
 * path of ingest is all here, in one translation unit. A process's birth
 * (HELLO, fork, exec) is lifecycle.c's, its end finish.c's.
 */
#include "state.h"

#include "state_int.h"

#include "decode.h"
#include "recover.h"
#include "heapledger/tally.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

void hl_run_init(struct hl_run *run)
{
	memset(run, 0, sizeof(*run));
}

static void process_free_tables(struct hl_process *p)
{
	hl_table_destroy(&p->live);
	hl_tombwatch_destroy(&p->tombwatch);
}

static void process_destroy(struct hl_process *p)
{
	process_free_tables(p);
	free(p->last_allocs);
	free(p->stacks);
	free(p->stack_by_wire);
	free(p->modules);
	free(p->errors);
	free(p->fds);
	free(p->samples);
	free(p->points);
	free(p->leaks);
	free(p->stack_syms);
	free(p->stack_syms_module_ids);
	for (size_t i = 0; i < p->nchecks; i++)
		free(p->checks[i].records);
	free(p->checks);
	hl_grouping_destroy(&p->check_groups);
	hl_grouping_destroy(&p->check_prev);
	free(p->live_indirect);
	hl_bump_free(&p->arena);
	free(p);
}

void hl_run_destroy(struct hl_run *run)
{
	for (size_t i = 0; i < run->nprocs; i++)
		process_destroy(run->procs[i]);
	free(run->procs);
	for (size_t i = 0; i < run->nforks; i++)
		free(run->forks[i].exe);
	free(run->forks);
	free(run->reaped);
	hl_map_destroy(&run->started);
	hl_map_destroy(&run->frames_by_hash);
	hl_bump_free(&run->frames_arena);
	hl_run_init(run);
}

void hl_run_detach(struct hl_run *run, struct hl_process *p)
{
	for (size_t i = 0; i < run->nprocs; i++) {
		struct hl_process *q = run->procs[i];

		if (q->parent == p)
			q->parent = NULL;
		if (q->exec_successor == p)
			q->exec_successor = NULL;
	}
	for (size_t i = 0; i < run->nprocs; i++) {
		if (run->procs[i] == p) {
			memmove(&run->procs[i], &run->procs[i + 1],
				(run->nprocs - i - 1) * sizeof(p));
			run->nprocs--;
			break;
		}
	}
	/* Its parent and successor stay with the run; parent_serial still
	 * names the parent for the database, exec_successor_exe the image that
	 * replaced it for the report. */
	if (p->exec_successor && !p->exec_successor_exe)
		p->exec_successor_exe = hl_bump_strdup(&p->arena, p->exec_successor->exe);
	p->parent = NULL;
	p->exec_successor = NULL;
}

void hl_process_destroy(struct hl_process *p)
{
	process_destroy(p);
}

void hl_run_forget(struct hl_run *run, struct hl_process *p)
{
	hl_run_detach(run, p);
	process_destroy(p);
}

void hl_run_note_reaped(struct hl_run *run, pid_t pid, int status)
{
	hl_grow((void **)&run->reaped, &run->reaped_cap, run->nreaped,
		sizeof(*run->reaped));
	run->reaped[run->nreaped].pid = pid;
	run->reaped[run->nreaped].status = status;
	run->nreaped++;
}

/* ---- stacks and modules ------------------------------------------------- */

/* hl_process_stack, inlined where every event asks. */
static inline struct hl_process_stack *stack_at(const struct hl_process *p, uint32_t ref)
{
	return ref && ref <= p->nstacks ? &p->stacks[ref - 1] : NULL;
}

struct hl_process_stack *hl_process_stack(const struct hl_process *p, uint32_t ref)
{
	return stack_at(p, ref);
}

/* Wire stack id -> stack reference. The decoder guarantees the id exists. */
static inline uint32_t stack_ref(const struct hl_process *p, uint32_t wire_id)
{
	return wire_id && wire_id < p->stack_by_wire_cap ? p->stack_by_wire[wire_id] : 0;
}

struct hl_process_stack *hl_state_stack_add(struct hl_process *p)
{
	hl_grow((void **)&p->stacks, &p->stacks_cap, p->nstacks, sizeof(*p->stacks));
	return &p->stacks[p->nstacks++];
}

uint64_t hl_stack_frames_hash(const uint64_t *frames, uint32_t depth)
{
	uint64_t h = depth + 0x9e3779b97f4a7c15ull;

	for (uint32_t i = 0; i < depth; i++) {
		h = (h ^ frames[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h | 1;
}

/* The run's copy of depth return addresses (hash: theirs), made on first
 * sight (hl_run.share_frames). */
static uint64_t *shared_frames(struct hl_run *run, const uint64_t *frames, uint32_t depth,
			       uint64_t hash)
{
	uint64_t key = hash << 4; /* the table ignores the low 4 bits; hash is odd */
	uint64_t *kept;

	for (uint64_t *v = hl_map_find(&run->frames_by_hash, key); v;
	     v = hl_map_find_next(&run->frames_by_hash, key, v)) {
		kept = hl_map_ptr(*v);
		if (kept[0] == depth && !memcmp(kept + 1, frames, (size_t)depth * 8))
			return kept + 1;
	}
	kept = hl_bump_alloc(&run->frames_arena, ((size_t)depth + 1) * 8);
	kept[0] = depth;
	memcpy(kept + 1, frames, (size_t)depth * 8);
	hl_map_insert(&run->frames_by_hash, key, hl_map_of_ptr(kept));
	return kept + 1;
}

static void on_stack(struct hl_process *p, const struct hl_rec_stack *r)
{
	struct hl_process_stack *s = hl_state_stack_add(p);
	const uint64_t *frames = (const uint64_t *)(r + 1);

	s->wire_id = r->stack_id;
	s->depth = r->depth;
	s->truncated = r->truncated;
	s->seq = p->seq;
	s->frames_hash = hl_stack_frames_hash(frames, s->depth);
	if (p->run && p->run->share_frames) {
		s->frames = shared_frames(p->run, frames, s->depth, s->frames_hash);
	} else {
		s->frames = hl_bump_alloc(&p->arena, (size_t)r->depth * 8);
		memcpy(s->frames, frames, (size_t)r->depth * 8);
	}
	hl_grow((void **)&p->stack_by_wire, &p->stack_by_wire_cap, r->stack_id,
		sizeof(*p->stack_by_wire));
	p->stack_by_wire[r->stack_id] = (uint32_t)p->nstacks;
}

struct hl_module *hl_state_module_add(struct hl_process *p)
{
	hl_grow((void **)&p->modules, &p->modules_cap, p->nmodules,
		sizeof(*p->modules));
	return &p->modules[p->nmodules++];
}

static void on_module_load(struct hl_process *p, const struct hl_rec_module_load *r)
{
	struct hl_module *m = hl_state_module_add(p);
	const uint8_t *build_id = (const uint8_t *)(r + 1);

	m->wire_id = r->module_id;
	m->build_id_len = r->build_id_len;
	memcpy(m->build_id, build_id, r->build_id_len);
	m->path = hl_bump_strdup(&p->arena, (const char *)build_id + r->build_id_len);
	m->base = r->base;
	m->low = r->low;
	m->high = r->high;
	m->load_seq = p->seq;
}

static void on_module_unload(struct hl_process *p, const struct hl_rec_module_unload *r)
{
	for (size_t i = p->nmodules; i-- > 0;) {
		if (p->modules[i].wire_id == r->module_id && !p->modules[i].unload_seq) {
			p->modules[i].unload_seq = p->seq;
			return;
		}
	}
}

const struct hl_module *hl_process_module_for(const struct hl_process *p,
					      uint64_t address, uint64_t seq)
{
	const struct hl_module *any = NULL;

	/* Newest first: after dlclose + dlopen the same range may be reused. */
	for (size_t i = p->nmodules; i-- > 0;) {
		const struct hl_module *m = &p->modules[i];

		if (address < m->low || address >= m->high)
			continue;
		if (m->load_seq <= seq && (!m->unload_seq || m->unload_seq >= seq))
			return m;
		if (!any)
			any = m;
	}
	return any;
}

/* ---- timeline ------------------------------------------------------------ */

/* Each stack's points without those of a series that ended (the stack
 * left the tracked set, maybe to enter it again later), and, if halve,
 * as the samples are thinned (timeline_thin): sample k becomes k / 2 (2i
 * and 2i + 1 are now sample i, which was 2i + 1), and of a stack's two
 * points that merge, the later value stays. A stack's points are in sample
 * order, so its newest kept entry is the one to overwrite; point is
 * renumbered to the compacted array as it goes. */
static void points_compact(struct hl_process *p, bool halve)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nstacks; i++)
		p->stacks[i].point = 0;
	for (size_t i = 0; i < p->npoints; i++) {
		struct hl_stack_point pt = p->points[i];
		struct hl_process_stack *s = &p->stacks[pt.stack];

		if (!s->tracked_since || pt.sample + 1 < s->tracked_since)
			continue;
		if (halve)
			pt.sample /= 2;
		if (s->point && p->points[s->point - 1].sample == pt.sample) {
			p->points[s->point - 1].bytes = pt.bytes;
			continue;
		}
		p->points[n++] = pt;
		s->point = (uint32_t)n;
	}
	p->npoints = n;
	for (size_t i = 0; halve && i < p->nstacks; i++)
		if (p->stacks[i].tracked_since)
			p->stacks[i].tracked_since = (p->stacks[i].tracked_since - 1) / 2 + 1;
}

/* Thin by half and sample half as often: bounded, evenly spread. */
static void timeline_thin(struct hl_process *p)
{
	size_t half = p->nsamples / 2;

	for (size_t i = 0; i < half; i++)
		p->samples[i] = p->samples[2 * i + 1];
	p->nsamples = half;
	p->sample_every *= 2;
	p->sample_countdown = p->sample_every;
	points_compact(p, true);
}

/* ---- per-stack series (state.h, hl_stack_point) ---------------------------- */

/* A new point: before the array grows, the points of ended series go
 * (when the tracked set changes often, most are), so it holds about
 * HL_TRACKED_STACKS a sample. */
static void stack_point_add(struct hl_process *p, struct hl_process_stack *s)
{
	if (p->npoints == p->points_cap && p->npoints >= 4096)
		points_compact(p, false);
	hl_grow((void **)&p->points, &p->points_cap, p->npoints, sizeof(*p->points));
	p->points[p->npoints++] = (struct hl_stack_point){ (uint32_t)p->nsamples,
							   (uint32_t)(s - p->stacks), s->live_bytes };
	s->point = (uint32_t)p->npoints;
}

/* The sample about to be taken (index nsamples): a point for each tracked
 * stack whose bytes differ from its series' newest point (tracked_last),
 * or that has none since it entered the set. Done here rather than at each change, so an
 * event pays nothing for the series: HL_TRACKED_STACKS compares a sample. */
static void series_sample(struct hl_process *p)
{
	for (uint32_t t = 0; t < p->ntracked; t++) {
		struct hl_process_stack *s = &p->stacks[p->tracked[t]];

		if (s->live_bytes != p->tracked_last[t]) {
			p->tracked_last[t] = s->live_bytes;
			stack_point_add(p, s);
		}
	}
}

/* s, not tracked, reached a peak above track_floor: it takes the place of
 * the tracked stack with the lowest peak if its own is higher (the floor,
 * a lower bound, is brought up to date on the way). Its series starts at
 * the next sample. */
static __attribute__((noinline)) void stack_track(struct hl_process *p,
						  struct hl_process_stack *s)
{
	uint32_t low = 0;

	if (p->ntracked < HL_TRACKED_STACKS) {
		low = p->ntracked++;
	} else {
		for (uint32_t i = 1; i < p->ntracked; i++)
			if (p->stacks[p->tracked[i]].peak_live_bytes <
			    p->stacks[p->tracked[low]].peak_live_bytes)
				low = i;
		p->track_floor = p->stacks[p->tracked[low]].peak_live_bytes;
		if (s->peak_live_bytes <= p->track_floor)
			return;
		p->stacks[p->tracked[low]].tracked_since = 0;
	}
	p->tracked[low] = (uint32_t)(s - p->stacks);
	p->tracked_last[low] = UINT64_MAX;
	s->tracked_since = (uint32_t)p->nsamples + 1;
}

void hl_state_sample_take(struct hl_process *p, uint64_t ticks)
{
	if (p->nsamples == HL_TIMELINE_MAX)
		timeline_thin(p);
	series_sample(p);
	/* Grown as needed: most processes of a fork-heavy run take a sample
	 * or two, and 4096 each for 420 shell children was 40 MiB. */
	hl_grow((void **)&p->samples, &p->samples_cap, p->nsamples, sizeof(*p->samples));
	p->samples[p->nsamples].ticks = ticks;
	p->samples[p->nsamples].in_use_bytes = p->in_use_bytes;
	p->samples[p->nsamples].in_use_blocks = p->in_use_blocks;
	p->nsamples++;
}

#define hl_likely_state(x) __builtin_expect(!!(x), 1)

static inline void event_counted(struct hl_process *p, uint64_t ticks)
{
	p->events++;
	if (--p->sample_countdown == 0) {
		p->sample_countdown = p->sample_every;
		hl_state_sample_take(p, ticks);
	}
}

/* ---- reconciliation ------------------------------------------------------- */

/* HL_INHERITED_TICKS: a block a fork child inherited predates everything the
 * child does, so it enters the child's table at ticks 0. Its parent's ticks
 * are not comparable with the child's first events: the hook reads the clock
 * once per dense run of events, and a child's first run may carry a value
 * older than the parent's last allocations, so its frees of them looked
 * older than the blocks, were ignored, and showed up as "frees without their
 * allocation" plus as many leaks (every fork-then-free program). */

/* Peak consumers: what each stack held at the process's peak, without a
 * walk of every stack at each new peak. A new peak bumps peak_gen; a stack
 * that changes for the first time since keeps what it held until then,
 * which is what it held at that peak (state.h, hl_stack_at_peak). One
 * compare per change, a store at the first change after a peak. */
static inline void stack_changing(const struct hl_process *p, struct hl_process_stack *s)
{
	if (s->at_peak_gen != p->peak_gen) {
		s->at_peak_bytes = s->live_bytes;
		s->at_peak_gen = p->peak_gen;
	}
}

/* A block enters or leaves the live set (the set the leak report is made of;
 * in_use and the per-stack live counters always describe it exactly). s is
 * stack_at(p, b->stack_id): the callers look it up once for every counter
 * of the event. */
static inline void live_add(struct hl_process *p, const struct hl_block *b,
			    struct hl_process_stack *s)
{
	if (s)
		stack_changing(p, s); /* before the peak this block may make */
	p->in_use_bytes += b->size;
	p->in_use_blocks++;
	if (p->in_use_bytes > p->peak_bytes) {
		p->peak_bytes = p->in_use_bytes;
		p->peak_gen++;
	}
	if (b->flags & HL_BLOCK_INHERITED) {
		p->inherited_bytes += b->size;
		p->inherited_blocks++;
	}
	if (s) {
		s->live_bytes += b->size;
		s->live_blocks++;
		if (s->live_bytes > s->peak_live_bytes) {
			s->peak_live_bytes = s->live_bytes;
			if (!s->tracked_since && s->peak_live_bytes > p->track_floor)
				stack_track(p, s);
		}
	}
}

static inline void live_remove(struct hl_process *p, const struct hl_block *b,
			       struct hl_process_stack *s)
{
	p->in_use_bytes -= b->size;
	p->in_use_blocks--;
	if (b->flags & HL_BLOCK_INHERITED) {
		p->inherited_bytes -= b->size;
		p->inherited_blocks--;
	}
	if (s) {
		stack_changing(p, s);
		s->live_bytes -= b->size;
		s->live_blocks--;
		s->frees++;
	}
}

void hl_state_live_remove(struct hl_process *p, const struct hl_block *b)
{
	live_remove(p, b, stack_at(p, b->stack_id));
}

/* The size histogram's one count per allocation: kept to this function,
 * so the counting can move (to the hook, per stack) in one piece. */
static inline void size_counted(struct hl_process *p, uint64_t size)
{
	hl_size_bins_count(&p->sizes, size);
}

static inline void count_alloc(struct hl_process *p, const struct hl_block *nb,
			       struct hl_process_stack *s)
{
	if (nb->flags & HL_BLOCK_INHERITED)
		return; /* the parent counted it */
	p->allocs++;
	p->bytes_allocated += nb->size;
	size_counted(p, nb->size);
	if (s) {
		s->allocs++;
		s->bytes += nb->size;
	}
}

/* ---- temporary allocations ---------------------------------------------- */

/* The thread of the batch now starting: its latest event's address if that
 * event was an allocation (hl_process.last_alloc). The current thread has
 * no entry in last_allocs; the outgoing one gets one unless its value is 0
 * (as good as none). */
static void last_alloc_switch(struct hl_process *p, uint32_t tid)
{
	if (tid == p->last_alloc_tid)
		return;
	if (p->last_alloc && p->last_alloc_tid) {
		hl_grow((void **)&p->last_allocs, &p->last_allocs_cap, p->nlast_allocs,
			sizeof(*p->last_allocs));
		p->last_allocs[p->nlast_allocs++] =
			(struct hl_last_alloc){ p->last_alloc_tid, p->last_alloc };
	}
	p->last_alloc = 0;
	p->last_alloc_tid = tid;
	for (size_t i = 0; i < p->nlast_allocs; i++)
		if (p->last_allocs[i].tid == tid) {
			p->last_alloc = p->last_allocs[i].address;
			p->last_allocs[i] = p->last_allocs[--p->nlast_allocs];
			break;
		}
}

/* A block freed right after its allocation (hl_process.last_alloc); s is
 * its stack. */
static void temporary_counted(struct hl_process *p, struct hl_process_stack *s)
{
	p->temporaries++;
	if (s)
		s->temporaries++;
}

/* THREAD_END: the thread's entry goes (a later thread may reuse its tid). */
static void last_alloc_thread_end(struct hl_process *p, uint32_t tid)
{
	if (tid == p->last_alloc_tid)
		p->last_alloc = 0;
	for (size_t i = 0; i < p->nlast_allocs; i++)
		if (p->last_allocs[i].tid == tid) {
			p->last_allocs[i] = p->last_allocs[--p->nlast_allocs];
			break;
		}
}

static int ticks_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Queues the tombstone b for forgetting (tombwatch.h). */
static void tomb_queued(struct hl_process *p, const struct hl_block *b)
{
	if (p->tombstones < p->tombwatch.queue_from)
		return; /* few: left to reuse (tombwatch.h) */
	hl_tombwatch_push(&p->tombwatch, (struct hl_tomb_entry){
		.address = b->address, .ticks = b->ticks,
		.slot = (uint32_t)(b - p->live.slots), .generation = p->live.generation });
}

/* Drops the older half of the tombstones. An event older than a dropped
 * tombstone would have to come from a thread that held it back while
 * HL_TOMBSTONES_MAX / 2 newer frees arrived; that is the price of bounded
 * memory (the live set could then keep a block that was freed). */
static __attribute__((noinline)) void prune_tombstones(struct hl_process *p)
{
	uint64_t sample[4096], cutoff, seen = 0;
	uint64_t stride = p->tombstones / HL_ARRAY_SIZE(sample) + 1;
	size_t n = 0;
	struct hl_block *b;

	/* The median of an even sample of tombstone ages is cutoff enough. */
	for (b = hl_table_next(&p->live, NULL); b; b = hl_table_next(&p->live, b))
		if ((b->flags & HL_BLOCK_FREED) && seen++ % stride == 0 &&
		    n < HL_ARRAY_SIZE(sample))
			sample[n++] = b->ticks;
	qsort(sample, n, sizeof(*sample), ticks_cmp);
	cutoff = n ? sample[n / 2] : 0;
	b = hl_table_next(&p->live, NULL);
	while (b) {
		if ((b->flags & HL_BLOCK_FREED) && b->ticks < cutoff) {
			hl_table_remove(&p->live, b);
			p->tombstones--;
			p->tombstones_dropped++;
		}
		b = hl_table_next(&p->live, b); /* removal moves no entry */
	}
}

/* block_freed once the process has threads: a tombstone. */
static __attribute__((noinline)) void block_tombstoned(struct hl_process *p, struct hl_block *b,
						       uint64_t ticks, unsigned kind)
{
	b->flags = HL_BLOCK_FREED;
	b->ticks = ticks;
	b->kind = (uint8_t)kind;
	b->size = 0;
	b->stack_id = 0;
	tomb_queued(p, b);
	if (++p->tombstones > HL_TOMBSTONES_MAX)
		prune_tombstones(p);
}

/* Remembers that address was freed at ticks, once the process has threads
 * whose batches can arrive out of order; otherwise forgets it. */
static inline void block_freed(struct hl_process *p, struct hl_block *b, uint64_t ticks,
			       unsigned kind)
{
	if (!p->reordering)
		hl_table_remove(&p->live, b);
	else
		block_tombstoned(p, b, ticks, kind);
}

/* The queued tombstone e if it is still in the table as queued, else NULL. */
static struct hl_block *tomb_of(const struct hl_process *p, const struct hl_tomb_entry *e)
{
	struct hl_block *b = e->generation == p->live.generation && e->slot < p->live.capacity ?
				     &p->live.slots[e->slot] : hl_table_find(&p->live, e->address);

	return b && b->address == e->address && (b->flags & HL_BLOCK_FREED) &&
			       b->ticks == e->ticks ? b : NULL;
}

/* What a thread has unsent, from its shared event buffer (recover.h). */
static void pin_address(void *w, uint64_t address)
{
	hl_tombwatch_pin(w, address);
}

static bool thread_pending(void *ctx, struct hl_tombwatch *w, uint32_t tid, uint32_t max_bytes)
{
	const struct hl_conn_state *cs = ctx;

	return cs->shared && cs->decoder &&
	       hl_recover_thread_pending(cs->shared, tid, cs->decoder->batch_end, max_bytes,
					 pin_address, w);
}

/* Drops the tombstones no event still to come is older than (tombwatch.h).
 * A queued tombstone whose address was allocated, freed again or pruned
 * since is not the one queued: left alone. */
static void forget_expired(struct hl_conn_state *cs, struct hl_process *p)
{
	struct hl_tomb_entry e;
	size_t kept = 0;

	/* sync_ticks[1]: the latest BATCH's clock, read by its sender before
	 * we read any slot. */
	while (kept < p->tombwatch.count &&
	       hl_tombwatch_expired(&p->tombwatch, &e, thread_pending, cs, p->sync_ticks[1])) {
		const struct hl_tomb_entry *ahead = hl_tombwatch_peek(&p->tombwatch, 8);
		struct hl_block *b;

		if (ahead && ahead->generation == p->live.generation && ahead->slot < p->live.capacity)
			__builtin_prefetch(&p->live.slots[ahead->slot]);
		b = tomb_of(p, &e);
		if (!b)
			continue; /* reused, freed again or pruned since */
		if (hl_tombwatch_pinned(&p->tombwatch, e.address)) {
			tomb_queued(p, b); /* still needed */
			kept++;
			continue;
		}
		hl_table_remove(&p->live, b);
		p->tombstones--;
		p->tombstones_forgotten++;
	}
}

/* An allocation at an address the table already holds (block_alloc). */
static __attribute__((noinline)) void block_alloc_over(struct hl_process *p, struct hl_block *b,
						       const struct hl_block *nb,
						       struct hl_process_stack *s)
{
	if (b->ticks > nb->ticks) {
		/* A newer event already happened here: this block was freed
		 * before it. Its free arrived already, as a remembered free, or
		 * will arrive and find the newer event: either way no block in
		 * the table is its, so its stack's free is counted now (without
		 * it a stack's frees came out 2-16% short with threads reusing
		 * each other's addresses). */
		p->stale_allocs++;
		if (s)
			s->frees++;
		return;
	}
	if (b->flags & HL_BLOCK_FREED) {
		p->tombstones--;
	} else {
		/* Two allocations of one address without a free between them
		 * yet: the older one was freed and its free is still coming. */
		live_remove(p, b, stack_at(p, b->stack_id));
	}
	*b = *nb;
	live_add(p, b, s);
}

/* An allocation (size, stack, ticks, flags in nb). The entry of its address
 * holds the newest event seen there; the newer one wins. Inline where
 * every event comes through; the rest is block_alloc_over. */
static inline __attribute__((always_inline)) void block_alloc(struct hl_process *p,
							      const struct hl_block *nb)
{
	bool added;
	struct hl_block *b = hl_table_find_or_insert(&p->live, nb->address, &added);
	struct hl_process_stack *s = stack_at(p, nb->stack_id);

	count_alloc(p, nb, s);
	if (hl_likely_state(added)) {
		*b = *nb;
		live_add(p, b, s);
		return;
	}
	if ((b->flags & HL_BLOCK_FREED) && b->ticks <= nb->ticks) {
		/* the address's free, remembered: with threads, most
		 * allocations (block_alloc_over's case, inline) */
		p->tombstones--;
		*b = *nb;
		live_add(p, b, s);
		return;
	}
	block_alloc_over(p, b, nb, s);
}

void hl_state_block_alloc(struct hl_process *p, const struct hl_block *nb)
{
	block_alloc(p, nb);
}

/* A free that does not end a live block the table holds (block_free). */
static __attribute__((noinline)) void block_free_other(struct hl_process *p, struct hl_block *b,
						       uint64_t address, uint64_t ticks,
						       unsigned kind)
{
	if (!b) {
		/* Its allocation has not arrived yet (another thread's batch). */
		if (!p->reordering)
			return; /* counted at the end as unmatched */
		b = hl_table_insert(&p->live, address);
		b->flags = HL_BLOCK_FREED;
		b->ticks = ticks;
		b->kind = (uint8_t)kind;
		tomb_queued(p, b);
		if (++p->tombstones > HL_TOMBSTONES_MAX)
			prune_tombstones(p);
		return;
	}
	/* Either an older allocation's free (a newer event replaced it), or a
	 * second free after the last known one (the allocation between them is
	 * still coming): the newest event stays. */
	if (b->ticks < ticks) {
		b->ticks = ticks;
		if (b->flags & HL_BLOCK_FREED) /* the queued entry no longer matches */
			tomb_queued(p, b);
	}
}

static inline __attribute__((always_inline)) void block_free(struct hl_process *p,
							     uint64_t address, uint64_t ticks,
							     unsigned kind)
{
	struct hl_block *b = hl_table_find(&p->live, address);
	bool temporary = address == p->last_alloc;

	p->frees++;
	p->last_alloc = 0;
	if (hl_likely_state(b && !(b->flags & HL_BLOCK_FREED) && b->ticks <= ticks)) {
		struct hl_process_stack *s = stack_at(p, b->stack_id);

		if (temporary)
			temporary_counted(p, s);
		live_remove(p, b, s); /* the common case */
		block_freed(p, b, ticks, kind);
		return;
	}
	block_free_other(p, b, address, ticks, kind);
}

/* ---- counting in the hook (wire.h, heapledger/tally.h) --------------------- */

_Static_assert(HL_TALLY_TRACKED == HL_TRACKED_STACKS, "one tracked set");
_Static_assert(HL_TALLY_SAMPLES == HL_TIMELINE_MAX, "one timeline bound");

/* A stack's counts as the tally (or a merge's journal) has them. */
static void stack_counts_take(struct hl_process_stack *s, const struct hl_tally_stack *ts)
{
	s->allocs = ts->allocs;
	s->bytes = ts->bytes;
	s->frees = ts->frees;
	s->temporaries = ts->temporaries;
	s->live_bytes = ts->live_bytes;
	s->live_blocks = ts->live_blocks;
	s->peak_live_bytes = ts->peak_live_bytes;
	s->at_peak_bytes = ts->at_peak_bytes;
	s->at_peak_gen = ts->at_peak_gen;
}

/* The process's totals as the tally (or a merge's journal) has them. */
static void totals_take(struct hl_process *p, const struct hl_tally_totals *tt)
{
	p->allocs = tt->allocs;
	p->frees = tt->frees;
	p->bytes_allocated = tt->bytes_allocated;
	p->temporaries = tt->temporaries;
	p->in_use_bytes = tt->in_use_bytes;
	p->in_use_blocks = tt->in_use_blocks;
	p->peak_bytes = tt->peak_bytes;
	p->peak_gen = tt->peak_gen;
	p->events = p->tally_events = tt->events;
	p->last_alloc = tt->last_alloc;
}

/* The hook's counts become the process's: what its events would have made
 * of the state, the same rules counted in the program (tally.h). Every
 * count is the program's writing: indexes are checked, counts bounded by
 * the arrays' capacities; a wrong number can only make a wrong report. */
static void tally_take(struct hl_conn_state *cs, struct hl_process *p, uint32_t state)
{
	struct hl_tally t;
	const uint8_t *base = cs->shared ? hl_recover_tally(cs->shared, &t) : NULL;
	uint64_t nsamples, npoints, nstacks;

	if (!(p->hook_flags & HL_HOOK_TALLY) || p->tally_state || base == NULL)
		return;
	p->tally_state = state;
	totals_take(p, &(struct hl_tally_totals){ t.allocs, t.frees, t.bytes_allocated,
						  t.temporaries, t.in_use_bytes, t.in_use_blocks,
						  t.peak_bytes, t.peak_gen, t.events, t.last_alloc });
	p->sizes = t.sizes;
	p->sample_every = t.sample_every ? t.sample_every : 256;
	p->sample_countdown = t.sample_countdown && t.sample_countdown <= p->sample_every ?
				      t.sample_countdown : p->sample_every;
	p->track_floor = t.track_floor;
	nsamples = t.nsamples < t.samples_cap ? t.nsamples : t.samples_cap;
	if (nsamples > HL_TIMELINE_MAX)
		nsamples = HL_TIMELINE_MAX;
	nstacks = t.stacks_used < t.stacks_cap ? t.stacks_used : t.stacks_cap;
	for (uint64_t id = 0; id < nstacks; id++) {
		struct hl_tally_stack ts;
		struct hl_process_stack *s;

		memcpy(&ts, base + t.stacks_offset + id * sizeof(ts), sizeof(ts));
		s = stack_at(p, stack_ref(p, (uint32_t)id));
		if (!s) {
			/* no stack, or one never received: its blocks still count */
			p->tally_unknown_bytes += ts.live_bytes;
			p->tally_unknown_blocks += ts.live_blocks;
			continue;
		}
		stack_counts_take(s, &ts);
		s->tracked_since = ts.tracked_since <= nsamples + 1 ? ts.tracked_since : 0;
		s->point = 0;
		s->tally_kind = ts.kind < HL_KIND_COUNT ? ts.kind : HL_KIND_MALLOC;
		s->tally_realloc = (ts.flags & HL_TALLY_STACK_REALLOC) != 0;
	}
	hl_grow((void **)&p->samples, &p->samples_cap, nsamples, sizeof(*p->samples));
	for (uint64_t i = 0; i < nsamples; i++) {
		struct hl_tally_sample ts;

		memcpy(&ts, base + t.samples_offset + i * sizeof(ts), sizeof(ts));
		p->samples[i] = (struct hl_sample){ ts.ticks, ts.in_use_bytes, ts.in_use_blocks };
	}
	p->nsamples = nsamples;
	npoints = t.npoints < t.points_cap ? t.npoints : t.points_cap;
	p->npoints = 0;
	for (uint64_t i = 0; i < npoints; i++) {
		struct hl_tally_point tp;
		struct hl_process_stack *s;

		memcpy(&tp, base + t.points_offset + i * sizeof(tp), sizeof(tp));
		s = stack_at(p, stack_ref(p, tp.stack));
		if (!s || tp.sample > nsamples)
			continue;
		hl_grow((void **)&p->points, &p->points_cap, p->npoints, sizeof(*p->points));
		p->points[p->npoints++] = (struct hl_stack_point){ tp.sample,
								   (uint32_t)(s - p->stacks), tp.bytes };
		s->point = (uint32_t)p->npoints;
	}
	p->ntracked = 0;
	for (uint32_t i = 0; i < t.ntracked && i < HL_TRACKED_STACKS; i++) {
		uint32_t ref = stack_ref(p, t.tracked[i]);

		if (!ref || !p->stacks[ref - 1].tracked_since)
			continue;
		p->tracked[p->ntracked] = ref - 1;
		p->tracked_last[p->ntracked++] = t.tracked_last[i];
	}
	if (state != HL_TALLY_COUNTING) {
		/* The blocks that follow (the hand-over's, or the LIVE set)
		 * are the live set whole: in use is theirs. */
		p->in_use_bytes = p->in_use_blocks = 0;
		for (size_t i = 0; i < p->nstacks; i++)
			p->stacks[i].live_bytes = p->stacks[i].live_blocks = 0;
		p->tally_unknown_bytes = p->tally_unknown_blocks = 0;
	}
}

/* A block of the live set handed over with the counts (HL_ALLOC_TALLIED,
 * or the LIVE set after TALLY FINAL): into the live counters, counted
 * already; made by realloc if its stack's blocks were (no record says). */
static void tally_block(struct hl_process *p, struct hl_block *b)
{
	struct hl_process_stack *s = stack_at(p, b->stack_id);

	if (s && s->tally_realloc)
		b->flags = HL_BLOCK_REALLOC;
	p->in_use_bytes += b->size;
	p->in_use_blocks++;
	if (s) {
		s->live_bytes += b->size;
		s->live_blocks++;
	}
}

/* A value the program wrote that should not be below zero, at least 0. */
static uint64_t tally_floor(uint64_t v)
{
	return (int64_t)v < 0 ? 0 : v;
}

/* A killed process's thread had not merged its delta: its counts added to
 * what tally_take made of the tally (totals and each stack's; the peak, the
 * timeline and the series stay as the merges left them). */
static void tally_add_delta(void *arg, const struct hl_tally_delta *d)
{
	struct hl_process *p = arg;

	p->frees += d->frees_alone;
	p->temporaries += d->temporaries;
	p->events += d->events;
	p->tally_events += d->events;
	for (unsigned i = 0; i < HL_SIZE_BINS; i++) {
		p->sizes.allocs[i] += d->sizes.allocs[i];
		p->sizes.bytes[i] += d->sizes.bytes[i];
	}
	for (uint32_t k = 0; k < d->nused; k++) {
		const struct hl_tally_delta_stack *e = &d->slots[d->used[k]];
		uint64_t live_bytes = e->made[1] - e->freed[1];
		uint64_t live_blocks = e->made[0] - e->freed[0];
		struct hl_process_stack *s;

		if (e->id == 0)
			continue;
		p->allocs += e->made[0];
		p->bytes_allocated += e->made[1];
		p->frees += e->freed[0];
		p->in_use_bytes = tally_floor(p->in_use_bytes + live_bytes);
		p->in_use_blocks = tally_floor(p->in_use_blocks + live_blocks);
		s = stack_at(p, stack_ref(p, e->id - 1));
		if (!s) {
			p->tally_unknown_bytes = tally_floor(p->tally_unknown_bytes + live_bytes);
			p->tally_unknown_blocks = tally_floor(p->tally_unknown_blocks + live_blocks);
			continue;
		}
		s->allocs += e->made[0];
		s->bytes += e->made[1];
		s->frees += e->freed[0];
		s->temporaries += e->temporaries;
		s->live_bytes = tally_floor(s->live_bytes + live_bytes);
		s->live_blocks = tally_floor(s->live_blocks + live_blocks);
		if (s->live_bytes > s->peak_live_bytes)
			s->peak_live_bytes = s->live_bytes;
	}
	if (p->in_use_bytes > p->peak_bytes)
		p->peak_bytes = p->in_use_bytes;
}

/* A process killed inside a merge: the tally's totals and the stacks the
 * merge had changed, as the journal has them from before it (the delta
 * being merged is then added whole, as the others are). */
static void tally_undo_merge(struct hl_conn_state *cs, struct hl_process *p)
{
	struct hl_tally t;
	const uint8_t *base = hl_recover_tally(cs->shared, &t);
	uint32_t n;

	if (base == NULL || !t.merging || hl_recover_tally_delta_merged(cs->shared))
		return;
	totals_take(p, &t.journal_totals);
	n = t.journal_n < t.journal_cap ? t.journal_n : (uint32_t)t.journal_cap;
	for (uint32_t k = 0; k < n; k++) {
		struct hl_tally_journal_entry j;
		struct hl_tally_stack now;
		struct hl_process_stack *s;

		memcpy(&j, base + t.journal_offset + (uint64_t)k * sizeof(j), sizeof(j));
		if (j.stack_id >= t.stacks_cap)
			continue;
		s = stack_at(p, stack_ref(p, j.stack_id));
		if (!s) {
			memcpy(&now, base + t.stacks_offset + (uint64_t)j.stack_id * sizeof(now),
			       sizeof(now));
			p->tally_unknown_bytes += j.before.live_bytes - now.live_bytes;
			p->tally_unknown_blocks += j.before.live_blocks - now.live_blocks;
			continue;
		}
		stack_counts_take(s, &j.before);
	}
}

void hl_state_tally_end(struct hl_conn_state *cs, struct hl_decoder *d)
{
	struct hl_process *p = cs->proc;

	if (!p || !(p->hook_flags & HL_HOOK_TALLY) || p->tally_state || !cs->shared)
		return;
	hl_recover_tally_stacks(cs->shared, d);
	tally_take(cs, p, HL_TALLY_COUNTING);
	if (p->tally_state != HL_TALLY_COUNTING)
		return;
	tally_undo_merge(cs, p);
	hl_recover_tally_deltas(cs->shared, tally_add_delta, p);
}

/* ---- records --------------------------------------------------------------- */

/* An allocation or realloc event of this process's own (not inherited). */
static inline __attribute__((always_inline)) void event_alloc(struct hl_process *p,
							      const struct hl_block *nb)
{
	block_alloc(p, nb);
	p->last_alloc = nb->address;
	hl_tombwatch_event(&p->tombwatch, nb->ticks);
	event_counted(p, nb->ticks);
}

static inline __attribute__((always_inline)) void event_free(struct hl_process *p,
							     uint64_t address, uint64_t ticks,
							     unsigned kind)
{
	block_free(p, address, ticks, kind);
	hl_tombwatch_event(&p->tombwatch, ticks);
	event_counted(p, ticks);
}

/* realloc: the old block freed and the new one allocated at the same
 * instant, one event. */
static inline void event_realloc(struct hl_process *p, uint64_t old_address,
				 const struct hl_block *nb)
{
	block_free(p, old_address, nb->ticks, HL_KIND_MALLOC);
	event_alloc(p, nb);
}

static void on_alloc(struct hl_process *p, const struct hl_rec_alloc *r)
{
	struct hl_block nb = {
		.address = r->address, .size = r->size, .ticks = r->ticks,
		.stack_id = stack_ref(p, r->stack_id),
		.kind = (uint8_t)(r->h.flags & HL_ALLOC_KIND_MASK),
	};

	if (r->h.flags & HL_ALLOC_TALLIED) {
		bool added;
		struct hl_block *b = hl_table_find_or_insert(&p->live, nb.address, &added);

		if (added || (b->flags & HL_BLOCK_FREED)) {
			if (!added)
				p->tombstones--;
			*b = nb;
			tally_block(p, b);
		}
		return;
	}
	if (r->h.flags & HL_ALLOC_INHERITED) {
		/* Held at fork (HL_HOOK_FORK_SNAPSHOT): live, not allocated here. */
		nb.flags = HL_BLOCK_INHERITED;
		nb.ticks = 0; /* see HL_INHERITED_TICKS */
		p->inherited_at_fork++;
		hl_state_block_alloc(p, &nb);
		/* The copy is one instant, not a heap growing over time: no
		 * timeline sample of its own (a shell's subshell took 20 at the
		 * same time, one per 256 inherited blocks), as when the child
		 * inherits the parent's table (hl_state_inherit_from). */
		p->events++;
		return;
	}
	event_alloc(p, &nb);
}

static void on_realloc(struct hl_process *p, const struct hl_rec_realloc *r)
{
	struct hl_block nb = {
		.address = r->new_address, .size = r->size, .ticks = r->ticks,
		.stack_id = stack_ref(p, r->stack_id), .kind = HL_KIND_MALLOC,
		.flags = HL_BLOCK_REALLOC,
	};

	event_realloc(p, r->old_address, &nb);
}

/* Part of an on-demand check's set: its totals by class, and its blocks
 * grouped into loss records as the exit set's are. */
static void on_check_live(struct hl_process *p, const struct hl_rec_live *r, bool scanned)
{
	const struct hl_wire_live_block *lb = (const void *)(r + 1);
	const struct hl_wire_live_indirect *ind = hl_wire_live_indirect_of(r);
	struct hl_check *c = &p->check_open;

	c->scanned |= scanned;
	for (uint32_t i = 0; i < r->count; i++) {
		unsigned cls = scanned && lb[i].leak_class <= HL_CLASS_SUPPRESSED ?
				       lb[i].leak_class : HL_CLASS_UNKNOWN;
		struct hl_leak_group *g =
			hl_grouping_get(&p->check_groups, stack_ref(p, lb[i].stack_id), (uint8_t)cls);

		if (!g->blocks)
			g->alloc_kind = lb[i].kind;
		g->bytes += lb[i].size;
		g->blocks++;
		c->bytes[cls] += lb[i].size;
		c->blocks[cls]++;
	}
	/* The indirect entries name blocks of this very record (wire.h). */
	for (uint32_t i = 0, n = scanned ? hl_wire_live_indirect_count(r) : 0; i < n; i++) {
		const struct hl_wire_live_block *b = &lb[ind[i].index];
		unsigned cls = b->leak_class <= HL_CLASS_SUPPRESSED ? b->leak_class : HL_CLASS_UNKNOWN;

		hl_grouping_get(&p->check_groups, stack_ref(p, b->stack_id), (uint8_t)cls)
			->indirect_bytes += ind[i].bytes;
	}
}

/* Which records a check keeps when it has more than HL_CHECK_RECORDS_MAX:
 * those that changed since the check before, then the largest. */
static int keep_order(const void *a, const void *b)
{
	const struct hl_check_record *x = a, *y = b;
	bool cx = x->new_bytes || x->new_indirect_bytes || x->new_blocks;
	bool cy = y->new_bytes || y->new_indirect_bytes || y->new_blocks;

	if (cx != cy)
		return cx ? -1 : 1;
	return x->rank > y->rank ? -1 : x->rank < y->rank;
}

static int rank_order(const void *a, const void *b)
{
	const struct hl_check_record *x = a, *y = b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The check's loss records in loss record order, each with what changed
 * since the previous check's record of the same stack and class; the
 * grouping becomes the one the next check compares with. */
static void check_records(struct hl_process *p, struct hl_check *c)
{
	size_t n;
	struct hl_leak_group *sorted = hl_grouping_sorted(&p->check_groups, &n);

	c->records = hl_xcalloc(n + 1, sizeof(*c->records));
	for (size_t i = 0; i < n; i++) {
		struct hl_check_record *rec = &c->records[i];
		const struct hl_leak_group *old =
			hl_grouping_find(&p->check_prev, sorted[i].stack, sorted[i].leak_class);

		rec->g = sorted[i];
		rec->rank = i + 1;
		rec->new_bytes = (int64_t)(rec->g.bytes - (old ? old->bytes : 0));
		rec->new_indirect_bytes =
			(int64_t)(rec->g.indirect_bytes - (old ? old->indirect_bytes : 0));
		rec->new_blocks = (int64_t)(rec->g.blocks - (old ? old->blocks : 0));
	}
	free(sorted);
	c->records_total = n;
	c->nrecords = n;
	if (n > HL_CHECK_RECORDS_MAX) {
		qsort(c->records, n, sizeof(*c->records), keep_order);
		c->nrecords = HL_CHECK_RECORDS_MAX;
		qsort(c->records, c->nrecords, sizeof(*c->records), rank_order);
	}
	hl_grouping_destroy(&p->check_prev);
	p->check_prev = p->check_groups;
	hl_grouping_init(&p->check_groups);
}

/* CHECK closes the set: it becomes the process's next checkpoint. */
static void on_check(struct hl_process *p, const struct hl_rec_check *r)
{
	struct hl_check *c;

	hl_grow((void **)&p->checks, &p->checks_cap, p->nchecks, sizeof(*p->checks));
	c = &p->checks[p->nchecks++];
	*c = p->check_open;
	c->seq = r->seq;
	c->flags = r->flags;
	c->ticks = r->ticks;
	if (r->flags & HL_CHECK_UNSTOPPED)
		c->nunstopped_tids = hl_wire_unstopped_tids(&r->h, sizeof(*r), c->unstopped_tids);
	check_records(p, c);
	memset(&p->check_open, 0, sizeof(p->check_open));
}

static void on_live(struct hl_process *p, const struct hl_rec_live *r)
{
	const struct hl_wire_live_block *lb = (const void *)(r + 1);

	bool scanned = (r->h.flags & HL_LIVE_SCANNED) != 0;

	if (r->h.flags & HL_LIVE_CHECK) {
		on_check_live(p, r, scanned); /* a snapshot, not the exit set */
		return;
	}
	p->live_seen = true;
	p->live_scanned |= scanned;
	p->live_unstopped |= (r->h.flags & HL_LIVE_UNSTOPPED) != 0;
	for (uint32_t i = 0; i < r->count; i++) {
		struct hl_block *b = hl_table_find(&p->live, lb[i].address);

		if (!b && p->tally_state == HL_TALLY_FINAL) {
			/* Counted by the hook: the LIVE set is the live set. */
			b = hl_table_insert(&p->live, lb[i].address);
			*b = (struct hl_block){ .address = lb[i].address, .size = lb[i].size,
						.stack_id = stack_ref(p, lb[i].stack_id),
						.kind = lb[i].kind };
			tally_block(p, b);
		} else if (!b || (b->flags & HL_BLOCK_FREED)) {
			/* The hook holds a block we never saw allocated (lost
			 * events, or a fork race): trust the hook. */
			if (!b)
				b = hl_table_insert(&p->live, lb[i].address);
			else
				p->tombstones--;
			b->size = lb[i].size;
			b->stack_id = stack_ref(p, lb[i].stack_id);
			b->kind = lb[i].kind;
			b->flags = HL_BLOCK_LIVE_ONLY;
			b->ticks = 0;
			live_add(p, b, stack_at(p, b->stack_id));
			p->live_only_blocks++;
			p->live_mismatch++;
		}
		/* A class means something only when a scan made it. */
		b->leak_class = scanned && lb[i].leak_class <= HL_CLASS_SUPPRESSED ?
					lb[i].leak_class : HL_CLASS_UNKNOWN;
		b->flags |= HL_BLOCK_LIVE_SEEN;
	}
	/* Few blocks lead a clique: kept aside, added to their groups at the end. */
	const struct hl_wire_live_indirect *ind = hl_wire_live_indirect_of(r);
	for (uint32_t i = 0, n = scanned ? hl_wire_live_indirect_count(r) : 0; i < n; i++) {
		hl_grow((void **)&p->live_indirect, &p->live_indirect_cap, p->nlive_indirect,
			sizeof(*p->live_indirect));
		p->live_indirect[p->nlive_indirect++] =
			(struct hl_live_indirect){ lb[ind[i].index].address, ind[i].bytes };
	}
}

static void on_error(struct hl_process *p, const struct hl_rec_error *r)
{
	struct hl_error_event *e;

	hl_grow((void **)&p->errors, &p->errors_cap, p->nerrors, sizeof(*p->errors));
	e = &p->errors[p->nerrors++];
	e->kind = r->kind;
	e->stack = stack_ref(p, r->stack_id);
	e->alloc_stack = stack_ref(p, r->alloc_stack_id);
	e->free_stack = stack_ref(p, r->free_stack_id);
	e->address = r->address;
	e->block_address = r->block_address;
	e->block_size = r->block_size;
	e->ticks = r->ticks;
	e->call = r->call;
	e->alloc_kind = r->alloc_kind;
	e->detail = r->detail;
}

static void on_fd_summary(struct hl_process *p, const struct hl_rec_fd_summary *r)
{
	p->fd_summary.seen = true;
	p->fd_summary.all = r->h.flags & HL_FD_SUMMARY_ALL;
	p->fd_summary.open = r->open;
	p->fd_summary.std = r->std;
	p->nfds = 0; /* one listing per image: the last one counts */
}

static void on_fd(struct hl_process *p, const struct hl_rec_fd *r)
{
	struct hl_fd_event *e;

	hl_grow((void **)&p->fds, &p->fds_cap, p->nfds, sizeof(*p->fds));
	e = &p->fds[p->nfds++];
	e->fd = r->fd;
	e->stack = stack_ref(p, r->stack_id);
	e->kind = r->kind;
	e->family = r->family;
	e->flags = r->h.flags;
	e->text = hl_bump_strdup(&p->arena, r->text_len ? (const char *)(r + 1) : "");
}

static void on_batch(struct hl_process *p, const struct hl_rec_batch *r)
{
	int slot = p->clock_synced ? 1 : 0;

	/* A second thread's batch: from now on events can arrive out of order,
	 * so freed addresses are remembered (see state.h). */
	if (!p->first_tid)
		p->first_tid = r->tid;
	else if (r->tid != p->first_tid)
		p->reordering = true;
	hl_tombwatch_batch(&p->tombwatch, r->tid);
	last_alloc_switch(p, r->tid);

	p->sync_ticks[slot] = r->ticks;
	p->sync_mono[slot] = r->monotonic_ns;
	p->sync_real[slot] = r->realtime_ns;
	if (!p->clock_synced) {
		p->sync_ticks[1] = r->ticks;
		p->sync_mono[1] = r->monotonic_ns;
		p->sync_real[1] = r->realtime_ns;
	}
	p->clock_synced = true;
}

static void on_fatal(struct hl_process *p, const struct hl_rec_fatal *r)
{
	p->fatal.signal = r->signal;
	p->fatal.code = r->code;
	p->fatal.address = r->address;
	p->fatal.stack = stack_ref(p, r->stack_id);
}

static void on_exit_rec(struct hl_process *p, const struct hl_rec_exit *r)
{
	p->has_exit = true;
	p->how = r->how;
	p->status = r->status;
	p->events_sent = r->events_sent;
	p->end_realtime_ns = hl_now_realtime_ns();
	p->nunstopped_tids = hl_wire_unstopped_tids(&r->h, sizeof(*r), p->unstopped_tids);
}

uint64_t hl_process_ticks_to_realtime(const struct hl_process *p, uint64_t ticks)
{
	double rate = 1.0; /* ticks per ns: exact when ticks are nanoseconds */
	double delta;

	if (!p->clock_synced)
		return p->start_realtime_ns;
	if (p->sync_ticks[1] > p->sync_ticks[0] && p->sync_mono[1] > p->sync_mono[0])
		rate = (double)(p->sync_ticks[1] - p->sync_ticks[0]) /
		       (double)(p->sync_mono[1] - p->sync_mono[0]);
	else /* one clock pair: exact, whatever the distance (an imported report's
	      * ticks are its times, 2^60 ns from the pair at 0) */
		return p->sync_real[0] + (ticks - p->sync_ticks[0]);
	delta = ((double)ticks - (double)p->sync_ticks[0]) / rate;
	return (uint64_t)((double)p->sync_real[0] + delta);
}

int hl_state_record(void *ctx, const struct hl_wire_header *rec)
{
	struct hl_conn_state *cs = ctx;
	struct hl_process *p = cs->proc;

	if (rec->type == HL_REC_HELLO) {
		cs->proc = hl_state_on_hello(cs->run, (const void *)rec);
		return 0;
	}
	p->seq++;
	/* A record after EXEC: the exec failed, the image carries on. */
	p->exec_pending = NULL;
	switch (rec->type) {
	case HL_REC_EXEC:
		p->exec_pending = hl_bump_strdup(&p->arena,
						  (const char *)((const struct hl_rec_exec *)rec + 1));
		p->exec_traced = (rec->flags & HL_EXEC_TRACED) != 0;
		break;
	case HL_REC_OPTIONS: {
		const struct hl_rec_options *o = (const void *)rec;

		p->options_given = o->given & HL_OPTIONS_KNOWN;
		p->max_leaks = o->max_leaks;
		break;
	}
	case HL_REC_BATCH:
		on_batch(p, (const void *)rec);
		forget_expired(cs, p);
		break;
	case HL_REC_MODULE_LOAD: on_module_load(p, (const void *)rec); break;
	case HL_REC_MODULE_UNLOAD: on_module_unload(p, (const void *)rec); break;
	case HL_REC_STACK: on_stack(p, (const void *)rec); break;
	case HL_REC_ALLOC: on_alloc(p, (const void *)rec); break;
	case HL_REC_FREE: {
		const struct hl_rec_free *f = (const void *)rec;

		event_free(p, f->address, f->ticks, f->h.flags);
		break;
	}
	case HL_REC_REALLOC: on_realloc(p, (const void *)rec); break;
	case HL_REC_THREAD_START:
		p->threads++;
		hl_tombwatch_thread_start(&p->tombwatch, ((const struct hl_rec_thread *)rec)->tid,
					  ((const struct hl_rec_thread *)rec)->ticks);
		break;
	case HL_REC_THREAD_END:
		hl_tombwatch_thread_end(&p->tombwatch, ((const struct hl_rec_thread *)rec)->tid);
		last_alloc_thread_end(p, ((const struct hl_rec_thread *)rec)->tid);
		break;
	case HL_REC_EXIT: on_exit_rec(p, (const void *)rec); break;
	case HL_REC_FATAL: on_fatal(p, (const void *)rec); break;
	case HL_REC_LIVE: on_live(p, (const void *)rec); break;
	case HL_REC_CHECK: on_check(p, (const void *)rec); break;
	case HL_REC_ERROR: on_error(p, (const void *)rec); break;
	case HL_REC_FD_SUMMARY: on_fd_summary(p, (const void *)rec); break;
	case HL_REC_FD: on_fd(p, (const void *)rec); break;
	case HL_REC_DROPPED:
		p->dropped_events += ((const struct hl_rec_dropped *)rec)->events;
		if (rec->length >= sizeof(struct hl_rec_dropped))
			p->dropped_stacks += ((const struct hl_rec_dropped *)rec)->stacks;
		break;
	case HL_REC_FORK:
		hl_run_note_fork(cs->run, p->pid, ((const struct hl_rec_fork *)rec)->child_pid,
				 p->exe, true);
		break;
	case HL_REC_SPAWN: hl_run_note_spawn(cs->run, p->pid, (const void *)rec); break;
	case HL_REC_TALLY: {
		uint32_t state = ((const struct hl_rec_tally *)rec)->state;

		if (state == HL_TALLY_HANDED || state == HL_TALLY_FINAL)
			tally_take(cs, p, state);
		break;
	}
	default: break; /* unknown types: nothing to keep */
	}
	return 0;
}

/* Below this many block table slots (1 MiB) the table stays in cache. */
#define HL_HINT_MIN_SLOTS (1u << 15)
/* Events ahead whose table slots hl_state_events prefetches. */
#define HL_EVENTS_AHEAD 8

static inline void event_prefetch(const struct hl_process *p, const struct hl_event *ev)
{
	hl_table_prefetch(&p->live, ev->address);
	if (ev->type == HL_REC_REALLOC)
		hl_table_prefetch(&p->live, ev->new_address);
}

int hl_state_events(void *ctx, const struct hl_event *ev, size_t n)
{
	struct hl_conn_state *cs = ctx;
	struct hl_process *p = cs->proc;

	/* What hl_state_record does per record; no event reads seq. */
	p->seq += n;
	p->exec_pending = NULL;
	/* The run's first events are prefetched up front, so every event is,
	 * HL_EVENTS_AHEAD before its turn (as the decoder's hints were). */
	for (size_t i = 0; i < n && i < HL_EVENTS_AHEAD && p->live.capacity >= HL_HINT_MIN_SLOTS; i++)
		event_prefetch(p, &ev[i]);
	for (size_t i = 0; i < n; i++) {
		const struct hl_event *e = &ev[i];

		if (i + HL_EVENTS_AHEAD < n && p->live.capacity >= HL_HINT_MIN_SLOTS)
			event_prefetch(p, &ev[i + HL_EVENTS_AHEAD]);
		if (e->type == HL_REC_FREE) {
			event_free(p, e->address, e->ticks, e->kind);
			continue;
		}
		/* the block is made only here: a free needs none */
		struct hl_block nb = {
			.address = e->address, .size = e->size, .ticks = e->ticks,
			.stack_id = stack_ref(p, e->stack_id), .kind = e->kind,
		};
		if (e->type == HL_REC_ALLOC) {
			event_alloc(p, &nb);
		} else {
			nb.address = e->new_address;
			nb.flags = HL_BLOCK_REALLOC;
			event_realloc(p, e->address, &nb);
		}
	}
	return 0;
}

void hl_state_decoder_init(struct hl_decoder *d, struct hl_conn_state *cs)
{
	hl_decode_init(d, hl_state_record, cs);
	d->events = hl_state_events;
	d->hint = hl_state_hint;
}

bool hl_state_hint(void *ctx, const struct hl_wire_header *rec)
{
	const struct hl_conn_state *cs = ctx;
	const struct hl_process *p = cs->proc;

	if (!p)
		return true;
	if (p->live.capacity < HL_HINT_MIN_SLOTS)
		return false;
	switch (rec->type) {
	case HL_REC_ALLOC:
		hl_table_prefetch(&p->live, ((const struct hl_rec_alloc *)rec)->address);
		break;
	case HL_REC_FREE:
		hl_table_prefetch(&p->live, ((const struct hl_rec_free *)rec)->address);
		break;
	case HL_REC_REALLOC:
		hl_table_prefetch(&p->live, ((const struct hl_rec_realloc *)rec)->old_address);
		hl_table_prefetch(&p->live, ((const struct hl_rec_realloc *)rec)->new_address);
		break;
	default:
		break;
	}
	return true;
}
