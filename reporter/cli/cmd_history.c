/*
 * reporter/cli/cmd_history.c: `heapledger history` (each leak site across the
 * stored runs: first and last run, how many runs, bytes run by run) and
 * `heapledger diff RUN_A RUN_B` (sites new in B, fixed since A, changed).
 * The SQL is in the query layer (store_query.h), the JSON in
 * formats/history_json.c and diff_json.c (the web UI's too); this file only
 * arranges and prints the text.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "diff_json.h"
#include "history_json.h"
#include "store_query.h"
#include "util.h"

/* The runs shown in the bytes column of the text: the newest ones. */
#define HISTORY_TREND_RUNS 10

struct label_filter {
	const char **keys, **values;
	size_t n;
};

static const char *label_filter_arg(const char *key_value, void *ctx)
{
	struct label_filter *f = ctx;
	const char *eq = strchr(key_value, '=');

	if (!eq || eq == key_value)
		return "wants KEY=VALUE";
	f->keys = hl_xrealloc(f->keys, (f->n + 1) * sizeof(*f->keys));
	f->values = hl_xrealloc(f->values, (f->n + 1) * sizeof(*f->values));
	f->keys[f->n] = hl_xstrdup(key_value);
	((char *)f->keys[f->n])[eq - key_value] = 0;
	f->values[f->n++] = eq + 1;
	return NULL;
}

static void label_filter_destroy(struct label_filter *f)
{
	for (size_t i = 0; i < f->n; i++)
		free((char *)f->keys[i]);
	free(f->keys);
	free(f->values);
}

struct history_ctx {
	bool json;
	json_t *sites;           /* json */
	size_t count;
};

static int on_history(void *ctx, const struct hl_site_history *h)
{
	struct history_ctx *c = ctx;
	size_t from = h->nruns > HISTORY_TREND_RUNS ? h->nruns - HISTORY_TREND_RUNS : 0;

	c->count++;
	if (c->json)
		return hl_site_history_append(c->sites, h);
	printf("%-16s %6lld %6lld %5llu  ", h->fingerprint, (long long)h->first_run,
	       (long long)h->last_run, (unsigned long long)h->runs);
	for (size_t i = from; i < h->nruns; i++) {
		if (h->bytes[i])
			printf(" %llu", (unsigned long long)h->bytes[i]);
		else
			printf(" %s", h->suppressed[i] ? "s" : "-");
	}
	printf("  %s\n", h->function ? h->function : "?");
	return 0;
}

int hl_cmd_history(int argc, char **argv)
{
	const char *db = NULL, *program = NULL, *format = "text";
	struct label_filter labels = { 0 };
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &db, "the database to read (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_STRING("program", 0, "NAME", &program, "only runs of this program (basename)"),
		HL_ARG_CALL("label", 0, "KEY=VALUE", label_filter_arg, &labels,
			    "only runs with this label (repeatable: all must hold)"),
		HL_ARG_CHOICE("format", 0, "text|json", &format, "text (default) or json"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"history", "", 0, 0,
		"List every leak site of the stored runs the filters select: its fingerprint,\n"
		"the first and last of those runs that leaked there, in how many, and the\n"
		"bytes leaked there run by run (oldest first; '-': none, 's': suppressed).",
		args, NULL,
	};
	struct history_ctx c = { 0 };
	struct hl_run_filter f = { 0 };
	struct hl_store *store = NULL;
	size_t nruns = 0;
	int rc, first, err;

	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0) {
		label_filter_destroy(&labels);
		return rc;
	}
	if (!db && !(db = hl_default_db(false)))
		return HL_EXIT_FAILURE;
	f.program = program;
	f.label_keys = labels.keys;
	f.label_values = labels.values;
	f.nlabels = labels.n;
	c.json = !strcmp(format, "json");
	c.sites = json_array();
	if (!c.json)
		printf("%-16s %6s %6s %5s   %s\n", "site", "first", "last", "runs",
		       "bytes in each run (newest 10), function");
	err = hl_store_open(db, true, &store);
	if (!err)
		err = hl_query_history(store, &f, on_history, &c, &nruns);
	if (err) {
		hl_log("history: %s: %s", db, hl_store_error(store));
	} else if (c.json) {
		json_t *doc = hl_history_json(nruns, c.sites);

		c.sites = NULL;
		err = json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? -EIO : 0;
		putchar('\n');
		json_decref(doc);
	} else {
		printf("heapledger: %zu leak %s in %zu %s\n", c.count,
		       hl_plural(c.count, "site", "sites"), nruns, hl_plural(nruns, "run", "runs"));
	}
	json_decref(c.sites);
	hl_store_close(store);
	label_filter_destroy(&labels);
	if (!err && fflush(stdout) != 0)
		err = -EIO;
	return err ? HL_EXIT_FAILURE : 0;
}

