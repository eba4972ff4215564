/*
 * reporter/cli/cmd_valgrind.c: `heapledger valgrind [valgrind options] prog args`
 * (also the command when heapledger is run under the name
 * heapledger-valgrind), so a CI job or CTest's memcheck moves from valgrind
 * by changing one word.
 *
 * It takes valgrind's own option names, values and defaults (leak-check
 * summary, show and errors-for leak kinds definite,possible), checks them,
 * and runs the program as `heapledger run` with the equivalent options:
 * one code path for the run, the gate, the text and the files. An option
 * heapledger cannot honour is refused by name with status 125 before
 * anything runs, never ignored: a run that looked like valgrind's but
 * checked less would pass a CI job it should fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "report.h"
#include "report_formats.h"

#define VG_MAX_SUPPRESSIONS 64
#define VG_MAX_CALLERS 500 /* valgrind's own limit */

struct vg_options {
	const char *tool, *leak_check, *show_leak_kinds, *show_reachable, *show_possibly_lost;
	const char *errors_for_leak_kinds, *log_file, *xml, *xml_file, *gen_suppressions;
	const char *trace_children;
	unsigned long error_exitcode, num_callers;
	bool error_exitcode_set, quiet;
	const char *suppressions[VG_MAX_SUPPRESSIONS];
	size_t nsuppressions;
};

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
	o->error_exitcode_set = true;
	return NULL;
}

static const char *file_arg(const char *value, void *out)
{
	const char *why = *value ? hl_report_check_file_name(value) : "needs a file name";

	if (!why)
		*(const char **)out = value;
	return why;
}

/* valgrind takes its options whole: a name the table lacks (or a shortened
 * one, which getopt_long would take) is refused with what heapledger does
 * check, before anything runs. Returns -1 to go on, or HL_EXIT_FAILURE. */
static int refuse_unknown(const struct hl_arg *args, int argc, char **argv)
{
	for (int i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++) {
		const char *opt = argv[i];
		size_t len = strcspn(opt + 2, "=");
		bool known = !strcmp(opt, "-q") || !strcmp(opt, "-h");

		for (const struct hl_arg *a = args; !known && opt[1] == '-' && a->name; a++)
			known = strlen(a->name) == len && !strncmp(a->name, opt + 2, len);
		known = known || !strcmp(opt, "--help");
		if (!known) {
			fprintf(stderr, "heapledger valgrind: the valgrind option '%s' is not supported:"
				" heapledger checks leaks and heap misuse (invalid, double and mismatched"
				" frees, overwritten redzones), not uninitialised values, invalid reads or"
				" the errors of valgrind's other tools; nothing was run\n"
				"Try 'heapledger valgrind --help' for the options it takes.\n", opt);
			return HL_EXIT_FAILURE;
		}
		/* "--opt value" is not valgrind's syntax; every known one has '=' */
	}
	return -1;
}

/* Fills o; returns -1 to go on (*first: the program's index), else the
 * status to exit with. */
