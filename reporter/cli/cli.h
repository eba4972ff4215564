/*
 * reporter/cli/cli.h: the subcommands of `heapledger` (main.c dispatches) and the
 * helpers they share.
 */
#ifndef HL_REPORTER_CLI_H
#define HL_REPORTER_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "report.h"
#include "state.h"
#include "store.h"
#include "symbolize.h"

/* Where runs go without --db (--help and the man page say so). */
#define HL_DEFAULT_DB_TEXT "$HEAPLEDGER_DB, else $XDG_DATA_HOME/heapledger/history.db"

/* What the text report shows, for run, daemon and report (an args table's
 * lines; `view` points at a struct hl_report_view). */
#define HL_VIEW_ARGS(view)                                                               \
	HL_ARG_CALL("show-leak-kinds", 0, "KINDS", hl_report_parse_kinds, &(view)->show_kinds, \
		    "loss records shown with stacks: definite,indirect,possible,reachable, "   \
		    "all or none, and suppressed (default: definite,indirect,possible)"),       \
	HL_ARG_CALL("show-reachable", 0, "yes|no", hl_report_parse_show_reachable,           \
		    &(view)->show_kinds, "yes: the same as --show-leak-kinds=all"),             \
	HL_ARG_UNSIGNED("num-callers", 0, "N", &(view)->num_callers, 1, HL_WIRE_MAX_FRAMES,   \
			"show at most N callers per stack (default: all captured)"),                \
	HL_ARG_UNSIGNED("max-leaks", 0, "N", &(view)->max_leaks, 0, 1000000,                   \
			"print at most the N largest loss records per process, 0 all (default: "    \
			"all; daemon 50, the hook's max_leaks); a process whose HEAPLEDGER_OPTIONS " \
			"set max_leaks gets its own; JSON and the database keep all"),              \
	HL_ARG_CALL("check-records", 0, "increased|changed|any", hl_report_parse_check_records, \
		    &(view)->check_records, "an on-demand check's loss records shown: those that " \
		    "grew since the check before (default, valgrind's leak_check increased), "   \
		    "changed, or any")

int hl_cmd_run(int argc, char **argv);
/* `run` with the text view valgrind's command line asks for (NULL: run's
 * own): its leak_error_kinds (HL_SHOW_*) count in each ERROR SUMMARY, as
 * valgrind's --leak-check=full does, and its errors_only, error_summary,
 * below_main and silent_forks; the other fields come from run's options. */
int hl_run_command(int argc, char **argv, const struct hl_report_view *valgrind_view);
/* `heapledger valgrind`, also heapledger run as "heapledger-valgrind". */
int hl_cmd_valgrind(int argc, char **argv);
int hl_cmd_daemon(int argc, char **argv);
int hl_cmd_env(int argc, char **argv);
int hl_cmd_report(int argc, char **argv);
int hl_cmd_gate(int argc, char **argv);
int hl_cmd_baseline(int argc, char **argv);
int hl_cmd_history(int argc, char **argv);
int hl_cmd_diff(int argc, char **argv);
int hl_cmd_db(int argc, char **argv);
int hl_cmd_import(int argc, char **argv);
int hl_cmd_bench_ingest(int argc, char **argv);

/* Absolute path of libheapledger.so.N: $HEAPLEDGER_LIB, else next to this
 * binary in the build tree (../libhook/), else bindir/../libdir relative to
 * this binary, else the configured libdir. Returns 0 or -ENOENT. */
int hl_find_hook_library(char *out, size_t len);
/* Absolute path of the executable name that a command runs (heapledger-ui):
 * beside this binary in the build tree, else bindir/../libexecdir/heapledger
 * relative to this binary, else the configured libexecdir/heapledger.
 * Returns 0 or -ENOENT. */
