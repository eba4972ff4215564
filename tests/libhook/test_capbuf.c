/*
 * tests/libhook/test_capbuf.c: each thread's capture buffers
 * (libhook/capbuf.c) and the small fallback a capture uses without them
 * (track.c): a capture from a signal handler that interrupted another
 * leaves the interrupted one's buffers alone, and a thread whose buffers
 * are gone still gets its stacks. Linked with the hook's objects
 * (HL_UNIT_TEST: no frames are skipped).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "track.h"

#define PATTERN 0x5a5a5a5a5a5a5a5au

static void test_take_give(void **state)
{
	struct hl_capture_buf *b = hl_capture_buf_take();
	assert_non_null(b);
	assert_null(hl_capture_buf_take()); /* in use */
	hl_capture_buf_give(b);
	struct hl_capture_buf *again = hl_capture_buf_take();
	assert_ptr_equal(again, b); /* kept for the thread's life */
	hl_capture_buf_give(again);
}

static volatile uint32_t handler_id;

__attribute__((noinline)) static void handler(int sig)
{
	(void)sig;
	handler_id = hl_track_error_stack();
}

__attribute__((noinline)) static unsigned recurse(unsigned n, void (*at_bottom)(void))
{
	if (n == 0) {
		at_bottom();
		return 0;
	}
	unsigned r = recurse(n - 1, at_bottom) + 1;
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return r;
}

static void raise_usr1(void)
{
	raise(SIGUSR1);
}

/* Frame j of stack id lies in fn's first 512 bytes. */
static bool frame_in(uint32_t id, unsigned j, const void *fn)
{
	const struct hl_stack *s = hl_stack_get(id);
	uintptr_t lo = (uintptr_t)fn;
	return s && j < s->depth && s->frames[j] >= lo && s->frames[j] < lo + 512;
}

static bool any_frame_in(uint32_t id, const void *fn)
{
	const struct hl_stack *s = hl_stack_get(id);
	for (unsigned j = 0; s && j < s->depth; j++)
		if (frame_in(id, j, fn))
			return true;
	return false;
}

/* A signal handler's capture while the thread's buffers hold an
 * interrupted capture's frames: its own stack, whole up to the small
 * depth, and the interrupted capture's frames untouched. */
static void test_nested_capture_in_handler(void **state)
{
	struct sigaction sa = { .sa_handler = handler }, old;
	sigaction(SIGUSR1, &sa, &old);
	struct hl_capture_buf *b = hl_capture_buf_take();
	assert_non_null(b);
	for (unsigned i = 0; i < HL_WIRE_MAX_FRAMES; i++)
		b->frames[i] = PATTERN + i;
	for (unsigned i = 0; i < HL_CAPTURE_RAW(HL_WIRE_MAX_FRAMES); i++)
		b->raw[i] = (void *)(uintptr_t)(PATTERN - i);
	handler_id = 0;
	recurse(100, raise_usr1);
	for (unsigned i = 0; i < HL_WIRE_MAX_FRAMES; i++)
		assert_true(b->frames[i] == PATTERN + i);
	for (unsigned i = 0; i < HL_CAPTURE_RAW(HL_WIRE_MAX_FRAMES); i++)
		assert_true(b->raw[i] == (void *)(uintptr_t)(PATTERN - i));
	hl_capture_buf_give(b);
	sigaction(SIGUSR1, &old, NULL);

	const struct hl_stack *s = hl_stack_get(handler_id);
	assert_non_null(s);
	assert_int_equal(s->depth, HL_STACK_SMALL_DEPTH); /* 100 frames deep: cut */
	assert_true(s->truncated);
	assert_true(any_frame_in(handler_id, (const void *)handler));
	assert_true(any_frame_in(handler_id, (const void *)recurse));
}

static volatile uint32_t bottom_id;

static void capture_at_bottom(void)
{
	bottom_id = hl_track_error_stack();
}

/* With the thread's buffers: every frame depth= asks for. */
static void test_whole_depth(void **state)
{
	unsigned saved = hl_options.stack_depth;
	hl_options.stack_depth = HL_WIRE_MAX_FRAMES;
	recurse(300, capture_at_bottom);
	hl_options.stack_depth = saved;
	const struct hl_stack *s = hl_stack_get(bottom_id);
	assert_non_null(s);
	assert_int_equal(s->depth, HL_WIRE_MAX_FRAMES);
	assert_true(s->truncated);
	assert_true(any_frame_in(bottom_id, (const void *)capture_at_bottom)); /* innermost kept */
}

static void *ended_thread(void *arg)
{
	struct hl_capture_buf *b = hl_capture_buf_take();
	if (b == NULL)
		return "no buffers at the start";
	hl_capture_buf_give(b);
	hl_capture_buf_thread_exit();
	if (hl_capture_buf_take() != NULL)
		return "buffers after the thread's end";
	recurse(10, capture_at_bottom);
	return NULL;
}

/* After a thread's end its late captures use the small buffers. */
static void test_after_thread_exit(void **state)
{
	pthread_t t;
	void *why = "not run";
	bottom_id = 0;
	assert_int_equal(pthread_create(&t, NULL, ended_thread, NULL), 0);
	pthread_join(t, &why);
	if (why)
		fail_msg("%s", (const char *)why);
	assert_true(any_frame_in(bottom_id, (const void *)capture_at_bottom));
	assert_true(any_frame_in(bottom_id, (const void *)recurse));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_give),
		cmocka_unit_test(test_nested_capture_in_handler),
		cmocka_unit_test(test_whole_depth),
		cmocka_unit_test(test_after_thread_exit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
