/*
 * tests/libhook/test_tally_delta.c: a thread's delta merged into the tally
 * gives what its events counted one by one would have (heapledger/tally.h,
 * "threads"), when the deltas merge in the order their events happened:
 * totals, the size histogram, each stack's counts, peaks and what it held
 * at the process's peak, temporaries, the latest allocation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "heapledger/tally.h"

#define STACKS 40
#define BLOCKS 300

struct counted {
	struct hl_tally_view v;
	struct hl_tally *t;
};

static void counted_init(struct counted *c)
{
	c->t = calloc(1, HL_TALLY_BYTES);
	assert_non_null(c->t);
	hl_tally_init(&c->v, c->t);
	c->t->stacks_used = STACKS;
}

struct block {
	uint64_t address, size;
	uint32_t id;
};

/* The same figures, stack by stack. */
static void assert_same(const struct counted *a, const struct counted *b)
{
	assert_int_equal(a->t->allocs, b->t->allocs);
	assert_int_equal(a->t->frees, b->t->frees);
	assert_int_equal(a->t->bytes_allocated, b->t->bytes_allocated);
	assert_int_equal(a->t->temporaries, b->t->temporaries);
	assert_int_equal(a->t->in_use_bytes, b->t->in_use_bytes);
	assert_int_equal(a->t->in_use_blocks, b->t->in_use_blocks);
	assert_int_equal(a->t->peak_bytes, b->t->peak_bytes);
	assert_int_equal(a->t->last_alloc, b->t->last_alloc);
	assert_int_equal(a->t->events, b->t->events);
	assert_memory_equal(&a->t->sizes, &b->t->sizes, sizeof(a->t->sizes));
	for (uint32_t id = 0; id < STACKS; id++) {
		const struct hl_tally_stack *x = &a->v.stacks[id], *y = &b->v.stacks[id];
		bool xp = x->at_peak_gen == a->t->peak_gen, yp = y->at_peak_gen == b->t->peak_gen;

		assert_int_equal(x->allocs, y->allocs);
		assert_int_equal(x->bytes, y->bytes);
		assert_int_equal(x->frees, y->frees);
		assert_int_equal(x->temporaries, y->temporaries);
		assert_int_equal(x->live_bytes, y->live_bytes);
		assert_int_equal(x->live_blocks, y->live_blocks);
		assert_int_equal(x->peak_live_bytes, y->peak_live_bytes);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->flags, y->flags);
		/* What it held at the peak: recorded, or still its live bytes. */
		assert_int_equal(xp ? x->at_peak_bytes : x->live_bytes,
				 yp ? y->at_peak_bytes : y->live_bytes);
	}
}

/* One run of random allocations, frees (temporaries among them) and
 * reallocs, counted one by one into a and through a delta merged every
 * `every` events (and at half its slots) into b. */
static void run_once(unsigned seed, unsigned events, unsigned every)
{
	static struct hl_tally_delta d;
	struct counted a, b;
	struct block live[BLOCKS] = { 0 };
	uint64_t next = 0x10000;
	unsigned since = 0;

	counted_init(&a);
	counted_init(&b);
	memset(&d, 0, sizeof(d));
	srand(seed);
	for (unsigned i = 0; i < events; i++) {
		unsigned slot = (unsigned)rand() % BLOCKS, op = (unsigned)rand() % 8;
		struct block *bl = &live[slot];
		uint64_t size = 1 + (uint64_t)rand() % (op == 7 ? 70000 : 600);
		uint32_t id = 1 + (uint32_t)rand() % (STACKS - 1);

		if (bl->address == 0) {
			*bl = (struct block){ next += 0x1000, size, id };
			hl_tally_alloc(&a.v, bl->address, size, id, 1, false);
			hl_tally_delta_alloc(&d, bl->address, size, id, 1, false);
			if (op == 0) { /* a temporary: freed at once */
				hl_tally_counted(a.t);
				d.events++;
				hl_tally_free(&a.v, bl->address, bl->size, bl->id);
				hl_tally_delta_free(&d, bl->address, bl->size, bl->id);
				bl->address = 0;
			}
		} else if (op < 3) {
			uint64_t moved = op == 1 ? bl->address : (next += 0x1000);

			hl_tally_free(&a.v, bl->address, bl->size, bl->id);
			hl_tally_delta_free(&d, bl->address, bl->size, bl->id);
			*bl = (struct block){ moved, size, id };
			hl_tally_alloc(&a.v, moved, size, id, 0, true);
			hl_tally_delta_alloc(&d, moved, size, id, 0, true);
		} else {
			hl_tally_free(&a.v, bl->address, bl->size, bl->id);
			hl_tally_delta_free(&d, bl->address, bl->size, bl->id);
			bl->address = 0;
		}
		hl_tally_counted(a.t);
		d.events++;
		if (++since == every || hl_tally_delta_full(&d)) {
			/* A sample a merge would take lands elsewhere: keep the
			 * timeline out of the comparison. */
			a.t->sample_countdown = b.t->sample_countdown = UINT64_MAX / 2;
			assert_true(hl_tally_merge(&b.v, &d, i));
			assert_int_equal(b.t->merging, 0);
			since = 0;
		}
	}
	assert_true(hl_tally_merge(&b.v, &d, events));
	assert_same(&a, &b);
	assert_true(a.t->peak_gen > 0);
	free(a.t);
	free(b.t);
}

static void test_merge_equals_events(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 20; seed++) {
		run_once(seed, 20000, 1);
		run_once(seed, 20000, 7);
		run_once(seed, 20000, HL_DELTA_EVENTS);
	}
}

/* A merge journals the totals and every stack it changes as they were. */
static void test_merge_journal(void **state)
{
	static struct hl_tally_delta d;
	struct counted c;

	(void)state;
	counted_init(&c);
	hl_tally_alloc(&c.v, 0x1000, 10, 3, 0, false);
	hl_tally_delta_alloc(&d, 0x2000, 20, 3, 0, false);
	hl_tally_delta_alloc(&d, 0x3000, 30, 5, 0, false);
	d.events = 2;
	assert_true(hl_tally_merge(&c.v, &d, 1));
	assert_int_equal(c.t->journal_n, 2);
	assert_int_equal(c.t->journal_totals.allocs, 1);
	assert_int_equal(c.t->journal_totals.in_use_bytes, 10);
	assert_int_equal(c.v.journal[0].stack_id, 3);
	assert_int_equal(c.v.journal[0].before.live_bytes, 10);
	assert_int_equal(c.v.journal[1].stack_id, 5);
	assert_int_equal(c.v.journal[1].before.allocs, 0);
	assert_int_equal(c.t->allocs, 3);
	assert_int_equal(c.t->in_use_bytes, 60);
	assert_int_equal(d.nused, 0); /* cleared */
	assert_int_equal(d.merged, 0);
	free(c.t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_equals_events),
		cmocka_unit_test(test_merge_journal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
