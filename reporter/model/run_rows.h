/*
 * reporter/model/run_rows.h: a stored run as its pages list it, row by row:
 * its processes (the run page), its heap errors and on-demand checks with
 * the ids of their stacks (the stacks are fetched apart: many rows share
 * one), a process's heap timeline. The query layer fills these
 * (store/query_*.h); formats/run_rows_json.h renders them.
 *
 * Invariants: strings and arrays live in the owner's arena until its
 * destroy; a value the database holds as NULL is a struct hl_maybe with
 * known false; classes and error kinds are their enums (classes.h), turned
 * into words only by the writers.
 */
#ifndef HL_REPORTER_RUN_ROWS_H
#define HL_REPORTER_RUN_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "run_list.h"

/* A process's summary counters (table summaries), in the order the run
 * page lists them: X(column). */
#define HL_SUMMARY_COLUMNS(X)                                                            \
	X(in_use_bytes) X(in_use_blocks) X(allocs) X(frees) X(bytes_allocated) X(peak_bytes) \
	X(inherited_bytes) X(inherited_blocks) X(dropped_events) X(unmatched_frees)          \
	X(unfreed_superseded) X(live_mismatch) X(errors)
enum {
#define HL_SUMMARY_ENUM(column) HL_SUMMARY_##column,
	HL_SUMMARY_COLUMNS(HL_SUMMARY_ENUM)
#undef HL_SUMMARY_ENUM
	HL_SUMMARY_COUNT
};
/* The column's name, which is also its JSON key. */
const char *hl_summary_column_name(unsigned i);

/* A process of a stored run. */
struct hl_process_row {
	int64_t id;                   /* processes.id: what its timeline and flame graph take */
	int64_t serial;               /* order of its HELLO in the run */
	int64_t pid, ppid;
	struct hl_maybe parent_id;    /* fork parent or exec predecessor (processes.id) */
	const char *origin;           /* "start", "fork", "exec" */
	const char *exe;
	const char *argv;             /* a JSON array, as stored */
	struct hl_maybe started_ns, ended_ns;
	const char *exit_how;         /* hl_exit_how_name() */
	struct hl_maybe exit_status, exit_signal;
	bool scanned;
	bool no_exit_record;          /* its stream ended without the EXIT record */
	struct hl_maybe recovered_events;
	/* the fatal signal the hook reported (unknown when none came), its
	 * si_code, the faulting address and where it arrived */
	struct hl_maybe fatal_signal, fatal_code, fatal_address, fatal_stack_id;
	const char *test_name;        /* $HEAPLEDGER_TEST_NAME, NULL if none */
	bool all_threads_stopped;     /* its exit scan stopped every thread */
	const char *standalone;       /* why its hook went on standalone, as stored, or NULL */
	/* unknown, all of them, for a process with no summary row yet */
	struct hl_maybe summary[HL_SUMMARY_COUNT];
	uint64_t leak_records;        /* its loss records, every class */
	uint64_t leaked_bytes;        /* lost (hl_leak_class_is_lost) and not suppressed */
	uint64_t leaked_records;
	uint64_t samples;             /* timeline samples */
};

/* A run's page: its row and its processes in HELLO order. */
struct hl_run_page {
	struct hl_run_list run;       /* one row; its arena holds the processes' strings */
	struct hl_process_row *procs;
	size_t nprocs, procs_cap;
};

void hl_run_page_init(struct hl_run_page *p);
void hl_run_page_destroy(struct hl_run_page *p);
struct hl_process_row *hl_run_page_add_process(struct hl_run_page *p);

/* A heap error of a run, its stacks by id. */
struct hl_error_row {
	int64_t id;                   /* errors.id */
	int64_t process_id, pid;
	unsigned kind;                /* enum hl_error_kind */
	const char *call;             /* free, delete, realloc, read, write... */
	uint64_t detail;              /* as struct hl_report_error's */
	uint64_t address;
	struct hl_maybe block_address, block_size;
	struct hl_maybe stack_id, alloc_stack_id, free_stack_id;
	struct hl_maybe time_ns;
};

/* The heap error row holds, as the report has it, its stacks empty (the
 * loader reads them; strings are row's). */
void hl_error_row_record(const struct hl_error_row *row, struct hl_report_error *out);

/* A descriptor open at a process's end (track_fds), its stack by id. */
struct hl_fd_row {
	int32_t fd;
	unsigned kind;                /* enum hl_fd_kind */
	uint32_t family;              /* a socket's AF_*, 0: unknown or a file */
	const char *text;             /* "" none */
	bool inherited, unseen;
	struct hl_maybe stack_id;
};

/* An on-demand check's total for one class. */
struct hl_check_row {
	int64_t process_id, pid;
	int64_t seq;
	int64_t time_ns;
	bool by_signal, all_threads_stopped, scanned;
	int64_t records_total;
	unsigned leak_class;          /* enum hl_leak_class */
	uint64_t bytes, blocks;
};

/* A loss record an on-demand check kept, and what changed since the
 * check before (struct hl_report_check_record). */
