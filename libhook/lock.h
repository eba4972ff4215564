/*
 * libhook/lock.h: a futex mutex that never allocates.
 *
 * pthread mutexes would do, but they cannot be used before libpthread's
 * state is set up in every libc we might meet, and we need one that a forked
 * child can simply reset. States: 0 unlocked, 1 locked, 2 locked with
 * waiters (Drepper, "Futexes Are Tricky", mutex3). A short spin first,
 * because arena critical sections are a few hundred nanoseconds.
 *
 * Debug builds (HL_DEBUG >= 1) also record the owner, the holding thread's
 * pthread_self(), so hl_assert_held checks that the CALLER holds the lock,
 * not merely that some thread does (SQLite's mutex_held asks the same):
 * a _locked function reached from a thread that took no lock while another
 * thread happens to hold it passed the state-only check. Release builds
 * have no owner field and hl_lock_is_mine is constant true, never run.
 */
#ifndef HL_LOCK_H
#define HL_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#if HL_DEBUG >= 1
#include <pthread.h>
#endif

struct hl_lock {
	_Atomic int state;
#if HL_DEBUG >= 1
	_Atomic unsigned long owner; /* pthread_self() of the holder, 0 when free */
#endif
};

#define HL_LOCK_INIT { 0 }

#if HL_DEBUG >= 1
static inline void hl_lock_owner_set(struct hl_lock *lock, bool held)
{
	atomic_store_explicit(&lock->owner, held ? (unsigned long)pthread_self() : 0,
			      memory_order_relaxed);
}

/* The calling thread holds lock (the one that locked it last). */
static inline bool hl_lock_is_mine(struct hl_lock *lock)
{
	return atomic_load_explicit(&lock->owner, memory_order_relaxed) ==
	       (unsigned long)pthread_self();
}
#else
static inline void hl_lock_owner_set(struct hl_lock *lock, bool held)
{
	(void)lock;
	(void)held;
}

static inline bool hl_lock_is_mine(struct hl_lock *lock)
{
	(void)lock;
	return true;
}
#endif

void hl_lock_slow(struct hl_lock *lock);
void hl_unlock_slow(struct hl_lock *lock);

static inline bool hl_trylock(struct hl_lock *lock)
{
	int expected = 0;
	bool taken = atomic_compare_exchange_strong_explicit(&lock->state, &expected, 1,
							     memory_order_acquire,
							     memory_order_relaxed);
	if (taken)
		hl_lock_owner_set(lock, true);
	return taken;
}

static inline void hl_lock(struct hl_lock *lock)
{
	if (__builtin_expect(!hl_trylock(lock), 0))
		hl_lock_slow(lock); /* sets the owner */
}

static inline void hl_unlock(struct hl_lock *lock)
{
	hl_lock_owner_set(lock, false);
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
	hl_lock_owner_set(lock, false);
	atomic_store_explicit(&lock->state, 0, memory_order_relaxed);
}

#endif /* HL_LOCK_H */
