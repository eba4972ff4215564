/*
 * reporter/cli/args.c: getopt_long over a command's table of struct hl_arg
 * (args.h), with the messages every command shares.
 *
 * The table is turned into getopt_long's struct option array and option
 * string on each call; long options get val = HL_ARG_LONG + index so an
 * option is found again by its index whatever name it was given by.
 * getopt's own messages are off (opterr = 0): ours name the long option and
 * what it accepts, the same way in every command.
 */
#define _GNU_SOURCE
#include "args.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define HL_ARG_LONG 256 /* above every short option character */
#define HL_ARG_MAX 64   /* options per command */
#define HL_HELP_COLUMNS 80  /* --help lines wrap before this column */
#define HL_HELP_NAME_MAX 24 /* a longer option name gets a line of its own */

static const struct hl_arg help_arg =
	HL_ARG_FLAG("help", 'h', NULL, "show this help and exit");

int hl_parse_unsigned(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static void vreport(const struct hl_command_line *cmd, const char *fmt, va_list ap)
{
	const char *space = *cmd->command ? " " : "";

	fprintf(stderr, "heapledger%s%s: ", space, cmd->command);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry 'heapledger%s%s --help' for more information.\n", space,
		cmd->command);
}

int hl_args_usage_error(const struct hl_command_line *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cmd, fmt, ap);
	va_end(ap);
	return HL_EXIT_FAILURE;
}

static size_t count_args(const struct hl_arg *args)
{
	size_t n = 0;

	while (args && args[n].name)
		n++;
	return n;
}

/* The i-th option of the command; index n is --help. */
static const struct hl_arg *arg_at(const struct hl_command_line *cmd, size_t i)
{
	return i < count_args(cmd->args) ? &cmd->args[i] : &help_arg;
}

/* The index of the option getopt_long returned as `c`, or -1. */
static int arg_index(const struct hl_command_line *cmd, int c)
{
	size_t n = count_args(cmd->args);

	if (c >= HL_ARG_LONG)
		return c - HL_ARG_LONG;
	for (size_t i = 0; i <= n; i++)
		if (c && arg_at(cmd, i)->short_name == c)
			return (int)i;
	return -1;
}

/* Is value one of the words of "a|b|c"? */
static bool is_choice(const char *choices, const char *value)
{
	size_t len = strlen(value);

	while (*choices) {
		size_t n = strcspn(choices, "|");

		if (n == len && !strncmp(choices, value, n))
			return true;
		choices += n + (choices[n] == '|');
	}
	return false;
}

/* Stores one option's value; returns 0 or HL_EXIT_FAILURE after saying why. */
static int apply(const struct hl_command_line *cmd, const struct hl_arg *a, const char *value)
{
	unsigned long v;
	const char *why;

	switch (a->kind) {
	case HL_ARG_KIND_FLAG:
		*(bool *)a->out = true;
		return 0;
	case HL_ARG_KIND_STRING:
		if (!*value)
			return hl_args_usage_error(cmd, "option --%s needs a value (%s)", a->name,
						   a->value_name);
		*(const char **)a->out = value;
		return 0;
	case HL_ARG_KIND_UNSIGNED:
		if (hl_parse_unsigned(value, a->max, &v) || v < a->min)
			return hl_args_usage_error(cmd, "--%s '%s': %s must be a whole number "
						   "from %lu to %lu", a->name, value,
						   a->value_name, a->min, a->max);
		*(unsigned long *)a->out = v;
		return 0;
	case HL_ARG_KIND_CHOICE:
		if (!is_choice(a->choices, value))
			return hl_args_usage_error(cmd, "--%s '%s': must be one of %s", a->name,
						   value, a->choices);
		*(const char **)a->out = value;
		return 0;
	case HL_ARG_KIND_CALL:
		why = a->call(value, a->out);
		if (why)
			return hl_args_usage_error(cmd, "--%s '%s': %s", a->name, value, why);
		return 0;
	}
	return 0;
}

/* getopt_long's '?': an unknown option, an ambiguous abbreviation, or a
 * value given to a flag (--no-db=1). */
static int bad_option(const struct hl_command_line *cmd, const char *text)
{
	int index = arg_index(cmd, optopt);

	if (optopt >= HL_ARG_LONG && index >= 0)
		return hl_args_usage_error(cmd, "option --%s takes no value",
					   arg_at(cmd, (size_t)index)->name);
	if (optopt)
		return hl_args_usage_error(cmd, "unknown option '-%c'", optopt);
	return hl_args_usage_error(cmd, "unknown option '%.*s'", (int)strcspn(text, "="),
				   text);
}

/* Fills getopt_long's tables from the command's; returns the option count. */
static size_t build_options(const struct hl_command_line *cmd, struct option *longopts,
			    char *shortopts)
{
	size_t n = count_args(cmd->args), s = 0;

	shortopts[s++] = '+'; /* stop at the first operand: `run prog -x` */
	shortopts[s++] = ':'; /* a missing value returns ':', not '?' */
	for (size_t i = 0; i <= n; i++) {
		const struct hl_arg *a = arg_at(cmd, i);
		bool takes_value = a->kind != HL_ARG_KIND_FLAG;

		longopts[i] = (struct option){ a->name, takes_value ? required_argument
								    : no_argument,
					       NULL, HL_ARG_LONG + (int)i };
		if (a->short_name) {
			shortopts[s++] = a->short_name;
			if (takes_value)
				shortopts[s++] = ':';
		}
	}
	longopts[n + 1] = (struct option){ 0 };
	shortopts[s] = 0;
	return n;
}

