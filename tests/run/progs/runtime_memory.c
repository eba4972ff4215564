/* tests/run/progs/runtime_memory.c: leaks nothing of its own, but leaves
 * the memory glibc keeps for itself: a thread's DTV (pthread_create), the
 * dynamic linker's records of a dlopen'd library and dlerror's state. The
 * built-in suppressions cover dlerror's state only: valgrind reports the
 * others (still reachable, the DTV possibly lost) when its freeres is off. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static void *thread_main(void *arg)
{
	return arg;
}

int main(void)
{
	pthread_t t;
	void *handle;

	if (pthread_create(&t, NULL, thread_main, NULL) || pthread_join(t, NULL))
		return 1;
	handle = dlopen("libm.so.6", RTLD_NOW);
	if (!handle) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	/* last: the next dlopen would free the state this one leaves */
	if (dlopen("libheapledger-test-missing.so", RTLD_NOW) || !dlerror())
		return 1;
	return 0;
}
