/*
 * tests/reporter/test_table.c: the block table against a plain array model:
 * inserts, removals, repeated keys (also spread over several groups),
 * growth past a million, steady churn that must reuse removed slots
 * instead of growing, a table of DELETED slots rebuilt at its own size
 * instead of grown, removal while iterating, copies; the invariants of
 * table.h checked by their validator, and their assertions firing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "../expect_abort.h"
#include "table.h"
#include "util.h"

static void test_million(void **state)
{
	struct hl_table t;
	const uint64_t n = 1200000;

	hl_table_init(&t);
	for (uint64_t i = 1; i <= n; i++)
		hl_table_insert(&t, i * 16)->size = i;
	assert_int_equal(t.count, n);
	assert_true(t.count * 8 <= t.capacity * 7);
	/* Remove every third, then check each key's presence and value. */
	for (uint64_t i = 3; i <= n; i += 3)
		hl_table_remove(&t, hl_table_find(&t, i * 16));
	for (uint64_t i = 1; i <= n; i++) {
		struct hl_block *b = hl_table_find(&t, i * 16);

		if (i % 3 == 0) {
			assert_null(b);
		} else {
			assert_non_null(b);
			assert_int_equal(b->size, i);
		}
	}
	assert_int_equal(t.count, n - n / 3);
	hl_table_destroy(&t);
}

static void test_repeated_keys(void **state)
{
	struct hl_table t;
	int found = 0;
	uint64_t sum = 0;

	hl_table_init(&t);
	for (uint64_t i = 0; i < 5; i++)
		hl_table_insert(&t, 0x1000)->ticks = i;
	for (uint64_t i = 0; i < 2000; i++)
		hl_table_insert(&t, 0x2000 + i * 16);
	for (struct hl_block *b = hl_table_find(&t, 0x1000); b;
	     b = hl_table_find_next(&t, 0x1000, b)) {
		found++;
		sum += b->ticks;
	}
	assert_int_equal(found, 5);
	assert_int_equal(sum, 0 + 1 + 2 + 3 + 4);
	/* Remove the one with ticks 2; the other four stay reachable. */
	for (struct hl_block *b = hl_table_find(&t, 0x1000); b;
	     b = hl_table_find_next(&t, 0x1000, b))
		if (b->ticks == 2) {
			hl_table_remove(&t, b);
			break;
		}
	found = 0;
	sum = 0;
	for (struct hl_block *b = hl_table_find(&t, 0x1000); b;
	     b = hl_table_find_next(&t, 0x1000, b)) {
		found++;
		sum += b->ticks;
	}
	assert_int_equal(found, 4);
	assert_int_equal(sum, 8);
	hl_table_destroy(&t);
}

/* Random churn against a model array of present keys. */
static void test_random_churn(void **state)
{
	enum { KEYS = 50000 };
	static bool present[KEYS];
	struct hl_table t;
	uint64_t seed = 12345;

	hl_table_init(&t);
	for (int step = 0; step < 400000; step++) {
		uint64_t k;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		k = (seed >> 33) % KEYS;
		if (present[k]) {
			hl_table_remove(&t, hl_table_find(&t, (k + 1) * 32));
			present[k] = false;
		} else {
			hl_table_insert(&t, (k + 1) * 32)->size = k;
			present[k] = true;
		}
	}
	for (uint64_t k = 0; k < KEYS; k++) {
		struct hl_block *b = hl_table_find(&t, (k + 1) * 32);

		assert_int_equal(b != NULL, present[k]);
		if (b)
			assert_int_equal(b->size, k);
	}
	hl_table_destroy(&t);
}

/* A key repeated across more groups than one: find_next walks them all,
 * past other keys' entries, and stops. */
static void test_repeated_keys_spanning_groups(void **state)
{
	struct hl_table t;
	uint64_t seen = 0;
	int found = 0;

	hl_table_init(&t);
	for (uint64_t i = 0; i < 40; i++) {
		hl_table_insert(&t, 0x5000)->ticks = i;
		hl_table_insert(&t, 0x100000 + i * 16);
	}
	for (struct hl_block *b = hl_table_find(&t, 0x5000); b;
	     b = hl_table_find_next(&t, 0x5000, b)) {
		assert_int_equal(b->address, 0x5000);
		seen |= 1ull << b->ticks;
		found++;
	}
	assert_int_equal(found, 40);
	assert_int_equal(seen, (1ull << 40) - 1);
	hl_table_destroy(&t);
}

/* A steady live set churned for long reuses removed slots: the table does
 * not grow past what the live set needs, and stays exact. */
static void test_steady_churn_bounded(void **state)
{
	enum { LIVE = 10000, STEPS = 2000000 };
	static uint64_t live[LIVE];
	struct hl_table t;
	uint64_t seed = 99, next = 1;

	hl_table_init(&t);
	for (int i = 0; i < LIVE; i++) {
		live[i] = next++ * 48;
		hl_table_insert(&t, live[i])->size = live[i];
	}
	for (int step = 0; step < STEPS; step++) {
		size_t k;
		struct hl_block *b;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		k = (size_t)(seed >> 33) % LIVE;
		b = hl_table_find(&t, live[k]);
		assert_non_null(b);
		assert_int_equal(b->size, live[k]);
		hl_table_remove(&t, b);
		/* Like an allocator: often the address just freed, else new. */
		if (!(seed & 0x300))
			live[k] = next++ * 48;
		hl_table_insert(&t, live[k])->size = live[k];
	}
	assert_int_equal(t.count, LIVE);
	assert_true(t.capacity <= 32768);
	for (int i = 0; i < LIVE; i++)
		assert_non_null(hl_table_find(&t, live[i]));
	hl_table_destroy(&t);
}

