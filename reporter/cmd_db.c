/*
 * reporter/cmd_db.c: `heapledger db prune`, maintenance of a history
 * database (the SQL is in store_prune.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"
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
	printf("heapledger: db prune: removed %llu runs (%llu processes), kept %llu%s\n",
	       (unsigned long long)res.runs_removed, (unsigned long long)res.processes_removed,
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
		"Merge the runs of other heapledger databases (from other CI machines)\n"
		"into this one. A run is known by its UUID: one already here is skipped,\n"
		"so importing a file twice adds nothing.",
		args, NULL,
	};
	struct hl_store *store = NULL;
	int rc, first, err = 0;

	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	for (int i = first; i < argc; i++) {
		if (looks_like_json(argv[i])) {
			hl_log("import: %s: a JSON report; import takes heapledger databases"
			       " (store the run with --db on that machine)", argv[i]);
			return HL_EXIT_FAILURE;
		}
	}
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

		err = hl_store_import_db(store, argv[i], &res);
		if (err) {
			hl_log("import: %s: %s", argv[i], hl_store_error(store));
			break;
		}
		printf("heapledger: import: %s: %llu runs (%llu processes) imported, %llu already"
		       " present", argv[i], (unsigned long long)res.runs_imported,
		       (unsigned long long)res.processes_imported,
		       (unsigned long long)res.runs_present);
		if (res.runs_without_uuid)
			printf(", %llu without a UUID (stored by an older heapledger) skipped",
			       (unsigned long long)res.runs_without_uuid);
		printf("\n");
	}
	hl_store_close(store);
	if (!err && fflush(stdout))
		err = -EIO;
	return err ? HL_EXIT_FAILURE : 0;
}
