/*
 * realloc: string builders that grow by small appends, each append a realloc
 * to the exact new length (the pattern of naive string and vector code). Each
 * step picks a random unfinished builder and appends 1..32 bytes; a builder is
 * done at its target of 2..6 KiB. At the end of a round every builder's
 * contents go into the checksum and all are freed; then the next round starts.
 *
 * usage: realloc [scale_percent]   (100 = 1000 builders, 6 rounds)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BUILDERS 1000ull
#define ROUNDS 6
#define MIN_TARGET 2048
#define MAX_TARGET 6144
#define MAX_APPEND 32

struct builder {
	unsigned char *text; /* exactly len bytes, or NULL while empty */
	uint32_t len;
	uint32_t target;     /* done once len reaches this */
};

static void builder_append(struct builder *b, struct bench_rng *rng)
{
	uint64_t r = bench_rng_next(rng);
	uint32_t n = 1 + r % MAX_APPEND;
	unsigned char *text = realloc(b->text, b->len + n);

	if (!text) {
		perror("realloc: realloc");
		exit(1);
	}
	/* the appended bytes come from the generator, so content is seeded */
	for (uint32_t i = 0; i < n; i++)
		text[b->len + i] = (unsigned char)(r >> (8 + i % 7 * 8));
	b->text = text;
	b->len += n;
}

/* FNV-1a over each builder's text, then release it. */
static uint64_t builders_release(struct builder *all, size_t count, uint64_t sum)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t h = 0xcbf29ce484222325ull;

		for (uint32_t j = 0; j < all[i].len; j++)
			h = (h ^ all[i].text[j]) * 0x100000001b3ull;
		sum = bench_mix(sum, h);
		free(all[i].text);
		all[i].text = NULL;
		all[i].len = 0;
	}
	return sum;
}

static void round_run(struct builder *all, uint32_t *open, size_t count,
		      struct bench_rng *rng)
{
	size_t left = count;

	for (size_t i = 0; i < count; i++) {
		all[i].target = bench_rng_range(rng, MIN_TARGET, MAX_TARGET);
		open[i] = (uint32_t)i;
	}
	while (left) {
		size_t pick = bench_rng_next(rng) % left;
		struct builder *b = &all[open[pick]];

		builder_append(b, rng);
		if (b->len >= b->target)
			open[pick] = open[--left];
	}
}

int main(int argc, char **argv)
{
	size_t count = bench_scaled(BUILDERS, argc, argv, 1);
	struct builder *all = calloc(count, sizeof(*all));
	uint32_t *open = calloc(count, sizeof(*open));
	struct bench_rng rng;
	uint64_t sum = 0;

	if (!all || !open) {
		perror("realloc: calloc");
		return 1;
	}
	bench_rng_seed(&rng, 3);
	for (int round = 0; round < ROUNDS; round++) {
		round_run(all, open, count, &rng);
		sum = builders_release(all, count, sum);
	}
	free(open);
	free(all);
	bench_checksum_print(sum);
	return 0;
}
