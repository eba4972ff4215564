/* tests/run/progs/early_lib.c: a library whose constructor runs before the
 * hook's (it is a dependency of the program; the preloaded hook is
 * initialised after it) and allocates: one block freed, one leaked. Both
 * must be counted, and the leak must carry its stack. */
#include <stdlib.h>

void *early_kept;

void *early_alloc(void);
__attribute__((noinline)) void *early_alloc(void)
{
	return malloc(33); /* EARLY-LEAK */
}

__attribute__((constructor)) static void early_ctor(void)
{
	free(malloc(44));
	early_kept = early_alloc();
	early_kept = NULL;
}
