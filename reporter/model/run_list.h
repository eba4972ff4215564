/*
 * reporter/model/run_list.h: stored runs as the run list, a run's page and
 * a program's history show them: one row per run with its labels and what
 * its processes leaked, by class. The query layer fills these
 * (store/query_runs.h); the outputs render them (formats/runs_json.h).
 *
 * Invariants: every string and array hangs off the list's arena and lives
 * until hl_run_list_destroy(); a value the database holds as NULL (a run
 * not ended, an exit code not known) is a struct hl_maybe with known false,
 * never a made-up 0.
 */
#ifndef HL_REPORTER_RUN_LIST_H
#define HL_REPORTER_RUN_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapledger/classes.h"
#include "util.h"

/* A stored integer that may be NULL. */
struct hl_maybe {
	int64_t value;                /* 0 when not known */
	bool known;                   /* the database holds a value */
};

/* What a run's (or a process's) loss records add up to, by the class they
 * are shown as: a suppressed record counts as HL_CLASS_SUPPRESSED, whatever
 * its class, since it is never shown as lost. */
struct hl_class_totals {
	uint64_t bytes[HL_LEAK_CLASS_COUNT];
	uint64_t records[HL_LEAK_CLASS_COUNT]; /* 0: the run has no record of the class */
};

/* A label of a run (--label key=value). */
struct hl_run_label {
	const char *key;
	const char *value;            /* NULL: stored without a value */
};

struct hl_run_row {
	int64_t id;
	const char *mode;             /* "run" or "daemon" */
	const char *program;          /* basename of the command, NULL unknown */
	const char *argv;             /* the command as stored: a JSON array, as text */
	const char *cwd;              /* NULL unknown (and in a list: not read) */
	const char *hostname;         /* NULL unknown */
	const char *git_commit;       /* NULL unknown */
	const char *git_branch;       /* NULL unknown */
	const char *uuid;             /* names the run in every database, NULL if none */
	int64_t started_ns;           /* CLOCK_REALTIME */
	struct hl_maybe ended_ns;     /* unknown while the run is being written */
	struct hl_maybe exit_code;    /* what `heapledger run` exited with */
	struct hl_run_label *labels;  /* ordered by key */
	size_t nlabels;
	uint64_t processes;           /* processes stored so far */
	struct hl_class_totals leaked;
	uint64_t errors;              /* heap errors of all its processes */
	uint64_t peak_bytes;          /* the largest peak heap of one of its processes */
};

/* Runs, in the order the query returns them. */
struct hl_run_list {
	struct hl_run_row *rows;
	size_t n, cap;
	int64_t total;                /* rows the query matched, before paging */
	struct hl_bump arena;
};

void hl_run_list_init(struct hl_run_list *l);
void hl_run_list_destroy(struct hl_run_list *l);
/* A new zeroed row at the end of l. */
struct hl_run_row *hl_run_list_add(struct hl_run_list *l);

/* The classes in the order their words sort (definitely, indirectly,
 * possibly, reachable, suppressed, unknown): how a class-keyed JSON object
 * lists them. order[] receives HL_LEAK_CLASS_COUNT classes. */
void hl_leak_classes_by_word(unsigned order[HL_LEAK_CLASS_COUNT]);

#endif /* HL_REPORTER_RUN_LIST_H */
