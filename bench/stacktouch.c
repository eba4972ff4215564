/* bench/stacktouch.c FRAMES [STACK_KIB]: how much of a thread's stack one
 * malloc and free at the bottom of a FRAMES-deep recursion touch. The
 * thread runs on a stack of STACK_KIB (default 64) given by
 * pthread_attr_setstack, painted with a pattern first; afterwards the
 * lowest byte no longer holding it says how deep the stack was used
 * (glibc puts the thread's descriptor and static TLS at the top of such a
 * stack: they count too). The thread's first allocation is the one
 * measured: under the hook a stack memo miss, a libunwind walk. Prints the
 * bytes touched. bench/README.md "Stack depth" has the figures. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAINT 0xa5

static unsigned frames;

__attribute__((noinline)) static void down(unsigned n)
{
	if (n > 0) {
		down(n - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	void *volatile p = malloc(40);
	free(p);
}

static void *run(void *arg)
{
	down(frames);
	return arg;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: stacktouch FRAMES [STACK_KIB]\n");
		return 2;
	}
	frames = (unsigned)strtoul(argv[1], NULL, 10);
	size_t bytes = (argc > 2 ? strtoul(argv[2], NULL, 10) : 64) * 1024;
	unsigned char *stack = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		return 1;
	memset(stack, PAINT, bytes);
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	if (pthread_attr_setstack(&attr, stack, bytes) != 0 ||
	    pthread_create(&t, &attr, run, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	size_t low = 0;
	while (low < bytes && stack[low] == PAINT)
		low++;
	printf("%zu\n", bytes - low);
	return 0;
}
