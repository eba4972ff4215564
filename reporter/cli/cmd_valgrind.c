/*
 * reporter/cli/cmd_valgrind.c: `heapledger valgrind [valgrind options] prog args`
 * (also the command when heapledger is run under the name
 * heapledger-valgrind), so a CI job or CTest's memcheck moves from valgrind
 * by changing one word.
 *
 * A valgrind command line promises overflow and use-after-free checking, so
 * the program runs with checks=full (guard bytes, a quarantine of freed
 * blocks) and guard_first=16384 (each of the first blocks up to guard_max
 * against a PROT_NONE page: reads after free fault), and the run is `heapledger run` with the equivalent options: one
 * code path for the run, the gate, the text and the files.
 *
 * It takes every option valgrind's memcheck takes, with valgrind's names,
 * values and defaults. Those with a meaning here are mapped (the hl_arg
 * table in parse()); the rest (valgrind_only below) are checked as valgrind
 * checks them and dropped, each named once on stderr when heapledger cannot
 * do what it asks. A name valgrind does not know, or a value it refuses, is
 * refused in valgrind's words with valgrind's status 1 before anything runs.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"
#include "report.h"
#include "report_formats.h"

#define VG_MAX_SUPPRESSIONS 64
#define VG_MAX_CALLERS 500 /* valgrind's own limit */
#define VG_BAD_OPTION 1    /* valgrind's status for an option it refuses */
#define NOT_GIVEN ULONG_MAX
#define VG_GUARD_FIRST 16384u /* allocations guarded by a page (guardpage.c's sampled pool) */

struct vg_options {
	const char *tool, *leak_check, *show_leak_kinds, *show_reachable, *show_possibly_lost;
	const char *errors_for_leak_kinds, *log_file, *xml, *xml_file, *gen_suppressions;
	const char *trace_children, *show_error_list, *show_below_main, *child_silent;
	const char *default_suppressions, *libc_freeres, *cxx_freeres, *time_stamp, *track_fds;
	unsigned long error_exitcode, num_callers, redzone_size, freelist_vol;
	unsigned long malloc_fill, free_fill, heuristics;
	bool quiet, verbose;
	const char *suppressions[VG_MAX_SUPPRESSIONS];
	size_t nsuppressions;
};

/* ---- valgrind's options without a heapledger equivalent ------------------ */

/* A valgrind option the front end takes and drops. values: NULL for a
 * flag, "N" for a number, "*" for any text, else the words valgrind takes.
 * why: NULL when dropping it changes nothing heapledger reports (what it
 * does anyway, or valgrind's own machinery), else what is not done, said
 * once on stderr. */
struct vg_dropped {
	const char *name;
	const char *values;
	const char *why;
};

#define UNDEFINED "heapledger does not track undefined values"
#define NO_JIT "heapledger runs the program natively, not on a synthetic CPU"
#define NO_GDB "heapledger has no gdb server"
#define NO_XTREE "heapledger writes no xtree files (its database and `heapledger report` keep the stacks)"

