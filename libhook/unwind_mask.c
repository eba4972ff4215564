/*
 * libhook/unwind_mask.c: libunwind's signal blocking, batched.
 *
 * Debian builds libunwind with CONFIG_BLOCK_SIGNALS: around each of its
 * internal locks (the memory pool of register states, the search of a
 * module's unwind table) it blocks every signal and restores the mask after,
 * so that a signal handler which unwinds cannot find a lock held by the code
 * it interrupted. That is two rt_sigprocmask system calls per lock, about ten
 * for every return address libunwind has not seen before: 54k system calls
 * in a quarter-size cc1 run, 8% of its time under the hook.
 *
 * The hook therefore defines sigprocmask. Outside a capture it is exactly
 * glibc's (which is pthread_sigmask with the result in errno). A capture
 * that is likely to make libunwind lock blocks every signal itself, once,
 * around the whole unwind; the calls libunwind makes inside it are answered
 * without a system call, with the mask from before the capture, which is the
 * one libunwind would have saved and restored. That is libunwind's own
 * guarantee over a longer window: no handler runs while it holds a lock.
 * Only calls from libunwind's code in a holding capture are answered so; a
 * handler cannot run then, and every other call goes to the kernel.
 *
 * Whether to hold is learnt per thread from the calls libunwind made in
 * recent captures (counted in both modes): holding costs two system calls,
 * worth it when captures average more than that. A long-running program
 * soon stops seeing new return addresses, and then never holds. A thread
 * starts out holding: its first captures are the ones that meet new return
 * addresses (a short test's first capture made 146 calls, a third of its
 * system calls). A walk known to meet frames libunwind has not seen (the
 * exit's walk to main, ~80 calls) holds whatever the score says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "track.h"

/* Calls per capture, as a moving average in sixteenths (weight 1/8). */
#define SCORE_ONE 16u
#define SCORE_HOLD (2u * SCORE_ONE) /* above: holding is cheaper */
#define SCORE_START (8u * SCORE_ONE) /* a new thread's: as if it had just made 8 */

static uintptr_t unwind_lo, unwind_hi;   /* libunwind's text; 0, 0: unknown */
static sigset_t all_signals;

static HL_TLS bool tls_in_capture;       /* between begin and end */
static HL_TLS bool tls_held;             /* ...and every signal blocked by us */
static HL_TLS uint32_t tls_calls;        /* libunwind's calls in this capture */
static HL_TLS uint32_t tls_score = SCORE_START; /* moving average of tls_calls */
static HL_TLS sigset_t tls_saved;        /* the mask before a holding capture */

void hl_unwind_mask_init(uintptr_t libunwind_function)
{
	sigfillset(&all_signals);
	if (!hl_stack_module_range(libunwind_function, &unwind_lo, &unwind_hi))
		unwind_lo = unwind_hi = 0;
}

static bool from_libunwind(uintptr_t return_address)
{
	return return_address >= unwind_lo && return_address < unwind_hi;
}

static bool begin(bool hold)
{
	tls_calls = 0;
	if (hold && unwind_hi && pthread_sigmask(SIG_SETMASK, &all_signals, &tls_saved) == 0) {
		/* Set only once every signal is blocked: no handler can see it. */
		tls_held = true;
	}
	tls_in_capture = true;
	return tls_held;
}

bool hl_unwind_mask_begin(void)
{
	return begin(tls_score > SCORE_HOLD);
}

bool hl_unwind_mask_begin_held(void)
{
	return begin(true);
}

void hl_unwind_mask_end(void)
{
	tls_in_capture = false;
	if (tls_held) {
		tls_held = false;
		pthread_sigmask(SIG_SETMASK, &tls_saved, NULL);
	}
	uint32_t calls = tls_calls > 64 ? 64 : tls_calls;
	tls_score = tls_score - tls_score / 8 + calls * SCORE_ONE / 8;
}

/* HL_NO_TSAN: libunwind's per-thread cache destructor (a pthread key's)
 * calls sigprocmask while the thread is torn down, after ThreadSanitizer has
 * finished that thread, whose trace an instrumented function entry would
 * then write: the TSan build of the threaded tests crashed there. This
 * function reads and writes only its own thread's variables, so leaving it
 * unchecked hides no race. */
HL_API HL_NO_TSAN int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (hl_unlikely(tls_in_capture) &&
	    from_libunwind((uintptr_t)__builtin_return_address(0))) {
		tls_calls++;
		if (tls_held) {
			if (old)
				*old = tls_saved;
			return 0;
		}
	}
	int err = pthread_sigmask(how, set, old);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
