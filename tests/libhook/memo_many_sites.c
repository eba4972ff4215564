/* tests/libhook/memo_many_sites.c: 40 rounds of allocations from 4096
 * call sites, one stack each: more stacks than the stack memo holds at
 * first (1024 sets of 4). A thread whose stacks do not fit grows its memo
 * to 4096 sets; one that could not would miss about half of them every
 * round, a libunwind walk each (and pause its memo for want of hits). */
#include <stdlib.h>

#define SITES 4096
#define ROUNDS 40

static void *blocks[SITES];

__attribute__((noinline)) static void *allocate(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
	return p;
}

/* Straight-line code: every site is its own call. */
#define SITE(n) blocks[(n)] = allocate(16);
#define SITES4(n) SITE(n) SITE((n) + 1) SITE((n) + 2) SITE((n) + 3)
#define SITES16(n) SITES4(n) SITES4((n) + 4) SITES4((n) + 8) SITES4((n) + 12)
#define SITES64(n) SITES16(n) SITES16((n) + 16) SITES16((n) + 32) SITES16((n) + 48)
#define SITES256(n) SITES64(n) SITES64((n) + 64) SITES64((n) + 128) SITES64((n) + 192)
#define SITES1024(n) SITES256(n) SITES256((n) + 256) SITES256((n) + 512) SITES256((n) + 768)

__attribute__((noinline)) static void allocate_everywhere(void)
{
	SITES1024(0)
	SITES1024(1024)
	SITES1024(2048)
	SITES1024(3072)
}

int main(void)
{
	int made = 0;
	for (int round = 0; round < ROUNDS; round++) {
		allocate_everywhere();
		for (int site = 0; site < SITES; site++) {
			made += blocks[site] != NULL;
			free(blocks[site]);
		}
	}
	return made == SITES * ROUNDS ? 0 : 1;
}
