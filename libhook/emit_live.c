/*
 * libhook/emit_live.c: block sets sent outside the event buffers.
 *
 * A fork child's heap (or the blocks from before the connection) as ALLOC
 * records in a batch of its own, and at exit or at an on-demand check the
 * live set as LIVE records (wire.h), with the leak scan's classes when the
 * scan runs (leakcheck.c), then EXIT or CHECK. Every buffered event and
 * definition goes first, so the set is the live state right after them.
 * All of it under write_lock, through the scratch buffer (emit_conn.c).
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>

#include "dtv.h"
#include "emit_int.h"
#include "fdtrack.h"
#include "leakcheck.h"
#include "lock.h"
#include "scan.h"
#include "tally_hook.h"
#include "track.h"

/* ---- blocks from before the connection ------------------------------------ */

struct early_sink {
	uint64_t ticks;
	uint16_t flags; /* HL_ALLOC_INHERITED for a fork child's snapshot */
	bool started;   /* the BATCH record is out */
	bool (*known)(uint64_t address); /* blocks already sent, or NULL */
	const struct hl_snapshot_fix *fix; /* a deferred fork snapshot's, or NULL */
};

/* One ALLOC record per block, in a batch of the calling thread. */
static void early_block(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	struct early_sink *sink = arg;
	if (sink->known != NULL && sink->known((uintptr_t)address))
		return;
	if (sink->fix != NULL &&
	    ((uintptr_t)address == sink->fix->skip || (uintptr_t)address == sink->fix->address))
		return;
	if (sink->flags & HL_ALLOC_TALLIED)
		size = hl_dtv_block_reported(stack_id, size); /* as counted, and as LIVE says (live_append) */
	if (!sink->started) {
		struct hl_rec_batch *batch = hl_emit_scratch_reserve_locked(sizeof(*batch));
		if (batch == NULL)
			return;
		*batch = (struct hl_rec_batch){
			.h = hl_wire_hdr(HL_REC_BATCH, 0, sizeof(*batch)), .tid = current_tid(),
			.ticks = sink->ticks, .monotonic_ns = clock_ns(CLOCK_MONOTONIC),
			.realtime_ns = clock_ns(CLOCK_REALTIME), .sequence = hl_emit_batch_sequence++ };
		hl_emit_records_total++;
		sink->started = true;
	}
	struct hl_rec_alloc *rec = hl_emit_scratch_reserve_locked(sizeof(*rec));
	if (rec == NULL)
		return;
	*rec = (struct hl_rec_alloc){ .h = hl_wire_hdr(HL_REC_ALLOC, kind | sink->flags,
						       sizeof(*rec)),
				      .address = (uintptr_t)address, .size = size,
				      .ticks = sink->ticks,
				      .stack_id = stack_id < hl_emit_stacks_sent ? stack_id : 0 };
	hl_emit_records_total++;
}

/* Every block of the heap but the known ones as an ALLOC record with `flags`. */
void hl_emit_send_heap_blocks(uint16_t flags, bool (*known)(uint64_t address))
{
	if (!hl_emit_is_live())
		return;
	if (flags == 0 && hl_tally_counts()) {
		hl_tally_heap_blocks(known); /* counted, not sent */
		return;
	}
	hl_lock(&hl_emit_write_lock);
	struct early_sink sink = { .ticks = hl_ticks(), .flags = flags, .known = known };
	if (hl_emit_send_definitions_locked()) {
		hl_heap_walk(early_block, &sink);
		hl_emit_scratch_flush_locked();
	}
	hl_unlock(&hl_emit_write_lock);
}

