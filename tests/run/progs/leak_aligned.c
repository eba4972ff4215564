/* tests/run/progs/leak_aligned.c: each aligned allocation function leaks
 * one block from its own function; every one must be tracked with its
 * size (pvalloc's rounded up to a page, as glibc and valgrind give it). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void *leak_memalign(void);
NOINLINE void *leak_memalign(void)
{
	return memalign(64, 100); /* LEAK-MEMALIGN */
}

NOINLINE void *leak_valloc(void);
NOINLINE void *leak_valloc(void)
{
	return valloc(200); /* LEAK-VALLOC */
}

NOINLINE void *leak_pvalloc(void);
NOINLINE void *leak_pvalloc(void)
{
	return pvalloc(300); /* LEAK-PVALLOC */
}

NOINLINE void *leak_aligned_alloc(void);
NOINLINE void *leak_aligned_alloc(void)
{
	return aligned_alloc(128, 384); /* LEAK-ALIGNED-ALLOC */
}

NOINLINE void *leak_posix_memalign(void);
NOINLINE void *leak_posix_memalign(void)
{
	void *p = NULL;

	if (posix_memalign(&p, 256, 500)) /* LEAK-POSIX-MEMALIGN */
		return NULL;
	return p;
}

int main(void)
{
	void *(*const leakers[])(void) = { leak_memalign, leak_valloc, leak_pvalloc,
					   leak_aligned_alloc, leak_posix_memalign };

	for (size_t i = 0; i < sizeof(leakers) / sizeof(leakers[0]); i++) {
		void *volatile p = leakers[i]();

		if (p == NULL)
			return 1;
		p = NULL;
	}
	return 0;
}
