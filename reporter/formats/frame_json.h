/*
 * reporter/formats/frame_json.h: a stack's frames as JSON, the one shape of
 * a frame in every JSON heapledger writes: the report's loss records and
 * errors (`report --format json`) and the web UI's stacks (GET
 * /api/stacks/ID, the HTML report).
 */
#ifndef HL_REPORTER_FRAME_JSON_H
#define HL_REPORTER_FRAME_JSON_H

#include <jansson.h>

#include "report.h"

/* {"function", "file", "line", "module", "address" ("0x..." : a 64-bit
 * address is no JSON number a browser reads exactly), "offset" (in the
 * module), "inlined"}; what is not known is null. */
json_t *hl_frame_json(const struct hl_frame_info *f);
/* The frames of s, innermost first, as an array of hl_frame_json. */
json_t *hl_frames_json(const struct hl_report_stack *s);

#endif /* HL_REPORTER_FRAME_JSON_H */
