/*
 * reporter/model/report.h: the report of a run as plain data, built either from
 * live state at the end of `heapledger run` or from the database by
 * `heapledger report`, and printed as valgrind-style text or as the versioned
 * JSON document described in doc/manual.md. Both sources fill the same
 * structs, so the two outputs cannot drift apart.
 *
 * Everything hangs off r->arena and is freed with hl_report_destroy().
 */
#ifndef HL_REPORTER_REPORT_H
#define HL_REPORTER_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "heapledger/classes.h"
#include "symbolize.h"
#include "util.h"

#define HL_REPORT_FORMAT "heapledger-report"
struct hl_json_stacks;
#define HL_REPORT_VERSION 1

struct hl_report_stack {
	struct hl_frame_info *frames; /* innermost first, inlined frames expanded */
	size_t nframes;
	bool truncated;               /* the captured stack was cut short */
	/* 0, or: two stacks of one report with the same key, nframes and
	 * truncated have the same frames (the JSON writes each such stack
	 * once and repeats the text, report_json.c) */
	uint64_t key;
};

struct hl_report_leak {
	unsigned leak_class;          /* enum hl_leak_class (heapledger/classes.h) */
	uint64_t bytes, blocks;
	uint64_t indirect_bytes;      /* blocks lost only through these ("D direct, I indirect") */
	uint64_t inherited_blocks;    /* copied from the fork parent */
	bool suppressed;              /* matched a suppression (leak_class stays the class) */
	const char *suppression;      /* the suppression's name, NULL if none */
	const char *fingerprint;      /* leak site (fingerprint.h), NULL if unknown */
	/* the allocation function as valgrind's suppressions name it (malloc,
	 * realloc, _Znwm, ...), or a pattern of them; NULL if unknown */
	const char *allocator;
	struct hl_report_stack stack;
};

struct hl_report_error {
	unsigned kind;                /* enum hl_error_kind (heapledger/classes.h) */
	const char *call;             /* hl_error_call_name(): free, delete, realloc... */
	uint64_t address, block_address, block_size;
	uint64_t detail;              /* size_mismatch: the size delete was given; read,
				       * write calls: the access's size, 0 unknown */
	struct hl_report_stack stack, alloc_stack, free_stack;
};

/* An error found by a faulting read or write (checks=guard), not a call. */
bool hl_report_error_is_access(const struct hl_report_error *e);
/* valgrind's heading of such an error ("Invalid read of size 4") into buf. */
const char *hl_report_error_access_heading(const struct hl_report_error *e, char *buf,
					   size_t len);
/* Where its address lies, as valgrind says it: "is 0 bytes after a block of
 * size 10 alloc'd", "is 4 bytes inside a block of size 10 free'd", "is 8
 * bytes before a block ...", into buf. */
const char *hl_report_error_access_where(const struct hl_report_error *e, char *buf,
					 size_t len);
/* Every error, as the text report and the web UI word it. The block it
 * concerns was freed (a double free, a write after a free): its free
 * stack is where that happened. */
bool hl_report_error_block_freed(const struct hl_report_error *e);
/* The first line in valgrind's words ("Invalid free() / delete / delete[] /
 * realloc()", "Invalid read of size 4", "Mismatched new/delete size value:
 * 16", with " (found at exit)" for what the exit's check found), into buf. */
const char *hl_report_error_title(const struct hl_report_error *e, char *buf, size_t len);
/* Where its address lies ("is 24 bytes inside a block of size 160
 * alloc'd", "is 1 bytes after a block of size 64 alloc'd", "is not
 * stack'd, malloc'd or (recently) free'd"), numbers grouped, into buf. */
const char *hl_report_error_where(const struct hl_report_error *e, char *buf, size_t len);

/* A loss record of a check, and what changed since the check before
 * (struct hl_check_record). */
struct hl_report_check_record {
	struct hl_report_leak leak;   /* class, bytes (direct), blocks, indirect_bytes, stack */
	uint64_t rank;                /* loss record number among the check's, 1 = smallest */
	int64_t new_bytes, new_indirect_bytes, new_blocks;
};

/* An on-demand leak check: the live blocks by class at that moment, and
 * its loss records. */
struct hl_report_check {
	uint32_t seq;                 /* 1, 2, ... */
	bool by_signal;               /* check_signal=, else heapledger_check_leaks() */
	bool all_threads_stopped;
	bool scanned;                 /* classes from the scan, else all unknown */
	uint64_t time_ns;             /* CLOCK_REALTIME */
	uint64_t bytes[HL_CLASS_SUPPRESSED + 1];  /* by enum hl_leak_class */
	uint64_t blocks[HL_CLASS_SUPPRESSED + 1];
	struct hl_report_check_record *records; /* loss record order; the kept ones */
	size_t nrecords;
	uint64_t records_total;       /* records the check had (some may not be kept) */
	uint32_t *unstopped_tids;     /* threads that did not stop for its scan, if known */
	size_t nunstopped_tids;
};

