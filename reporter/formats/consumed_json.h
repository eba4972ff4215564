/*
 * reporter/formats/consumed_json.h: heap consumed over time by the top
 * functions (the query layer's, store/query_consumed.h) as the JSON the
 * web UI's API answers.
 */
#ifndef HL_REPORTER_CONSUMED_JSON_H
#define HL_REPORTER_CONSUMED_JSON_H

#include <jansson.h>

#include "query_consumed.h"

/* {"has_series", "time_ns": [...], "total": [...], "other": [...],
 * "sites": [{"function", "file", "line", "module", "module_offset",
 * "peak", "bytes": [...]}]}: every array of numbers has one value per
 * sample, in time order; at each sample the sites' bytes and other add up
 * to total. GET /api/processes/ID/consumed. */
json_t *hl_consumed_json(const struct hl_consumed *c);

#endif /* HL_REPORTER_CONSUMED_JSON_H */