/* The deferred fork snapshot (emit_conn.c hl_emit_fork_resolve). */
void hl_emit_send_snapshot_locked(const struct hl_snapshot_fix *fix)
{
	hl_assert_held(&hl_emit_write_lock);
	struct early_sink sink = { .ticks = hl_ticks(), .flags = HL_ALLOC_INHERITED, .fix = fix };
	hl_heap_walk(early_block, &sink);
	/* A realloc's old block as the walk would have found it before. */
	if (fix != NULL && fix->address != 0) {
		sink.fix = NULL;
		early_block((void *)(uintptr_t)fix->address, fix->size, fix->stack_id,
			    HL_KIND_MALLOC, &sink);
	}
	hl_emit_scratch_flush_locked();
}

/* ---- the tally's end ("Counting in the hook", wire.h) ---------------------- */

void hl_emit_tally_handed(void)
{
	hl_lock(&hl_emit_write_lock);
	hl_emit_flush_all_locked(); /* TALLY first */
	if (hl_emit_send_definitions_locked()) {
		/* The live set, for the events that follow to free. */
		struct early_sink sink = { .ticks = hl_ticks(), .flags = HL_ALLOC_TALLIED };
		hl_heap_walk(early_block, &sink);
		hl_emit_scratch_flush_locked();
	}
	hl_unlock(&hl_emit_write_lock);
}

void hl_emit_send_early_blocks(void)
{
	hl_emit_send_heap_blocks(0, NULL);
}

void hl_emit_send_heap_blocks_except(bool (*known)(uint64_t address))
{
	hl_emit_send_heap_blocks(0, known);
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
		memcpy(hl_emit_scratch + hl_emit_scratch_used, sink->indirect, bytes);
		hl_emit_scratch_used += bytes;
		sink->rec->h.length += (uint32_t)bytes;
	}
	sink->nindirect = 0;
	sink->rec = NULL;
}

static void live_append(struct live_sink *sink, void *address, size_t size, uint32_t stack_id,
			unsigned kind, unsigned leak_class, uint64_t indirect)
{
	if (hl_unlikely(stack_id >= hl_emit_stacks_sent)) {
		/* Interned by another thread after the walk began: define it
		 * first, outside any LIVE record. */
		live_close(sink);
		hl_emit_scratch_flush_locked();
		hl_emit_send_stacks_locked();
	}
	/* Room for this block and every indirect entry the record may end with. */
	size_t tail = (sink->nindirect + (indirect != 0)) * sizeof(struct hl_wire_live_indirect);
	if (sink->rec == NULL || sink->rec->count == HL_WIRE_MAX_LIVE_PER_RECORD ||
	    (indirect != 0 && sink->nindirect == LIVE_INDIRECT_MAX) ||
	    hl_emit_scratch_used + sizeof(struct hl_wire_live_block) + tail > sizeof(hl_emit_scratch)) {
		live_close(sink);
		if (hl_emit_scratch_used + sizeof(struct hl_rec_live) + sizeof(struct hl_wire_live_block) +
			    sizeof(struct hl_wire_live_indirect) >
		    sizeof(hl_emit_scratch))
			hl_emit_scratch_flush_locked();
		sink->rec = hl_emit_scratch_reserve_locked(sizeof(struct hl_rec_live));
		if (sink->rec == NULL)
			return;
		*sink->rec = (struct hl_rec_live){ .h = hl_wire_hdr(HL_REC_LIVE, sink->flags,
								   sizeof(struct hl_rec_live)) };
		hl_emit_records_total++;
	}
	struct hl_wire_live_block *blk = (void *)(hl_emit_scratch + hl_emit_scratch_used);
	hl_emit_scratch_used += sizeof(*blk);
	/* A DTV at the size its ALLOC and the tally said (dtv.c): after TALLY
	 * FINAL the LIVE set is all the reporter knows of a block. */
	size = hl_dtv_block_reported(stack_id, size);
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
	/* Inside the stop: what other threads committed up to it goes before
	 * the set (a thread allocating at the exit kept events in its buffer
	 * that the set already showed: 129 blocks it disagreed on, 4 threads). */
	hl_emit_flush_all_locked();
	sink->flags |= HL_LIVE_SCANNED | (s->unstopped ? HL_LIVE_UNSTOPPED : 0);
	sink->unstopped.count = s->unstopped;
	memcpy(sink->unstopped.tids, s->unstopped_tids, sizeof(sink->unstopped.tids));
	for (size_t i = 0; i < s->nblocks; i++) {
		struct hl_range *r = s->blocks[i];
		live_append(sink, hl_range_data(r), hl_block_requested(r), hl_range_stack_id(r),
			    hl_range_kind(r), hl_scan_class(s, i), hl_scan_indirect_bytes(s, i));
	}
	live_close(sink);
	hl_emit_scratch_flush_locked();
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
	hl_assert_held(&hl_emit_write_lock);
	uint32_t len = (uint32_t)sizeof(struct hl_rec_exit) + unstopped_tail(unstopped);
	struct hl_rec_exit *rec = hl_emit_scratch_reserve_locked(len);
	if (rec == NULL)
		return;
	hl_emit_records_total++;
	*rec = (struct hl_rec_exit){ .h = hl_wire_hdr(HL_REC_EXIT, 0, len),
				     .how = how, .status = status, .ticks = hl_ticks(),
				     .events_sent = hl_emit_records_total };
	unstopped_write(rec + 1, unstopped);
	hl_emit_scratch_flush_locked();
}

