/*
 * reporter/model/gate.h: the verdict a CI job acts on. A run fails the gate when
 * heap errors were found (always), or when the leaks it counts exceed every
 * threshold given (none given: any counted leak fails). Counted are the
 * leaks of the kinds --errors-for-leak-kinds names (valgrind's option and
 * default: definite,indirect) that no suppression matched and, with a
 * baseline, whose site the baseline does not hold. A leak no scan classified
 * ("unknown": the process died, or _exit()ed, before its exit scan) counts
 * only when asked for (the kind "unknown", or "all"): valgrind classifies
 * the blocks of such a process (mostly still reachable: it died holding its
 * pointers) and passes it, so counting them would fail, for instance, every
 * fork child that _exit()s with its parent's heap. They are never dropped
 * silently: the verdict line gives their bytes, the report lists them.
 *
 * The gate fails closed: a verdict heapledger could not complete fails it
 * whatever the leaks say, each case with its own reason line. A process
 * whose event stream ended without its exit record (killed, or the hook
 * went on standalone: the program closed heapledger's descriptor, the
 * reporter stopped reading for wait_ms), one whose hook dropped events, a
 * total that does not fit in 64 bits, a run with no process, a stored run
 * never closed (its daemon was killed). A zero-byte leak is a leak
 * (valgrind: "0 bytes in 1 blocks are definitely lost"): the count is of
 * loss records, the byte threshold only applies when given.
 *
 * One verdict for every source: `run` and `daemon` count their processes as
 * they finish (hl_gate_count_process, from_live.h), `heapledger gate` counts a stored run
 * (hl_gate_count_report); both go through hl_gate_count_leak.
 */
#ifndef HL_REPORTER_GATE_H
#define HL_REPORTER_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>

#include "report.h"

/* Fingerprints of a baseline, sorted (hl_gate_baseline_*). */
struct hl_baseline {
	char **fingerprints;
	size_t n, cap;
};

/* --errors-for-leak-kinds' bit for leaks no scan classified (beside the
 * suppression kinds, HL_SUPP_KIND_*: all are HL_CLASS_BIT()s). */
#define HL_GATE_KIND_UNKNOWN HL_CLASS_BIT(HL_CLASS_UNKNOWN)

struct hl_gate_options {
	unsigned long error_exitcode;   /* --error-exitcode: 0 = keep the program's status */
	unsigned kinds;                 /* HL_SUPP_KIND_* and HL_GATE_KIND_UNKNOWN bits */
	unsigned long max_bytes;        /* --leak-bytes-threshold: fail above N bytes (0: any) */
	unsigned long max_blocks;       /* --leak-blocks-threshold: fail above N blocks */
	const struct hl_baseline *baseline; /* NULL: every site is new */
};

/* The verdict options of run, daemon and gate, for their args.h tables
 * (gate has its own --error-exitcode, default 1). */
#define HL_GATE_KIND_ARGS(o) \
	HL_ARG_CALL("errors-for-leak-kinds", 0, "KINDS", hl_gate_kinds_arg, (o), \
		    "leak kinds that fail the gate: definite,indirect,possible,reachable," \
		    "unknown (not scanned), all or none (default definite,indirect)"), \
	HL_ARG_UNSIGNED("leak-bytes-threshold", 0, "N", &(o)->max_bytes, 0, ULONG_MAX, \
			"leaks fail the gate only above N bytes (default 0)"), \
	HL_ARG_UNSIGNED("leak-blocks-threshold", 0, "N", &(o)->max_blocks, 0, ULONG_MAX, \
			"leaks fail the gate only above N blocks (default 0)")
#define HL_GATE_ARGS(o) \
	HL_ARG_UNSIGNED("error-exitcode", 0, "N", &(o)->error_exitcode, 0, 255, \
			"exit N if the gate fails: leaks or heap errors (default 0: off)"), \
	HL_GATE_KIND_ARGS(o)

/* A process that failed the gate, for the suite summary. */
struct hl_gate_process {
	uint32_t pid;
	char *command;           /* argv joined by spaces */
	uint64_t bytes, blocks;  /* counted leaks */
	uint64_t errors;
	const char *unseen;      /* why its verdict is incomplete (static), or NULL */
};

