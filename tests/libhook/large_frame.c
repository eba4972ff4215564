/* tests/libhook/large_frame.c: 20,000 allocations from one call site
 * inside a function whose frame holds a 64 KiB buffer: one stack, which the
 * hook's stack memo should capture once and then answer from memory
 * (libhook/stackmemo.c reaches over frames up to 256 KiB). */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void *allocate(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
	return p;
}

__attribute__((noinline)) static int loop(void)
{
	volatile char buffer[64 * 1024];
	int freed = 0;
	buffer[0] = 1;
	buffer[sizeof(buffer) - 1] = 2;
	for (int i = 0; i < 20000; i++) {
		void *p = allocate(16 + (size_t)(i % 64));
		freed += p != NULL;
		free(p);
	}
	return freed + buffer[0] + buffer[sizeof(buffer) - 1];
}

int main(void)
{
	return loop() == 20000 + 3 ? 0 : 1;
}