static const struct vg_dropped valgrind_only[] = {
	/* memcheck's checks of defined values, which heapledger cannot see */
	{ "track-origins", "yes|no", UNDEFINED },
	{ "undef-value-errors", "yes|no", UNDEFINED },
	{ "partial-loads-ok", "yes|no", UNDEFINED },
	{ "expensive-definedness-checks", "no|auto|yes", UNDEFINED },
	{ "workaround-gcc296-bugs", "yes|no", UNDEFINED },
	{ "ignore-ranges", "*", "heapledger sees no invalid reads and writes to ignore" },
	{ "ignore-range-below-sp", "*", "heapledger sees no invalid reads and writes to ignore" },
	{ "smc-check", "none|stack|all|all-non-file", NO_JIT },
	{ "leak-resolution", "low|med|high",
	  "loss records are told apart by their whole stack (valgrind's high)" },
	{ "show-mismatched-frees", "yes|no", "mismatched frees are always reported" },
	{ "keep-stacktraces", "alloc|free|alloc-and-free|alloc-then-free|none",
	  "the allocation stack is always kept, the free stack of blocks in the quarantine" },
	{ "freelist-big-blocks", "N", "blocks leave the quarantine in the order they were freed" },
	{ "exit-on-first-error", "yes|no", "the program runs on after an error" },
	{ "trace-children-skip", "*", "use --trace-children=no, or heapledger run --exclude" },
	{ "trace-children-skip-by-arg", "*", "use --trace-children=no, or heapledger run --exclude" },
	{ "log-fd", "N", "the report goes to stderr, or to --log-file" },
	{ "log-socket", "*", "the report goes to stderr, or to --log-file" },
	{ "xml-fd", "N", "the XML goes to --xml-file" },
	{ "xml-socket", "*", "the XML goes to --xml-file" },
	{ "xml-user-comment", "*", "the XML has no user comment" },
	{ "error-markers", "*", "errors are not framed by markers" },
	{ "fullpath-after", "*", "source files are named as their debug information names them" },
	{ "alignment", "N", "blocks are aligned to 16 bytes" },
	{ "soname-synonyms", "*", "the allocator is replaced by symbol, in every object" },
	{ "xtree-memory", "none|allocs|full", NO_XTREE },
	{ "xtree-memory-file", "*", NO_XTREE },
	{ "xtree-leak", "yes|no", NO_XTREE },
	{ "xtree-leak-file", "*", NO_XTREE },
	{ "vgdb", "no|yes|full", NO_GDB },
	{ "vgdb-error", "N", NO_GDB },
	{ "vgdb-stop-at", "*", NO_GDB },
	{ "vgdb-poll", "N", NO_GDB },
	{ "vgdb-shadow-registers", "yes|no", NO_GDB },
	{ "vgdb-prefix", "*", NO_GDB },
	{ "input-fd", "N", "nothing is asked on a terminal" },
	{ "db-attach", "yes|no", NO_GDB },
	/* what heapledger does anyway, or valgrind's own machinery */
	{ "demangle", "yes|no", NULL },
	{ "error-limit", "yes|no", NULL },
	{ "keep-debuginfo", "yes|no", NULL },    /* unloaded objects stay symbolized */
	{ "read-inline-info", "yes|no", NULL },  /* inlined calls are always shown */
	{ "read-var-info", "yes|no", NULL },
	{ "extra-debuginfo-path", "*", NULL },
	{ "debuginfo-server", "*", NULL },
	{ "allow-mismatched-debuginfo", "yes|no", NULL },
	{ "dsymutil", "yes|no", NULL },
	{ "max-stackframe", "N", NULL },
	{ "main-stacksize", "N", NULL },
	{ "valgrind-stacksize", "N", NULL },
	{ "max-threads", "N", NULL },
	{ "sim-hints", "*", NULL },
	{ "fair-sched", "no|yes|try", NULL },
	{ "kernel-variant", "*", NULL },
	{ "merge-recursive-frames", "N", NULL },
	{ "num-transtab-sectors", "N", NULL },
	{ "avg-transtab-entry-size", "N", NULL },
	{ "aspace-minaddr", "*", NULL },
	{ "show-emwarns", "yes|no", NULL },
	{ "require-text-symbol", "*", NULL },
	{ "sigill-diagnostics", "yes|no", NULL },
	{ "unw-stack-scan-thresh", "N", NULL },
	{ "unw-stack-scan-frames", "N", NULL },
	{ "resync-filter", "no|yes|verbose", NULL },
	{ "core-redzone-size", "N", NULL },
	{ "stats", "yes|no", NULL },
	{ "sanity-level", "N", NULL },
	{ "progress-interval", "N", NULL },
	{ "command-line-only", "yes|no", NULL },
	{ "trace-malloc", "yes|no", NULL },
	{ "trace-syscalls", "yes|no", NULL },
	{ "trace-signals", "yes|no", NULL },
	{ "trace-symtab", "yes|no", NULL },
	{ "trace-symtab-patt", "*", NULL },
	{ "trace-cfi", "yes|no", NULL },
	{ "trace-redir", "yes|no", NULL },
	{ "trace-sched", "yes|no", NULL },
	{ "trace-flags", "*", NULL },
	{ "trace-notbelow", "N", NULL },
	{ "trace-notabove", "N", NULL },
	{ "profile-flags", "*", NULL },
	{ "profile-interval", "N", NULL },
	{ "profile-heap", "yes|no", NULL },
	{ "debug-dump", "*", NULL },
	{ "wait-for-gdb", "yes|no", NULL },
	{ "sym-offsets", "yes|no", NULL },
	{ "dump-error", "N", NULL },
	{ "xtree-compress-strings", "yes|no", NULL },
	{ "px-default", "*", NULL },
	{ "px-file-backed", "*", NULL },
	{ "vex-iropt-verbosity", "N", NULL },
	{ "vex-iropt-level", "N", NULL },
	{ "vex-iropt-unroll-thresh", "N", NULL },
	{ "vex-guest-max-insns", "N", NULL },
	{ "vex-guest-chase", "yes|no", NULL },
	{ "vex-iropt-register-updates", "*", NULL },
	{ "vex-regalloc-version", "N", NULL },
	{ "d", NULL, NULL }, /* -d: valgrind's own debugging */
};