struct hl_gate {
	uint64_t processes;      /* processes counted */
	uint64_t bytes, blocks;  /* counted leaks */
	uint64_t records;        /* counted leak records */
	uint64_t errors;         /* heap errors */
	uint64_t suppressed_bytes, suppressed_blocks;
	uint64_t known_bytes, known_blocks; /* leaks left out because the baseline has them */
	uint64_t unscanned_bytes, unscanned_blocks; /* "unknown" leaks not counted */
	/* Why the verdict is incomplete (each fails the gate): */
	uint64_t cut;            /* processes whose stream ended without its exit record */
	uint64_t dropped;        /* processes whose hook dropped events */
	const char *standalone;  /* the first such process's hook went on standalone:
				  * why (hl_report_standalone_sentence), or NULL */
	bool overflow;           /* a total did not fit in 64 bits (crafted import) */
	bool run_open;           /* the stored run was never closed */
	struct hl_gate_process *failing; /* processes with counted leaks or errors */
	size_t nfailing, failing_cap;
};

/* The gate's default kinds, --errors-for-leak-kinds=definite,indirect. */
#define HL_GATE_KINDS_DEFAULT (HL_CLASS_BIT(HL_CLASS_DEFINITE) | HL_CLASS_BIT(HL_CLASS_INDIRECT))

/* The one rule every door renders: a loss record of leak_class, not
 * suppressed, counts against a gate of `kinds` (hl_gate_options.kinds). */
bool hl_gate_counts_class(unsigned kinds, unsigned leak_class);
/* Its SARIF level: "error" when it counts, else its class's level but
 * never "error" ("warning" then): code scanning fails where the gate does. */
const char *hl_gate_sarif_level(unsigned kinds, unsigned leak_class);
/* Its valgrind XML <kind>: its class's; a record no scan classified has no
 * kind of its own in the protocol, so it is Leak_DefinitelyLost when it
 * counts and Leak_StillReachable (which no reader fails on) when not, its
 * text saying "are lost" (no class) either way. */
const char *hl_gate_xml_kind(unsigned kinds, unsigned leak_class);

/* The defaults: definite,indirect, no thresholds, no exit code. */
void hl_gate_options_init(struct hl_gate_options *o);
/* args.h callback of --errors-for-leak-kinds (o: the options). */
const char *hl_gate_kinds_arg(const char *value, void *o);
/* The gate's kinds as struct hl_report_view.leak_error_kinds (HL_SHOW_*
 * bits), so the ERROR SUMMARY counts what the gate counts. */
unsigned hl_gate_show_kinds(const struct hl_gate_options *o);
void hl_gate_init(struct hl_gate *g);
void hl_gate_destroy(struct hl_gate *g);
/* Counts one leak record; returns true if it counts against the gate. */
bool hl_gate_count_leak(struct hl_gate *g, const struct hl_gate_options *o,
			unsigned leak_class, bool suppressed, const char *fingerprint,
			uint64_t bytes, uint64_t blocks);
void hl_gate_count_report(struct hl_gate *g, const struct hl_gate_options *o,
			  const struct hl_report_process *p);
/* The stored run r was never closed (no end time): its daemon was killed,
 * or it still runs. */
void hl_gate_count_open_run(struct hl_gate *g);
/* Why the verdict is incomplete, in words (first reason), or NULL. */
const char *hl_gate_incomplete(const struct hl_gate *g);
bool hl_gate_failed(const struct hl_gate *g, const struct hl_gate_options *o);
/* "heapledger:   pid N (command): B bytes in N blocks leaked, E heap
 * errors[; why its verdict is incomplete]" for each failing process. */
void hl_gate_print_failing(const struct hl_gate *g, FILE *out);
/* "heapledger: gate: failed|passed: ..." on out. */
void hl_gate_print(const struct hl_gate *g, const struct hl_gate_options *o, FILE *out);

/* Baselines: a file lists one fingerprint a line (# comments, anything after
 * the fingerprint ignored); a stored run gives its sites. */
void hl_baseline_add(struct hl_baseline *b, const char *fingerprint);
void hl_baseline_sort(struct hl_baseline *b);
bool hl_baseline_has(const struct hl_baseline *b, const char *fingerprint);
void hl_baseline_destroy(struct hl_baseline *b);
/* Reads a baseline file: 0, or -errno / -EINVAL with "FILE:LINE: why" in err. */
int hl_baseline_load(struct hl_baseline *b, const char *path, char *err, size_t errlen);

#endif /* HL_REPORTER_GATE_H */
