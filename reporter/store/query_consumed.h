/*
 * reporter/store/query_consumed.h: heap consumed over time by the top
 * functions of a stored process (heaptrack_gui's "Consumed" chart): its
 * heap in use at each timeline sample, split among the allocation sites
 * that held the most at any one sample and "other". A site is where a
 * stack "is" (query_where.h), so the stacks of one function add up.
 * Part of the one query layer (store_query.h): SQL here, the JSON in
 * formats/consumed_json.h.
 *
 * Invariants: at every sample, the sites' bytes and other add up to the
 * heap in use (other is what the sites do not hold: the stacks the store
 * kept no series for, the sites past the top, blocks without a stack).
 * The store keeps series for the 24 stacks that peaked highest in the
 * process (store.c, write_series), so a function whose bytes are spread
 * over many small stacks is counted in other.
 */
#ifndef HL_REPORTER_STORE_QUERY_CONSUMED_H
#define HL_REPORTER_STORE_QUERY_CONSUMED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "util.h"

/* Sites a chart shows at most, besides other. */
#define HL_CONSUMED_TOP 8

struct hl_consumed_site {
	const char *function, *file, *module; /* where it "is"; NULL when unknown */
	int64_t line;
	uint64_t module_offset;
	uint64_t peak;                /* the most it held at one sample */
	uint64_t *bytes;              /* at each sample (nsamples) */
};

struct hl_consumed {
	struct hl_bump arena;         /* every array and string below */
	size_t nsamples;
	uint64_t *time_ns;            /* the timeline's samples, in time order */
	uint64_t *total;              /* heap in use at each */
	struct hl_consumed_site sites[HL_CONSUMED_TOP]; /* the highest peak first */
	size_t nsites;
	uint64_t *other;              /* total less the sites' bytes */
	/* the process was stored with per-site series (not before the
	 * database kept them, nor when its samples changed too many stacks) */
	bool has_series;
};

void hl_consumed_init(struct hl_consumed *c);
void hl_consumed_destroy(struct hl_consumed *c);

/* Process process_id's heap consumed over time into out (hl_consumed_init
 * first). 0, -ENOENT (no such process) or -errno with hl_store_error() set. */
int hl_query_consumed(struct hl_store *s, int64_t process_id, struct hl_consumed *out);

#endif /* HL_REPORTER_STORE_QUERY_CONSUMED_H */
