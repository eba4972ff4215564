/*
 * tests/reporter/test_state.c: live state and the reconciler: totals and
 * peak, out-of-order frees and re-allocations ordered by ticks, fork
 * inheritance, exec, LIVE classes, leak grouping, endings without EXIT;
 * packed events through the events sink as through the record sink.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "decode.h"
#include "encode.h"
#include "recover.h"
#include "state.h"

struct feed {
	struct hl_run run;
	struct hl_conn_state cs;
	struct hl_decoder d;
	struct hl_enc e;
};

static void feed_begin(struct feed *f, uint32_t pid, uint32_t ppid, uint32_t origin)
{
	const char *argv[] = { "prog" };
	uint64_t frames[2] = { 0x401000, 0x401100 };

	f->cs.run = &f->run;
	f->cs.proc = NULL;
	hl_decode_init(&f->d, hl_state_record, &f->cs);
	hl_enc_init(&f->e);
	hl_enc_hello(&f->e, pid, ppid, origin, "/bin/prog", 1, argv);
	hl_enc_batch(&f->e, pid, 1, 0);
	hl_enc_stack(&f->e, 1, frames, 2, 0);
	frames[0] = 0x402000;
	hl_enc_stack(&f->e, 2, frames, 2, 0);
}

/* Decodes what was encoded since the last flush. */
static struct hl_process *feed_flush(struct feed *f)
{
	assert_int_equal(hl_decode_feed(&f->d, f->e.buf, f->e.len), (long)f->e.len);
	f->e.len = 0;
	return f->cs.proc;
}

static void feed_end(struct feed *f)
{
	hl_decode_destroy(&f->d);
	hl_enc_destroy(&f->e);
}

static void test_totals_and_leaks(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 10, 1, HL_ORIGIN_START);
	hl_enc_alloc(&f.e, 0x1000, 100, 2, 1, 0);
	hl_enc_alloc(&f.e, 0x2000, 50, 3, 2, 0);
	hl_enc_alloc(&f.e, 0x3000, 30, 4, 1, 0);
	hl_enc_free(&f.e, 0x2000, 5, 0);
	hl_enc_realloc(&f.e, 0x3000, 0x4000, 300, 6, 2);
	hl_enc_exit(&f.e, HL_EXIT_NORMAL, 3, 7);
	p = feed_flush(&f);
	hl_process_closed(p);
	hl_process_finish(p);
	assert_int_equal(p->allocs, 4);
	assert_int_equal(p->frees, 2);
	assert_int_equal(p->bytes_allocated, 480);
	assert_int_equal(p->in_use_bytes, 400);
	assert_int_equal(p->in_use_blocks, 2);
	assert_int_equal(p->peak_bytes, 400);
	assert_int_equal(p->how, HL_EXIT_NORMAL);
	assert_int_equal(p->status, 3);
	/* Two leak groups in valgrind's order, largest last: stack 1 (100),
	 * then the realloc's stack 2 (300). */
	assert_int_equal(p->nleaks, 2);
	assert_int_equal(p->leaks[1].bytes, 300);
	assert_int_equal(hl_process_stack(p, p->leaks[1].stack)->wire_id, 2);
	assert_int_equal(p->leaks[0].bytes, 100);
	assert_int_equal(p->leaks[0].blocks, 1);
	assert_int_equal(p->unmatched_frees + p->unfreed_superseded, 0);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* Temporary allocations (heaptrack's): a free right after its block's
 * allocation, counted per thread, per stack. */
static void test_temporaries(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 12, 1, HL_ORIGIN_START);
	hl_enc_batch(&f.e, 1, 1, 1);
	hl_enc_alloc(&f.e, 0xa000, 8, 2, 1, 0);  /* A: temporary */
	hl_enc_free(&f.e, 0xa000, 3, 0);
	hl_enc_alloc(&f.e, 0xb000, 8, 4, 2, 0);  /* B: C allocated in between */
	hl_enc_alloc(&f.e, 0xc000, 8, 5, 1, 0);  /* C: B freed in between */
	hl_enc_free(&f.e, 0xb000, 6, 0);
	hl_enc_free(&f.e, 0xc000, 7, 0);
	hl_enc_alloc(&f.e, 0xd000, 8, 8, 2, 0);  /* D: temporary, thread 2's E aside */
	hl_enc_batch(&f.e, 2, 9, 2);
	hl_enc_alloc(&f.e, 0xe000, 8, 9, 1, 0);  /* E: temporary */
	hl_enc_batch(&f.e, 1, 10, 3);
	hl_enc_free(&f.e, 0xd000, 10, 0);
	hl_enc_alloc(&f.e, 0xf000, 8, 11, 1, 0); /* F: realloc frees it first: temporary */
	hl_enc_realloc(&f.e, 0xf000, 0xf100, 16, 12, 2); /* G: temporary */
	hl_enc_free(&f.e, 0xf100, 13, 0);
	hl_enc_batch(&f.e, 2, 14, 4);
	hl_enc_free(&f.e, 0xe000, 14, 0);
	hl_enc_alloc(&f.e, 0x9000, 8, 15, 1, 0); /* H: its thread ended; the tid's next */
	hl_enc_thread(&f.e, HL_REC_THREAD_END, 2, 16); /* thread frees it */
	hl_enc_batch(&f.e, 2, 17, 5);
	hl_enc_free(&f.e, 0x9000, 17, 0);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->allocs, 8);
	assert_int_equal(p->frees, 8);
	assert_int_equal(p->temporaries, 5);
	assert_int_equal(hl_process_stack(p, 1)->wire_id, 1);
	assert_int_equal(hl_process_stack(p, 1)->temporaries, 3); /* A, E, F */
	assert_int_equal(hl_process_stack(p, 2)->temporaries, 2); /* D, G */
	assert_int_equal(p->nlast_allocs, 0);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* Thread A: alloc p@1, free p@3. Thread B: alloc p@5 (reuse). B's batch
 * arrives between A's alloc and A's free. */
static void test_free_after_reuse(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 11, 1, HL_ORIGIN_START);
	hl_enc_batch(&f.e, 1, 1, 1);
	hl_enc_alloc(&f.e, 0x5000, 10, 1, 1, 0);
	hl_enc_batch(&f.e, 2, 5, 2);
	hl_enc_alloc(&f.e, 0x5000, 20, 5, 2, 0);
	hl_enc_batch(&f.e, 1, 3, 3);
	hl_enc_free(&f.e, 0x5000, 3, 0);
	p = feed_flush(&f);
	hl_process_finish(p);
	/* The free at 3 matched the alloc at 1; the block of 20 is live. */
	assert_int_equal(p->in_use_blocks, 1);
	assert_int_equal(p->in_use_bytes, 20);
	assert_int_equal(p->nleaks, 1);
	assert_int_equal(p->leaks[0].bytes, 20);
	assert_int_equal(p->unmatched_frees, 0);
	assert_int_equal(p->unfreed_superseded, 0);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* The stack p's connection calls wire_id. */
static const struct hl_process_stack *stack_of(const struct hl_process *p, uint32_t wire_id)
{
	for (uint32_t ref = 1; ref <= p->nstacks; ref++)
		if (hl_process_stack(p, ref)->wire_id == wire_id)
			return hl_process_stack(p, ref);
	fail_msg("no stack %u", wire_id);
	return NULL;
}

/* The free arrives before its alloc (thread B freed a block thread A
 * allocated, and B's batch was sent first). */
static void test_free_before_alloc(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 12, 1, HL_ORIGIN_START);
	hl_enc_batch(&f.e, 2, 9, 1); /* a second thread: reordering possible */
	hl_enc_free(&f.e, 0x6000, 9, 0);
	hl_enc_alloc(&f.e, 0x6000, 64, 4, 1, 0);
	/* and an alloc newer than a pending free does not consume it */
	hl_enc_free(&f.e, 0x7000, 9, 0);
	hl_enc_alloc(&f.e, 0x7000, 8, 12, 1, 0);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->allocs, 2);
	assert_int_equal(p->frees, 2); /* free events, matched or not */
	assert_int_equal(p->in_use_bytes, 8);
	assert_int_equal(p->unmatched_frees, 1); /* the free of 0x7000 at 9 */
	/* The free of 0x6000 at 9 is its allocation's, on stack 1's account. */
	assert_int_equal(stack_of(p, 1)->allocs, 2);
	assert_int_equal(stack_of(p, 1)->frees, 1);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* The older alloc arrives after the newer one: alloc p@5 (B), then alloc
 * p@1 (A), then free p@3 (A). */