static int check_required(const struct hl_command_line *cmd, const bool *seen)
{
	for (size_t i = 0; i < count_args(cmd->args); i++) {
		const struct hl_arg *a = &cmd->args[i];

		if (a->required && !seen[i])
			return hl_args_usage_error(cmd, "option --%s %s is required", a->name,
						   a->value_name);
	}
	return -1;
}

static int check_operands(const struct hl_command_line *cmd, int argc, char **argv, int first)
{
	int count = argc - first;

	if (count < cmd->min_operands)
		return hl_args_usage_error(cmd, "missing operand (usage: heapledger%s%s [OPTIONS] %s)",
					   *cmd->command ? " " : "", cmd->command, cmd->operands);
	if (cmd->max_operands >= 0 && count > cmd->max_operands)
		return hl_args_usage_error(cmd, "unexpected argument '%s'",
					   argv[first + cmd->max_operands]);
	return -1;
}

int hl_args_parse(const struct hl_command_line *cmd, int argc, char **argv,
		  int *first_operand)
{
	struct option longopts[HL_ARG_MAX + 2];
	char shortopts[2 * HL_ARG_MAX + 4];
	bool seen[HL_ARG_MAX + 1] = { false };
	size_t n;
	int c, rc;

	if (count_args(cmd->args) > HL_ARG_MAX) {
		hl_log("%s: more than %d options; raise HL_ARG_MAX", cmd->command, HL_ARG_MAX);
		return HL_EXIT_FAILURE;
	}
	n = build_options(cmd, longopts, shortopts);
	opterr = 0;
	optind = 0; /* glibc: start afresh (tests parse several command lines) */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int index = arg_index(cmd, c);

		if (c == '?')
			return bad_option(cmd, argv[optind - 1]);
		if (c == ':')
			return hl_args_usage_error(cmd, "option --%s needs a value (%s)",
						   arg_at(cmd, (size_t)arg_index(cmd, optopt))->name,
						   arg_at(cmd, (size_t)arg_index(cmd, optopt))->value_name);
		if ((size_t)index == n) {
			hl_args_print_help(cmd, stdout);
			return fflush(stdout) == 0 ? 0 : HL_EXIT_FAILURE;
		}
		seen[index] = true;
		rc = apply(cmd, &cmd->args[index], optarg);
		if (rc)
			return rc;
	}
	*first_operand = optind;
	rc = check_required(cmd, seen);
	return rc >= 0 ? rc : check_operands(cmd, argc, argv, optind);
}

/* "-q, --quiet", "    --db FILE": the left column of --help. */
static int format_name(const struct hl_arg *a, char *buf, size_t len)
{
	char short_part[8] = "    ";

	if (a->short_name)
		snprintf(short_part, sizeof(short_part), "-%c, ", a->short_name);
	return snprintf(buf, len, "%s--%s%s%s", short_part, a->name, a->value_name ? " " : "",
			a->value_name ? a->value_name : "");
}

bool hl_args_is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

/* Prints words to f from column `column` on, wrapped before column
 * HL_HELP_COLUMNS; lines after the first start at `indent`. A word longer
 * than a line is printed whole. */
static void print_wrapped(FILE *f, const char *text, int column, int indent)
{
	while (*text) {
		size_t len = strcspn(text, " \n");

		if (column > indent && column + 1 + (int)len > HL_HELP_COLUMNS) {
			fprintf(f, "\n%*s", indent, "");
			column = indent;
		} else if (column > indent) {
			fputc(' ', f);
			column++;
		}
		fwrite(text, 1, len, f);
		column += (int)len;
		text += len;
		text += strspn(text, " \n");
	}
	fputc('\n', f);
}

void hl_args_print_help(const struct hl_command_line *cmd, FILE *f)
{
	size_t n = count_args(cmd->args);
	int width = 0;
	char name[96];

	fprintf(f, "usage: heapledger%s%s [OPTIONS]%s%s\n\n%s\n\nOptions:\n",
		*cmd->command ? " " : "", cmd->command, *cmd->operands ? " " : "", cmd->operands,
		cmd->summary);
	for (size_t i = 0; i <= n; i++) {
		int w = format_name(arg_at(cmd, i), name, sizeof(name));

		if (w <= HL_HELP_NAME_MAX)
			width = w > width ? w : width;
	}
	for (size_t i = 0; i <= n; i++) {
		const struct hl_arg *a = arg_at(cmd, i);
		char help[1024];
		int w = format_name(a, name, sizeof(name));

		snprintf(help, sizeof(help), "%s%s", a->help, a->required ? " (required)" : "");
		if (w > width)
			fprintf(f, "  %s\n%*s", name, width + 4, "");
		else
			fprintf(f, "  %-*s  ", width, name);
		print_wrapped(f, help, width + 4, width + 4);
	}
	if (cmd->more_help)
		fprintf(f, "\n%s", cmd->more_help);
	fprintf(f, "\nThe manual: man heapledger (commands), man libheapledger (the hook).\n");
}