struct hl_check_record_row {
	int64_t process_id, pid;
	int64_t seq, rank;
	struct hl_maybe stack_id;
	struct hl_maybe leaf_frame_id, truncated; /* of its stack, unknown without one */
	unsigned leak_class;
	uint64_t bytes, indirect_bytes, blocks;
	int64_t new_bytes, new_indirect_bytes, new_blocks;
	bool suppressed;
	const char *suppression;      /* the suppression's name, NULL if none */
	const char *fingerprint;      /* leak site, NULL if unknown */
};

/* A thread a scan could not stop: seq 0 the exit scan's, else the
 * on-demand check's. */
struct hl_unstopped_row {
	int64_t seq;
	uint32_t tid;
};

/* A loss record of a run as the leak table lists it, with the frame that
 * names where it "is" (store/query_leaks.c says which frame that is). */
struct hl_leak_row {
	int64_t id;                   /* leaks.id */
	int64_t process_id, pid;
	struct hl_maybe stack_id;
	unsigned leak_class;          /* enum hl_leak_class, as stored (suppressed apart) */
	uint64_t bytes, blocks, inherited_blocks;
	int64_t rank;                 /* loss record number, 1 = largest */
	bool suppressed;
	const char *suppression;      /* the suppression's name, NULL if none */
	struct hl_maybe depth, truncated; /* of its stack, unknown without one */
	struct hl_maybe leaf_frame_id; /* its stack's innermost frame (frames.id) */
	uint64_t indirect_bytes;      /* blocks lost only through these */
	const char *fingerprint;      /* leak site, NULL if unknown */
	/* the frame named, NULL unknown; only in the leak table's pages
	 * (a process's records for the report leave them unknown) */
	const char *function, *file, *module;
	struct hl_maybe line, module_offset;
	/* its stack, only in the leak table's pages (hl_query_leaks): the
	 * record is written whole, as the report writes it */
	struct hl_report_stack stack;
	/* a row of the leak table by site (hl_query_page.by_site): the site's
	 * records and the processes they are in, 0 for a record's row; its
	 * bytes and blocks are the site's, the rest its largest record's */
	uint64_t records, processes;
	uint64_t tests;               /* of a site's row: the test names of its processes */
};

/* The loss record row holds, as the report has it: its stack is row's
 * (empty unless the query read it), its strings are row's. */
void hl_leak_row_record(const struct hl_leak_row *row, struct hl_report_leak *out);

/* A stack a process allocated from, weighted for profile viewers. */
struct hl_profile_stack {
	int64_t stack_id;
	uint64_t bytes;               /* allocated there */
	uint64_t leaked_bytes;        /* leaked there */
	struct hl_report_stack stack; /* frames innermost first */
};

/* A symbol the search found, with the runs whose stacks pass through it. */
struct hl_symbol_row {
	const char *function, *file, *module;
	struct hl_maybe line;
	int64_t runs, last_run, first_run;
};

/* A run's rows of one kind, in the order the query gives them. */
struct hl_run_rows {
	struct hl_leak_row *leaks;
	size_t nleaks, leaks_cap;
	int64_t leaks_total;          /* records the page's filter matched */
	struct hl_profile_stack *profile;
	size_t nprofile, profile_cap;
	struct hl_symbol_row *symbols;
	size_t nsymbols, symbols_cap;
	struct hl_error_row *errors;
	size_t nerrors, errors_cap;
	struct hl_check_row *checks;
	size_t nchecks, checks_cap;
	struct hl_check_record_row *records;
	size_t nrecords, records_cap;
	struct hl_unstopped_row *unstopped;
	size_t nunstopped, unstopped_cap;
	struct hl_fd_row *fds;        /* a process's descriptors open at exit */
	size_t nfds, fds_cap;
	bool fds_tracked, fds_all;    /* its fd_summaries row, if any */
	uint32_t fds_open, fds_std;
	struct hl_report_sample *samples; /* a process's timeline */
	size_t nsamples, samples_cap;
	struct hl_bump arena;
};

void hl_run_rows_init(struct hl_run_rows *r);
void hl_run_rows_destroy(struct hl_run_rows *r);

/* A run's allocation and leak profiles: the run with its processes, and
 * for each process (in the page's order) the stacks it allocated from
 * (struct hl_run_rows' profile). */
struct hl_run_profiles {
	struct hl_run_page page;
	struct hl_run_rows *procs;    /* page.nprocs of them */
};

void hl_run_profiles_init(struct hl_run_profiles *p);
void hl_run_profiles_destroy(struct hl_run_profiles *p);

/* A process's allocations (or leaks) as a call tree from the outermost
 * frame: each node's value is the bytes of the stacks through it. */
struct hl_flame_node {
	const char *name;             /* function, else module+0xoffset */
	int64_t value;
	struct hl_flame_node *children; /* in frames.id order */
	size_t nchildren;
};

struct hl_flame {
	bool leaks;                   /* bytes leaked, else bytes allocated */
	struct hl_flame_node root;    /* the whole: its value is the total */
	struct hl_bump arena;
};

void hl_flame_init(struct hl_flame *f);
void hl_flame_destroy(struct hl_flame *f);

/* A stored stack, by its id: frames innermost first (their strings in the
 * owner's arena). */
struct hl_stack_row {
	int64_t id;
	struct hl_report_stack stack;
};

#endif /* HL_REPORTER_RUN_ROWS_H */