static void test_older_alloc_late(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 13, 1, HL_ORIGIN_START);
	hl_enc_alloc(&f.e, 0x8000, 20, 5, 2, 0);
	hl_enc_alloc(&f.e, 0x8000, 10, 1, 1, 0);
	hl_enc_free(&f.e, 0x8000, 3, 0);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->in_use_bytes, 20);
	assert_int_equal(p->nleaks, 1);
	assert_int_equal(hl_process_stack(p, p->leaks[0].stack)->wire_id, 2);
	assert_int_equal(p->unfreed_superseded, 0);
	/* The free at 3 is the older allocation's: stack 1 freed what it made. */
	assert_int_equal(stack_of(p, 1)->allocs, 1);
	assert_int_equal(stack_of(p, 1)->frees, 1);
	assert_int_equal(stack_of(p, 2)->frees, 0);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* Every remembered free queued for forgetting, however few (a process
 * queues them from HL_TOMBWATCH_FROM on): the HELLO is decoded first. */
static struct hl_process *queue_every_tombstone(struct feed *f)
{
	struct hl_process *p = feed_flush(f);

	p->tombwatch.queue_from = 0;
	return p;
}

/* A thread's batch, announcing the thread first when `start`. */
static void thread_batch(struct feed *f, uint32_t tid, uint64_t ticks, uint64_t seq, bool start)
{
	hl_enc_batch(&f->e, tid, ticks, seq);
	if (start)
		hl_enc_thread(&f->e, HL_REC_THREAD_START, tid, ticks);
}

/* Remembered frees go once every known thread has sent something newer:
 * thread 2's free of 0x1000 at 13 stays while thread 1 is at 11, and goes
 * when both are past it. */
static void test_tombstones_forgotten(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 20, 1, HL_ORIGIN_START);
	queue_every_tombstone(&f);
	thread_batch(&f, 1, 10, 1, true);
	hl_enc_alloc(&f.e, 0x1000, 8, 11, 1, 0);
	thread_batch(&f, 2, 12, 2, true);
	hl_enc_free(&f.e, 0x1000, 13, 0);
	thread_batch(&f, 1, 20, 3, false);
	hl_enc_alloc(&f.e, 0x2000, 8, 20, 1, 0);
	thread_batch(&f, 2, 21, 4, false);
	hl_enc_free(&f.e, 0x2000, 21, 0);
	p = feed_flush(&f);
	assert_int_equal(p->tombstones, 2); /* thread 2 was at 13, then thread 1 at 20 */
	thread_batch(&f, 1, 30, 5, false);
	hl_enc_alloc(&f.e, 0x3000, 8, 30, 1, 0);
	p = feed_flush(&f);
	assert_int_equal(p->tombstones, 1); /* both past 13: 0x1000 forgotten */
	assert_int_equal(p->tombstones_forgotten, 1);
	assert_non_null(hl_table_find(&p->live, 0x2000)); /* 21: thread 1 only at 20 */
	hl_process_finish(p);
	assert_int_equal(p->in_use_blocks, 1);
	assert_int_equal(p->unmatched_frees + p->unfreed_superseded, 0);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* A thread that lags keeps what its late events need: thread 1 allocates
 * 0x5000 at 5 and sends it last; thread 2 meanwhile frees it (6), gets the
 * address again (7) and frees it (8), and runs on. The allocation at 5 must
 * still be seen as freed, not as a leak. */
static void feed_lagging(struct feed *f)
{
	thread_batch(f, 1, 1, 1, true);
	hl_enc_alloc(&f->e, 0x9100, 8, 2, 1, 0);
	thread_batch(f, 2, 3, 2, true);
	hl_enc_alloc(&f->e, 0x9200, 8, 4, 1, 0);
	hl_enc_free(&f->e, 0x5000, 6, 0);
	hl_enc_alloc(&f->e, 0x5000, 16, 7, 2, 0);
	hl_enc_free(&f->e, 0x5000, 8, 0);
	for (uint64_t i = 0; i < 64; i++) {
		thread_batch(f, 2, 100 + 10 * i, 3 + i, false);
		hl_enc_alloc(&f->e, 0x20000 + 16 * i, 8, 100 + 10 * i, 1, 0);
		hl_enc_free(&f->e, 0x20000 + 16 * i, 101 + 10 * i, 0);
	}
}

static void test_tombstone_kept_for_lagging_thread(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 21, 1, HL_ORIGIN_START);
	queue_every_tombstone(&f);
	feed_lagging(&f);
	p = feed_flush(&f);
	assert_int_equal(p->tombstones_forgotten, 0); /* thread 1 is still at 2 */
	thread_batch(&f, 1, 2000, 100, false);
	hl_enc_alloc(&f.e, 0x5000, 32, 5, 1, 0);
	hl_enc_free(&f.e, 0x9100, 2000, 0);
	thread_batch(&f, 2, 2001, 101, false);
	hl_enc_free(&f.e, 0x9200, 2001, 0);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->stale_allocs, 1);
	assert_int_equal(p->in_use_blocks, 0);
	assert_int_equal(p->nleaks, 0);
	assert_true(p->tombstones_forgotten > 0); /* once thread 1 caught up */
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* The hook's shared event buffers, as wire.h lays them out: slot 0 holds
 * thread 1's unsent events. */
struct fake_area {
	struct hl_shared_area a;
	struct hl_shared_slot slot;
	uint8_t data[256];
} __attribute__((aligned(8)));

/* The same history, but thread 1 idles with its allocation of 0x5000 at 5
 * committed and unsent, where the reporter reads it (idle in pthread_join
 * with a few events buffered): the other remembered frees go, the one that
 * allocation needs stays. */
static void test_idle_thread_pins_its_unsent(void **state)
{
	struct feed f = { 0 };
	struct fake_area area = {
		.a = { .magic = HL_SHARED_MAGIC, .version = HL_SHARED_VERSION, .slots = 1,
		       .first_slot = offsetof(struct fake_area, slot),
		       .slot_bytes = sizeof(struct fake_area) - offsetof(struct fake_area, slot),
		       .data_offset = offsetof(struct fake_area, data) -
				      offsetof(struct fake_area, slot),
		       .data_bytes = sizeof(area.data) },
		.slot = { .tid = 1, .base_ticks = 3, .base_address = 0x5000 },
	};
	struct hl_shared_view view = { (const uint8_t *)&area, sizeof(area) };
	uint64_t fields[4] = { 5 - 3, hl_zigzag(0), 32, 1 };
	struct hl_process *p;

	area.slot.used = hl_pack_write(area.data, HL_PACK_ALLOC, HL_KIND_MALLOC, fields, 4);
	hl_run_init(&f.run);
	feed_begin(&f, 22, 1, HL_ORIGIN_START);
	queue_every_tombstone(&f);
	f.cs.shared = &view;
	f.cs.decoder = &f.d;
	feed_lagging(&f);
	p = feed_flush(&f);
	assert_true(p->tombstones_forgotten > 32);
	assert_non_null(hl_table_find(&p->live, 0x5000)); /* pinned */
	/* Now it arrives, as the hook sends it at exit. */
	thread_batch(&f, 1, 2000, 100, false);
	hl_enc_alloc(&f.e, 0x5000, 32, 5, 1, 0);
	hl_enc_free(&f.e, 0x9100, 2000, 0);
	p = feed_flush(&f);
	f.cs.shared = NULL;
	hl_process_finish(p);
	assert_int_equal(p->stale_allocs, 1);
	assert_int_equal(p->in_use_blocks, 1); /* 0x9200 */
	assert_int_equal(p->nleaks, 1);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* What the hook's slot says decides: events not yet received (a batch from
 * it still on its way, more unsent than asked for) make it unknown. */