/* valgrind's message for an option it refuses, and its status. */
static int bad_option(const char *opt, const char *why)
{
	fprintf(stderr, "heapledger valgrind: %s option: %s\n", why ? "Bad" : "Unknown", opt);
	if (why)
		fprintf(stderr, "heapledger valgrind: %s\n", why);
	fputs("heapledger valgrind: Use --help for more information or consult the user manual.\n",
	      stderr);
	return VG_BAD_OPTION;
}

/* Whether value is one of the '|'-separated words. */
static bool is_one_of(const char *value, const char *words)
{
	size_t len = strlen(value);

	for (const char *w = words; *w; w += strcspn(w, "|"), w += *w == '|')
		if (strcspn(w, "|") == len && !strncmp(w, value, len))
			return true;
	return false;
}

/* The entry for "--name[=value]", or NULL. */
static const struct vg_dropped *dropped_option(const char *opt)
{
	/* "--name[=value]", or a one-letter "-d" */
	const char *name = opt[1] == '-' ? opt + 2 : opt[1] && !opt[2] ? opt + 1 : NULL;
	size_t len = name ? strcspn(name, "=") : 0;

	for (size_t i = 0; name && i < HL_ARRAY_SIZE(valgrind_only); i++)
		if (strlen(valgrind_only[i].name) == len && !strncmp(valgrind_only[i].name, name, len))
			return &valgrind_only[i];
	return NULL;
}

/* NULL if the dropped option's value is one valgrind takes, else why not. */
static const char *dropped_value_error(const struct vg_dropped *d, const char *opt)
{
	const char *value = strchr(opt, '=');
	unsigned long n;

	if (!d->values)
		return value ? "this option takes no value" : NULL;
	if (!value)
		return "this option needs a value (--name=value)";
	value++;
	if (!strcmp(d->values, "*"))
		return NULL;
	if (!strcmp(d->values, "N"))
		return hl_parse_unsigned(value, ULONG_MAX, &n) ? "Invalid integer value" : NULL;
	return is_one_of(value, d->values) ? NULL : "Invalid value";
}

static bool is_mapped(const struct hl_arg *args, const char *opt)
{
	size_t len = strcspn(opt + 2, "=");

	for (const struct hl_arg *a = args; a->name; a++) {
		if (opt[1] != '-' && a->short_name && opt[1] == a->short_name && !opt[2])
			return true;
		if (opt[1] == '-' && strlen(a->name) == len && !strncmp(a->name, opt + 2, len))
			return true;
	}
	return !strcmp(opt, "-h") || !strcmp(opt, "--help");
}

