/*
 * tests/libhook/test_stack.c: stack capture and interning (libhook/stack.c).
 * Linked with the hook's objects (HL_UNIT_TEST: no frames are skipped).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "track.h"

/* Frames no real stack has: tests do not collide with stacks the hook
 * interns for this program's own allocations. */
static void fake_frames(uint64_t *frames, unsigned depth, uint64_t seed)
{
	for (unsigned i = 0; i < depth; i++)
		frames[i] = 0xdead000000000000u + seed * 4096 + i * 8;
}

static void test_same_frames_same_id(void **state)
{
	uint64_t a[10], b[10];
	fake_frames(a, 10, 1);
	memcpy(b, a, sizeof(a));
	uint32_t id = hl_stack_intern(a, 10, false);
	assert_int_not_equal(id, 0);
	assert_int_equal(hl_stack_intern(b, 10, false), id);
	const struct hl_stack *s = hl_stack_get(id);
	assert_non_null(s);
	assert_int_equal(s->id, id);
	assert_int_equal(s->depth, 10);
	assert_memory_equal(s->frames, a, sizeof(a));
	assert_true(id < hl_stack_next_id());
}

static void test_different_frames_different_id(void **state)
{
	uint64_t a[10];
	fake_frames(a, 10, 2);
	uint32_t id = hl_stack_intern(a, 10, false);
	a[9]++;
	uint32_t last_differs = hl_stack_intern(a, 10, false);
	uint32_t shorter = hl_stack_intern(a, 9, false);
	uint32_t truncated = hl_stack_intern(a, 9, true);
	assert_int_not_equal(id, last_differs);
	assert_int_not_equal(shorter, last_differs);
	assert_int_not_equal(shorter, truncated);
	assert_int_equal(hl_stack_get(truncated)->truncated, 1);
	/* The empty stack is a stack too (a capture that found no frames). */
	uint32_t empty = hl_stack_intern(NULL, 0, false);
	assert_int_not_equal(empty, 0);
	assert_int_equal(hl_stack_intern(a, 0, false), empty);
}

/* A stack's memo steps (written after it is published) have room of their
 * own: writing all of them changes neither its frames nor the next stack's. */
static void test_memo_steps_own_room(void **state)
{
	uint64_t a[7], b[7];
	fake_frames(a, 7, 3);
	fake_frames(b, 7, 4);
	const struct hl_stack *sa = hl_stack_get(hl_stack_intern(a, 7, false));
	const struct hl_stack *sb = hl_stack_get(hl_stack_intern(b, 7, false));
	assert_non_null(sa);
	assert_non_null(sb);
	assert_int_equal(atomic_load(&((struct hl_stack *)sa)->memo_steps), HL_MEMO_STEPS_NONE);
	for (unsigned j = 0; j < 7; j++)
		hl_stack_steps(sa)[j] = 0xffff;
	assert_memory_equal(sa->frames, a, sizeof(a));
	assert_memory_equal(sb->frames, b, sizeof(b));
	assert_int_equal(sb->depth, 7);
	assert_int_equal(sb->id, sa->id + 1);
}

/* Enough stacks to grow the table several times (it starts at 4096 slots). */
static void test_many_stacks_and_growth(void **state)
{
	enum { N = 50000 };
	static uint32_t ids[N];
	uint64_t frames[6];
	uint32_t first = hl_stack_next_id();
	for (unsigned i = 0; i < N; i++) {
		fake_frames(frames, 6, 1000 + i);
		ids[i] = hl_stack_intern(frames, 6, false);
		assert_int_not_equal(ids[i], 0);
	}
	assert_int_equal(hl_stack_next_id(), first + N); /* dense and all new */
	for (unsigned i = 0; i < N; i++) {
		fake_frames(frames, 6, 1000 + i);
		assert_int_equal(hl_stack_intern(frames, 6, false), ids[i]);
		assert_int_equal(hl_stack_get(ids[i])->frames[0], frames[0]);
	}
	assert_null(hl_stack_get(0));
	assert_null(hl_stack_get(hl_stack_next_id()));
}

/* Threads interning the same stacks at once all agree on every id. */
enum { RACE_THREADS = 4, RACE_STACKS = 20000 };
static uint32_t race_ids[RACE_THREADS][RACE_STACKS];

static void *race_worker(void *arg)
{
	uint32_t *out = arg;
	uint64_t frames[4];
	for (unsigned i = 0; i < RACE_STACKS; i++) {
		fake_frames(frames, 4, 500000 + i);
		out[i] = hl_stack_intern(frames, 4, false);
	}
	return NULL;
}

