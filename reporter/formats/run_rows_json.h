/*
 * reporter/formats/run_rows_json.h: a stored run's rows (model/run_rows.h)
 * as the JSON the web UI's API answers and the HTML report inlines. One
 * writer per shape; the keys are in the order the API has always listed
 * them. A loss record is written by the report's own writer
 * (record_json.h), as are the heap errors and checks the API serves from
 * the report model (ui/api.c).
 */
#ifndef HL_REPORTER_RUN_ROWS_JSON_H
#define HL_REPORTER_RUN_ROWS_JSON_H

#include <jansson.h>

#include "run_rows.h"

/* The run (runs_json.h: hl_run_json) with "processes": [{"id", "serial",
 * "pid", "ppid", "parent_id", "origin", "exe", "argv", "started_ns",
 * "ended_ns", "exit_how", "exit_status", "exit_signal", "scanned",
 * "no_exit_record", "recovered_events", the summary's counters
 * (HL_SUMMARY_COLUMNS), "leak_records", "leaked_bytes", "leaked_records",
 * "samples"}]: GET /api/runs/ID. */
json_t *hl_run_page_json(const struct hl_run_page *p);
/* {"time_ns": [...], "bytes": [...], "blocks": [...]} (column arrays, the
 * shape chart libraries take): GET /api/processes/ID/timeline. */
json_t *hl_timeline_json(const struct hl_run_rows *r);
/* {"total", "rows": [{"id", "process_id", "pid", "rank", "stack_id", the
 * loss record's fields as `report --format json` writes them
 * (record_json.h: "kind", "bytes", ..., "stack", "stack_truncated"), and
 * the frame that names it: "function", "file", "line", "module",
 * "module_offset"}]}: GET /api/runs/ID/leaks. */
json_t *hl_leak_rows_json(const struct hl_run_rows *r);
/* {"term", "limit", "rows": [{"function", "file", "line", "module", "runs",
 * "last_run", "first_run"}]}: GET /api/search. */
json_t *hl_symbol_rows_json(const char *term, int64_t limit, const struct hl_run_rows *r);
/* {"name", "value", "children": [...]} from the root ("all leaks" or "all
 * allocations"): GET /api/processes/ID/flame. */
json_t *hl_flame_json(const struct hl_flame *f);
/* {"id", "truncated", "frames": [frame_json.h]}: GET /api/stacks/ID. */
json_t *hl_stack_json(const struct hl_stack_row *s);

#endif /* HL_REPORTER_RUN_ROWS_JSON_H */
