/*
 * libhook/lock.c: slow paths of the futex mutex in lock.h.
 */
#include "lock.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HL_LOCK_SPINS 64

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* free() must not change errno, so the syscalls below preserve it. */
static void futex_wait(_Atomic int *addr, int value)
{
	int saved = errno;
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
	errno = saved;
}

static void futex_wake_one(_Atomic int *addr)
{
	int saved = errno;
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

void hl_lock_slow(struct hl_lock *lock)
{
	for (int i = 0; i < HL_LOCK_SPINS; i++) {
		cpu_relax();
		if (atomic_load_explicit(&lock->state, memory_order_relaxed) == 0 &&
		    hl_trylock(lock))
			return;
	}
	/* Mark contended; whoever unlocks sees 2 and wakes a waiter. */
	while (atomic_exchange_explicit(&lock->state, 2, memory_order_acquire) != 0)
		futex_wait(&lock->state, 2);
	hl_lock_owner_set(lock, true);
}

void hl_unlock_slow(struct hl_lock *lock)
{
	futex_wake_one(&lock->state);
}