/* ---- diff ---------------------------------------------------------------- */

static void print_delta(const struct hl_site_delta *s)
{
	const struct hl_leak_site *t = s->b ? s->b : s->a;

	uint64_t bytes_a = s->a ? s->a->bytes : 0, blocks_a = s->a ? s->a->blocks : 0;
	uint64_t bytes_b = s->b ? s->b->bytes : 0, blocks_b = s->b ? s->b->blocks : 0;

	printf("%-9s %s  %llu %s in %llu %s -> %llu %s in %llu %s  %s\n",
	       hl_site_change_name(s->change), t->fingerprint, (unsigned long long)bytes_a,
	       hl_plural(bytes_a, "byte", "bytes"), (unsigned long long)blocks_a,
	       hl_plural(blocks_a, "block", "blocks"), (unsigned long long)bytes_b,
	       hl_plural(bytes_b, "byte", "bytes"), (unsigned long long)blocks_b,
	       hl_plural(blocks_b, "block", "blocks"), t->function ? t->function : "?");
}

static int print_diff(const struct hl_site_diff *d, bool json)
{
	int err = 0;

	if (json) {
		json_t *doc = hl_site_diff_json(d);

		err = json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? -EIO : 0;
		putchar('\n');
		json_decref(doc);
		return err;
	}
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].change != HL_SITE_UNCHANGED)
			print_delta(&d->v[i]);
	printf("heapledger: run %lld -> run %lld: leak sites: %zu new, %zu fixed, %zu changed, %zu"
	       " unchanged\n", (long long)d->run_a, (long long)d->run_b,
	       d->counts[HL_SITE_NEW], d->counts[HL_SITE_FIXED], d->counts[HL_SITE_CHANGED],
	       d->counts[HL_SITE_UNCHANGED]);
	return 0;
}

int hl_cmd_diff(int argc, char **argv)
{
	const char *db = NULL, *format = "text";
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &db, "the database to read (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_CHOICE("format", 0, "text|json", &format, "text (default) or json"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"diff", "RUN_A RUN_B", 2, 2,
		"Compare the leak sites of two stored runs: new (leaking only in RUN_B),\n"
		"fixed (leaking only in RUN_A), changed (bytes or blocks differ); unchanged\n"
		"ones are counted. A site leaks where a lost block allocated there is not\n"
		"suppressed; still reachable blocks are not leaks. The web UI's diff is\n"
		"the same.",
		args, NULL,
	};
	struct hl_site_list sites[2] = { { 0 } };
	struct hl_site_diff d = { 0 };
	struct hl_store *store = NULL;
	unsigned long ids[2];
	int rc, first, err;

	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (!db && !(db = hl_default_db(false)))
		return HL_EXIT_FAILURE;
	for (int k = 0; k < 2; k++)
		if (hl_parse_unsigned(argv[first + k], INT64_MAX, &ids[k]))
			return hl_args_usage_error(&cmd, "'%s' is not a run id", argv[first + k]);
	err = hl_store_open(db, true, &store);
	for (int k = 0; k < 2 && !err; k++) {
		err = hl_query_run_exists(store, (int64_t)ids[k]);
		if (!err)
			err = hl_query_leak_sites(store, (int64_t)ids[k], &sites[k]);
	}
	if (err) {
		hl_log("diff: %s: %s", db, hl_store_error(store));
	} else {
		hl_site_diff(&sites[0], &sites[1], &d);
		d.run_a = (int64_t)ids[0];
		d.run_b = (int64_t)ids[1];
		err = print_diff(&d, !strcmp(format, "json"));
	}
	hl_site_diff_destroy(&d);
	hl_site_list_destroy(&sites[0]);
	hl_site_list_destroy(&sites[1]);
	hl_store_close(store);
	if (!err && fflush(stdout) != 0)
		err = -EIO;
	return err ? HL_EXIT_FAILURE : 0;
}
