/*
 * capture: what one stack capture costs. Recurses to a depth, then calls
 * malloc(32)+free in a loop from there; the time per pair under the hook
 * minus the time under stacks=0 is the capture (and its event) cost.
 *
 * usage: capture DEPTH SITES [pairs]
 *   DEPTH  frames between main and the malloc call (plus main and libc's 3)
 *   SITES  1: the same call site every time (the stack memo's best case);
 *          N > 1: the allocation moves between N different depths in turn,
 *          each a different stack at a different stack address, so a
 *          per-thread memo of fewer than N entries misses every time.
 * Prints "ns_per_pair X" and a checksum line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static __attribute__((noinline)) void pairs_at(int depth, long pairs)
{
	if (depth > 0) {
		pairs_at(depth - 1, pairs);
		sink++; /* not a tail call: every level keeps its frame */
		return;
	}
	for (long i = 0; i < pairs; i++) {
		char *p = malloc(32);
		p[0] = (char)i;
		sink += (unsigned char)p[0];
		free(p);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int depth = atoi(argv[1]), sites = atoi(argv[2]);
	long pairs = argc > 3 ? atol(argv[3]) : 2000000;
	if (depth < 0 || sites < 1 || pairs < 1)
		return 2;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sites == 1) {
		pairs_at(depth, pairs);
	} else {
		for (long i = 0; i < pairs; i++)
			pairs_at(depth + (int)(i % sites), 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("ns_per_pair %.1f\n", ns / (double)pairs);
	printf("checksum %lu\n", sink);
	return 0;
}