static void count_pin(void *ctx, uint64_t address)
{
	(void)address;
	++*(int *)ctx;
}

static void test_pending_read(void **state)
{
	struct fake_area area = {
		.a = { .magic = HL_SHARED_MAGIC, .version = HL_SHARED_VERSION, .slots = 1,
		       .first_slot = offsetof(struct fake_area, slot),
		       .slot_bytes = sizeof(struct fake_area) - offsetof(struct fake_area, slot),
		       .data_offset = offsetof(struct fake_area, data) -
				      offsetof(struct fake_area, slot),
		       .data_bytes = sizeof(area.data) },
		.slot = { .tid = 7, .base_address = 0x1000, .sending_sequence = 4 },
	};
	struct hl_shared_view view = { (const uint8_t *)&area, sizeof(area) };
	uint64_t alloc[4] = { 1, hl_zigzag(0x40), 8, 0 }, freed[2] = { 2, hl_zigzag(0) };
	int pins = 0;

	area.slot.used = hl_pack_write(area.data, HL_PACK_ALLOC, 0, alloc, 4);
	area.slot.used += hl_pack_write(area.data + area.slot.used, HL_PACK_FREE, 0, freed, 2);
	assert_true(hl_recover_thread_pending(&view, 7, 5, 64, count_pin, &pins));
	assert_int_equal(pins, 1); /* the allocation; a free needs nothing kept */
	assert_false(hl_recover_thread_pending(&view, 7, 4, 64, count_pin, &pins)); /* batch 4 not here */
	assert_false(hl_recover_thread_pending(&view, 7, 5, 4, count_pin, &pins));  /* too many */
	assert_false(hl_recover_thread_pending(&view, 8, 5, 64, count_pin, &pins)); /* no slot */
	area.slot.sent = area.slot.used;
	pins = 0;
	assert_true(hl_recover_thread_pending(&view, 7, 5, 64, count_pin, &pins));
	assert_int_equal(pins, 0); /* all sent */
	area.a.magic = 0;
	assert_false(hl_recover_thread_pending(&view, 7, 5, 64, count_pin, &pins));
}

/* A process killed while its threads counted in the hook ("threads",
 * heapledger/tally.h), one of them inside a merge: the tally as the journal
 * had it before that merge, plus every delta not merged, the one being
 * merged included; a delta marked merged is in the tally already. */
struct killed_area {
	struct hl_shared_area a;
	struct hl_shared_slot slot;
	uint8_t data[256];
	struct hl_tally_delta delta __attribute__((aligned(16)));
	struct hl_tally tally __attribute__((aligned(16)));
	struct hl_tally_stack stacks[4];
	struct hl_tally_journal_entry journal[2];
};

static struct hl_process *killed_read(struct feed *f, struct killed_area *k)
{
	struct hl_shared_view view = { (const uint8_t *)k, sizeof(*k) };
	struct hl_process *p;

	hl_run_init(&f->run);
	feed_begin(f, 30, 1, HL_ORIGIN_START);
	((struct hl_rec_hello *)f->e.buf)->hook_flags |= HL_HOOK_TALLY;
	f->cs.shared = &view;
	p = feed_flush(f);
	hl_state_tally_end(&f->cs, &f->d);
	f->cs.shared = NULL;
	return p;
}

static void killed_done(struct feed *f)
{
	feed_end(f);
	hl_run_destroy(&f->run);
}

static void test_killed_threads_tally(void **state)
{
	static struct killed_area k;
	struct hl_tally *t = &k.tally;
	size_t slot_at = offsetof(struct killed_area, slot);
	struct feed f = { 0 }, g = { 0 };
	struct hl_process *p;
	const struct hl_process_stack *s1;

	k.a = (struct hl_shared_area){
		.magic = HL_SHARED_MAGIC, .version = HL_SHARED_VERSION, .slots = 1,
		.first_slot = slot_at, .slot_bytes = offsetof(struct killed_area, tally) - slot_at,
		.data_offset = offsetof(struct killed_area, data) - slot_at,
		.data_bytes = sizeof(k.data),
		.tally_offset = offsetof(struct killed_area, tally),
		.tally_bytes = sizeof(k) - offsetof(struct killed_area, tally),
		.delta_offset = offsetof(struct killed_area, delta) - slot_at,
		.delta_bytes = sizeof(struct hl_tally_delta) };
	*t = (struct hl_tally){ .magic = HL_TALLY_MAGIC, .state = HL_TALLY_COUNTING,
				.stacks_used = 3, .allocs = 9, .frees = 4, .in_use_bytes = 500,
				.in_use_blocks = 5, .peak_bytes = 500, .events = 13,
				.sample_every = 256, .sample_countdown = 243 };
	t->stacks_offset = offsetof(struct killed_area, stacks) - offsetof(struct killed_area, tally);
	t->stacks_cap = 4;
	t->journal_offset =
		offsetof(struct killed_area, journal) - offsetof(struct killed_area, tally);
	t->journal_cap = 2;
	t->samples_offset = t->points_offset = t->log_offset = t->stacks_offset;
	/* Stack 1 half merged: 6 allocations where the journal had 3. */
	k.stacks[1] = (struct hl_tally_stack){ .allocs = 6, .bytes = 600, .frees = 1,
					       .live_bytes = 500, .live_blocks = 5 };
	t->merging = 1;
	t->journal_n = 1;
	t->journal_totals = (struct hl_tally_totals){ .allocs = 3, .frees = 1,
						      .bytes_allocated = 300, .in_use_bytes = 200,
						      .in_use_blocks = 2, .peak_bytes = 300, .events = 4 };
	k.journal[0] = (struct hl_tally_journal_entry){
		.stack_id = 1, .before = { .allocs = 3, .bytes = 300, .frees = 1,
					   .live_bytes = 200, .live_blocks = 2,
					   .peak_live_bytes = 300 } };
	/* The delta being merged: 3 allocations of 100 from stack 1, then one
	 * of 8 from stack 2 and a free of 100 from stack 1. */
	k.delta.events = 5;
	k.delta.nused = 2;
	k.delta.used[0] = 4;
	k.delta.used[1] = 4; /* named twice (a torn list): counted once */
	k.delta.slots[4] = (struct hl_tally_delta_stack){ .id = 2, .made = { 3, 300 },
							   .freed = { 1, 100 }, .max_live = 300 };
	p = killed_read(&f, &k);
	assert_non_null(p);
	s1 = stack_of(p, 1);
	assert_int_equal(p->allocs, 3 + 3);
	assert_int_equal(p->frees, 1 + 1);
	assert_int_equal(p->in_use_blocks, 2 + 2);
	assert_int_equal(p->in_use_bytes, 200 + 200);
	assert_int_equal(s1->allocs, 3 + 3);
	assert_int_equal(s1->live_blocks, 2 + 2);
	assert_int_equal(s1->live_bytes, 400);
	killed_done(&f);

	/* Killed after the merge was done, as it cleared the delta: the tally
	 * is whole, the delta not added again. */
	k.delta.merged = 1;
	p = killed_read(&g, &k);
	assert_int_equal(p->allocs, 9);
	assert_int_equal(stack_of(p, 1)->allocs, 6);
	assert_int_equal(p->in_use_blocks, 5);
	killed_done(&g);
	(void)state;
}

static void test_superseded_left_over(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 14, 1, HL_ORIGIN_START);
	hl_enc_alloc(&f.e, 0x9000, 1, 1, 1, 0);
	hl_enc_alloc(&f.e, 0x9000, 2, 2, 1, 0); /* free of the first never comes */
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->unfreed_superseded, 1);
	assert_int_equal(p->nleaks, 1);
	assert_int_equal(p->leaks[0].bytes, 2);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* Parent 20 of a run, with 0xa000 (1000 bytes, wire stack 1) and 0xb000
 * (10 bytes, stack 2) allocated; the test adds more before feed_flush. */
static void fork_parent_begin(struct feed *parent, struct hl_run *run)
{
	hl_run_init(run);
	feed_begin(parent, 20, 1, HL_ORIGIN_START);
	parent->cs.run = run;
	hl_enc_alloc(&parent->e, 0xa000, 1000, 2, 1, 0);
	hl_enc_alloc(&parent->e, 0xb000, 10, 3, 2, 0);
}

