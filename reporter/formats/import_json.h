/*
 * reporter/formats/import_json.h: a JSON report (format "heapledger-report" version
 * 1, as report_json.c writes it and doc/manual.md documents it) read
 * back into the reporter's own structures: the run's header as a struct
 * hl_report, each process as a finished struct hl_process, and its
 * symbolized frames in a symbolizer that knows only them. `heapledger
 * import` stores these with the store's own write path (hl_store_process),
 * so a run imported from JSON is stored exactly as a run stored by `run` or
 * `daemon`, whatever the schema.
 *
 * What a JSON report does not carry is not invented: the heap timeline,
 * per-stack allocation totals of stacks that leaked nothing, modules' build
 * ids, the directory and host the run came from. Every value is checked
 * (types, ranges, names); a document that does not hold is refused as a
 * whole with the place that is wrong.
 */
#ifndef HL_REPORTER_IMPORT_JSON_H
#define HL_REPORTER_IMPORT_JSON_H

#include <stddef.h>

#include "report.h"
#include "symbolize.h"

struct hl_process; /* ingest/state.h: what an imported process becomes */

struct hl_json_import {
	struct hl_report run;       /* mode, argv, times, exit code, uuid, git, labels */
	struct hl_process **procs;  /* in the document's order, finished */
	size_t nprocs, procs_cap;
	struct hl_symbolizer *sym;  /* the document's frames (hl_symbolizer_new_given) */
};

/* Reads the document of `len` bytes at text. Returns 0, or -EINVAL with why
 * (jansson's line, column and byte for a syntax error; else the field, e.g.
 * "processes[2].leaks[0].bytes: not a whole number"). out is filled either
 * way and freed with hl_json_import_free. */
int hl_json_import_read(const char *text, size_t len, struct hl_json_import *out,
			char *why, size_t why_len);
void hl_json_import_free(struct hl_json_import *im);

#endif /* HL_REPORTER_IMPORT_JSON_H */