/* valgrind reads its options whole, up to the program: each is mapped
 * (kept in argv for hl_args_parse), dropped (its value checked, named on
 * stderr unless quiet when it asks for what heapledger does not do), or
 * refused in valgrind's words. argv is compacted in place; *argc shrinks.
 * Returns -1 to go on, else the status to exit with. */
static int drop_valgrind_only(const struct hl_arg *args, int *argc, char **argv)
{
	const char *said[HL_ARRAY_SIZE(valgrind_only) + 1];
	size_t nsaid = 0;
	bool quiet = false;
	int kept = 1, i;

	for (i = 1; i < *argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++)
		quiet = quiet || !strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet");
	for (i = 1; i < *argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++) {
		const struct vg_dropped *d;
		const char *why;

		if (!strcmp(argv[i], "-s")) {
			argv[kept++] = (char *)"--show-error-list=yes";
			continue;
		}
		if (is_mapped(args, argv[i])) {
			argv[kept++] = argv[i];
			continue;
		}
		d = dropped_option(argv[i]);
		if (!d)
			return bad_option(argv[i], NULL);
		why = dropped_value_error(d, argv[i]);
		if (why)
			return bad_option(argv[i], why);
		if (!d->why || quiet)
			continue;
		bool repeated = false;
		for (size_t k = 0; k < nsaid; k++)
			repeated = repeated || said[k] == d->name;
		if (repeated)
			continue;
		said[nsaid++] = d->name;
		fprintf(stderr, "heapledger valgrind: %s has no effect here: %s\n", argv[i], d->why);
	}
	while (i < *argc)
		argv[kept++] = argv[i++];
	argv[kept] = NULL;
	*argc = kept;
	return -1;
}

/* ---- mapped options ------------------------------------------------------ */

static const char *suppressions_arg(const char *value, void *out)
{
	struct vg_options *o = out;

	if (!*value)
		return "needs a file name";
	if (o->nsuppressions == VG_MAX_SUPPRESSIONS)
		return "too many suppression files";
	o->suppressions[o->nsuppressions++] = value;
	return NULL;
}

static const char *kinds_arg(const char *value, void *out)
{
	unsigned bits;
	const char *why = hl_report_parse_kinds(value, &bits);

	if (!why && strstr(value, "suppressed"))
		why = "kinds are definite, indirect, possible, reachable, all or none";
	if (!why)
		*(const char **)out = value;
	return why;
}

static const char *exitcode_arg(const char *value, void *out)
{
	struct vg_options *o = out;

	/* valgrind: 0 turns it off, else 1..255 */
	if (hl_parse_unsigned(value, 255, &o->error_exitcode))
		return "must be a whole number from 0 to 255";
	return NULL;
}

static const char *file_arg(const char *value, void *out)
{
	const char *why = *value ? hl_report_check_file_name(value) : "needs a file name";

	if (!why)
		*(const char **)out = value;
	return why;
}

/* --malloc-fill and --free-fill: a byte in hex, "0x" optional (valgrind). */
static const char *fill_arg(const char *value, void *out)
{
	char *end;
	unsigned long byte;

	if (!strncmp(value, "0x", 2) || !strncmp(value, "0X", 2))
		value += 2;
	byte = strtoul(value, &end, 16);
	if (!*value || *end || byte > 0xff)
		return "must be a byte in hexadecimal, 0x00 to 0xff";
	*(unsigned long *)out = byte;
	return NULL;
}

/* --leak-check-heuristics: the hook's heuristics= bits (libhook/options.h). */
static const char *heuristics_arg(const char *value, void *out)
{
	static const char *const names[] = { "stdstring", "length64", "newarray",
					     "multipleinheritance" };
	unsigned long bits = 0;

	for (const char *w = value; *w; w += strcspn(w, ","), w += *w == ',') {
		size_t len = strcspn(w, ","), i;

		if (len == 3 && !strncmp(w, "all", 3)) {
			bits = 15;
			continue;
		}
		if (len == 4 && !strncmp(w, "none", 4))
			continue;
		for (i = 0; i < HL_ARRAY_SIZE(names); i++)
			if (strlen(names[i]) == len && !strncmp(names[i], w, len))
				break;
		if (i == HL_ARRAY_SIZE(names))
			return "heuristics are stdstring, length64, newarray, multipleinheritance, "
			       "all or none";
		bits |= 1ul << i;
	}
	*(unsigned long *)out = bits;
	return NULL;
}