/* Its forked child 21, in the same run. */
static void fork_child_begin(struct feed *child, struct hl_run *run)
{
	feed_begin(child, 21, 20, HL_ORIGIN_FORK);
	child->cs.run = run;
}

static void fork_end(struct feed *parent, struct feed *child, struct hl_run *run)
{
	feed_end(parent);
	feed_end(child);
	hl_run_destroy(run);
}

/* What both fork tests' children end with: the 1000-byte block inherited from
 * the parent and one 7-byte block of their own, both leaked, the inherited
 * (larger) one last. */
static void check_forked_child(struct hl_process *cp, struct hl_process *pp)
{
	assert_ptr_equal(cp->parent, pp);
	hl_process_finish(cp);
	assert_int_equal(cp->allocs, 1);
	assert_int_equal(cp->in_use_bytes, 1007);
	assert_int_equal(cp->inherited_blocks, 1);
	assert_int_equal(cp->nleaks, 2);
	assert_int_equal(cp->leaks[1].bytes, 1000);
	assert_int_equal(cp->leaks[1].inherited_blocks, 1);
}

/* The per-stack series (hl_process.points) carried forward sample by
 * sample add up to the heap in use of each sample, when every block has a
 * stack: the stacked "consumed" chart then adds up to the heap chart. */
static void check_points_add_up(const struct hl_process *p)
{
	uint64_t *level = calloc(p->nstacks, sizeof(*level));
	size_t j = 0;

	assert_non_null(level);
	for (size_t i = 0; i < p->nstacks; i++) /* fewer than 64: every one */
		assert_true(!p->stacks[i].peak_live_bytes || p->stacks[i].tracked_since == 1);
	for (size_t k = 0; k < p->nsamples; k++) {
		uint64_t sum = 0;

		for (; j < p->npoints && p->points[j].sample <= k; j++) {
			assert_int_equal(p->points[j].sample, k); /* in sample order */
			level[p->points[j].stack] = p->points[j].bytes;
		}
		for (size_t i = 0; i < p->nstacks; i++)
			sum += level[i];
		assert_int_equal(sum, p->samples[k].in_use_bytes);
	}
	free(level);
}

static void test_fork_inherits(void **state)
{
	struct feed parent = { 0 }, child = { 0 };
	struct hl_process *pp, *cp;
	struct hl_run run;

	fork_parent_begin(&parent, &run);
	pp = feed_flush(&parent);

	fork_child_begin(&child, &run);
	hl_enc_free(&child.e, 0xb000, 10, 0);       /* frees an inherited block */
	hl_enc_alloc(&child.e, 0xc000, 7, 11, 1, 0); /* its own wire stack 1 */
	hl_enc_exit(&child.e, HL_EXIT_NORMAL, 0, 12);
	cp = feed_flush(&child);
	check_forked_child(cp, pp);
	assert_int_equal(cp->frees, 1);
	/* Its series start from what it inherited. */
	hl_process_finish(cp);
	assert_true(cp->nsamples >= 1);
	check_points_add_up(cp);
	/* The inherited block's stack is the parent's frame list. */
	assert_int_equal(hl_process_stack(cp, cp->leaks[1].stack)->frames[0], 0x401000);
	assert_int_equal(cp->leaks[0].inherited_blocks, 0);
	fork_end(&parent, &child, &run);
}

/* A process in `run` (feed_begin's, then pointed at run). */
static struct hl_process *feed_in(struct feed *f, struct hl_run *run, uint32_t pid,
				  uint32_t ppid, uint32_t origin)
{
	feed_begin(f, pid, ppid, origin);
	f->cs.run = run;
	return feed_flush(f);
}

/* An EXEC flagged HL_EXEC_TRACED, the stream's last record. */
static void enc_exec_traced(struct hl_enc *e, const char *path)
{
	size_t at = e->len;

	hl_enc_exec(e, path);
	((struct hl_wire_header *)(void *)(e->buf + at))->flags = HL_EXEC_TRACED;
}

/* Programs named from the parent's side, in either order against their
 * own HELLO: a SPAWN whose child says HELLO first or later is matched, a
 * SPAWN taken back (HL_SPAWN_FAILED) is forgotten, and a SPAWN or a traced
 * EXEC whose image never says HELLO is a process not observed. */
static void test_unobserved_children(void **state)
{
	struct feed parent = { 0 }, early = { 0 }, late = { 0 }, img = { 0 }, img2 = { 0 },
		    succ = { 0 };
	struct hl_process *pp, *ip, *ip2;
	struct hl_run run;

	hl_run_init(&run);
	pp = feed_in(&parent, &run, 10, 1, HL_ORIGIN_START);
	feed_in(&early, &run, 14, 10, HL_ORIGIN_START); /* before its SPAWN */
	hl_enc_spawn(&parent.e, 11, "/bin/late", 0);
	hl_enc_spawn(&parent.e, 12, "/bin/never", 0);
	hl_enc_spawn(&parent.e, 13, "/bin/failed", 0);
	hl_enc_spawn(&parent.e, 13, "/bin/failed", HL_SPAWN_FAILED);
	hl_enc_spawn(&parent.e, 14, "/bin/early", 0);
	hl_enc_exit(&parent.e, HL_EXIT_NORMAL, 0, 9);
	feed_flush(&parent);
	hl_process_closed(pp);
	feed_in(&late, &run, 11, 10, HL_ORIGIN_START); /* after it */

	ip = feed_in(&img, &run, 20, 1, HL_ORIGIN_START);
	enc_exec_traced(&img.e, "/bin/gone");
	feed_flush(&img);
	hl_process_closed(ip); /* its stream ends on EXEC: the image is expected */
	ip2 = feed_in(&img2, &run, 30, 1, HL_ORIGIN_START);
	enc_exec_traced(&img2.e, "/bin/came");
	feed_flush(&img2);
	hl_process_closed(ip2);
	feed_in(&succ, &run, 30, 1, HL_ORIGIN_EXEC);

	size_t before = run.nprocs;
	assert_int_equal(hl_run_add_unobserved(&run), 2);
	assert_int_equal(run.nprocs, before + 2);
	for (size_t i = before; i < run.nprocs; i++) {
		struct hl_process *u = run.procs[i];

		if (u->pid == 12) {
			assert_int_equal(u->standalone, HL_STANDALONE_UNSPAWNED);
			assert_int_equal(u->origin, HL_ORIGIN_START);
			assert_int_equal(u->ppid, 10);
			assert_string_equal(u->exe, "/bin/never");
		} else {
			assert_int_equal(u->pid, 20);
			assert_int_equal(u->standalone, HL_STANDALONE_UNEXECED);
			assert_int_equal(u->origin, HL_ORIGIN_EXEC);
			assert_string_equal(u->exe, "/bin/gone");
			assert_ptr_equal(u->parent, ip); /* the image it replaced */
		}
	}
	feed_end(&parent);
	feed_end(&early);
	feed_end(&late);
	feed_end(&img);
	feed_end(&img2);
	feed_end(&succ);
	hl_run_destroy(&run);
}

/* A child with HL_HOOK_FORK_SNAPSHOT states what it inherited itself: the
 * parent's stream, ahead of the fork by then, is not copied. */
static void test_fork_snapshot(void **state)
{
	struct feed parent = { 0 }, child = { 0 };
	struct hl_process *pp, *cp;
	struct hl_run run;

	fork_parent_begin(&parent, &run);
	hl_enc_free(&parent.e, 0xb000, 4, 0);
	hl_enc_alloc(&parent.e, 0xf000, 99, 6, 2, 0); /* after the fork */
	pp = feed_flush(&parent);

	fork_child_begin(&child, &run);
	((struct hl_rec_hello *)child.e.buf)->hook_flags |= HL_HOOK_FORK_SNAPSHOT;
	hl_enc_alloc(&child.e, 0xa000, 1000, 5, 1, HL_KIND_MALLOC | HL_ALLOC_INHERITED);
	hl_enc_alloc(&child.e, 0xc000, 7, 11, 2, 0);
	hl_enc_exit(&child.e, HL_EXIT_NORMAL, 0, 12);
	cp = feed_flush(&child);
	check_forked_child(cp, pp);
	assert_int_equal(cp->in_use_blocks, 2);
	fork_end(&parent, &child, &run);
}

