/*
 * include/heapledger/size_bins.h: the allocation-size histogram's bins, one
 * definition for whoever counts allocations (the reporter's ingest today)
 * and whoever stores, queries and shows them (size_bins table, the web UI).
 *
 * Bins are powers of two: bin 0 holds size 0, bin k (1..64) holds sizes
 * 2^(k-1) .. 2^k - 1, so 24 bytes is bin 5 (16..31) and 1 MiB bin 21. The
 * bin of a size is its bit length: one count-leading-zeros, no table, no
 * branch but the zero test. A histogram is the allocations and the bytes
 * allocated per bin (a realloc counts as an allocation of its new size;
 * blocks a fork child inherited count in the parent only).
 *
 * Header-only and allocation-free, so the preloaded hook can count too.
 */
#ifndef HEAPLEDGER_SIZE_BINS_H
#define HEAPLEDGER_SIZE_BINS_H

#include <stdint.h>

#define HL_SIZE_BINS 65

struct hl_size_bins {
	uint64_t allocs[HL_SIZE_BINS]; /* allocations by bin */
	uint64_t bytes[HL_SIZE_BINS];  /* bytes allocated by bin */
};

/* The bin of an allocation of size bytes: its bit length. */
static inline unsigned hl_size_bin(uint64_t size)
{
	return size ? 64u - (unsigned)__builtin_clzll(size) : 0u;
}

/* The smallest and largest size bin holds. */
static inline uint64_t hl_size_bin_low(unsigned bin)
{
	return bin ? 1ull << (bin - 1) : 0;
}

static inline uint64_t hl_size_bin_high(unsigned bin)
{
	return bin >= 64 ? UINT64_MAX : bin ? (1ull << bin) - 1 : 0;
}

/* One allocation of size bytes, counted. */
static inline void hl_size_bins_count(struct hl_size_bins *h, uint64_t size)
{
	unsigned bin = hl_size_bin(size);

	h->allocs[bin]++;
	h->bytes[bin] += size;
}

#endif /* HEAPLEDGER_SIZE_BINS_H */
