/*
 * reporter/cli/cmd_history.c: `heapledger history` (each leak site across the
 * stored runs: first and last run, how many runs, bytes run by run) and
 * `heapledger diff RUN_A RUN_B` (sites new in B, fixed since A, changed).
 * The SQL is in store_query.c; this file only arranges and prints.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
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

static json_t *history_json(const struct hl_site_history *h)
{
	json_t *o = json_object(), *runs = json_array();

	json_object_set_new(o, "fingerprint", json_string(h->fingerprint));
	json_object_set_new(o, "function", h->function ? json_string(h->function) : json_null());
	json_object_set_new(o, "first_run", json_integer(h->first_run));
	json_object_set_new(o, "last_run", json_integer(h->last_run));
	json_object_set_new(o, "runs", json_integer((json_int_t)h->runs));
	for (size_t i = 0; i < h->nruns; i++) {
		json_t *r = json_object();

		json_object_set_new(r, "run", json_integer(h->run_ids[i]));
		json_object_set_new(r, "bytes", json_integer((json_int_t)h->bytes[i]));
		json_array_append_new(runs, r);
	}
	json_object_set_new(o, "bytes_by_run", runs);
	return o;
}

static int on_history(void *ctx, const struct hl_site_history *h)
{
	struct history_ctx *c = ctx;
	size_t from = h->nruns > HISTORY_TREND_RUNS ? h->nruns - HISTORY_TREND_RUNS : 0;

	c->count++;
	if (c->json) {
		json_array_append_new(c->sites, history_json(h));
		return 0;
	}
	printf("%-16s %6lld %6lld %5llu  ", h->fingerprint, (long long)h->first_run,
	       (long long)h->last_run, (unsigned long long)h->runs);
	for (size_t i = from; i < h->nruns; i++) {
		if (h->bytes[i])
			printf(" %llu", (unsigned long long)h->bytes[i]);
		else
			printf(" -");
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
		"bytes leaked there run by run (oldest first; '-': none).",
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
		json_t *doc = json_object();

		json_object_set_new(doc, "format", json_string("heapledger-history"));
		json_object_set_new(doc, "version", json_integer(1));
		json_object_set_new(doc, "runs", json_integer((json_int_t)nruns));
		json_object_set_new(doc, "sites", c.sites);
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

struct site_total {
	char *fingerprint, *function;
	uint64_t bytes, blocks;
};

struct site_list {
	struct site_total *v;
	size_t n, cap;
};

/* Rows come ordered by fingerprint, one per class: add them up. */
static int collect_site(void *ctx, const struct hl_run_site *site)
{
	struct site_list *l = ctx;
	struct site_total *t = l->n ? &l->v[l->n - 1] : NULL;

	if (!t || strcmp(t->fingerprint, site->fingerprint)) {
		hl_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v));
		t = &l->v[l->n++];
		t->fingerprint = hl_xstrdup(site->fingerprint);
		t->function = site->function ? hl_xstrdup(site->function) : NULL;
		t->bytes = t->blocks = 0;
	}
	t->bytes += site->bytes;
	t->blocks += site->blocks;
	return 0;
}

static void site_list_destroy(struct site_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].fingerprint);
		free(l->v[i].function);
	}
	free(l->v);
}

static json_t *change_json(const char *what, const struct site_total *a,
			   const struct site_total *b)
{
	const struct site_total *t = b ? b : a;
	json_t *o = json_object();

	json_object_set_new(o, "change", json_string(what));
	json_object_set_new(o, "fingerprint", json_string(t->fingerprint));
	json_object_set_new(o, "function", t->function ? json_string(t->function) : json_null());
	json_object_set_new(o, "bytes_a", json_integer(a ? (json_int_t)a->bytes : 0));
	json_object_set_new(o, "blocks_a", json_integer(a ? (json_int_t)a->blocks : 0));
	json_object_set_new(o, "bytes_b", json_integer(b ? (json_int_t)b->bytes : 0));
	json_object_set_new(o, "blocks_b", json_integer(b ? (json_int_t)b->blocks : 0));
	return o;
}

static void print_change(const char *what, const struct site_total *a,
			 const struct site_total *b, json_t *changes)
{
	const struct site_total *t = b ? b : a;

	if (changes) {
		json_array_append_new(changes, change_json(what, a, b));
		return;
	}
	printf("%-9s %s  %llu bytes in %llu blocks -> %llu bytes in %llu blocks  %s\n", what,
	       t->fingerprint, (unsigned long long)(a ? a->bytes : 0),
	       (unsigned long long)(a ? a->blocks : 0), (unsigned long long)(b ? b->bytes : 0),
	       (unsigned long long)(b ? b->blocks : 0), t->function ? t->function : "?");
}

/* Walks both lists (sorted by fingerprint) and prints each difference;
 * counts[0..3]: new, fixed, changed, unchanged. */
static void diff_sites(const struct site_list *a, const struct site_list *b, json_t *changes,
		       size_t counts[4])
{
	size_t i = 0, j = 0;

	while (i < a->n || j < b->n) {
		int cmp = i == a->n ? 1 : j == b->n ? -1 :
			  strcmp(a->v[i].fingerprint, b->v[j].fingerprint);

		if (cmp > 0) {
			print_change("new", NULL, &b->v[j++], changes);
			counts[0]++;
		} else if (cmp < 0) {
			print_change("fixed", &a->v[i++], NULL, changes);
			counts[1]++;
		} else {
			if (a->v[i].bytes != b->v[j].bytes || a->v[i].blocks != b->v[j].blocks) {
				print_change("changed", &a->v[i], &b->v[j], changes);
				counts[2]++;
			} else {
				counts[3]++;
			}
			i++;
			j++;
		}
	}
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
		"Compare the leak sites of two stored runs: new (only in RUN_B), fixed (only\n"
		"in RUN_A), changed (bytes or blocks differ); unchanged ones are counted.",
		args, NULL,
	};
	struct site_list sites[2] = { { 0 } };
	struct hl_store *store = NULL;
	unsigned long ids[2];
	size_t counts[4] = { 0 };
	json_t *changes = NULL;
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
			err = hl_query_run_sites(store, (int64_t)ids[k], collect_site, &sites[k]);
	}
	if (err) {
		hl_log("diff: %s: %s", db, hl_store_error(store));
	} else {
		if (!strcmp(format, "json"))
			changes = json_array();
		diff_sites(&sites[0], &sites[1], changes, counts);
		if (changes) {
			json_t *doc = json_object();

			json_object_set_new(doc, "format", json_string("heapledger-diff"));
			json_object_set_new(doc, "version", json_integer(1));
			json_object_set_new(doc, "run_a", json_integer((json_int_t)ids[0]));
			json_object_set_new(doc, "run_b", json_integer((json_int_t)ids[1]));
			json_object_set_new(doc, "unchanged", json_integer((json_int_t)counts[3]));
			json_object_set_new(doc, "changes", changes);
			err = json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? -EIO : 0;
			putchar('\n');
			json_decref(doc);
		} else {
			printf("heapledger: run %lu -> run %lu: %zu new, %zu fixed, %zu changed, %zu"
			       " unchanged leak sites\n", ids[0], ids[1], counts[0], counts[1],
			       counts[2], counts[3]);
		}
	}
	site_list_destroy(&sites[0]);
	site_list_destroy(&sites[1]);
	hl_store_close(store);
	if (!err && fflush(stdout) != 0)
		err = -EIO;
	return err ? HL_EXIT_FAILURE : 0;
}