/* A snapshot child's loss records are made when its stream ends and its
 * block table is freed then; they are the ones finish would have made, and
 * an image that then turns out to be replaced by exec still leaked nothing. */
static void test_fork_snapshot_settles_at_close(void **state)
{
	struct feed parent = { 0 }, child = { 0 }, exec_child = { 0 };
	struct hl_process *pp, *cp, *ep, *successor;
	struct hl_run run;

	fork_parent_begin(&parent, &run);
	pp = feed_flush(&parent);

	fork_child_begin(&child, &run);
	((struct hl_rec_hello *)child.e.buf)->hook_flags |= HL_HOOK_FORK_SNAPSHOT;
	hl_enc_alloc(&child.e, 0xa000, 1000, 5, 1, HL_KIND_MALLOC | HL_ALLOC_INHERITED);
	hl_enc_alloc(&child.e, 0xc000, 7, 11, 2, 0);
	hl_enc_exit(&child.e, HL_EXIT_NORMAL, 0, 12);
	cp = feed_flush(&child);
	assert_true(cp->live.capacity > 0);
	hl_process_closed(cp);
	assert_int_equal(cp->live.capacity, 0); /* freed */
	assert_int_equal(cp->nleaks, 2);
	check_forked_child(cp, pp);
	assert_int_equal(hl_process_stack(cp, cp->leaks[1].stack)->leaked_bytes, 1000);

	/* Another child: its stream ends on EXEC, its new image says HELLO. */
	feed_begin(&exec_child, 22, 20, HL_ORIGIN_FORK);
	exec_child.cs.run = &run;
	((struct hl_rec_hello *)exec_child.e.buf)->hook_flags |= HL_HOOK_FORK_SNAPSHOT;
	hl_enc_alloc(&exec_child.e, 0xa000, 1000, 5, 1, HL_KIND_MALLOC | HL_ALLOC_INHERITED);
	ep = feed_flush(&exec_child);
	hl_process_closed(ep);
	assert_int_equal(ep->nleaks, 1);
	feed_end(&exec_child);
	feed_begin(&exec_child, 22, 20, HL_ORIGIN_EXEC);
	exec_child.cs.run = &run;
	successor = feed_flush(&exec_child);
	assert_ptr_equal(ep->exec_successor, successor);
	hl_process_finish(ep);
	assert_int_equal(ep->how, HL_EXIT_EXEC);
	assert_int_equal(ep->nleaks, 0);
	assert_int_equal(hl_process_stack(ep, 1)->leaked_bytes, 0);
	assert_int_equal(ep->in_use_blocks, 1); /* counted, not leaked */
	feed_end(&exec_child);
	fork_end(&parent, &child, &run);
}

/* A snapshot child whose stream ends on EXEC (a test runner's child, which
 * execs the test at once) is settled at close without loss records: the
 * image was replaced and leaked nothing, so its inherited heap is not
 * grouped only to be dropped at finish. */
static void test_fork_snapshot_exec_not_grouped(void **state)
{
	struct feed parent = { 0 }, child = { 0 };
	struct hl_process *pp, *cp;
	struct hl_run run;

	fork_parent_begin(&parent, &run);
	pp = feed_flush(&parent);

	fork_child_begin(&child, &run);
	((struct hl_rec_hello *)child.e.buf)->hook_flags |= HL_HOOK_FORK_SNAPSHOT;
	hl_enc_alloc(&child.e, 0xa000, 1000, 5, 1, HL_KIND_MALLOC | HL_ALLOC_INHERITED);
	hl_enc_alloc(&child.e, 0xc000, 7, 6, 2, HL_KIND_MALLOC | HL_ALLOC_INHERITED);
	hl_enc_exec(&child.e, "/bin/test_one");
	cp = feed_flush(&child);
	assert_non_null(cp->exec_pending);
	hl_process_closed(cp);
	assert_true(cp->settled);
	assert_int_equal(cp->live.capacity, 0); /* freed, as any snapshot child's */
	assert_int_equal(cp->nleaks, 0);
	assert_null(cp->leaks);
	assert_int_equal(hl_process_stack(cp, 1)->leaked_bytes, 0);
	hl_process_finish(cp);
	assert_int_equal(cp->how, HL_EXIT_EXEC);
	assert_int_equal(cp->nleaks, 0);
	assert_int_equal(cp->in_use_blocks, 2); /* counted, not leaked */
	assert_ptr_equal(cp->parent, pp);
	fork_end(&parent, &child, &run);
}

/* With share_frames (`heapledger run`), equal stacks of the run's processes
 * point at one copy of their return addresses; others have their own. */
static void test_shared_frames(void **state)
{
	struct feed parent = { 0 }, child = { 0 };
	struct hl_process *pp, *cp;
	uint64_t other[2] = { 0x401000, 0x409999 };
	struct hl_run run;

	fork_parent_begin(&parent, &run);
	run.share_frames = true;
	pp = feed_flush(&parent);
	fork_child_begin(&child, &run);
	((struct hl_rec_hello *)child.e.buf)->hook_flags |= HL_HOOK_FORK_SNAPSHOT;
	hl_enc_stack(&child.e, 3, other, 2, 0);
	hl_enc_stack(&child.e, 4, other, 1, 0); /* a prefix: another stack */
	cp = feed_flush(&child);
	assert_int_equal(cp->nstacks, 4);
	assert_ptr_equal(cp->stacks[0].frames, pp->stacks[0].frames);
	assert_ptr_equal(cp->stacks[1].frames, pp->stacks[1].frames);
	assert_ptr_not_equal(cp->stacks[0].frames, cp->stacks[1].frames);
	assert_ptr_not_equal(cp->stacks[2].frames, cp->stacks[3].frames);
	assert_int_equal(cp->stacks[2].frames[1], 0x409999);
	assert_int_equal(cp->stacks[3].depth, 1);
	assert_int_equal(cp->stacks[3].frames[0], 0x401000);
	assert_int_equal(pp->stacks[1].frames[0], 0x402000);
	fork_end(&parent, &child, &run);
}

static void test_exec_and_signal(void **state)
{
	struct feed a = { 0 }, b = { 0 };
	struct hl_process *first, *second;
	struct hl_run run;

	hl_run_init(&run);
	feed_begin(&a, 30, 1, HL_ORIGIN_START);
	a.cs.run = &run;
	hl_enc_alloc(&a.e, 0xd000, 5, 2, 1, 0);
	first = feed_flush(&a);
	hl_process_closed(first);
	feed_begin(&b, 30, 1, HL_ORIGIN_EXEC);
	b.cs.run = &run;
	hl_enc_alloc(&b.e, 0xe000, 6, 2, 1, 0);
	second = feed_flush(&b);
	hl_process_closed(second);
	/* The second image was killed; we reaped it with SIGKILL status. */
	hl_run_note_reaped(&run, 30, SIGKILL);
	hl_process_finish(first);
	hl_process_finish(second);
	assert_int_equal(first->how, HL_EXIT_EXEC);
	/* exec took the image's heap with it: counted, but nothing leaked. */
	assert_int_equal(first->in_use_blocks, 1);
	assert_int_equal(first->nleaks, 0);
	assert_int_equal(second->how, HL_EXIT_SIGNAL);
	assert_int_equal(second->status, SIGKILL);
	assert_int_equal(second->in_use_bytes, 6); /* no inheritance on exec */
	feed_end(&a);
	feed_end(&b);
	hl_run_destroy(&run);
}

