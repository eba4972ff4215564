/*
 * reporter/store/store.h: the SQLite store (schema in reporter/store/schema.sql).
 *
 * Opening checks the file is a heapledger database (application_id) and
 * migrates it to the newest schema version (store_open.c). Writes are
 * batched: one transaction per process. Every failure leaves a message in
 * hl_store_error() and returns -errno-style codes (-EIO, -ENOSPC, -EACCES...;
 * -EBUSY when another connection held the lock past the busy timeout, worth
 * retrying); the caller prints its report regardless.
 */
#ifndef HL_REPORTER_STORE_H
#define HL_REPORTER_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "report.h"
#include "symbolize.h"

/* A finished process of the live reconciler (ingest/state.h), stored whole;
 * the store reads it, never the reconciler's other types. */
struct hl_process;

struct hl_store;

/* Opens (creating it 0600 if needed, never through a symbolic link, unless
 * readonly) and migrates. readonly also reads a file or directory we cannot
 * write. A file that is not a heapledger database is refused untouched. */
int hl_store_open(const char *path, bool readonly, struct hl_store **out);
/* Opens path for reading as hl_store_open(readonly) does, but never writes:
 * a file of an older schema is refused (-EPROTO, the message says so)
 * instead of upgraded, so a database copied from CI stays byte for byte what
 * it was. For the web UI. The caller closes *out even on failure. */
int hl_store_open_strict_ro(const char *path, struct hl_store **out);
void hl_store_close(struct hl_store *s);
const char *hl_store_error(const struct hl_store *s);
/* The schema version this build writes. */
int hl_store_schema_version(void);
/* Database pages this connection has written since it was opened (to the
 * write-ahead log): what a store costs in I/O, for HEAPLEDGER_TIMING and the
 * test that storing does not grow with the history. */
int64_t hl_store_pages_written(const struct hl_store *s);

/* Starts a run row; r supplies mode, argv and start time. */
int hl_store_run_begin(struct hl_store *s, const struct hl_report *r, int64_t *run_id);
int hl_store_run_end(struct hl_store *s, int64_t run_id, uint64_t ended_ns, int exit_code);
/* Removes a run row and everything under it. */
int hl_store_run_delete(struct hl_store *s, int64_t run_id);
/* Stores one finished process with everything it knows; symbolizes its
 * stacks through sym. Sets p->db_id. */
int hl_store_process(struct hl_store *s, int64_t run_id, struct hl_process *p,
		     struct hl_symbolizer *sym);

/* One transaction for what follows, up to hl_store_batch_end, instead of
 * one per process (each process is a savepoint: one that fails is rolled
 * back alone). `heapledger run` stores all its processes at the end: 421
 * commits of a shell script's processes wrote 6.1k pages, most of them the
 * same pages again. The write lock is held until the end, so other writers
 * wait for it (the store of a run takes a fraction of a second). */
int hl_store_batch_begin(struct hl_store *s);
/* Commits the batch (nothing stored in it is kept if that fails). */
int hl_store_batch_end(struct hl_store *s);
/* Rolls the whole batch back: nothing stored in it is kept. */
int hl_store_batch_abort(struct hl_store *s);

/* What hl_store_prune removed. */
struct hl_prune_result {
	uint64_t runs_removed, runs_kept, processes_removed;
};
/* Keeps the newest `keep` runs (the highest ids) and removes the others with
 * everything only they referenced (processes and all below them, their
 * stacks, frames and labels, the symbols no kept run's frames name, leak
 * sites no kept run has; a site's first run becomes the oldest kept run
 * that leaked there), in one transaction; then VACUUM if asked. */
int hl_store_prune(struct hl_store *s, uint64_t keep, bool vacuum, struct hl_prune_result *out);

/* What hl_store_import_db did. */
struct hl_import_result {
	uint64_t runs_imported, processes_imported;
	uint64_t runs_present;      /* skipped: a run with the same UUID is here */
	uint64_t runs_without_uuid; /* skipped: stored before runs had UUIDs */
	uint64_t runs_empty;        /* skipped: a JSON report's run without a process */
};
/* Copies the runs of the heapledger database at path that this one lacks
 * (by UUID) with everything below them, in one transaction; ids are
 * renumbered after ours. The file must have this build's schema (an older
 * one is upgraded first, as `report` does). */
int hl_store_import_db(struct hl_store *s, const char *path, struct hl_import_result *out);

/* Stores a run read from elsewhere (a JSON report: import_json.h) as it is
 * read, one process at a time, unless a run with its UUID (r->uuid,
 * required) is here: hl_store_import_begin takes the write lock and looks
 * the UUID up; each hl_store_import_process stores one process through
 * hl_store_process with the frames sym knows (the run's row and labels come
 * with the first); hl_store_import_end stores the run's end and commits; all
 * in one transaction, so a failure, or hl_store_import_abort, leaves
 * nothing of it. hl_store_import_end sets out's runs_imported and
 * processes_imported, or runs_present; a run without processes is not
 * stored (as run and daemon do not store one): runs_empty. */
struct hl_store_import {
	struct hl_store *s;
	const struct hl_report *run; /* the caller's, until the last process */
	uint64_t ended_ns;           /* the run's, for its end */
	int exit_code;
	int64_t run_id;              /* 0 until the first process is stored */
	uint64_t nprocs;             /* processes given */
	bool present;                /* a run with its UUID is here: nothing is stored */
	bool begun;                  /* the transaction is open */
};
int hl_store_import_begin(struct hl_store *s, const struct hl_report *r,
			  struct hl_store_import *imp);
int hl_store_import_process(struct hl_store_import *imp, struct hl_process *p,
			    struct hl_symbolizer *sym);
int hl_store_import_end(struct hl_store_import *imp, struct hl_import_result *out);
void hl_store_import_abort(struct hl_store_import *imp);

/* Newest run id, or -ENOENT. */
int hl_store_latest_run(struct hl_store *s, int64_t *run_id);
/* Fills r (initialised by the caller) from the database. */
int hl_store_load_report(struct hl_store *s, int64_t run_id, struct hl_report *r);

/* Which processes and loss records `report` shows (report --process,
 * --program, --kind); zeroed: everything. */
struct hl_report_filter {
	unsigned long pid;        /* only the images of this pid, 0: any */
	const char *program;      /* basename of the executable or of argv[0], NULL: any */
	unsigned kinds;           /* 1u << HL_CLASS_* of the records kept, 0: all; with
				   * HL_CLASS_SUPPRESSED: suppressed records of any class.
				   * Processes without such a record or a heap error are
				   * left out. */
	bool records_only;        /* no loss records and no timeline: the heap errors
				   * and checks alone (the web UI's pages of them) */
};
/* Called with p NULL once the run's header is in r, then with each process
 * the filter keeps, in order; p (and its strings) live until fn returns. A
 * non-zero return stops the load and is returned. */
typedef int (*hl_store_process_fn)(void *ctx, const struct hl_report_process *p);
/* hl_store_load_report() through a filter (NULL: none). With fn, the
 * processes are not added to r: each is loaded, handed to fn and freed, so
 * a run of any size is written in the memory of its largest process. */
int hl_store_load_report_filtered(struct hl_store *s, int64_t run_id,
				  const struct hl_report_filter *filter, struct hl_report *r,
				  hl_store_process_fn fn, void *ctx);

#endif /* HL_REPORTER_STORE_H */
