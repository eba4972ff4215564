/*
 * reporter/formats/size_bins_json.h: an allocation-size histogram (the query
 * layer's, store/query_sizes.h) as the JSON the web UI's API answers and the
 * HTML report inlines.
 */
#ifndef HL_REPORTER_SIZE_BINS_JSON_H
#define HL_REPORTER_SIZE_BINS_JSON_H

#include <jansson.h>

#include "query_sizes.h"

/* {"processes", "counted", "allocs", "bytes", "bins": [{"bin", "low",
 * "high", "allocs", "bytes"}]}: the bins from the smallest used to the
 * largest used, empty ones between them included (a histogram's x axis
 * has no gaps); low and high are the sizes a bin holds (high null for bin
 * 64). GET /api/runs/ID/sizes and /api/processes/ID/sizes. */
json_t *hl_size_histogram_json(const struct hl_size_histogram *h);

#endif /* HL_REPORTER_SIZE_BINS_JSON_H */
