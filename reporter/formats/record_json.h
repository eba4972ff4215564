/*
 * reporter/formats/record_json.h: a run's records as JSON, one writer per
 * shape: a loss record, a heap error, an on-demand check. `report --format
 * json` (report_json.c, which holds them) and the web UI's API
 * (run_rows_json.c, ui/) both write their records with these, so a record
 * reads the same from either door (doc/manual.md lists the fields).
 *
 * r: the report being written by hl_report_json_process(), whose stacks are
 * then written once each and spliced in; NULL writes each stack's frames in
 * place (a document that is not the streamed report).
 */
#ifndef HL_REPORTER_RECORD_JSON_H
#define HL_REPORTER_RECORD_JSON_H

#include <jansson.h>

#include "report.h"

/* {"kind", "bytes", "blocks", "indirect_bytes", "inherited_blocks",
 * "suppressed", "suppression", "fingerprint", "stack", "stack_truncated"} */
json_t *hl_leak_record_json(struct hl_report *r, const struct hl_report_leak *l);
/* {"kind", "call", "address", "block_address", "block_size", and by kind
 * "delete_size", "access_size" or "overrun_bytes"; "heading", "where",
 * "block_freed" (the text report's words), "stack", "alloc_stack",
 * "free_stack"} */
json_t *hl_error_record_json(struct hl_report *r, const struct hl_report_error *e);
/* {"seq", "by", "time_ns", "scanned", "all_threads_stopped", "kinds",
 * "unstopped_tids", "records_total", "records"}: what changed is counted
 * from prev, the process's check before (NULL for its first). */
json_t *hl_check_json(struct hl_report *r, const struct hl_report_check *c,
		      const struct hl_report_check *prev);

#endif /* HL_REPORTER_RECORD_JSON_H */
