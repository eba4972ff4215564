/*
 * reporter/formats/runs_json.h: stored runs (model/run_list.h) as the JSON
 * the web UI's API answers and the HTML report inlines: the run list, a
 * run's own row, a program's runs. One writer per shape.
 */
#ifndef HL_REPORTER_RUNS_JSON_H
#define HL_REPORTER_RUNS_JSON_H

#include <jansson.h>

#include "run_list.h"

/* {class word: bytes} for each class the totals have a record of, in word
 * order (hl_leak_classes_by_word). */
json_t *hl_class_totals_json(const struct hl_class_totals *t);
/* {"total", "rows": [{"id", "mode", "program", "argv" (as stored: JSON
 * text), "git_commit", "hostname", "started_ns", "ended_ns", "exit_code",
 * "labels" {key: value}, "processes" (count), "leaked" {class: bytes},
 * "errors", "peak_bytes"}]}: GET /api/runs. */
json_t *hl_run_list_json(const struct hl_run_list *l);
/* {"id", "mode", "program", "argv", "cwd", "hostname", "git_commit",
 * "started_ns", "ended_ns", "exit_code", "labels"}: the head of GET
 * /api/runs/ID, to which the caller adds the processes. */
json_t *hl_run_json(const struct hl_run_row *r);
/* [{"id", "started_ns", "git_commit", "exit_code", "leaked"}]: the runs of
 * a program's history. */
json_t *hl_history_runs_json(const struct hl_run_list *l);

#endif /* HL_REPORTER_RUNS_JSON_H */
