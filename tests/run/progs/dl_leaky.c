/* tests/run/progs/dl_leaky.c: a library that leaks and is dlclose'd before
 * the program exits; its function must still be named in the report. */
#include <stdlib.h>

void *dl_leak(void);
__attribute__((noinline)) void *dl_leak(void)
{
	return malloc(200); /* LEAK-DLCLOSE */
}
