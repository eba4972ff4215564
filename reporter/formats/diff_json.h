/*
 * reporter/formats/diff_json.h: a diff of two runs by leak site
 * (model/site_diff.h) as the JSON document `heapledger diff --format json`
 * prints and the web UI's GET /api/diff answers: one shape for both.
 */
#ifndef HL_REPORTER_DIFF_JSON_H
#define HL_REPORTER_DIFF_JSON_H

#include <jansson.h>

#include "site_diff.h"

#define HL_DIFF_FORMAT "heapledger-diff"
#define HL_DIFF_VERSION 1

/* {"format", "version", "run_a", "run_b", "new", "fixed", "changed",
 *  "unchanged" (counts), "changes": [{"change", "fingerprint", "function",
 *  "leak_class", "bytes_a", "blocks_a", "bytes_b", "blocks_b"}]}: every site
 * but the unchanged ones, in fingerprint order. */
json_t *hl_site_diff_json(const struct hl_site_diff *d);

#endif /* HL_REPORTER_DIFF_JSON_H */
