/*
 * reporter/store/query_summary.h: the answers to a developer's first
 * questions about a stored run, as C values (formats/summary_json.h writes
 * them): did it pass the gate and why, what leaked by class, where it
 * leaked most, which process peaked highest and which stacks held how much
 * at that moment, which stacks allocated most often, most bytes and most
 * temporary blocks, and the heap
 * errors by kind. Part of the one query layer: SQL here, no JSON.
 *
 * The verdict is the gate's (model/gate.h), counted over the stored run as
 * `heapledger gate RUN` counts it, with the options given: never the
 * program's exit status, which is the run's exit_code.
 */
#ifndef HL_REPORTER_STORE_QUERY_SUMMARY_H
#define HL_REPORTER_STORE_QUERY_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "gate.h"
#include "heapledger/classes.h"
#include "site_diff.h"
#include "store.h"

/* How many entries each ranked list of a summary holds at most. */
#define HL_SUMMARY_TOP 10

/* One stack in a ranked list, named where it "is" (query_where.h). */
struct hl_summary_stack {
	int64_t stack_id;
	char *function, *file, *module; /* NULL when unknown */
	int64_t line;
	uint64_t module_offset;
	uint64_t value;               /* what the list ranks by */
	uint64_t count;               /* allocations (leak sites: blocks) */
	/* the processes of the run it is in: a suite's site is one entry
	 * "in 99 processes", not one per process (stacks.fingerprint) */
	uint64_t processes;
};

struct hl_summary_list {
	struct hl_summary_stack v[HL_SUMMARY_TOP];
	size_t n;
};

/* One leak site of the run (site_diff.h's: lost, not suppressed), the
 * largest first, with its largest record's stack for "where". */
struct hl_summary_site {
	const struct hl_leak_site *site; /* into hl_run_summary.sites */
	struct hl_summary_stack where;   /* value: bytes, count: blocks */
};

struct hl_run_summary {
	int64_t run_id;
	struct hl_gate gate;          /* the verdict's counts, failing processes */
	bool failed;                  /* hl_gate_failed() with the options given */
	const char *incomplete;       /* hl_gate_incomplete(), or NULL */
	/* every record by the class shown (suppressed ones as HL_CLASS_SUPPRESSED) */
	uint64_t class_bytes[HL_LEAK_CLASS_COUNT];
	uint64_t class_blocks[HL_LEAK_CLASS_COUNT];
	uint64_t class_records[HL_LEAK_CLASS_COUNT];
	struct hl_site_list sites;    /* the run's leak sites (hl_query_leak_sites) */
	struct hl_summary_site top_sites[HL_SUMMARY_TOP];
	size_t ntop_sites;
	int64_t peak_process_id;      /* the process whose heap peaked highest, 0: none */
	uint32_t peak_pid;
	uint64_t peak_bytes;
	/* its stacks by the bytes they held when its heap peaked (peak_at_moment),
	 * or, for a process stored before the database kept that, by their own
	 * peak in use */
	struct hl_summary_list peak_stacks;
	bool peak_at_moment;
	struct hl_summary_list most_allocs; /* the run's stacks by allocations */
	struct hl_summary_list most_bytes;  /* the run's stacks by bytes allocated */
	/* the run's stacks by temporary allocations (freed right after being
	 * allocated, heaptrack's sense: stack_aggregates.temporaries) */
	struct hl_summary_list most_temporaries;
	uint64_t error_counts[HL_ERROR_KIND_COUNT]; /* heap errors by enum hl_error_kind */
};

/* The gate's counts over stored run run_id (as `heapledger gate` counts
 * them: every process, its loss records, its heap errors, whether its
 * stream ended without its exit record or dropped events, whether the run
 * was closed) into g, which the caller has hl_gate_init()ed. 0, -ENOENT
 * (no such run) or -errno with hl_store_error() set. */
int hl_query_run_gate(struct hl_store *s, int64_t run_id, const struct hl_gate_options *o,
		      struct hl_gate *g);

/* The summary of run_id with the gate's options o; free it with
 * hl_run_summary_destroy() whatever this returns. 0, -ENOENT or -errno. */
int hl_query_run_summary(struct hl_store *s, int64_t run_id, const struct hl_gate_options *o,
			 struct hl_run_summary *out);
void hl_run_summary_destroy(struct hl_run_summary *sum);

#endif /* HL_REPORTER_STORE_QUERY_SUMMARY_H */