/* A file descriptor still open at exit (track_fds=, valgrind's --track-fds),
 * in the order valgrind lists them: the newest first, inherited ones last. */
struct hl_report_fd {
	int32_t fd;
	uint32_t kind;                /* enum hl_fd_kind (wire.h) */
	uint32_t family;              /* a socket's AF_*, 0: unknown */
	const char *text;             /* its path, or a socket's addresses; "" none */
	bool inherited;               /* open when the image started: no stack */
	bool unseen;                  /* made by a call the hook does not see: no stack */
	struct hl_report_stack stack; /* where the program made it */
};

/* A sample of the heap in use (the live state's timeline). */
struct hl_report_sample {
	uint64_t time_ns;             /* CLOCK_REALTIME */
	uint64_t in_use_bytes, in_use_blocks;
};

struct hl_report_process {
	uint32_t pid, ppid;
	uint64_t serial;              /* order of HELLO within the run (the report's order) */
	const char *exe;
	const char **argv;
	uint32_t argc;
	const char *test_name;        /* $HEAPLEDGER_TEST_NAME of the process, or NULL */
	/* The process's HEAPLEDGER_OPTIONS set max_leaks: the text report prints
	 * at most that many of its loss records, whatever view.max_leaks says
	 * (the user's options for one program win over a whole run's). */
	bool max_leaks_given;
	uint32_t max_leaks;
	const char *origin;           /* "start", "fork", "exec" */
	const char *how;              /* hl_exit_how_name() */
	int32_t status;               /* exit status, or signal number for "signal" */
	uint64_t started_ns, ended_ns; /* CLOCK_REALTIME */
	uint64_t in_use_bytes, in_use_blocks;
	uint64_t allocs, frees, bytes_allocated, peak_bytes;
	uint64_t inherited_bytes, inherited_blocks;
	uint64_t dropped_events;
	uint64_t dropped_stacks;  /* allocations whose stack the hook could not keep (not stored) */
	uint64_t unmatched_frees, unfreed_superseded, live_mismatch;
	bool scanned;                 /* leak classes come from a reachability scan */
	bool no_exit_record;          /* the stream ended without its EXIT record (killed,
	                               * connection lost): unsent events are missing */
	int64_t recovered_events;     /* then: events read from its shared event buffers,
	                               * -1 when it had none */
	uint32_t standalone;          /* enum hl_standalone: why its hook went on standalone
	                               * (the reporter stalled, the connection failed, the
	                               * program took the descriptor), NONE if it did not */
	bool unstopped;               /* scanned while a thread ran: its stack read whole */
	uint32_t *unstopped_tids;     /* which threads, if the hook named them */
	size_t nunstopped_tids;
	struct {                      /* the signal that ended it, when the hook saw it */
		int32_t signal;       /* 0: none (killed unseen, or not by a signal) */
		int32_t code;         /* si_code */
		uint64_t address;     /* the fault address */
		const char *fault;    /* valgrind's words for the fault, or NULL */
		struct hl_report_stack stack; /* where it arrived, the faulting frame first */
	} fatal;
	const char *exec_path;        /* how == "exec": the image that replaced it, or NULL */
	bool exec_untracked;          /* how == "exec": the new image never reported (LD_PRELOAD
				       * unset, --trace/--exclude, a static program) */
	struct hl_report_leak *leaks; /* loss record order: valgrind's, largest last */
	size_t nleaks;
	struct hl_report_error *errors;
	size_t nerrors;
	struct {                      /* track_fds: descriptors open at exit */
		bool tracked;         /* the hook tracked them (else nothing is known) */
		bool all;             /* track_fds=all: 0, 1 and 2 are listed too */
		uint32_t open, std;   /* open at exit, and how many of them are 0, 1, 2 */
	} fd_summary;
	struct hl_report_fd *fds;     /* those listed, valgrind's order */
	size_t nfds;
	struct hl_report_check *checks; /* in order */
	size_t nchecks;
	struct hl_report_sample *timeline; /* as taken (threads: not always in time order) */
	size_t ntimeline;
};

/* Leak kinds, as bits of struct hl_report_view.show_kinds. */
#define HL_SHOW_DEFINITE (1u << HL_CLASS_DEFINITE)
#define HL_SHOW_INDIRECT (1u << HL_CLASS_INDIRECT)
#define HL_SHOW_POSSIBLE (1u << HL_CLASS_POSSIBLE)
#define HL_SHOW_REACHABLE (1u << HL_CLASS_REACHABLE)
/* Suppressed records are only counted, as valgrind does, unless asked for
 * (a heapledger extension: each then names its suppression). */
