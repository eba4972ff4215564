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
