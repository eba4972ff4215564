/*
 * libhook/threadstart.c: pthread_create, seen before the new thread exists.
 *
 * While a process has one thread its hook counts instead of sending events
 * ("Counting in the hook", wire.h), without locks; that must end before a
 * second thread can allocate: from then on each thread counts into a delta
 * of its own (tally_hook.h). pthread_create is where every thread but
 * glibc's own helpers begins (std::thread, OpenMP and the rest call it), so
 * the switch is made here, in the creating thread, before the real call. A
 * thread that starts another way ends the counting at its first allocation
 * (cache.c). So does a fork child's deferred snapshot of its heap (wire.h,
 * HL_HOOK_FORK_SNAPSHOT), which must be walked while one thread runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "emit_int.h"
#include "tally_hook.h"

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

HL_API int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			  void *(*start)(void *), void *arg)
{
	static pthread_create_fn real;
	if (real == NULL) {
		real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (real == NULL)
			return EAGAIN;
	}
	hl_tally_threads_begin(); /* the counting goes on per thread */
	hl_stack_threads_begin();
	/* A fork child's snapshot walks the heap while nothing else changes it. */
	if (hl_emit_is_deferred())
		hl_emit_fork_resolve(NULL);
	return real(thread, attr, start, arg);
}
