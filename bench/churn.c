/*
 * churn: single-thread small-object churn. A window of live blocks; each step
 * frees a random slot and refills it with a new block of 8..512 bytes, writing
 * its first and last byte. Those bytes are read back before the free, into the
 * checksum, so an allocator that hands out overlapping blocks is caught.
 *
 * usage: churn [scale_percent]   (100 = 10M malloc/free pairs)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define CHURN_OPS 10000000ull
#define CHURN_WINDOW 10000
#define CHURN_MIN_SIZE 8
#define CHURN_MAX_SIZE 512

struct slot {
	unsigned char *block; /* NULL while the slot is empty */
	uint32_t size;        /* bytes requested for block */
};

static struct slot slots[CHURN_WINDOW];

static uint64_t slot_release(struct slot *s, uint64_t sum)
{
	if (!s->block)
		return sum;
	sum = bench_mix(sum, s->block[0]);
	sum = bench_mix(sum, s->block[s->size - 1]);
	free(s->block);
	s->block = NULL;
	return sum;
}

static void slot_fill(struct slot *s, struct bench_rng *rng)
{
	uint64_t r = bench_rng_next(rng);
	uint32_t size = CHURN_MIN_SIZE + r % (CHURN_MAX_SIZE - CHURN_MIN_SIZE + 1);

	s->block = malloc(size);
	if (!s->block) {
		perror("churn: malloc");
		exit(1);
	}
	s->size = size;
	s->block[0] = (unsigned char)(r >> 32);
	s->block[size - 1] = (unsigned char)(r >> 40);
}

int main(int argc, char **argv)
{
	uint64_t ops = bench_scaled(CHURN_OPS, argc, argv, 1);
	struct bench_rng rng;
	uint64_t sum = 0;

	bench_rng_seed(&rng, 1);
	for (uint64_t i = 0; i < ops; i++) {
		struct slot *s = &slots[bench_rng_next(&rng) % CHURN_WINDOW];

		sum = slot_release(s, sum);
		slot_fill(s, &rng);
	}
	for (size_t i = 0; i < CHURN_WINDOW; i++)
		sum = slot_release(&slots[i], sum);
	bench_checksum_print(sum);
	return 0;
}
