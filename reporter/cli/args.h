/*
 * reporter/cli/args.h: the command line of every `heapledger` command, parsed
 * one way (getopt_long), with one set of messages and one --help layout.
 *
 * Each command describes its options in a table of struct hl_arg, filled
 * with the HL_ARG_* macros below and ended by HL_ARG_END. To add an option,
 * add one line to the command's table, e.g.
 *
 *   HL_ARG_UNSIGNED("num-callers", 0, "N", &o.num_callers, 1, 256,
 *                   "frames shown per stack"),
 *
 * and it is parsed (--num-callers N and --num-callers=N), range-checked with
 * a message that names the option and its range, and listed by --help.
 * Kinds: a flag (bool), a string, an unsigned number with its range, one of
 * fixed words ("text|json"), or a callback for anything else (a list, a
 * repeated option): it returns NULL, or why the value is wrong.
 *
 * Exit statuses (the convention of env(1) and timeout(1)): --help exits 0;
 * a usage error, like any failure of heapledger itself, exits
 * HL_EXIT_FAILURE (125), so it cannot be mistaken for the status of the
 * program `heapledger run` ran, which is passed through; a program that
 * cannot be executed gives 126, one that is not found 127.
 */
#ifndef HL_REPORTER_ARGS_H
#define HL_REPORTER_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#define HL_EXIT_FAILURE 125
#define HL_EXIT_CANNOT_EXEC 126
#define HL_EXIT_NOT_FOUND 127

enum hl_arg_kind {
	HL_ARG_KIND_FLAG,     /* sets *(bool *)out */
	HL_ARG_KIND_STRING,   /* *(const char **)out = value */
	HL_ARG_KIND_UNSIGNED, /* *(unsigned long *)out = value in [min, max] */
	HL_ARG_KIND_CHOICE,   /* *(const char **)out = value, one of `choices` */
	HL_ARG_KIND_CALL,     /* call(value, out): NULL or why value is wrong */
};

struct hl_arg {
	const char *name;        /* long option, without "--" */
	char short_name;         /* -x, or 0 */
	enum hl_arg_kind kind;
	const char *value_name;  /* FILE, N, ...: --help and messages; NULL for a flag */
	void *out;               /* where the value goes (see the kinds) */
	unsigned long min, max;  /* HL_ARG_KIND_UNSIGNED: the valid range */
	const char *choices;     /* HL_ARG_KIND_CHOICE: "text|json" */
	const char *(*call)(const char *value, void *out); /* HL_ARG_KIND_CALL */
	bool required;           /* the command cannot run without it */
	const char *help;        /* one line for --help */
};

#define HL_ARG_FLAG(name, short_name, out, help) \
	{ name, short_name, HL_ARG_KIND_FLAG, NULL, out, 0, 0, NULL, NULL, false, help }
#define HL_ARG_STRING(name, short_name, value_name, out, help) \
	{ name, short_name, HL_ARG_KIND_STRING, value_name, out, 0, 0, NULL, NULL, false, help }
#define HL_ARG_REQUIRED_STRING(name, short_name, value_name, out, help) \
	{ name, short_name, HL_ARG_KIND_STRING, value_name, out, 0, 0, NULL, NULL, true, help }
#define HL_ARG_UNSIGNED(name, short_name, value_name, out, min, max, help) \
	{ name, short_name, HL_ARG_KIND_UNSIGNED, value_name, out, min, max, NULL, NULL, false, help }
#define HL_ARG_CHOICE(name, short_name, choices, out, help) \
	{ name, short_name, HL_ARG_KIND_CHOICE, choices, out, 0, 0, choices, NULL, false, help }
#define HL_ARG_CALL(name, short_name, value_name, call, out, help) \
	{ name, short_name, HL_ARG_KIND_CALL, value_name, out, 0, 0, NULL, call, false, help }
#define HL_ARG_END { NULL, 0, HL_ARG_KIND_FLAG, NULL, NULL, 0, 0, NULL, NULL, false, NULL }

/* One command: its name, what it does, its operands and its options. */
struct hl_command_line {
	const char *command;     /* "run" ("" for heapledger itself) */
	const char *operands;    /* after the options in the usage line: "[--] PROG [ARGS...]" */
	int min_operands;        /* fewer is a usage error */
	int max_operands;        /* more is a usage error; -1: any number */
	const char *summary;     /* what the command does, for --help */
	const struct hl_arg *args; /* ended by HL_ARG_END */
	const char *more_help;   /* printed after the options, or NULL */
};

/* Parses argv[1..] (argv[0] is the command's name). Options stop at the
 * first operand or at "--", so `run prog -x` passes -x to prog.
 * Returns -1 when the command should go on, with *first_operand set to the
 * index of its first operand; otherwise the status to exit with right away:
 * 0 after --help (printed to stdout), HL_EXIT_FAILURE after a usage error
 * (explained on stderr). */
int hl_args_parse(const struct hl_command_line *cmd, int argc, char **argv,
		  int *first_operand);

/* Prints the command's usage line, summary and options to f. */
void hl_args_print_help(const struct hl_command_line *cmd, FILE *f);

/* True for "--help" and "-h": what a command with subcommands answers with
 * its subcommand's help. */
bool hl_args_is_help(const char *arg);

/* "heapledger CMD: <message>; try 'heapledger CMD --help'" on stderr;
 * returns HL_EXIT_FAILURE. */
int hl_args_usage_error(const struct hl_command_line *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parses a decimal in [0, max] (no sign, no blanks); returns 0 or -EINVAL. */
int hl_parse_unsigned(const char *s, unsigned long max, unsigned long *out);

#endif /* HL_REPORTER_ARGS_H */