static const char *gen_suppressions_arg(const char *value, void *out)
{
	if (!is_one_of(value, "no|yes|all"))
		return "must be no, yes or all";
	*(const char **)out = value;
	return NULL;
}

/* Fills o; returns -1 to go on (*first: the program's index), else the
 * status to exit with. argv is compacted (valgrind_only options go), *argc
 * with it. */
static int parse(int *argc, char **argv, struct vg_options *o, int *first)
{
	const struct hl_arg args[] = {
		HL_ARG_CHOICE("tool", 0, "memcheck", &o->tool, "the only tool: memcheck"),
		HL_ARG_CHOICE("leak-check", 0, "no|summary|yes|full", &o->leak_check,
			      "yes/full: each loss record, and leaks count as errors; "
			      "summary (default), no: the totals only"),
		HL_ARG_CALL("show-leak-kinds", 0, "KINDS", kinds_arg, &o->show_leak_kinds,
			    "loss records shown: definite,indirect,possible,reachable, all or none "
			    "(default definite,possible)"),
		HL_ARG_CHOICE("show-reachable", 0, "yes|no", &o->show_reachable,
			      "yes: --show-leak-kinds=all; no: definite,possible"),
		HL_ARG_CHOICE("show-possibly-lost", 0, "yes|no", &o->show_possibly_lost,
			      "no: leave possibly lost records out of those shown"),
		HL_ARG_CALL("errors-for-leak-kinds", 0, "KINDS", kinds_arg,
			    &o->errors_for_leak_kinds,
			    "leak kinds counted as errors with --leak-check=full (default "
			    "definite,possible)"),
		HL_ARG_CALL("error-exitcode", 0, "N", exitcode_arg, o,
			    "exit N when errors were found: heap misuse, or leaks of the kinds "
			    "counted (default 0: the program's status)"),
		HL_ARG_CALL("log-file", 0, "FILE", file_arg, &o->log_file,
			    "the report into FILE, not stderr (%p: the process id, a file per "
			    "process; %q{VAR}: $VAR, which must be set)"),
		HL_ARG_CHOICE("xml", 0, "yes|no", &o->xml, "yes: also write memcheck's XML "
			      "(protocol 4) to --xml-file"),
		HL_ARG_CALL("xml-file", 0, "FILE", file_arg, &o->xml_file,
			    "where --xml=yes writes (%p as for --log-file)"),
		HL_ARG_CALL("suppressions", 0, "FILE", suppressions_arg, o,
			    "valgrind (or LSan) suppressions (repeatable)"),
		HL_ARG_CHOICE("default-suppressions", 0, "yes|no", &o->default_suppressions,
			      "no: not the built-in suppressions of glibc's and libstdc++'s own memory"),
		HL_ARG_CALL("gen-suppressions", 0, "no|yes|all", gen_suppressions_arg,
			    &o->gen_suppressions,
			    "all: print a suppression for each loss record (yes prints them all "
			    "too: nothing asks on the terminal)"),
		HL_ARG_UNSIGNED("num-callers", 0, "N", &o->num_callers, 1, VG_MAX_CALLERS,
				"frames captured and shown per stack (heapledger keeps at most 256)"),
		HL_TRACE_CHILDREN_ARG(&o->trace_children, "no"),
		HL_ARG_CHOICE("child-silent-after-fork", 0, "yes|no", &o->child_silent,
			      "yes: fork children (that did not exec) print nothing"),
		HL_ARG_CHOICE("time-stamp", 0, "yes|no", &o->time_stamp,
			      "yes: each line of the report starts with the time since the start "
			      "(dd:hh:mm:ss.mmm, when it is printed: at the process's end)"),
		HL_ARG_CHOICE("show-below-main", 0, "yes|no", &o->show_below_main,
			      "yes: stacks go on below main (the C runtime's start code)"),
		HL_ARG_CHOICE("show-error-list", 0, "yes|no", &o->show_error_list,
			      "yes (or -s): with -q, the ERROR SUMMARY too"),
		HL_ARG_UNSIGNED("redzone-size", 0, "N", &o->redzone_size, 0, 4096,
				"guard bytes after each block (default 16, as valgrind's)"),
		HL_ARG_UNSIGNED("freelist-vol", 0, "BYTES", &o->freelist_vol, 0, ULONG_MAX / 2,
				"bytes of freed blocks held back from reuse, rounded up to MiB "
				"(default 20000000, as valgrind's)"),
		HL_ARG_CALL("malloc-fill", 0, "HEX", fill_arg, &o->malloc_fill,
			    "fill new blocks (not calloc's) with this byte"),
		HL_ARG_CALL("free-fill", 0, "HEX", fill_arg, &o->free_fill,
			    "fill freed blocks with this byte (default 0xdd: heapledger checks it "
			    "to find writes after free)"),
		HL_ARG_CALL("leak-check-heuristics", 0, "LIST", heuristics_arg, &o->heuristics,
			    "interior pointers that reach a block: stdstring, length64, newarray, "
			    "multipleinheritance, all (default) or none"),
		HL_ARG_CHOICE("track-fds", 0, "no|yes|all", &o->track_fds,
			      "yes: at exit, list the file descriptors still open (but 0, 1 and 2) "
			      "and where each was made; all: 0, 1 and 2 too"),
		HL_ARG_CHOICE("run-libc-freeres", 0, "yes|no", &o->libc_freeres,
			      "no: glibc keeps its own memory at exit (it is then reported)"),
		HL_ARG_CHOICE("run-cxx-freeres", 0, "yes|no", &o->cxx_freeres,
			      "no: libstdc++ keeps its own memory at exit"),
		HL_ARG_FLAG("verbose", 'v', &o->verbose, "heapledger's own messages too (the default)"),
		HL_ARG_FLAG("quiet", 'q', &o->quiet,
			    "only the errors and loss records: no headers, summaries or messages"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"valgrind", "PROG [ARGS...]", 1, -1,
		"Run PROG as `valgrind [OPTIONS] PROG ARGS` would, with valgrind's option names\n"
		"and defaults, through heapledger with checks=full: its leaks and heap errors\n"
		"(invalid, double and mismatched frees, overflows past the end of a block,\n"
		"writes after free), in valgrind's text (stderr or --log-file) and XML, its exit\n"
		"status or --error-exitcode's. CTest's memcheck takes it as a valgrind\n"
		"(MEMORYCHECK_TYPE Valgrind, MEMORYCHECK_COMMAND the heapledger-valgrind link).",
		args,
		"Every other memcheck option is accepted. Those asking for what heapledger\n"
		"does not do (--track-origins, --undef-value-errors, --smc-check, ...) are\n"
		"named once on stderr: heapledger does not see uninitialised values, nor reads\n"
		"of freed memory. An option valgrind does not know exits 1, as valgrind does.\n",
	};
	int rc;

	o->redzone_size = o->freelist_vol = NOT_GIVEN;
	o->malloc_fill = o->free_fill = o->heuristics = NOT_GIVEN;
	rc = drop_valgrind_only(args, argc, argv);
	if (rc < 0)
		rc = hl_args_parse(&cmd, *argc, argv, first);
	if (rc == HL_EXIT_FAILURE) /* explained; valgrind's status for it */
		return VG_BAD_OPTION;
	if (rc >= 0)
		return rc;
	if (o->xml && !strcmp(o->xml, "yes") && !o->xml_file)
		return hl_args_usage_error(&cmd, "--xml=yes needs --xml-file=FILE"), VG_BAD_OPTION;
	if (o->xml_file && !(o->xml && !strcmp(o->xml, "yes")))
		return hl_args_usage_error(&cmd, "--xml-file needs --xml=yes"), VG_BAD_OPTION;
	return -1;
}

/* The kinds shown: valgrind's default definite,possible, or as asked. */
static const char *shown_kinds(const struct vg_options *o, char *buf, size_t len)
{
	const char *kinds = o->show_leak_kinds ? o->show_leak_kinds : "definite,possible";

	if (o->show_reachable && !strcmp(o->show_reachable, "yes"))
		kinds = "all";
	else if (o->show_reachable)
		kinds = "definite,possible";
	if (o->show_possibly_lost && !strcmp(o->show_possibly_lost, "no")) {
		unsigned bits = 0;
		size_t used = 0;

		hl_report_parse_kinds(kinds, &bits);
		bits &= ~HL_SHOW_POSSIBLE;
		buf[0] = 0;
		if (bits & HL_SHOW_DEFINITE)
			used += (size_t)snprintf(buf + used, len - used, "definite,");
		if (bits & HL_SHOW_INDIRECT)
			used += (size_t)snprintf(buf + used, len - used, "indirect,");
		if (bits & HL_SHOW_REACHABLE)
			used += (size_t)snprintf(buf + used, len - used, "reachable,");
		if (used)
			buf[used - 1] = 0;
		return used ? buf : "none";
	}
	return kinds;
}

static void add(char **v, int *n, const char *fmt, const char *value)
{
	size_t len = strlen(fmt) + strlen(value) + 1;
	char *s = malloc(len);

	if (!s)
		abort();
	snprintf(s, len, fmt, value);
	v[(*n)++] = s;
}

static bool is_yes(const char *value)
{
	return value && !strcmp(value, "yes");
}

static bool is_no(const char *value)
{
	return value && !strcmp(value, "no");
}

static void add_number(char **v, int *n, const char *fmt, unsigned long value)
{
	char num[24];

	snprintf(num, sizeof(num), "%lu", value);
	add(v, n, fmt, num);
}

/* `heapledger run` options saying what o says; returns argc. */
static int run_arguments(const struct vg_options *o, char **v)
{
	bool full = o->leak_check && (!strcmp(o->leak_check, "yes") || !strcmp(o->leak_check, "full"));
	char buf[64];
	int n = 0;

	add(v, &n, "%s", "run"); /* stored where `run` stores ($HEAPLEDGER_DB...) */
	/* valgrind's default is no: the programs PROG executes run untraced */
	add(v, &n, "--trace-children=%s", o->trace_children ? o->trace_children : "no");
	if (o->quiet)
		add(v, &n, "%s", "--quiet");
	/* what a valgrind command line promises: overflows, writes after free */
	add(v, &n, "%s", "--checks=full");
	if (o->redzone_size != NOT_GIVEN) /* valgrind takes 0; the hook keeps one byte */
		add_number(v, &n, "--redzone=%s", o->redzone_size ? o->redzone_size : 1);
	if (o->freelist_vol != NOT_GIVEN)
		add_number(v, &n, "--quarantine=%s",
			   (o->freelist_vol + (1ul << 20) - 1) >> 20 > 65536
				   ? 65536 : (o->freelist_vol + (1ul << 20) - 1) >> 20);
	if (o->free_fill != NOT_GIVEN)
		add_number(v, &n, "--fill=%s", o->free_fill);
	/* summary/no: loss records neither shown nor counted */
	add(v, &n, "--show-leak-kinds=%s", full ? shown_kinds(o, buf, sizeof(buf)) : "none");
	add(v, &n, "--errors-for-leak-kinds=%s",
	    !full ? "none" : o->errors_for_leak_kinds ? o->errors_for_leak_kinds
						      : "definite,possible");
	if (o->error_exitcode)
		add_number(v, &n, "--error-exitcode=%s", o->error_exitcode);
	if (o->num_callers) {
		unsigned long frames = o->num_callers > HL_WIRE_MAX_FRAMES ? HL_WIRE_MAX_FRAMES
									   : o->num_callers;

		add_number(v, &n, "--num-callers=%s", frames);
		add_number(v, &n, "--depth=%s", frames);
	}
	if (o->log_file)
		add(v, &n, "--log-file=%s", o->log_file);
	if (o->xml_file)
		add(v, &n, "--xml-file=%s", o->xml_file);
	for (size_t i = 0; i < o->nsuppressions; i++)
		add(v, &n, "--suppressions=%s", o->suppressions[i]);
	if (o->default_suppressions)
		add(v, &n, "--default-suppressions=%s", o->default_suppressions);
	if (o->gen_suppressions) /* yes would ask on the terminal: every one is printed */
		add(v, &n, "--gen-suppressions=%s", is_no(o->gen_suppressions) ? "no" : "all");
	add(v, &n, "%s", "--");
	return n;
}

/* The hook keys `run` has no option for, in front of the user's own
 * HEAPLEDGER_OPTIONS (which win when they name the same key). */
static void set_hook_options(const struct vg_options *o)
{
	const char *old = getenv(HL_ENV_OPTIONS);
	char buf[4096];
	/* The first blocks up to guard_max against a PROT_NONE page, freed
	 * ones left PROT_NONE: reads after free and past the end fault at the
	 * instruction, as memcheck names it (the guard bytes and the
	 * quarantine see only writes, and late). Each guarded block costs
	 * three system calls: all 200,000 blocks of a test's loop guarded took
	 * 8x valgrind's CPU, so the first VG_GUARD_FIRST are (the guard
	 * pool's slots). */
	int used = snprintf(buf, sizeof(buf), "guard_first=%u:", VG_GUARD_FIRST);

	if (o->malloc_fill != NOT_GIVEN)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "malloc_fill=%lu:",
				 o->malloc_fill);
	if (o->heuristics != NOT_GIVEN)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "heuristics=%lu:",
				 o->heuristics);
	if (o->track_fds)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "track_fds=%s:",
				 o->track_fds);
	/* one hook key runs both freeres (glibc's, then libstdc++'s) */
	if (is_no(o->libc_freeres) || is_no(o->cxx_freeres))
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "freeres=0:");
	snprintf(buf + used, sizeof(buf) - (size_t)used, "%s", old ? old : "");
	setenv(HL_ENV_OPTIONS, buf, 1);
}

