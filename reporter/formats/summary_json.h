/*
 * reporter/formats/summary_json.h: a run's summary (store/query_summary.h)
 * as the JSON the web UI's GET /api/runs/ID/summary answers. Classes and
 * error kinds are spelled by their words (heapledger/classes.h) only.
 */
#ifndef HL_REPORTER_SUMMARY_JSON_H
#define HL_REPORTER_SUMMARY_JSON_H

#include <jansson.h>

#include "gate.h"
#include "query_summary.h"

/* {"run", "verdict": {"failed", "incomplete", "kinds": [class words the gate
 *  counts], "bytes", "blocks", "records", "errors", "processes",
 *  "suppressed_bytes", "suppressed_blocks", "unscanned_bytes",
 *  "unscanned_blocks", "failing": [{pid, command, bytes, blocks, errors,
 *  unseen}]}, "leaked": {class: {bytes, blocks, records}}, "top_sites":
 *  [{fingerprint, function, leak_class, bytes, blocks, where}], "peak":
 *  {process_id, pid, bytes, stacks, at_peak: the stacks' values are what
 *  they held when that process peaked (false: their own peaks, a process
 *  stored before the database kept that)}, "most_allocations", "most_bytes",
 *  "errors": {kind: count}}; a stack of a list is {stack_id, function,
 *  file, line, module, module_offset, value, count, processes: how many of
 *  the run's processes it is in (a site of many is one entry)}. */
json_t *hl_run_summary_json(const struct hl_run_summary *sum, const struct hl_gate_options *o);
/* The verdict alone: {"failed", "incomplete"} (the runs list's badge). */
json_t *hl_gate_verdict_json(const struct hl_gate *g, const struct hl_gate_options *o);

#endif /* HL_REPORTER_SUMMARY_JSON_H */
