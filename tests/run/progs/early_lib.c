/* tests/run/progs/early_lib.c: a library whose constructor runs before the
 * hook's (it is a dependency of the program; the preloaded hook is
 * initialised after it) and allocates: one block freed, one leaked. Both
 * must be counted, and the leak must carry its stack.
 *
 * EARLY_MANY=N: N more blocks allocated and freed first, past the hook's
 * early log when N is large: those events cannot be sent, and the report
 * must say how many were dropped. */
#include <stdlib.h>

void *early_kept;

void *early_alloc(void);
__attribute__((noinline)) void *early_alloc(void)
{
	return malloc(33); /* EARLY-LEAK */
}

__attribute__((constructor)) static void early_ctor(void)
{
	const char *many = getenv("EARLY_MANY");

	for (long i = many ? atol(many) : 0; i > 0; i--)
		free(malloc(8));
	free(malloc(44));
	early_kept = early_alloc();
	early_kept = NULL;
}