static void test_concurrent_interning(void **state)
{
	pthread_t threads[RACE_THREADS];
	uint32_t first = hl_stack_next_id();
	for (int t = 0; t < RACE_THREADS; t++)
		assert_int_equal(pthread_create(&threads[t], NULL, race_worker, race_ids[t]), 0);
	for (int t = 0; t < RACE_THREADS; t++)
		pthread_join(threads[t], NULL);
	for (unsigned i = 0; i < RACE_STACKS; i++)
		for (int t = 1; t < RACE_THREADS; t++)
			assert_int_equal(race_ids[t][i], race_ids[0][i]);
	/* The test's own allocations may intern a few more stacks meanwhile. */
	assert_true(hl_stack_next_id() - first >= RACE_STACKS);
	assert_true(hl_stack_next_id() - first < RACE_STACKS + 100);
}

static __attribute__((noinline)) uint32_t capture_here_a(void)
{
	uint64_t frames[64];
	void *raw[HL_CAPTURE_RAW(64)];
	bool truncated;
	unsigned n = hl_stack_capture(frames, raw, 64, &truncated);
	assert_true(n >= 2);
	assert_false(truncated);
	return hl_stack_intern(frames, n, truncated);
}

static __attribute__((noinline)) uint32_t capture_here_b(void)
{
	uint64_t frames[64];
	void *raw[HL_CAPTURE_RAW(64)];
	bool truncated;
	unsigned n = hl_stack_capture(frames, raw, 64, &truncated);
	return hl_stack_intern(frames, n, truncated);
}

static void test_capture(void **state)
{
	uint32_t ids[4];
	volatile int twice = 2; /* a loop the compiler cannot unroll */
	for (int i = 0; i < twice; i++)
		ids[i] = capture_here_a(); /* same call site twice */
	ids[2] = capture_here_a();        /* another call site of a */
	ids[3] = capture_here_b();
	assert_int_equal(ids[0], ids[1]);
	assert_int_not_equal(ids[0], ids[2]);
	assert_int_not_equal(ids[2], ids[3]);
	/* The innermost frame of a capture is in capture_here_a. */
	const struct hl_stack *s = hl_stack_get(ids[0]);
	uintptr_t fn = (uintptr_t)capture_here_a;
	bool found = false;
	for (unsigned i = 0; i < s->depth; i++)
		found |= s->frames[i] > fn && s->frames[i] < fn + 256;
	assert_true(found);
}

static __attribute__((noinline)) unsigned deep(unsigned levels, bool *truncated)
{
	uint64_t frames[4];
	void *raw[HL_CAPTURE_RAW(4)];
	if (levels == 0)
		return hl_stack_capture(frames, raw, 4, truncated);
	unsigned n = deep(levels - 1, truncated);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return n;
}

static void test_capture_truncates(void **state)
{
	bool truncated = false;
	assert_int_equal(deep(10, &truncated), 4);
	assert_true(truncated);
}

/* The memo is paused after a window of too few hits, for HL_MEMO_PAUSE
 * captures, then measured again; a window of enough hits keeps it on. */
static void test_memo_policy(void **state)
{
	struct hl_memo_policy m = { 0 };
	unsigned enough = (HL_MEMO_WINDOW * HL_MEMO_MIN_HIT_PERCENT + 99) / 100;

	for (unsigned i = 0; i < HL_MEMO_WINDOW; i++) {
		assert_true(hl_memo_policy_use(&m));
		hl_memo_policy_record(&m, i < enough);
	}
	assert_true(hl_memo_policy_use(&m)); /* enough hits: still on */
	for (unsigned i = 0; i < HL_MEMO_WINDOW; i++) {
		if (i > 0)
			assert_true(hl_memo_policy_use(&m));
		hl_memo_policy_record(&m, i < enough - 1);
	}
	for (unsigned i = 0; i < HL_MEMO_PAUSE; i++)
		assert_false(hl_memo_policy_use(&m));
	assert_true(hl_memo_policy_use(&m)); /* measured again */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_frames_same_id),
		cmocka_unit_test(test_different_frames_different_id),
		cmocka_unit_test(test_memo_steps_own_room),
		cmocka_unit_test(test_many_stacks_and_growth),
		cmocka_unit_test(test_concurrent_interning),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_capture_truncates),
		cmocka_unit_test(test_memo_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
