/*
 * reporter/cli/cmd_gate.c: `heapledger gate` (the verdict over a stored run,
 * the same one run and daemon give with --error-exitcode) and `heapledger
 * baseline export` (the leak sites of a run, as a file a repository keeps so
 * that a gate fails only on new ones).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "cli.h"
#include "gate.h"
#include "policy.h"
#include "store_query.h"
#include "stored_verdict.h"

/* Opens db and loads run_id (0: the latest) into r. */
static int load_run(const char *db, unsigned long run_id, struct hl_store **s,
		    struct hl_report *r)
{
	int64_t id = (int64_t)run_id;
	int err = hl_store_open(db, true, s);

	if (!err && !id)
		err = hl_store_latest_run(*s, &id);
	if (!err)
		err = hl_store_load_report(*s, id, r);
	if (err)
		hl_log("%s: %s", db, hl_store_error(*s));
	return err;
}

int hl_cmd_gate(int argc, char **argv)
{
	const char *db = NULL, *baseline_arg = NULL;
	unsigned long run_id = 0;
	struct hl_policy pol = { 0 };
	struct hl_baseline baseline = { 0 };
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &db, "the database to read (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_UNSIGNED("run", 0, "ID", &run_id, 1, INT64_MAX, "the run to judge (default: the latest)"),
		HL_ARG_STRING("baseline", 0, "RUN|FILE", &baseline_arg,
			      "count only leaks at sites this run or baseline file does not have"),
		HL_ARG_UNSIGNED("error-exitcode", 0, "N", &pol.gate_options.error_exitcode, 1, 255,
				"exit N if the gate fails (default 1)"),
		HL_GATE_KIND_ARGS(&pol.gate_options),
		HL_POLICY_ARGS(&pol),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"gate", "", 0, 0,
		"Judge a stored run as `run --error-exitcode` does: fail (exit 1, or\n"
		"--error-exitcode) on heap errors, or on leaks of the counted kinds above\n"
		"the thresholds, not suppressed and, with --baseline, at sites the baseline\n"
		"does not hold; exit 0 if it passes, 125 if heapledger itself failed.",
		args, NULL,
	};
	struct hl_store *store = NULL;
	struct hl_report r;
	struct hl_gate gate;
	int rc, first, err;

	hl_gate_options_init(&pol.gate_options);
	pol.gate_options.error_exitcode = 1;
	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (!db && !(db = hl_default_db(false)))
		return HL_EXIT_FAILURE;
	if (hl_policy_load(&pol, "gate")) {
		hl_policy_destroy(&pol);
		return HL_EXIT_FAILURE;
	}
	hl_report_init(&r);
	hl_gate_init(&gate);
	err = load_run(db, run_id, &store, &r);
	if (!err && baseline_arg) {
		err = hl_baseline_from_arg(store, "gate", baseline_arg, &baseline);
		pol.gate_options.baseline = &baseline;
	}
	if (!err) {
		hl_suppress_stored(&r, &pol);
		for (size_t i = 0; i < r.nprocs; i++)
			hl_gate_count_report(&gate, &pol.gate_options, &r.procs[i]);
		if (!r.ended_ns)
			hl_gate_count_open_run(&gate);
		printf("heapledger: run %lld: %llu %s%s\n", (long long)r.run_id,
		       (unsigned long long)gate.processes,
		       hl_plural(gate.processes, "process", "processes"),
		       r.ended_ns ? "" : ", never closed (no end time)");
		hl_gate_print_failing(&gate, stdout);
		hl_gate_print(&gate, &pol.gate_options, stdout);
		rc = hl_gate_failed(&gate, &pol.gate_options) ? (int)pol.gate_options.error_exitcode : 0;
	}
	if (fflush(stdout) != 0)
		err = -EIO;
	hl_gate_destroy(&gate);
	hl_baseline_destroy(&baseline);
	hl_report_destroy(&r);
	hl_store_close(store);
	hl_policy_destroy(&pol);
	return err ? HL_EXIT_FAILURE : rc;
}

struct export_ctx {
	FILE *out;
	const char *last;        /* fingerprint written last (rows come per class) */
	char last_buf[64];
	size_t sites;
};

static int export_site(void *ctx, const struct hl_run_site *site)
{
	struct export_ctx *e = ctx;

	if (e->last && !strcmp(e->last, site->fingerprint))
		return 0;
	snprintf(e->last_buf, sizeof(e->last_buf), "%s", site->fingerprint);
	e->last = e->last_buf;
	e->sites++;
	fprintf(e->out, "%s %llu %llu %s%s\n", site->fingerprint,
		(unsigned long long)site->bytes, (unsigned long long)site->blocks,
		site->function ? site->function : "?", site->suppression ? " (suppressed)" : "");
	return ferror(e->out) ? -EIO : 0;
}

int hl_cmd_baseline(int argc, char **argv)
{
	const char *db = NULL, *output = NULL;
	unsigned long run_id = 0;
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &db, "the database to read (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_UNSIGNED("run", 0, "ID", &run_id, 1, INT64_MAX,
				"the run whose leak sites to export (default: the latest)"),
		HL_ARG_STRING("output", 'o', "FILE", &output, "write to FILE (default: stdout)"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"baseline export", "", 0, 0,
		"Write the leak sites of a stored run as a baseline file: one fingerprint a\n"
		"line (then bytes, blocks and the function, for people). Kept in a\n"
		"repository, `heapledger gate --baseline FILE` then fails only on new sites.",
		args, NULL,
	};
	struct export_ctx e = { 0 };
	struct hl_store *store = NULL;
	int64_t id;
	int rc, first, err;

	if (argc >= 2 && hl_args_is_help(argv[1])) {
		hl_args_print_help(&cmd, stdout); /* the one subcommand's */
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "export"))
		return hl_args_usage_error(&cmd, "%s: the subcommand is 'export'",
					   argc < 2 ? "missing subcommand" : argv[1]);
	rc = hl_args_parse(&cmd, argc - 1, argv + 1, &first);
	if (rc >= 0)
		return rc;
	if (!db && !(db = hl_default_db(false)))
		return HL_EXIT_FAILURE;
	id = (int64_t)run_id;
	err = hl_store_open(db, true, &store);
	if (!err && !id)
		err = hl_store_latest_run(store, &id);
	if (!err)
		err = hl_query_run_exists(store, id);
	if (err) {
		hl_log("baseline: %s: %s", db, hl_store_error(store));
		hl_store_close(store);
		return HL_EXIT_FAILURE;
	}
	e.out = output ? fopen(output, "we") : stdout;
	if (!e.out) {
		hl_log("baseline: %s: %s", output, strerror(errno));
		hl_store_close(store);
		return HL_EXIT_FAILURE;
	}
	fprintf(e.out, "# heapledger baseline: the leak sites of run %lld in %s\n"
		"# fingerprint bytes blocks function (heapledger gate --baseline reads the"
		" first word)\n", (long long)id, db);
	err = hl_query_run_sites(store, id, export_site, &e);
	if (err == -EIO && !ferror(e.out))
		hl_log("baseline: %s", hl_store_error(store));
	if ((output ? fclose(e.out) : fflush(e.out)) != 0 && !err)
		err = -EIO;
	if (err)
		hl_log("baseline: cannot write %s", output ? output : "stdout");
	hl_store_close(store);
	return err ? HL_EXIT_FAILURE : 0;
}