int hl_find_helper(const char *name, char *out, size_t len);
/* `heapledger ui`: runs heapledger-ui in this process's place (cmd_ui.c). */
int hl_cmd_ui_exec(int argc, char **argv);
/* The database used without --db: $HEAPLEDGER_DB, else
 * $XDG_DATA_HOME/heapledger/history.db, else
 * $HOME/.local/share/heapledger/history.db; one history for every directory
 * the user works in, and no database files left in source trees. With
 * create_dir, the missing directories of the default are made (0700).
 * NULL, after saying why, when there is none. */
const char *hl_default_db(bool create_dir);
/* "lib" or "lib:existing" for LD_PRELOAD; returns a malloc'd string. */
char *hl_preload_value(const char *lib, const char *existing);

/* --trace GLOB / --exclude GLOB of run and env: repeated globs joined by
 * ':' into *(char **)out (malloc'd), the value of $HEAPLEDGER_TRACE or
 * $HEAPLEDGER_EXCLUDE (libhook/trace.c matches them). */
const char *hl_glob_list_arg(const char *glob, void *out);
#define HL_TRACE_ARGS(trace, exclude)                                                        \
	HL_ARG_CALL("trace", 0, "GLOB", hl_glob_list_arg, (trace),                             \
		    "only programs whose executable path matches GLOB report (a GLOB without "   \
		    "'/' matches the file name; repeatable); the others send nothing"),          \
	HL_ARG_CALL("exclude", 0, "GLOB", hl_glob_list_arg, (exclude),                         \
		    "programs whose executable path matches GLOB send nothing (repeatable)")

/* --trace-children=yes|no of run, env and valgrind: no sets the hook option
 * children=0, whose rule is libhook/trace.c's: the program started (by run,
 * or by a shell under `heapledger env`) reports with its forks, the programs
 * they execute send nothing. The key goes in front of HEAPLEDGER_OPTIONS, so
 * the user's own keys still win. `out` is a const char * ("yes", "no" or
 * NULL: not given). */
#define HL_TRACE_CHILDREN_ARG(out, default_word)                                          \
	HL_ARG_CHOICE("trace-children", 0, "yes|no", (out),                                    \
		      "no: only the program started reports, with its forks; the programs " \
		      "they execute send nothing (valgrind's --trace-children; default "      \
		      default_word ")")
/* The HEAPLEDGER_OPTIONS key for a --trace-children value: "children=0",
 * "children=1", or NULL when not given. */
const char *hl_trace_children_key(const char *trace_children);

/* Options shared by run and daemon for reporting a finished process. */
struct hl_output {
	struct hl_symbolizer *sym;
	struct hl_store *store;   /* NULL: no database */
	const char *db_path;
	int64_t run_id;           /* runs.id, 0 if not stored */
	unsigned max_frames;      /* --depth, 0 = all */
	struct hl_report_view view; /* what the text report shows */
	bool quiet;               /* no text report */
	int64_t pages_written;    /* set by hl_output_close: the store's I/O */
	bool batch;               /* the run row and every process in one transaction
				   * (hl_store_batch_begin), committed by hl_output_close:
				   * for `heapledger run`, which stores all at the end */
	uint64_t stored;          /* processes stored */
	/* Monotonic ns until which a locked database is retried (atomic: a
	 * daemon's main thread shortens it at stop); 0: HL_OUTPUT_RETRY_NS
	 * after each operation's first try. */
	uint64_t retry_until_ns;
};
#define HL_OUTPUT_RETRY_NS (60ull * 1000000000ull)

/* Opens the database (unless out->store already holds it open) and starts a
 * run row; on failure prints why and leaves out->store NULL (the report
 * still gets printed). */
void hl_output_open_db(struct hl_output *out, const struct hl_report *r);
/* Stores p (already finished), retrying while the database is locked;
 * prints which process was not stored on failure. Returns 0 or -errno. */
int hl_output_store(struct hl_output *out, struct hl_process *p);
/* Ends the run row, or removes it if no process was stored; commits a batch. */
void hl_output_close(struct hl_output *out, uint64_t ended_ns, int exit_code);
/* Prints the text report to stderr through a buffer (stderr is unbuffered). */
void hl_output_print(const struct hl_report *r);

#endif /* HL_REPORTER_CLI_H */
