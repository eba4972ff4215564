/*
 * reporter/store/query_sizes.h: the allocation-size histogram of a stored
 * process, or of a whole run (its processes' added up), by power-of-two
 * bin (heapledger/size_bins.h). Part of the one query layer (store_query.h):
 * SQL here, the JSON in formats/size_bins_json.h.
 */
#ifndef HL_REPORTER_STORE_QUERY_SIZES_H
#define HL_REPORTER_STORE_QUERY_SIZES_H

#include <stdbool.h>
#include <stdint.h>

#include "heapledger/size_bins.h"
#include "store.h"

struct hl_size_histogram {
	struct hl_size_bins bins;     /* allocations and bytes by bin */
	uint64_t processes;           /* processes it adds up (1 for a process) */
	/* of those, processes stored with a histogram (a process stored before
	 * the database kept them, or that allocated nothing, has none) */
	uint64_t counted;
};

/* The histogram of run id (whole_run) or of process id into out. 0,
 * -ENOENT (no such run or process) or -errno with hl_store_error() set. */
int hl_query_size_histogram(struct hl_store *s, bool whole_run, int64_t id,
			    struct hl_size_histogram *out);

#endif /* HL_REPORTER_STORE_QUERY_SIZES_H */
