/*
 * libhook/lock.h: a futex mutex that never allocates.
 *
 * pthread mutexes would do, but they cannot be used before libpthread's
 * state is set up in every libc we might meet, and we need one that a forked
 * child can simply reset. States: 0 unlocked, 1 locked, 2 locked with
 * waiters (Drepper, "Futexes Are Tricky", mutex3). A short spin first,
 * because arena critical sections are a few hundred nanoseconds.
 */
#ifndef HL_LOCK_H
#define HL_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>

struct hl_lock {
	_Atomic int state;
};

#define HL_LOCK_INIT { 0 }

void hl_lock_slow(struct hl_lock *lock);
void hl_unlock_slow(struct hl_lock *lock);

static inline bool hl_trylock(struct hl_lock *lock)
{
	int expected = 0;
	return atomic_compare_exchange_strong_explicit(&lock->state, &expected, 1,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static inline void hl_lock(struct hl_lock *lock)
{
	if (__builtin_expect(!hl_trylock(lock), 0))
		hl_lock_slow(lock);
}

static inline void hl_unlock(struct hl_lock *lock)
{
	if (__builtin_expect(atomic_exchange_explicit(&lock->state, 0,
						      memory_order_release) != 1, 0))
		hl_unlock_slow(lock);
}

static inline bool hl_lock_is_held(struct hl_lock *lock)
{
	return atomic_load_explicit(&lock->state, memory_order_relaxed) != 0;
}

/* After fork() only the calling thread exists: whatever it held is reset. */
static inline void hl_lock_reset(struct hl_lock *lock)
{
	atomic_store_explicit(&lock->state, 0, memory_order_relaxed);
}

#endif /* HL_LOCK_H */
