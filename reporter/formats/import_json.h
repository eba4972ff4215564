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
 * whole with the place that is wrong. The document is read piece by piece
 * (json_scan.h): each process is parsed alone, handed on and freed.
 */
#ifndef HL_REPORTER_IMPORT_JSON_H
#define HL_REPORTER_IMPORT_JSON_H

#include <stddef.h>

#include "report.h"
#include "symbolize.h"

struct hl_process; /* ingest/state.h: what an imported process becomes */

/* Where an imported run goes (the store, for `heapledger import`). */
struct hl_json_import_sink {
	void *ctx;
	/* The run's header, checked, once, before any process: 0 or -errno. */
	int (*run)(void *ctx, const struct hl_report *run);
	/* Each process in the document's order, finished, with its stacks'
	 * frames in sym; both are freed when it returns: 0 or -errno. */
	int (*process)(void *ctx, struct hl_process *p, struct hl_symbolizer *sym);
};

/* Reads the JSON report in f from its current place to its end, one
 * process at a time: memory holds the largest process, never the whole
 * document (a report whose "run" comes after its processes is read twice,
 * so f must then be seekable). Returns 0; or -EINVAL (not JSON, truncated,
 * or not a report: why says which, with the byte, or the field, e.g.
 * "processes[2].leaks[0].bytes: not a whole number"), -ENOMEM (why says at
 * which byte) or a read error, with why set; or a sink's own error, why
 * then empty. The sink may have been given part of the run before an
 * error: it undoes that. */
int hl_json_import_stream(FILE *f, const struct hl_json_import_sink *sink, char *why,
			  size_t why_len);

#endif /* HL_REPORTER_IMPORT_JSON_H */