bool hl_emit_finish(unsigned how, int status)
{
	if (!hl_emit_is_live())
		return false;
	hl_tally_finish(); /* the counts first: the LIVE set is then the live set whole */
	hl_lock(&hl_emit_write_lock);
	hl_emit_flush_all_locked();
	/* Stacks interned during the walk are sent before the records naming
	 * them: definitions first, then LIVE blocks whose ids are all older. */
	hl_emit_send_definitions_locked();
	hl_fds_send_locked(); /* track_fds: their stacks were defined just now */
	struct live_sink sink = { .flags = 0 };
	struct hl_unstopped unstopped = { 0 };
	if (!hl_leakcheck_scans_at(how) || !hl_leakcheck_run(NULL, live_scanned, &sink, &unstopped)) {
		sink = (struct live_sink){ .flags = 0 };
		hl_heap_walk(live_block, &sink);
		live_close(&sink);
	}
	send_exit_locked(how, status, &sink.unstopped);
	bool ok = hl_emit_is_live();
	hl_fd_release(&hl_emit_sock);
	hl_emit_state_swap_locked(ok ? EMIT_DONE : EMIT_LOST);
	hl_unlock(&hl_emit_write_lock);
	return ok;
}

/* An on-demand leak check: every buffered event and definition first, so the
 * set is the live state right after them; then the set, then CHECK. The
 * caller holds hl_leakcheck_lock. */
bool hl_emit_check(const struct hl_scan_origin *origin, uint32_t seq, uint32_t flags)
{
	if (!hl_emit_is_live())
		return false;
	hl_lock(&hl_emit_write_lock);
	hl_emit_flush_all_locked();
	hl_emit_send_definitions_locked();
	struct live_sink sink = { .flags = HL_LIVE_CHECK };
	uint64_t ticks = hl_ticks();
	struct hl_unstopped unstopped = { 0 };
	bool ok = hl_leakcheck_run(origin, live_scanned, &sink, &unstopped);
	if (ok) {
		uint32_t len = (uint32_t)sizeof(struct hl_rec_check) + unstopped_tail(&unstopped);
		struct hl_rec_check *rec = hl_emit_scratch_reserve_locked(len);
		if (rec) {
			hl_emit_records_total++;
			*rec = (struct hl_rec_check){
				.h = hl_wire_hdr(HL_REC_CHECK, 0, len), .seq = seq,
				.flags = flags | (unstopped.count ? HL_CHECK_UNSTOPPED : 0),
				.ticks = ticks };
			unstopped_write(rec + 1, &unstopped);
		}
		hl_emit_scratch_flush_locked();
	}
	ok = ok && hl_emit_is_live();
	hl_unlock(&hl_emit_write_lock);
	return ok;
}

