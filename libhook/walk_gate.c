/*
 * libhook/walk_gate.c: no thread of ours is inside libunwind or
 * dl_iterate_phdr when the process forks.
 *
 * dl_iterate_phdr holds glibc's dl_load_write_lock while it runs, and
 * libunwind calls it for every return address it has not seen before (to
 * find that module's unwind tables); libunwind also has locks of its own
 * (its register-state cache, its memory pools). fork() copies a lock that
 * another thread holds, and glibc resets only dl_load_lock and
 * dl_load_tls_lock in the child, not that one: the child's first capture
 * through a new call site then waited forever for a thread that does not
 * exist in it (a fork while other threads allocated for the first time).
 * The program asked for none of this; its child must not hang.
 *
 * So the hook's walks (stack captures, its own dl_iterate_phdr calls) pass
 * this gate, and fork's prepare handler closes it before it takes any of
 * the hook's locks: it waits for the walks under way to end (they hold none
 * of the hook's locks and need nothing from the forking thread), and a walk
 * that starts meanwhile waits until fork has returned. A walker counts
 * itself in, then looks at `forking`; the forker counts itself in, then
 * looks at `walkers` (both sequentially consistent): one sees the other.
 * A walk made with one of the locks fork's prepare handler takes held (the
 * leak scan's roots) needs no gate: the forker waits for that lock.
 *
 * The program's own dl_iterate_phdr calls pass the gate too (the hook
 * defines dl_iterate_phdr): a thread of the program inside one at fork
 * holds the same lock, and the child's first capture would wait for it
 * although the child itself never asked for a walk.
 *
 * Both waits are bounded, so the gate cannot hang the program either: a
 * walk of another thread that has not ended after GATE_FORK_WAIT_MS (it
 * waits for a lock the forking program holds, say) lets the fork go on, and
 * the child then makes no walk of its own (its captures count as lost
 * stacks, which the report names) rather than risk one; a walker whose
 * fork takes longer than GATE_WALK_WAIT_MS goes on.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "track.h"

#define GATE_FORK_WAIT_MS 2000
#define GATE_WALK_WAIT_MS 10000

static _Atomic unsigned walkers;  /* threads inside a gated walk */
static _Atomic unsigned forking;  /* forks between prepare and return */
static bool walks_off;            /* a child whose parent's walk may hold a lock */
static HL_TLS unsigned tls_walking; /* this thread's walk depth */
static HL_TLS bool tls_drained;   /* this thread's fork found no walk left */

static void futex_wait_ms(_Atomic unsigned *word, unsigned value, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic unsigned *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

bool hl_walk_begin(void)
{
	if (walks_off)
		return false;
	if (tls_walking++)
		return true;
	uint64_t start = 0;
	for (;;) {
		atomic_fetch_add(&walkers, 1);
		unsigned f = atomic_load(&forking);
		if (f == 0)
			return true;
		if (start == 0)
			start = hl_os_now_ms();
		else if (hl_os_now_ms() - start >= GATE_WALK_WAIT_MS)
			return true; /* counted in: a fork that slow waits for us */
		/* A fork is being prepared: let it go first. */
		if (atomic_fetch_sub(&walkers, 1) == 1)
			futex_wake_all(&walkers);
		futex_wait_ms(&forking, f, 10);
	}
}

void hl_walk_end(void)
{
	if (--tls_walking)
		return;
	if (atomic_fetch_sub(&walkers, 1) == 1 && atomic_load(&forking))
		futex_wake_all(&walkers);
}

void hl_walk_fork_prepare(void)
{
	unsigned own = tls_walking ? 1 : 0; /* a fork from a handler mid-walk */
	uint64_t start = hl_os_now_ms();
	atomic_fetch_add(&forking, 1);
	tls_drained = true;
	for (unsigned n; (n = atomic_load(&walkers)) > own;) {
		if (hl_os_now_ms() - start >= GATE_FORK_WAIT_MS) {
			tls_drained = false;
			break;
		}
		futex_wait_ms(&walkers, n, 1);
	}
}

void hl_walk_fork_parent(void)
{
	if (atomic_fetch_sub(&forking, 1) == 1)
		futex_wake_all(&forking);
}

void hl_walk_fork_child(void)
{
	atomic_store(&forking, 0);
	atomic_store(&walkers, tls_walking ? 1 : 0);
	if (!tls_drained)
		walks_off = true;
}

bool hl_walks_off(void)
{
	return walks_off;
}

/* ThreadSanitizer intercepts dl_iterate_phdr itself and calls it while it
 * initializes, before any instrumented code may run; a hook linked into a
 * TSan-built test would replace that interceptor and crash there. Only the
 * threaded unit tests are built so, never the preloaded library. */
#ifndef HL_TSAN_BUILD
typedef int (*phdr_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
static _Atomic(phdr_fn) real_iterate;

/* Every caller's: the program's, libunwind's, the hook's. In a child that
 * must not walk, the call is the program's own business and goes through. */
HL_API int dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data)
{
	phdr_fn real = atomic_load_explicit(&real_iterate, memory_order_acquire);
	if (real == NULL) {
		real = (phdr_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
		if (real == NULL)
			return 0;
		atomic_store_explicit(&real_iterate, real, memory_order_release);
	}
	if (!hl_walk_begin())
		return real(callback, data);
	int ret = real(callback, data);
	hl_walk_end();
	return ret;
}
#endif /* HL_TSAN_BUILD */
