/* tests/run/progs/realloc_zero.c: realloc(p, 0) frees p, like glibc, so
 * the only leak is the one 24-byte block kept_block() leaks on purpose. */
#include <stdlib.h>

void *kept_block(void);
__attribute__((noinline)) void *kept_block(void)
{
	return malloc(24); /* LEAK-REALLOC-ZERO-KEPT */
}

int main(void)
{
	for (int i = 0; i < 100; i++) {
		void *p = malloc(40 + (size_t)i);
		void *volatile q = realloc(p, 0); /* frees p, returns NULL */

		if (q != NULL)
			return 1;
	}
	void *volatile keep = kept_block();

	keep = NULL;
	return 0;
}