/* Removing the current entry while iterating (as the tombstone pruning
 * does) visits every entry once; a copy is independent of its source. */
static void test_remove_while_iterating_and_copy(void **state)
{
	struct hl_table t, c;
	size_t visited = 0, removed = 0;

	hl_table_init(&t);
	hl_table_init(&c);
	for (uint64_t i = 1; i <= 5000; i++)
		hl_table_insert(&t, i * 16)->size = i;
	hl_table_copy(&c, &t);
	for (struct hl_block *b = hl_table_next(&t, NULL); b; b = hl_table_next(&t, b)) {
		visited++;
		if (b->size % 2 == 0) {
			hl_table_remove(&t, b);
			assert_int_equal(b->address, 0);
			removed++;
		}
	}
	assert_int_equal(visited, 5000);
	assert_int_equal(removed, 2500);
	assert_int_equal(t.count, 2500);
	for (uint64_t i = 1; i <= 5000; i++) {
		assert_int_equal(hl_table_find(&t, i * 16) != NULL, i % 2 == 1);
		assert_non_null(hl_table_find(&c, i * 16));
	}
	assert_int_equal(c.count, 5000);
	hl_table_destroy(&t);
	hl_table_destroy(&c);
}

/* Removals from full groups leave DELETED slots, which use up the room for
 * inserts while few entries are live: the table is then rebuilt at its own
 * size, not grown. Keys all homed in group 0 fill whole groups. */
static void test_deleted_slots_rebuilt_in_place(void **state)
{
	enum { FILL = 1024 / 8 * 7 }; /* the first capacity's room */
	static uint64_t keys[FILL + 1];
	struct hl_table t;
	size_t n = 0;

	hl_table_init(&t);
	hl_table_insert(&t, 16); /* capacity 1024: 64 groups, shift 58 */
	hl_table_remove(&t, hl_table_find(&t, 16));
	assert_int_equal(t.capacity, 1024);
	for (uint64_t a = 32; n < FILL + 1; a += 16)
		if ((hl_table_hash(a) >> t.shift) == 0)
			keys[n++] = a;
	for (size_t i = 0; i < FILL; i++)
		hl_table_insert(&t, keys[i]);
	assert_int_equal(t.capacity, 1024);
	assert_int_equal(t.growth_left, 0);
	for (size_t i = 0; i < FILL; i++)
		hl_table_remove(&t, hl_table_find(&t, keys[i]));
	assert_int_equal(t.count, 0);
	assert_int_equal(t.growth_left, 0); /* every slot used is DELETED */
	hl_table_insert(&t, keys[FILL])->size = 7;
	assert_int_equal(t.capacity, 1024);
	assert_int_equal(t.growth_left, FILL - 1);
	assert_int_equal(hl_table_find(&t, keys[FILL])->size, 7);
	assert_null(hl_table_find(&t, keys[0]));
	assert_true(hl_table_is_valid(&t));
	hl_table_destroy(&t);
}

/* The validator holds through churn, and finds each kind of breakage. */
static void test_validator(void **state)
{
	struct hl_table t;

	hl_table_init(&t);
	assert_true(hl_table_is_valid(&t));
	for (uint64_t i = 1; i <= 5000; i++)
		hl_table_insert(&t, i * 16);
	for (uint64_t i = 1; i <= 5000; i += 2)
		hl_table_remove(&t, hl_table_find(&t, i * 16));
	assert_true(hl_table_is_valid(&t));
	t.count++;
	assert_false(hl_table_is_valid(&t)); /* a count that misses a slot */
	t.count--;
	struct hl_block *unused = hl_table_find(&t, 16 * 2);
	hl_table_remove(&t, unused);
	unused->address = 48; /* a slot not in use that does not read 0 */
	assert_false(hl_table_is_valid(&t));
	unused->address = 0;
	t.growth_left++;
	assert_false(hl_table_is_valid(&t)); /* room past the 7/8 bound */
	t.growth_left--;
	assert_true(hl_table_is_valid(&t));
	hl_table_destroy(&t);
}

/* An entry removed twice (a pointer kept past its removal). */
static void remove_twice(void)
{
	struct hl_table t;

	hl_table_init(&t);
	struct hl_block *b = hl_table_insert(&t, 16);
	hl_table_insert(&t, 32);
	hl_table_remove(&t, b);
	hl_table_remove(&t, b);
}

static void test_invariant_fires(void **state)
{
	if (HL_DEBUG < 1)
		skip(); /* built with -Dhl_debug=0 */
	assert_true(dies_of_abort_saying(remove_twice, "invariant failed: slot >= t->slots"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_repeated_keys),
		cmocka_unit_test(test_random_churn),
		cmocka_unit_test(test_repeated_keys_spanning_groups),
		cmocka_unit_test(test_steady_churn_bounded),
		cmocka_unit_test(test_remove_while_iterating_and_copy),
		cmocka_unit_test(test_deleted_slots_rebuilt_in_place),
		cmocka_unit_test(test_validator),
		cmocka_unit_test(test_invariant_fires),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