/* The kinds whose loss records are errors: none unless --leak-check=full. */
static unsigned leak_error_kinds(const struct vg_options *o)
{
	unsigned bits = 0;

	if (!o->leak_check || (strcmp(o->leak_check, "yes") && strcmp(o->leak_check, "full")))
		return 0;
	hl_report_parse_kinds(o->errors_for_leak_kinds ? o->errors_for_leak_kinds
						       : "definite,possible", &bits);
	return bits;
}

int hl_cmd_valgrind(int argc, char **argv)
{
	struct vg_options o = { 0 };
	struct hl_report_view view = { 0 };
	char **v;
	int first, n, rc;

	rc = parse(&argc, argv, &o, &first);
	if (rc >= 0)
		return rc;
	v = calloc((size_t)(argc - first) + VG_MAX_SUPPRESSIONS + 40, sizeof(*v));
	if (!v)
		return HL_EXIT_FAILURE;
	n = run_arguments(&o, v);
	for (int i = first; i < argc; i++)
		v[n + i - first] = argv[i];
	set_hook_options(&o);
	view.leak_error_kinds = leak_error_kinds(&o);
	view.errors_only = o.quiet;
	/* -v shows the error list in valgrind; heapledger lists each context */
	view.error_summary = is_yes(o.show_error_list) || o.verbose;
	view.below_main = is_yes(o.show_below_main);
	view.silent_forks = is_yes(o.child_silent);
	if (is_yes(o.time_stamp)) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		view.time_origin_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	}
	rc = hl_run_command(n + argc - first, v, &view);
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return rc;
}