#define HL_SHOW_SUPPRESSED (1u << HL_CLASS_SUPPRESSED)
/* Records no scan classified (only in leak_error_kinds: they are always shown). */
#define HL_SHOW_UNKNOWN (1u << HL_CLASS_UNKNOWN)
#define HL_SHOW_ALL (HL_SHOW_DEFINITE | HL_SHOW_INDIRECT | HL_SHOW_POSSIBLE | HL_SHOW_REACHABLE)
#define HL_SHOW_DEFAULT (HL_SHOW_DEFINITE | HL_SHOW_INDIRECT | HL_SHOW_POSSIBLE)

/* What the text report shows; the JSON and the database keep everything. */
struct hl_report_view {
	unsigned show_kinds;          /* HL_SHOW_*: loss records printed with stacks */
	unsigned long num_callers;    /* return addresses shown per stack, 0 = all */
	unsigned long max_leaks;      /* loss records printed per process, the largest; 0 = all */
	/* HL_SHOW_* kinds whose loss records the ERROR SUMMARY counts as errors
	 * (valgrind's --leak-check=full with --errors-for-leak-kinds;
	 * HL_SHOW_UNKNOWN: records no scan classified); 0: heap errors only.
	 * A gated run sets the gate's kinds (hl_gate_show_kinds), and then a
	 * process heapledger could not see whole counts as one error too. */
	unsigned leak_error_kinds;
	unsigned check_records;       /* HL_CHECK_RECORDS_*: an on-demand check's records shown */
	/* report --kind: 1u << HL_CLASS_* of the loss records loaded, 0: all.
	 * The LEAK SUMMARY then says it sums only those. */
	unsigned kind_filter;
	/* valgrind's -q: per process only its errors and loss records (and the
	 * ERROR SUMMARY with error_summary), no headers and no summaries */
	bool errors_only;
	bool error_summary;           /* with errors_only: the ERROR SUMMARY line too (-s) */
	bool below_main;              /* stacks go on below main (--show-below-main=yes) */
	bool silent_forks;            /* fork children print nothing (--child-silent-after-fork) */
	/* a process that ended by exit, _exit or exec with nothing to show (no
	 * loss record shown, no heap error, no check, no warning, scanned)
	 * prints one line: a suite under a daemon is read for what leaks */
	bool brief_clean;
	/* valgrind's --time-stamp=yes: CLOCK_MONOTONIC ns at the run's start,
	 * and each ==pid== line's pid follows the time elapsed since then when
	 * it is printed ("==00:00:00:01.234 4242== "); 0: no stamps */
	uint64_t time_origin_ns;
};

/* Which loss records of an on-demand check the text shows, as valgrind's
 * leak_check deltas: those that grew since the check before (the default),
 * those that changed (grew or shrank), or every one. */
enum { HL_CHECK_RECORDS_INCREASED = 0, HL_CHECK_RECORDS_CHANGED = 1, HL_CHECK_RECORDS_ANY = 2 };
/* --check-records=increased|changed|any into *(unsigned *)out; NULL or why
 * the value is wrong. */
const char *hl_report_parse_check_records(const char *value, void *out);
/* Whether a check's record is shown in mode (HL_CHECK_RECORDS_*), as
 * valgrind's leak_check shows it: increased (the default) when it grew,
 * changed when it grew or shrank, any always. At the first check every
 * record is new, so all are. */
bool hl_report_check_record_grew(const struct hl_report_check_record *rec, unsigned mode);

/* Whether function is the C runtime's start code that calls main, which
 * valgrind names "(below main)". */
bool hl_report_is_below_main(const char *function);
/* How many frames of s valgrind shows (--show-below-main=no): up to main,
 * looking from the outermost frame in; without main, up to the innermost
 * start-code function (__libc_start_main...), which *below_main says is to
 * be named "(below main)". */
size_t hl_report_frames_to_main(const struct hl_report_stack *s, bool *below_main);

/* --show-leak-kinds=definite,indirect,possible,reachable|all|none (and
 * suppressed, which all does not include) into
 * *(unsigned *)out; returns NULL or why the value is wrong. */
const char *hl_report_parse_kinds(const char *value, void *out);
/* --show-reachable=yes|no: all kinds, or the default ones, into
 * *(unsigned *)out; NULL or why the value is wrong. */
const char *hl_report_parse_show_reachable(const char *value, void *out);

