/*
 * tests/reporter/test_table.c: the block table against a plain array model:
 * inserts, removals (backward shift), repeated keys, growth past a million.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "table.h"

static void test_million(void **state)
{
	struct hl_table t;
	const uint64_t n = 1200000;

	hl_table_init(&t);
	for (uint64_t i = 1; i <= n; i++)
		hl_table_insert(&t, i * 16)->size = i;
	assert_int_equal(t.count, n);
	assert_true(t.count * 8 <= t.capacity * 5);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_repeated_keys),
		cmocka_unit_test(test_random_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
