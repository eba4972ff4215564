/*
 * reporter/cli/cmd_db.c: `heapledger db prune`, maintenance of a history
 * database (the SQL is in store_prune.c), and `heapledger import` of other
 * databases (store_import.c) and JSON reports (import_json.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "import_json.h"
#include "util.h"

int hl_cmd_db(int argc, char **argv)
{
	const char *db = NULL;
	unsigned long keep = ULONG_MAX;
	bool vacuum = false;
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &db, "the database (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_UNSIGNED("keep", 0, "N", &keep, 0, INT64_MAX,
				"keep the newest N runs (required)"),
		HL_ARG_FLAG("vacuum", 0, &vacuum,
			    "then rewrite the file so it shrinks (VACUUM; needs as much free space)"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"db prune", "", 0, 0,
		"Keep the newest N runs of the database and remove the others, with\n"
		"everything only they referenced; leak sites, history and diff then cover\n"
		"the runs kept.",
		args, NULL,
	};
	struct hl_store *store = NULL;
	struct hl_prune_result res;
	int rc, first, err;

	if (argc >= 2 && hl_args_is_help(argv[1])) {
		hl_args_print_help(&cmd, stdout); /* the one subcommand's */
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "prune"))
		return hl_args_usage_error(&cmd, "%s: the subcommand is 'prune'",
					   argc < 2 ? "missing subcommand" : argv[1]);
	rc = hl_args_parse(&cmd, argc - 1, argv + 1, &first);
	if (rc >= 0)
		return rc;
	if (keep == ULONG_MAX)
		return hl_args_usage_error(&cmd, "--keep N is required");
	if (!db && !(db = hl_default_db(false)))
		return HL_EXIT_FAILURE;
	err = hl_store_open(db, false, &store);
	if (!err)
		err = hl_store_prune(store, keep, vacuum, &res);
	if (err) {
		hl_log("db prune: %s: %s", db, hl_store_error(store));
		hl_store_close(store);
		return HL_EXIT_FAILURE;
	}
	printf("heapledger: db prune: removed %llu %s (%llu %s), kept %llu%s\n",
	       (unsigned long long)res.runs_removed, hl_plural(res.runs_removed, "run", "runs"),
	       (unsigned long long)res.processes_removed,
	       hl_plural(res.processes_removed, "process", "processes"),
	       (unsigned long long)res.runs_kept, vacuum ? "; vacuumed" : "");
	hl_store_close(store);
	return fflush(stdout) ? HL_EXIT_FAILURE : 0;
}

/* Whether the file starts as a JSON document rather than SQLite's header. */
static bool looks_like_json(const char *path)
{
	FILE *f = fopen(path, "re");
	int c = EOF;

	if (!f)
		return false;
	do
		c = fgetc(f);
	while (c == ' ' || c == '\n' || c == '\t' || c == '\r');
	fclose(f);
	return c == '{';
}

/* An input with nothing in it (empty, or only white space) is an error:
 * said here, naming the file (it must never be taken for a new database). */
static bool is_blank(const char *path)
{
	FILE *f = fopen(path, "re");
	int c = EOF;

	if (!f)
		return false; /* the import says why it cannot read it */
	do
		c = fgetc(f);
	while (c == ' ' || c == '\n' || c == '\t' || c == '\r');
	fclose(f);
	if (c == EOF)
		hl_log("import: %s: empty file; nothing was imported", path);
	return c == EOF;
}

/* The JSON reader's run and processes into the store, as they are read. */
static int sink_run(void *ctx, const struct hl_report *run)
{
	struct hl_store_import *imp = ctx;

	return hl_store_import_begin(imp->s, run, imp);
}

static int sink_process(void *ctx, struct hl_process *p, struct hl_symbolizer *sym)
{
	return hl_store_import_process(ctx, p, sym);
}

/* One JSON report into the store, read one process at a time; 0, or
 * -errno after saying why (naming the file). */
static int import_json(struct hl_store *store, const char *path, struct hl_import_result *res)
{
	struct hl_store_import imp = { .s = store };
	const struct hl_json_import_sink sink = { &imp, sink_run, sink_process };
	FILE *f = fopen(path, "re");
	char why[1024];
	int err;

	memset(res, 0, sizeof(*res));
	if (!f) {
		err = -errno;
		hl_log("import: %s: %s", path, strerror(-err));
		return err;
	}
	err = hl_json_import_stream(f, &sink, why, sizeof(why));
	fclose(f);
	if (!err && (err = hl_store_import_end(&imp, res)))
		why[0] = 0;
	if (err) {
		hl_store_import_abort(&imp);
		hl_log("import: %s: %s; nothing of it was imported", path,
		       why[0] ? why : hl_store_error(store));
	} else if (res->runs_empty) { /* an import that stores nothing fails */
		hl_log("import: %s: its run has no process; nothing was imported", path);
		err = -ENODATA;
	}
	return err;
}

int hl_cmd_import(int argc, char **argv)
{
	const char *db = NULL;
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &db, "the database to import into (default: "
			      HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"import", "FILE...", 1, -1,
		"Merge the runs of other heapledger databases, or JSON reports (`run --json`,\n"
		"`report --format json`), from other CI machines into this one; the format is\n"
		"told by the content. A run is known by its UUID: one already here is skipped,\n"
		"so importing a file twice adds nothing. A file that cannot be read whole\n"
		"adds nothing, and the import stops there (status 125).",
		args, NULL,
	};
	struct hl_store *store = NULL;
	int rc, first, err = 0;

	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (!db && !(db = hl_default_db(true)))
		return HL_EXIT_FAILURE;
	err = hl_store_open(db, false, &store);
	if (err) {
		hl_log("import: %s: %s", db, hl_store_error(store));
		hl_store_close(store);
		return HL_EXIT_FAILURE;
	}
	for (int i = first; i < argc && !err; i++) {
		struct hl_import_result res;

		if (is_blank(argv[i])) {
			err = -ENODATA;
			break;
		}
		if (looks_like_json(argv[i])) {
			if ((err = import_json(store, argv[i], &res)))
				break;
		} else if ((err = hl_store_import_db(store, argv[i], &res))) {
			hl_log("import: %s: %s", argv[i], hl_store_error(store));
			break;
		}
		printf("heapledger: import: %s: %llu %s (%llu %s) imported, %llu already present",
		       argv[i], (unsigned long long)res.runs_imported,
		       hl_plural(res.runs_imported, "run", "runs"),
		       (unsigned long long)res.processes_imported,
		       hl_plural(res.processes_imported, "process", "processes"),
		       (unsigned long long)res.runs_present);
		if (res.runs_without_uuid)
			printf(", %llu without a UUID (stored by an older heapledger) skipped",
			       (unsigned long long)res.runs_without_uuid);
		if (res.runs_empty)
			printf(", a run without any process skipped (nothing to store)");
		printf("\n");
	}
	hl_store_close(store);
	if (!err && fflush(stdout))
		err = -EIO;
	return err ? HL_EXIT_FAILURE : 0;
}