static int parse(int argc, char **argv, struct vg_options *o, int *first)
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
			    "process; %q{VAR}: $VAR)"),
		HL_ARG_CHOICE("xml", 0, "yes|no", &o->xml, "yes: also write memcheck's XML "
			      "(protocol 4) to --xml-file"),
		HL_ARG_CALL("xml-file", 0, "FILE", file_arg, &o->xml_file,
			    "where --xml=yes writes (%p as for --log-file)"),
		HL_ARG_CALL("suppressions", 0, "FILE", suppressions_arg, o,
			    "valgrind (or LSan) suppressions (repeatable)"),
		HL_ARG_CHOICE("gen-suppressions", 0, "no|all", &o->gen_suppressions,
			      "all: print a suppression for each loss record (yes, which asks "
			      "interactively, is not supported)"),
		HL_ARG_UNSIGNED("num-callers", 0, "N", &o->num_callers, 1, VG_MAX_CALLERS,
				"frames captured and shown per stack (heapledger keeps at most 256)"),
		HL_TRACE_CHILDREN_ARG(&o->trace_children, "no"),
		HL_ARG_FLAG("quiet", 'q', &o->quiet, "no messages of heapledger's own on stderr"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"valgrind", "PROG [ARGS...]", 1, -1,
		"Run PROG as `valgrind [OPTIONS] PROG ARGS` would, with valgrind's option names\n"
		"and defaults, through heapledger: its leaks and heap misuse errors, in\n"
		"valgrind's text (stderr or --log-file) and XML, its exit status or\n"
		"--error-exitcode's. CTest's memcheck takes it as a valgrind (MEMORYCHECK_TYPE\n"
		"Valgrind, MEMORYCHECK_COMMAND the heapledger-valgrind link).",
		args,
		"Any other valgrind option is refused by name (exit status 125) before anything\n"
		"runs: heapledger finds leaks and heap misuse errors, not uninitialised values,\n"
		"invalid reads or the errors of valgrind's other tools.\n",
	};
	int rc = refuse_unknown(args, argc, argv);

	if (rc < 0)
		rc = hl_args_parse(&cmd, argc, argv, first);
	if (rc >= 0)
		return rc;
	if (o->xml && !strcmp(o->xml, "yes") && !o->xml_file)
		return hl_args_usage_error(&cmd, "--xml=yes needs --xml-file=FILE");
	if (o->xml_file && !(o->xml && !strcmp(o->xml, "yes")))
		return hl_args_usage_error(&cmd, "--xml-file needs --xml=yes");
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

/* `heapledger run` options saying what o says; returns argc. */
static int run_arguments(const struct vg_options *o, char **v)
{
	bool full = o->leak_check && (!strcmp(o->leak_check, "yes") || !strcmp(o->leak_check, "full"));
	char buf[64], num[24];
	int n = 0;

	add(v, &n, "%s", "run"); /* stored where `run` stores ($HEAPLEDGER_DB...) */
	/* valgrind's default is no: the programs PROG executes run untraced */
	add(v, &n, "--trace-children=%s", o->trace_children ? o->trace_children : "no");
	if (o->quiet)
		add(v, &n, "%s", "--quiet");
	/* summary/no: loss records neither shown nor counted */
	add(v, &n, "--show-leak-kinds=%s", full ? shown_kinds(o, buf, sizeof(buf)) : "none");
	add(v, &n, "--errors-for-leak-kinds=%s",
	    !full ? "none" : o->errors_for_leak_kinds ? o->errors_for_leak_kinds
						      : "definite,possible");
	if (o->error_exitcode) {
		snprintf(num, sizeof(num), "%lu", o->error_exitcode);
		add(v, &n, "--error-exitcode=%s", num);
	}
	if (o->num_callers) {
		snprintf(num, sizeof(num), "%lu",
			 o->num_callers > HL_WIRE_MAX_FRAMES ? HL_WIRE_MAX_FRAMES : o->num_callers);
		add(v, &n, "--num-callers=%s", num);
		add(v, &n, "--depth=%s", num);
	}
	if (o->log_file)
		add(v, &n, "--log-file=%s", o->log_file);
	if (o->xml_file)
		add(v, &n, "--xml-file=%s", o->xml_file);
	for (size_t i = 0; i < o->nsuppressions; i++)
		add(v, &n, "--suppressions=%s", o->suppressions[i]);
	if (o->gen_suppressions)
		add(v, &n, "--gen-suppressions=%s", o->gen_suppressions);
	add(v, &n, "%s", "--");
	return n;
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
	char **v;
	int first, n, rc;

	rc = parse(argc, argv, &o, &first);
	if (rc >= 0)
		return rc;
	v = calloc((size_t)(argc - first) + VG_MAX_SUPPRESSIONS + 32, sizeof(*v));
	if (!v)
		return HL_EXIT_FAILURE;
	n = run_arguments(&o, v);
	for (int i = first; i < argc; i++)
		v[n + i - first] = argv[i];
	rc = hl_run_command(n + argc - first, v, leak_error_kinds(&o));
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return rc;
}
