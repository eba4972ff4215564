/*
 * tests/libhook/test_unwind_mask.c: libunwind's signal blocking, batched
 * (libhook/unwind_mask.c). The tests point the module at this executable's
 * own text, so their sigprocmask calls count as libunwind's: captures whose
 * "unwinder" blocks and restores signals make the next ones hold every
 * signal themselves and answer those calls without a system call, with the
 * mask from before; the real mask is put back at the end; captures without
 * such calls stop holding; a new thread's first capture and a walk that
 * says it meets new frames hold; outside a capture sigprocmask is glibc's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <libunwind.h>

#include "track.h"

/* The thread's real mask, read without going through sigprocmask. */
static sigset_t real_mask(void)
{
	sigset_t m;
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &m), 0);
	return m;
}

static void assert_same_mask(const sigset_t *a, const sigset_t *b)
{
	for (int sig = 1; sig < NSIG; sig++)
		assert_int_equal(sigismember(a, sig), sigismember(b, sig));
}

/* What libunwind does around each of its locks. */
static void unwinder_lock_and_unlock(const sigset_t *expected_saved)
{
	sigset_t all, saved;
	sigfillset(&all);
	assert_int_equal(sigprocmask(SIG_SETMASK, &all, &saved), 0);
	assert_same_mask(&saved, expected_saved);
	sigset_t now = real_mask();
	assert_true(sigismember(&now, SIGINT));
	assert_true(sigismember(&now, SIGPROF));
	assert_int_equal(sigprocmask(SIG_SETMASK, &saved, NULL), 0);
}

/* Captures in which the unwinder does not lock until one does not hold;
 * returns how many held. */
static int captures_until_unheld(void)
{
	int captures = 0;
	bool held;
	while ((held = hl_unwind_mask_begin()) && captures < 100) {
		hl_unwind_mask_end();
		captures++;
	}
	hl_unwind_mask_end();
	assert_false(held);
	return captures;
}

static void test_holds_after_captures_that_lock(void **state)
{
	sigset_t usr1, before;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);
	before = real_mask();
	hl_unwind_mask_init((uintptr_t)unwinder_lock_and_unlock);

	/* Captures in which the unwinder does not lock stop holding. */
	assert_true(captures_until_unheld() < 30);
	sigset_t after = real_mask();
	assert_same_mask(&after, &before);

	/* Unheld, each of the unwinder's calls is real, and between them the
	 * mask is the program's. */
	bool held = hl_unwind_mask_begin();
	assert_false(held);
	for (int i = 0; i < 10; i++)
		unwinder_lock_and_unlock(&before);
	sigset_t between = real_mask();
	assert_same_mask(&between, &before);
	hl_unwind_mask_end();

	/* After a few such captures the next one holds. */
	int captures = 1;
	while (!(held = hl_unwind_mask_begin()) && captures < 10) {
		for (int i = 0; i < 10; i++)
			unwinder_lock_and_unlock(&before);
		hl_unwind_mask_end();
		captures++;
	}
	assert_true(held);
	assert_true(captures <= 3);
	/* Every signal is blocked for the whole capture; the unwinder's calls
	 * save the program's mask and restoring it changes nothing yet. */
	for (int i = 0; i < 10; i++)
		unwinder_lock_and_unlock(&before);
	sigset_t during = real_mask();
	assert_true(sigismember(&during, SIGUSR2));
	assert_true(sigismember(&during, SIGRTMIN + 5));
	hl_unwind_mask_end();
	after = real_mask();
	assert_same_mask(&after, &before);

	/* A walk that meets new frames holds whatever the score is. */
	captures_until_unheld();
	assert_true(hl_unwind_mask_begin_held());
	for (int i = 0; i < 10; i++)
		unwinder_lock_and_unlock(&before);
	during = real_mask();
	assert_true(sigismember(&during, SIGUSR2));
	hl_unwind_mask_end();
	after = real_mask();
	assert_same_mask(&after, &before);

	assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL), 0);
	hl_unwind_mask_init((uintptr_t)unw_backtrace);
}

/* A thread's first capture holds: it is the one that meets new return
 * addresses. */
static void *first_capture(void *arg)
{
	sigset_t *before = arg;
	bool held = hl_unwind_mask_begin();
	unwinder_lock_and_unlock(before);
	sigset_t during = real_mask();
	hl_unwind_mask_end();
	return (void *)(uintptr_t)(held && sigismember(&during, SIGUSR2));
}

static void test_new_thread_holds(void **state)
{
	pthread_t t;
	void *held_blocked;
	sigset_t before = real_mask();
	hl_unwind_mask_init((uintptr_t)unwinder_lock_and_unlock);
	assert_int_equal(pthread_create(&t, NULL, first_capture, &before), 0);
	assert_int_equal(pthread_join(t, &held_blocked), 0);
	assert_true(held_blocked != NULL);
	hl_unwind_mask_init((uintptr_t)unw_backtrace);
}

/* Outside a capture, and from code that is not the unwinder's, sigprocmask
 * changes the mask and reports errors as glibc's does. */
static void test_plain_sigprocmask(void **state)
{
	sigset_t usr2, old, now;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	hl_unwind_mask_init((uintptr_t)unw_backtrace);
	assert_int_equal(sigprocmask(SIG_BLOCK, &usr2, &old), 0);
	assert_false(sigismember(&old, SIGUSR2));
	now = real_mask();
	assert_true(sigismember(&now, SIGUSR2));
	errno = 0;
	assert_int_equal(sigprocmask(12345, &usr2, NULL), -1);
	assert_int_equal(errno, EINVAL);
	/* Inside a capture, a call from this file (not libunwind) is real too. */
	captures_until_unheld();
	bool held = hl_unwind_mask_begin();
	assert_int_equal(sigprocmask(SIG_UNBLOCK, &usr2, NULL), 0);
	now = real_mask();
	hl_unwind_mask_end();
	assert_false(held);
	assert_false(sigismember(&now, SIGUSR2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holds_after_captures_that_lock),
		cmocka_unit_test(test_new_thread_holds),
		cmocka_unit_test(test_plain_sigprocmask),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