static void test_live_classes(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;
	struct hl_wire_live_block live[2] = {
		{ .address = 0x100, .size = 4, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x300, .size = 9, .stack_id = 2, .leak_class = HL_CLASS_REACHABLE },
	};

	hl_run_init(&f.run);
	feed_begin(&f, 40, 1, HL_ORIGIN_START);
	hl_enc_alloc(&f.e, 0x100, 4, 2, 1, 0);
	hl_enc_alloc(&f.e, 0x200, 4, 3, 1, 0); /* the hook says it is gone */
	hl_enc_live(&f.e, live, 2, HL_LIVE_SCANNED);
	hl_enc_exit(&f.e, HL_EXIT_NORMAL, 0, 9);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_true(p->live_scanned);
	assert_int_equal(p->live_mismatch, 2); /* 0x300 unknown, 0x200 not listed */
	assert_int_equal(p->nleaks, 2);
	assert_true(p->scanned);
	assert_int_equal(p->leaks[0].leak_class, HL_CLASS_DEFINITE);
	assert_int_equal(p->leaks[1].leak_class, HL_CLASS_REACHABLE);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* A LIVE set without HL_LIVE_SCANNED (_exit, abort, no scan) carries no
 * classes, whatever its leak_class bytes say: every block stays unknown. */
static void test_live_unscanned(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;
	struct hl_wire_live_block live[1] = {
		{ .address = 0x100, .size = 4, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
	};

	hl_run_init(&f.run);
	feed_begin(&f, 41, 1, HL_ORIGIN_START);
	hl_enc_alloc(&f.e, 0x100, 4, 2, 1, 0);
	hl_enc_live(&f.e, live, 1, 0);
	hl_enc_exit(&f.e, HL_EXIT_UNDERSCORE, 0, 9);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_false(p->scanned);
	assert_int_equal(p->nleaks, 1);
	assert_int_equal(p->leaks[0].leak_class, HL_CLASS_UNKNOWN);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* Loss records in valgrind's order: by size (largest last), and among
 * records of one size reachable, possible, indirect, definite. */
static void test_loss_record_order(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;
	struct hl_wire_live_block live[4] = {
		{ .address = 0x100, .size = 64, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x200, .size = 64, .stack_id = 2, .leak_class = HL_CLASS_POSSIBLE },
		{ .address = 0x300, .size = 100, .stack_id = 1, .leak_class = HL_CLASS_REACHABLE },
		{ .address = 0x400, .size = 8, .stack_id = 2, .leak_class = HL_CLASS_INDIRECT },
	};

	hl_run_init(&f.run);
	feed_begin(&f, 42, 1, HL_ORIGIN_START);
	for (int i = 0; i < 4; i++)
		hl_enc_alloc(&f.e, live[i].address, live[i].size, 2 + (uint64_t)i,
			     live[i].stack_id, 0);
	hl_enc_live(&f.e, live, 4, HL_LIVE_SCANNED);
	hl_enc_exit(&f.e, HL_EXIT_NORMAL, 0, 9);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->nleaks, 4);
	assert_int_equal(p->leaks[0].leak_class, HL_CLASS_INDIRECT);  /* 8 */
	assert_int_equal(p->leaks[1].leak_class, HL_CLASS_POSSIBLE);  /* 64 */
	assert_int_equal(p->leaks[2].leak_class, HL_CLASS_DEFINITE);  /* 64 */
	assert_int_equal(p->leaks[3].leak_class, HL_CLASS_REACHABLE); /* 100 */
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* The indirect bytes LIVE records give clique leaders (wire.h) add up in
 * their loss record ("N (D direct, I indirect) bytes"), and sort it. */
static void test_indirect_bytes(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;
	struct hl_wire_live_block live[4] = {
		{ .address = 0x100, .size = 16, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x200, .size = 16, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x300, .size = 150, .stack_id = 2, .leak_class = HL_CLASS_INDIRECT },
		{ .address = 0x400, .size = 100, .stack_id = 2, .leak_class = HL_CLASS_REACHABLE },
	};
	struct hl_wire_live_indirect indirect[2] = { { .index = 0, .bytes = 100 },
						     { .index = 1, .bytes = 50 } };

	(void)state;
	hl_run_init(&f.run);
	feed_begin(&f, 43, 1, HL_ORIGIN_START);
	for (int i = 0; i < 4; i++)
		hl_enc_alloc(&f.e, live[i].address, live[i].size, 2 + (uint64_t)i,
			     live[i].stack_id, 0);
	hl_enc_live_indirect(&f.e, live, 4, HL_LIVE_SCANNED, indirect, 2);
	hl_enc_exit(&f.e, HL_EXIT_NORMAL, 0, 9);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->nleaks, 3);
	/* 100 reachable, 150 indirect, then 32 direct + 150 indirect: last */
	assert_int_equal(p->leaks[2].leak_class, HL_CLASS_DEFINITE);
	assert_int_equal(p->leaks[2].bytes, 32);
	assert_int_equal(p->leaks[2].indirect_bytes, 150);
	assert_int_equal(p->leaks[2].blocks, 2);
	assert_int_equal(p->leaks[0].indirect_bytes + p->leaks[1].indirect_bytes, 0);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* An on-demand check's LIVE set is a snapshot in the middle of the stream:
 * it must not be taken for the exit set (which would drop every block it
 * does not list and mark the process scanned). */
static void test_check_set_not_exit_set(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;
	struct hl_wire_live_block live = { .address = 0x100, .size = 4, .stack_id = 1,
					   .leak_class = HL_CLASS_DEFINITE };

	hl_run_init(&f.run);
	feed_begin(&f, 41, 1, HL_ORIGIN_START);
	hl_enc_alloc(&f.e, 0x100, 4, 2, 1, 0);
	hl_enc_alloc(&f.e, 0x200, 8, 3, 1, 0);
	hl_enc_live(&f.e, &live, 1, HL_LIVE_SCANNED | HL_LIVE_CHECK);
	hl_enc_check(&f.e, 1, 0, 4);
	hl_enc_exit(&f.e, HL_EXIT_UNDERSCORE, 0, 9);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_false(p->live_scanned);
	assert_int_equal(p->live_mismatch, 0);
	assert_int_equal(p->in_use_bytes, 12);
	assert_int_equal(p->nleaks, 1); /* one stack, both blocks */
	assert_int_equal(p->leaks[0].leak_class, HL_CLASS_UNKNOWN);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

static void test_timeline_bounded(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 50, 1, HL_ORIGIN_START);
	for (uint64_t i = 0; i < 3000000; i++) {
		hl_enc_alloc(&f.e, 0x100000 + i * 16, 8, 10 + i, 1, 0);
		if (f.e.len > (1u << 20))
			feed_flush(&f);
	}
	p = feed_flush(&f);
	assert_true(p->nsamples > HL_TIMELINE_MAX / 4);
	assert_true(p->nsamples <= HL_TIMELINE_MAX);
	for (size_t i = 1; i < p->nsamples; i++)
		assert_true(p->samples[i].in_use_blocks > p->samples[i - 1].in_use_blocks);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* Of many stacks, those with the highest peaks have series, each ending
 * at what the stack holds at the last sample. */
static void check_tracked(const struct hl_process *p)
{
	uint64_t lowest = UINT64_MAX, highest_untracked = 0;

	assert_int_equal(p->ntracked, HL_TRACKED_STACKS);
	for (uint32_t t = 0; t < p->ntracked; t++) {
		const struct hl_process_stack *s = &p->stacks[p->tracked[t]];
		uint64_t level = 0;
		bool seen = false;

		assert_true(s->tracked_since > 0);
		for (size_t j = 0; j < p->npoints; j++)
			if (p->points[j].stack == p->tracked[t] &&
			    p->points[j].sample + 1 >= s->tracked_since &&
			    p->points[j].sample < p->nsamples) {
				level = p->points[j].bytes;
				seen = true;
			}
		assert_true(seen);
		assert_int_equal(level, s->live_bytes);
		if (s->peak_live_bytes < lowest)
			lowest = s->peak_live_bytes;
	}
	for (size_t i = 0; i < p->nstacks; i++)
		if (!p->stacks[i].tracked_since && p->stacks[i].peak_live_bytes > highest_untracked)
			highest_untracked = p->stacks[i].peak_live_bytes;
	assert_true(lowest >= highest_untracked);
}

/* Stacks rising and falling in turn: the series follow through the
 * thinning of a full timeline, for 300 stacks the 64 that peaked highest
 * (stack 1 + slot % 300 grows with the slot: the high stacks peak highest). */
static void test_stack_points(void **state)
{
	enum { STACKS = 300 };
	struct feed f = { 0 };
	struct hl_process *p;
	uint64_t frames[2] = { 0x401000, 0x401100 }, ticks = 10;

	hl_run_init(&f.run);
	feed_begin(&f, 51, 1, HL_ORIGIN_START);
	for (uint32_t id = 3; id <= STACKS; id++) {
		frames[0] = 0x500000 + id * 16;
		hl_enc_stack(&f.e, id, frames, 2, 0);
	}
	for (uint64_t i = 0; i < 1200000; i++) {
		uint64_t slot = i % 4096, round = i / 4096;
		uint64_t address = 0x100000 + slot * 64;
		uint32_t stack = 1 + (uint32_t)((slot * 7 + round) % STACKS);

		if (round)
			hl_enc_free(&f.e, address, ticks++, 0);
		hl_enc_alloc(&f.e, address, 8 + stack + round % 40, ticks++, stack, 0);
		if (f.e.len > (1u << 20))
			feed_flush(&f);
	}
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_true(p->nsamples >= HL_TIMELINE_MAX / 2);
	assert_true(p->sample_every > 256); /* the timeline was thinned */
	assert_true(p->npoints <= 2 * (size_t)HL_TRACKED_STACKS * (p->nsamples + 1));
	check_tracked(p);
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* One point per stack changed before a sample: its value at the sample. */
static void test_stack_points_small(void **state)
{
	struct feed f = { 0 };
	struct hl_process *p;

	hl_run_init(&f.run);
	feed_begin(&f, 52, 1, HL_ORIGIN_START);
	hl_enc_alloc(&f.e, 0x1000, 100, 2, 1, 0);
	hl_enc_alloc(&f.e, 0x2000, 60, 3, 2, 0);
	hl_enc_free(&f.e, 0x1000, 4, 0);
	hl_enc_alloc(&f.e, 0x3000, 40, 5, 1, 0);
	p = feed_flush(&f);
	hl_process_finish(p);
	assert_int_equal(p->nsamples, 1);
	check_points_add_up(p);
	assert_int_equal(p->npoints, 2); /* one per stack: the value at the sample */
	assert_int_equal(p->points[0].bytes, 40);
	assert_int_equal(p->points[1].bytes, 60);
	feed_end(&f);
	hl_run_destroy(&f.run);
}


/* Property: T threads allocate and free (across threads) a few addresses;
 * each thread's events reach the reporter in batches, in order per thread,
 * but batches of different threads are delivered shuffled within a window.
 * The reconciled end state must equal the truth: the same live blocks, no
 * false leaks, no missed ones. */
struct sim_event {
	int free;          /* 0 alloc, 1 free */
	uint64_t address, size, ticks;
};

struct sim_batch {
	int thread;
	size_t first, count; /* in that thread's event list */
	double arrival;
};

static uint64_t sim_rand(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return *seed >> 33;
}

static int batch_cmp(const void *a, const void *b)
{
	const struct sim_batch *x = a, *y = b;

	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

enum { SIM_THREADS = 4, SIM_ADDRESSES = 6, SIM_STEPS = 400 };

/* announce: threads say THREAD_START and send their first event at once,
 * as the hook does, so the reporter forgets remembered frees (tombwatch.h). */
static void sim_run(uint64_t seed, bool announce, uint64_t *mismatches, uint64_t *forgotten)
{
	static struct sim_event events[SIM_THREADS][SIM_STEPS];
	static struct sim_batch batches[SIM_STEPS + SIM_THREADS];
	size_t nevents[SIM_THREADS] = { 0 }, flushed[SIM_THREADS] = { 0 }, nbatches = 0;
	uint64_t truth_size[SIM_ADDRESSES] = { 0 }; /* 0 = free */
	struct feed f = { 0 };
	struct hl_process *p;
	uint64_t truth_bytes = 0;

	for (uint64_t step = 1; step <= SIM_STEPS; step++) {
		int t = (int)(sim_rand(&seed) % SIM_THREADS);
		int a = (int)(sim_rand(&seed) % SIM_ADDRESSES);
		struct sim_event *e = &events[t][nevents[t]++];

		e->address = 0x1000 + (uint64_t)a * 0x100;
		e->ticks = step * 10;
		e->free = truth_size[a] != 0;
		e->size = e->free ? 0 : step;
		truth_size[a] = e->free ? 0 : step;
		if (announce && nevents[t] == 1) {
			/* the hook flushes a new thread's buffer at its first event */
			batches[nbatches++] = (struct sim_batch){ t, 0, 1, (double)step };
			flushed[t] = 1;
		} else if (sim_rand(&seed) % 4 == 0 || step == SIM_STEPS) {
			/* flush this thread; arrival jitters by up to 60 steps */
			batches[nbatches++] = (struct sim_batch){
				t, flushed[t], nevents[t] - flushed[t],
				(double)step + (double)(sim_rand(&seed) % 600) / 10.0 };
			flushed[t] = nevents[t];
		}
	}
	for (int t = 0; t < SIM_THREADS; t++)
		if (flushed[t] < nevents[t])
			batches[nbatches++] = (struct sim_batch){
				t, flushed[t], nevents[t] - flushed[t], SIM_STEPS + 100.0 };
	qsort(batches, nbatches, sizeof(*batches), batch_cmp);
	/* keep each thread's batches in order: a later batch of a thread
	 * never overtakes an earlier one (one socket, one writer at a time) */
	for (size_t i = 0; i < nbatches; i++)
		for (size_t j = i + 1; j < nbatches; j++)
			if (batches[j].thread == batches[i].thread &&
			    batches[j].first < batches[i].first) {
				struct sim_batch tmp = batches[i];

				batches[i] = batches[j];
				batches[j] = tmp;
			}

	hl_run_init(&f.run);
	feed_begin(&f, 99, 1, HL_ORIGIN_START);
	queue_every_tombstone(&f);
	for (size_t i = 0; i < nbatches; i++) {
		struct sim_batch *b = &batches[i];

		hl_enc_batch(&f.e, 1000 + (uint32_t)b->thread, events[b->thread][b->first].ticks, i);
		if (announce && b->first == 0)
			hl_enc_thread(&f.e, HL_REC_THREAD_START, 1000 + (uint32_t)b->thread,
				      events[b->thread][0].ticks);
		for (size_t k = 0; k < b->count; k++) {
			struct sim_event *e = &events[b->thread][b->first + k];

			if (e->free)
				hl_enc_free(&f.e, e->address, e->ticks, 0);
			else
				hl_enc_alloc(&f.e, e->address, e->size, e->ticks, 1, 0);
		}
	}
	p = feed_flush(&f);
	hl_process_finish(p);
	for (int a = 0; a < SIM_ADDRESSES; a++) {
		struct hl_block *b = hl_table_find(&p->live, 0x1000 + (uint64_t)a * 0x100);

		if (b && (b->flags & HL_BLOCK_FREED))
			b = NULL;
		if (!truth_size[a] != !b || (b && b->size != truth_size[a]))
			(*mismatches)++;
		truth_bytes += truth_size[a];
	}
	/* Totals are exact too, and nothing is left unexplained. */
	if (p->in_use_bytes != truth_bytes || p->allocs + p->frees != SIM_STEPS ||
	    p->unmatched_frees || p->unfreed_superseded) {
		if (getenv("HL_TEST_VERBOSE"))
			fprintf(stderr, "seed %llu: in_use %llu/%llu events %llu unmatched %llu owed %llu\n",
				(unsigned long long)seed, (unsigned long long)p->in_use_bytes,
				(unsigned long long)truth_bytes,
				(unsigned long long)(p->allocs + p->frees),
				(unsigned long long)p->unmatched_frees,
				(unsigned long long)p->unfreed_superseded);
		(*mismatches)++;
	}
	*forgotten += p->tombstones_forgotten;
	feed_end(&f);
	hl_run_destroy(&f.run);
}

/* One stream of packed batches from two threads (events out of order
 * between them, reallocs, RECORD events amid the runs, more blocks than
 * the table keeps in cache) through a decoder with the events sink
 * (hl_state_decoder_init) and through one taking a record at a time: the
 * process's state is the same, counter by counter and block by block. */
static void encode_two_threads(struct hl_enc *e)
{
	const char *argv[] = { "prog" };
	uint64_t frames[2] = { 0x401000, 0x401100 };
	uint64_t seed = 7, clock[2] = { 10, 11 };

	hl_enc_hello(e, 20, 1, HL_ORIGIN_START, "/bin/prog", 1, argv);
	hl_enc_batch(e, 20, 1, 0);
	hl_enc_stack(e, 1, frames, 2, 0);
	frames[0] = 0x402000;
	hl_enc_stack(e, 2, frames, 2, 0);
	for (uint64_t batch = 1; batch <= 12; batch++) {
		uint32_t tid = 20 + (uint32_t)(batch % 2);
		uint64_t base = 0x10000000 + (batch % 2) * 0x1000000;
		uint64_t *ticks = &clock[batch % 2];

		hl_enc_batch_packed(e, tid, *ticks, batch, *ticks, base);
		if (batch <= 2)
			hl_enc_pack_thread(e, HL_REC_THREAD_START, tid, *ticks);
		for (int i = 0; i < 7000; i++) {
			uint64_t r = sim_rand(&seed);
			uint64_t address = 0x10000000 + (r % 4096) * 64; /* both threads' */

			*ticks += 2; /* the two threads' events interleave in time */
			switch (r % 7) {
			case 0: case 1: case 2:
				hl_enc_pack_alloc(e, address, 8 + r % 500, *ticks, 1 + (uint32_t)(r % 2),
						  (unsigned)(r >> 8) % HL_KIND_COUNT);
				break;
			case 3: case 4:
				hl_enc_pack_free(e, address, *ticks, (unsigned)(r >> 8) % HL_KIND_COUNT);
				break;
			case 5:
				hl_enc_pack_realloc(e, address, address + 0x40000 * (1 + r % 3),
						    16 + r % 900, *ticks, 2);
				break;
			default:
				if (i % 500 == 0)
					hl_enc_pack_thread(e, HL_REC_THREAD_START, tid + 100, *ticks);
				else
					hl_enc_pack_alloc(e, base + 0x800000 + (uint64_t)i * 32, 24,
							  *ticks, 0, HL_KIND_MALLOC);
				break;
			}
		}
	}
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, clock[0] + clock[1]);
}

static struct hl_process *decode_all(struct feed *f, bool events)
{
	hl_run_init(&f->run);
	f->cs.run = &f->run;
	f->cs.proc = NULL;
	if (events)
		hl_state_decoder_init(&f->d, &f->cs);
	else
		hl_decode_init(&f->d, hl_state_record, &f->cs);
	assert_int_equal(hl_decode_feed(&f->d, f->e.buf, f->e.len), (long)f->e.len);
	hl_process_closed(f->cs.proc);
	hl_process_finish(f->cs.proc);
	return f->cs.proc;
}

static void test_events_sink_same_state(void **state)
{
	struct feed one = { 0 }, each = { 0 };
	struct hl_process *a, *b;
	uint64_t live = 0;

	hl_enc_init(&one.e);
	encode_two_threads(&one.e);
	hl_enc_init(&each.e);
	encode_two_threads(&each.e);
	a = decode_all(&one, true);
	b = decode_all(&each, false);
	assert_int_equal(one.d.records, each.d.records);
	assert_int_equal(a->seq, b->seq);
	assert_true(a->reordering && b->reordering);
	assert_int_equal(a->allocs, b->allocs);
	assert_int_equal(a->frees, b->frees);
	assert_int_equal(a->bytes_allocated, b->bytes_allocated);
	assert_int_equal(a->in_use_bytes, b->in_use_bytes);
	assert_int_equal(a->in_use_blocks, b->in_use_blocks);
	assert_int_equal(a->peak_bytes, b->peak_bytes);
	assert_int_equal(a->stale_allocs, b->stale_allocs);
	assert_int_equal(a->tombstones, b->tombstones);
	assert_int_equal(a->unmatched_frees, b->unmatched_frees);
	assert_int_equal(a->unfreed_superseded, b->unfreed_superseded);
	assert_int_equal(a->threads, b->threads);
	assert_int_equal(a->nsamples, b->nsamples);
	assert_memory_equal(a->samples, b->samples, a->nsamples * sizeof(*a->samples));
	assert_int_equal(a->nstacks, b->nstacks);
	for (size_t i = 0; i < a->nstacks; i++) {
		assert_int_equal(a->stacks[i].allocs, b->stacks[i].allocs);
		assert_int_equal(a->stacks[i].bytes, b->stacks[i].bytes);
		assert_int_equal(a->stacks[i].frees, b->stacks[i].frees);
		assert_int_equal(a->stacks[i].peak_live_bytes, b->stacks[i].peak_live_bytes);
		assert_int_equal(a->stacks[i].leaked_bytes, b->stacks[i].leaked_bytes);
	}
	assert_int_equal(a->live.count, b->live.count);
	for (struct hl_block *x = hl_table_next(&a->live, NULL); x; x = hl_table_next(&a->live, x)) {
		const struct hl_block *y = hl_table_find(&b->live, x->address);

		assert_non_null(y);
		assert_memory_equal(x, y, sizeof(*x));
		live += !(x->flags & HL_BLOCK_FREED);
	}
	/* the stream is what it is meant to be: enough blocks for the table's
	 * prefetching, some of them left over, tombstones of two threads */
	assert_true(a->live.capacity >= (1u << 15));
	assert_true(live > 1000 && a->allocs > 40000 && a->tombstones > 0);
	assert_int_equal(a->nleaks, b->nleaks);
	feed_end(&one);
	feed_end(&each);
	hl_run_destroy(&one.run);
	hl_run_destroy(&each.run);
}

static void test_shuffled_batches(void **state)
{
	uint64_t mismatches = 0, forgotten = 0;

	for (uint64_t seed = 1; seed <= 300; seed++)
		sim_run(seed, false, &mismatches, &forgotten);
	if (mismatches)
		fail_msg("%llu live-set mismatches over 300 shuffled histories",
			 (unsigned long long)mismatches);
	assert_int_equal(forgotten, 0); /* no thread announced: nothing forgotten */
	/* The same with threads announced: remembered frees are forgotten as
	 * the threads move on, and the end state is still the truth. */
	for (uint64_t seed = 1; seed <= 300; seed++)
		sim_run(seed, true, &mismatches, &forgotten);
	if (mismatches)
		fail_msg("%llu live-set mismatches over 300 shuffled histories, threads announced",
			 (unsigned long long)mismatches);
	assert_true(forgotten > 300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_and_leaks),
		cmocka_unit_test(test_events_sink_same_state),
		cmocka_unit_test(test_free_after_reuse),
		cmocka_unit_test(test_temporaries),
		cmocka_unit_test(test_free_before_alloc),
		cmocka_unit_test(test_older_alloc_late),
		cmocka_unit_test(test_superseded_left_over),
		cmocka_unit_test(test_tombstones_forgotten),
		cmocka_unit_test(test_tombstone_kept_for_lagging_thread),
		cmocka_unit_test(test_idle_thread_pins_its_unsent),
		cmocka_unit_test(test_pending_read),
		cmocka_unit_test(test_fork_inherits),
		cmocka_unit_test(test_fork_snapshot),
		cmocka_unit_test(test_unobserved_children),
		cmocka_unit_test(test_exec_and_signal),
		cmocka_unit_test(test_live_classes),
		cmocka_unit_test(test_live_unscanned),
		cmocka_unit_test(test_loss_record_order),
		cmocka_unit_test(test_indirect_bytes),
		cmocka_unit_test(test_check_set_not_exit_set),
		cmocka_unit_test(test_timeline_bounded),
		cmocka_unit_test(test_stack_points),
		cmocka_unit_test(test_stack_points_small),
		cmocka_unit_test(test_shuffled_batches),
		cmocka_unit_test(test_fork_snapshot_settles_at_close),
		cmocka_unit_test(test_fork_snapshot_exec_not_grouped),
		cmocka_unit_test(test_shared_frames),
		cmocka_unit_test(test_killed_threads_tally),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