struct hl_report {
	int64_t run_id;               /* database id, 0 if not stored */
	const char *mode;             /* "run" or "daemon" */
	const char **argv;            /* the command of `heapledger run` */
	uint32_t argc;
	uint64_t started_ns, ended_ns;
	int exit_code;                /* what heapledger run exits with, -1 unknown */
	struct hl_report_view view;   /* text display options */
	/* The kinds the gate counts (hl_gate_options.kinds): SARIF levels and
	 * XML kinds render its rule (hl_gate_sarif_level, hl_gate_xml_kind). */
	unsigned gate_kinds;
	const char *uuid;             /* names the run in every database, NULL if none */
	const char *git_commit;       /* NULL if unknown */
	const char *git_branch;
	const char *cwd;              /* the directory and host it ran in, NULL if unknown */
	const char *hostname;
	const char **label_keys;      /* --label key=value, nlabels of each */
	const char **label_values;
	size_t nlabels;
	bool gen_suppressions;        /* print a suppression after each leak record */
	bool imported;                /* read from a JSON report: the directory and host
				       * it ran in are not this process's (not stored) */
	/* No process reported: what `heapledger run` saw happen instead (the
	 * program killed, the run interrupted), NULL when it does not know. */
	const char *unreported;
	struct hl_report_process *procs;
	size_t nprocs, procs_cap;
	struct hl_bump arena;
	struct hl_json_stacks *json_stacks; /* report_json.c's stacks written, by key */
};

void hl_report_init(struct hl_report *r);
void hl_report_destroy(struct hl_report *r);
/* hl_report_add_process, from a live process: from_live.h. */
/* A new zeroed process entry (for the database loader). */
struct hl_report_process *hl_report_new_process(struct hl_report *r);

/* A signal as valgrind names it ("SIGSEGV"), into buf; "" for 0 (the
 * hook saw no fatal signal). */
const char *hl_report_signal_name(int sig, char *buf, size_t len);
/* How p ended, in words: "exited with status 0", "replaced by exec of X"... */
void hl_report_describe_end(const struct hl_report_process *p, char *buf, size_t len);
/* True, with the reason in buf, when p holds blocks that no leak scan
 * classified (it was killed, _exited, or the hook ran none); false for a
 * scanned process, an image replaced by exec, or one with nothing in use. */
bool hl_report_not_scanned(const struct hl_report_process *p, char *buf, size_t len);
/* True when heapledger heard of p from its parent's side only (a fork
 * child, a spawned program or an exec'd image that never connected): the
 * report has no data of it but how it ended, when that was reaped. */
bool hl_report_never_connected(const struct hl_report_process *p);
/* True, with a sentence saying what may be missing in buf, when p's event
 * stream ended without its EXIT record: the events the hook had not sent
 * yet (each thread's latest) never arrived. */
bool hl_report_stream_cut(const struct hl_report_process *p, char *buf, size_t len);

/* enum hl_standalone's name in JSON and the database ("reporter_stalled",
 * "connection_lost", "descriptor_taken", "not_observed", ...), NULL for NONE;
 * and back: the enum, or -1 for a name that is none of them. */
const char *hl_report_standalone_name(uint32_t why);
int hl_report_standalone_parse(const char *name);
/* Every name, "reporter_stalled, ..., or null", into buf. */
const char *hl_report_standalone_names(char *buf, size_t len);
/* Why, in a sentence ("data missing: the hook went on standalone after the
 * reporter stopped reading for wait_ms ...", "not observed: a forked child
 * ..."), NULL for NONE. */
const char *hl_report_standalone_sentence(uint32_t why);

/* Valgrind-style text, as r->view says. */
void hl_report_print_text(const struct hl_report *r, FILE *out);
void hl_report_print_process_text(const struct hl_report *r,
				  const struct hl_report_process *p, FILE *out);
/* The JSON document; returns 0 or -errno. */
int hl_report_write_json(struct hl_report *r, FILE *out);
/* The same document in pieces, for a run streamed process by process: the
 * header (r's run fields), each process (first: the first written), the
 * end. Each returns 0 or -errno. */
int hl_report_json_begin(const struct hl_report *r, FILE *out);
int hl_report_json_process(struct hl_report *r, const struct hl_report_process *p, bool first,
			   FILE *out);
/* Frees what the JSON writer kept of r (hl_report_destroy calls it). */
void hl_report_json_forget(struct hl_report *r);
int hl_report_json_end(FILE *out);
/* --kind's list (definite, indirect, possible, reachable, unknown,
 * suppressed, all; valgrind's or the JSON's spelling) into
 * *(unsigned *)out as 1u << HL_CLASS_* bits; NULL or why it is wrong. */
const char *hl_report_parse_kind_filter(const char *value, void *out);

#endif /* HL_REPORTER_REPORT_H */
