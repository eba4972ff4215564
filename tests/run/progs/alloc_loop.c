/*
 * tests/run/progs/alloc_loop.c: a busy program whose hook sends full event
 * batches (128 KiB each, past a connection's 64 KiB read buffer, so the
 * reporter must grow that buffer for every batch). It makes N malloc/free
 * pairs of 32 bytes, then leaks 16 blocks of 100 bytes (ALLOC-LOOP-LEAK)
 * and exits 3: a report that has every event counts N + 16 allocations and
 * N frees.
 *
 * usage: alloc_loop N
 */
#include <stdlib.h>

#define LEAKED 16

static void *leaked[LEAKED];

void leak_blocks(void);
__attribute__((noinline)) void leak_blocks(void)
{
	for (int i = 0; i < LEAKED; i++)
		leaked[i] = malloc(100); /* ALLOC-LOOP-LEAK */
}

int main(int argc, char **argv)
{
	long n = argc == 2 ? atol(argv[1]) : -1;

	if (n < 0)
		return 2;
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(32);

		free(p);
	}
	leak_blocks();
	for (int i = 0; i < LEAKED; i++)
		leaked[i] = (void *)((unsigned long)leaked[i] ^ 0x5555555555555555ul); /* hidden: definitely lost */
	return 3;
}
