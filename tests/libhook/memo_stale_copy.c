/* tests/libhook/memo_stale_copy.c: 20,000 allocations from one stack. When
 * the first is made, the allocating function's frame holds copies of its
 * own return address below the real one, as a frame's uninitialised locals
 * hold what a deeper call left there; later ones find zeros there. A stack
 * memo that finds a frame's return address by searching up the stack for
 * its value learns a copy's place, which no later allocation holds: each
 * of them would be a libunwind walk. */
#include <stdint.h>
#include <stdlib.h>

#define COPIES 16

__attribute__((noinline)) static void *allocate(int first, size_t n)
{
	volatile uintptr_t words[COPIES];
	for (int i = 0; i < COPIES; i++)
		words[i] = first ? (uintptr_t)__builtin_return_address(0) : 0;
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
	return words[0] == 1 ? NULL : p;
}

__attribute__((noinline)) static int loop(void)
{
	int made = 0;
	for (int i = 0; i < 20000; i++) {
		void *p = allocate(i == 0, 16 + (size_t)(i % 64));
		made += p != NULL;
		free(p);
	}
	return made;
}

int main(void)
{
	return loop() == 20000 ? 0 : 1;
}
