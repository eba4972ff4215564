/* bench/bigframe.c [scale_percent]: churn's loop (a window of live blocks,
 * one replaced each step) run by a function whose frame holds a 32 KiB
 * buffer, as C programs keep a line or path buffer on the stack: every
 * malloc's caller is the loop, and the return address above it lies 32 KiB
 * further up. The hook's stack memo must reach over that frame to reuse a
 * captured stack (libhook/stackmemo.c); otherwise each allocation is a
 * libunwind walk. bench/README.md, "Large frames". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BIGFRAME_OPS 3000000ull
#define BIGFRAME_WINDOW 4096
#define BIGFRAME_BUFFER (32 * 1024)

static unsigned char *slots[BIGFRAME_WINDOW];

__attribute__((noinline)) static uint64_t loop(uint64_t ops)
{
	char line[BIGFRAME_BUFFER]; /* the frame's size, as a program's buffer */
	struct bench_rng rng;
	uint64_t sum = 0;

	memset(line, 1, sizeof(line));
	bench_rng_seed(&rng, 1);
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r = bench_rng_next(&rng);
		unsigned char **s = &slots[r % BIGFRAME_WINDOW];
		size_t size = 8 + (r >> 20) % 505;

		if (*s) {
			sum = bench_mix(sum, (*s)[0]);
			free(*s);
		}
		*s = malloc(size);
		if (!*s) {
			perror("bigframe: malloc");
			exit(1);
		}
		(*s)[0] = (unsigned char)line[(r >> 40) % sizeof(line)] + (unsigned char)(r >> 32);
		line[(r >> 12) % sizeof(line)] = (char)r;
	}
	return sum;
}

int main(int argc, char **argv)
{
	uint64_t sum = loop(bench_scaled(BIGFRAME_OPS, argc, argv, 1));

	for (size_t i = 0; i < BIGFRAME_WINDOW; i++) {
		if (slots[i]) {
			sum = bench_mix(sum, slots[i][0]);
			free(slots[i]);
		}
	}
	bench_checksum_print(sum);
	return 0;
}
