/* tests/run/progs/leak_deep.c: a leak 300 calls deep, deeper than the
 * default capture depth (256, the most the hook captures): the innermost
 * frames (the leaking function and the recursion nearest to it) must be
 * the ones kept, and the report must say the stack was cut. */
#include <stdlib.h>

void *deep_leak(void);
__attribute__((noinline)) void *deep_leak(void)
{
	return malloc(77); /* LEAK-DEEP */
}

void *recurse(int depth);
__attribute__((noinline)) void *recurse(int depth)
{
	void *p = depth > 0 ? recurse(depth - 1) : deep_leak(); /* RECURSE-CALL */

	/* After the call, so the compiler cannot turn it into a jump. */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(void)
{
	void *volatile p = recurse(300);

	p = NULL;
	return 0;
}
