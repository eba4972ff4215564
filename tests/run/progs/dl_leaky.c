/* tests/run/progs/dl_leaky.c: a library that leaks and is dlclose'd before
 * the program exits; its function must still be named in the report. */
#include <stdlib.h>

void *dl_leak(void);
__attribute__((noinline)) void *dl_leak(void)
{
	return malloc(200); /* LEAK-DLCLOSE */
}

/* Its constructor leaks too: that allocation is made inside dlopen, and the
 * hook's own dlopen (it interposes it) must not appear in its stack. */
void *dl_ctor_block;
__attribute__((constructor)) static void dl_ctor(void)
{
	dl_ctor_block = malloc(72); /* LEAK-DL-CTOR */
}
