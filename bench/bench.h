/*
 * bench.h: what every synthetic workload shares: a seeded PRNG (so the
 * sequence of sizes and operations is the same under every allocator), the
 * scale argument, and the checksum line run.sh compares across allocators.
 *
 * Invariant: a workload's output depends only on its seed and scale, never on
 * addresses or timing, so a checksum that differs from glibc's means the
 * allocator returned memory that did not keep what was written to it.
 */
#ifndef HL_BENCH_H
#define HL_BENCH_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* xorshift64*: tiny, fast, and good enough to spread sizes and slots. */
struct bench_rng {
	uint64_t state; /* never 0 */
};

static inline void bench_rng_seed(struct bench_rng *rng, uint64_t seed)
{
	/* splitmix64 step so nearby seeds give unrelated streams */
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	rng->state = (z ^ (z >> 31)) | 1;
}

static inline uint64_t bench_rng_next(struct bench_rng *rng)
{
	uint64_t x = rng->state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng->state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform in [lo, hi]; the modulo bias is irrelevant for a benchmark. */
static inline uint64_t bench_rng_range(struct bench_rng *rng, uint64_t lo,
				       uint64_t hi)
{
	return lo + bench_rng_next(rng) % (hi - lo + 1);
}

/*
 * The workload size in percent of the full run (100 = the default). run.sh
 * passes a smaller value for --quick and for the slow tools (valgrind).
 */
static inline uint64_t bench_scaled(uint64_t full, int argc, char **argv,
				    int index)
{
	long percent = 100;
	uint64_t n;

	if (argc > index)
		percent = strtol(argv[index], NULL, 10);
	if (percent <= 0) {
		fprintf(stderr, "bench: scale must be a positive percentage\n");
		exit(2);
	}
	n = full * (uint64_t)percent / 100;
	return n ? n : 1;
}

static inline void bench_checksum_print(uint64_t sum)
{
	printf("checksum %016" PRIx64 "\n", sum);
}

/* Mix a value into a running checksum; order-dependent. */
static inline uint64_t bench_mix(uint64_t sum, uint64_t value)
{
	return (sum ^ value) * 0x100000001b3ull + (sum >> 29);
}

#endif /* HL_BENCH_H */
