/*
 * reporter/main.c: the `heapledger` command: dispatches subcommands, and
 * holds the two small ones (env, report).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ui.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: heapledger <command> [options]\n"
		"  run [--db FILE | --no-db] [--json FILE] [--depth N] [--wait-ms N] -- prog [args...]\n"
		"      run prog with leak tracking; print the report; exit with prog's status\n"
		"  daemon --socket PATH [--db FILE | --no-db] [-q]\n"
		"      collect any number of processes started with `heapledger env`\n"
		"  env --socket PATH\n"
		"      print the shell exports that make programs report to a daemon\n"
		"  report [--db FILE] [--run ID] [--format text|json]\n"
		"      print a stored run (the latest by default)\n"
		"  ui [--db FILE] [--port N] [--listen ADDR] [--open]\n"
		"      serve the web UI over the database (127.0.0.1:8716 by default)\n"
		"See reporter/README.md for the JSON format.\n");
}

/* Prints s single-quoted for sh. */
static void print_quoted(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

int hl_cmd_env(int argc, char **argv)
{
	char lib[PATH_MAX], socket_path[2 * PATH_MAX + 2];
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			path = argv[++i];
		else
			path = NULL, i = argc;
	}
	if (!path) {
		fprintf(stderr, "usage: heapledger env --socket PATH\n");
		return 2;
	}
	if (hl_find_hook_library(lib, sizeof(lib))) {
		hl_log("env: cannot find libheapledger.so (set HEAPLEDGER_LIB)");
		return 1;
	}
	/* The socket path must be absolute: programs change directory. */
	if (path[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return 1;
		snprintf(socket_path, sizeof(socket_path), "%s/%s", cwd, path);
	} else {
		snprintf(socket_path, sizeof(socket_path), "%s", path);
	}
	fputs("export LD_PRELOAD=", stdout);
	print_quoted(lib);
	fputs("\"${LD_PRELOAD:+:$LD_PRELOAD}\"\nexport " HL_ENV_SOCKET "=", stdout);
	print_quoted(socket_path);
	putchar('\n');
	return 0;
}

int hl_cmd_report(int argc, char **argv)
{
	const char *db = HL_DEFAULT_DB, *format = "text";
	unsigned long run_id = 0;
	struct hl_store *store;
	struct hl_report r;
	int64_t id;
	int err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--db") && i + 1 < argc) {
			db = argv[++i];
		} else if (!strcmp(argv[i], "--run") && i + 1 < argc &&
			   !hl_parse_unsigned(argv[i + 1], LONG_MAX, &run_id)) {
			i++;
		} else if (!strcmp(argv[i], "--format") && i + 1 < argc &&
			   (!strcmp(argv[i + 1], "text") || !strcmp(argv[i + 1], "json"))) {
			format = argv[++i];
		} else {
			fprintf(stderr, "usage: heapledger report [--db FILE] [--run ID] [--format text|json]\n");
			return 2;
		}
	}
	err = hl_store_open(db, true, &store);
	if (!err && !run_id)
		err = hl_store_latest_run(store, &id);
	else
		id = (int64_t)run_id;
	hl_report_init(&r);
	if (!err)
		err = hl_store_load_report(store, id, &r);
	if (err) {
		hl_log("report: %s: %s", db, hl_store_error(store));
	} else if (!strcmp(format, "json")) {
		err = hl_report_write_json(&r, stdout);
	} else {
		printf("heapledger: run %lld (%s)\n", (long long)id, r.mode);
		hl_report_print_text(&r, stdout);
	}
	hl_report_destroy(&r);
	hl_store_close(store);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} commands[] = {
		{ "run", hl_cmd_run },
		{ "daemon", hl_cmd_daemon },
		{ "env", hl_cmd_env },
		{ "report", hl_cmd_report },
		{ "ui", hl_cmd_ui },
		{ "bench-ingest", hl_cmd_bench_ingest }, /* hidden: ingest speed */
	};

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < HL_ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "heapledger: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
