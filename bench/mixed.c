/*
 * mixed: a window of live blocks of mixed sizes: 99% of 16..4096 bytes,
 * memset whole, and 1% of 1..8 MiB, of which only the first and last byte are
 * touched (a program that maps a big buffer and uses its ends). Each step
 * frees a random slot and refills it. Before a free the first and last byte
 * (and the middle byte of small ones) are read into the checksum.
 *
 * usage: mixed [scale_percent]   (100 = 2M steps over 2000 live blocks)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MIXED_OPS 2000000ull
#define MIXED_WINDOW 2000
#define SMALL_MIN 16
#define SMALL_MAX 4096
#define LARGE_MIN (1ull << 20)
#define LARGE_MAX (8ull << 20)

struct slot {
	unsigned char *block; /* NULL while the slot is empty */
	size_t size;          /* bytes requested for block */
};

static struct slot slots[MIXED_WINDOW];

static uint64_t slot_release(struct slot *s, uint64_t sum)
{
	if (!s->block)
		return sum;
	sum = bench_mix(sum, s->block[0]);
	sum = bench_mix(sum, s->block[s->size - 1]);
	/* small blocks were memset whole; large ones have no seeded middle */
	if (s->size <= SMALL_MAX)
		sum = bench_mix(sum, s->block[s->size / 2]);
	free(s->block);
	s->block = NULL;
	return sum;
}

static void slot_fill(struct slot *s, struct bench_rng *rng)
{
	uint64_t r = bench_rng_next(rng);
	int large = r % 100 == 0;
	size_t size = large ? bench_rng_range(rng, LARGE_MIN, LARGE_MAX)
			    : bench_rng_range(rng, SMALL_MIN, SMALL_MAX);

	s->block = malloc(size);
	if (!s->block) {
		perror("mixed: malloc");
		exit(1);
	}
	s->size = size;
	if (!large)
		memset(s->block, (int)(r >> 8) & 0xff, size);
	s->block[0] = (unsigned char)(r >> 16);
	s->block[size - 1] = (unsigned char)(r >> 24);
}

int main(int argc, char **argv)
{
	uint64_t ops = bench_scaled(MIXED_OPS, argc, argv, 1);
	struct bench_rng rng;
	uint64_t sum = 0;

	bench_rng_seed(&rng, 4);
	for (uint64_t i = 0; i < ops; i++) {
		struct slot *s = &slots[bench_rng_next(&rng) % MIXED_WINDOW];

		sum = slot_release(s, sum);
		slot_fill(s, &rng);
	}
	for (size_t i = 0; i < MIXED_WINDOW; i++)
		sum = slot_release(&slots[i], sum);
	bench_checksum_print(sum);
	return 0;
}
