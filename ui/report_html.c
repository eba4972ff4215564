/*
 * ui/report_html.c: `heapledger report --format html`: the web UI's run page
 * as one file. The page's scripts, styles and the answers it would ask the
 * server for are all inlined, so the file opens from disk, from a CI
 * artifact, with no server and no network; its Content-Security-Policy
 * forbids any request at all.
 *
 * The answers are keyed by API path (see api.c): app.js finds them there
 * instead of fetching. The leak table holds the largest REPORT_LEAKS
 * records that leak and as many suppressed ones, and says so when there are
 * more; still reachable records are counted, not inlined (add_leaks).
 * Every stack is written once, in the stack table (answers["stacks/ID"]).
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "consumed_json.h"
#include "run_rows_json.h"
#include "store_query.h"
#include "ui.h"
#include "util.h"

#define REPORT_LEAKS 5000

#define REPORT_CSP "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline';" \
	" img-src data:"

/* Writes an asset inside <script> or <style>. Only "</script" and
 * "</style" would end the element early; where one occurs (inside a JS
 * string or regular expression: nowhere else is it valid) "<\/" means the
 * same. Other "</" are left alone: "a</b/" may be code. */
static void put_inline(FILE *out, const char *name)
{
	const struct hl_ui_asset *a = hl_ui_asset_find(name);

	for (size_t i = 0; a && i < a->len; i++) {
		const char *rest = (const char *)a->data + i + 2;
		size_t left = a->len - i;

		if (a->data[i] == '<' && left > 8 && a->data[i + 1] == '/' &&
		    (!strncasecmp(rest, "script", 6) || !strncasecmp(rest, "style", 5)))
			fputs("<\\", out);
		else
			fputc(a->data[i], out);
	}
}

/* doc as JSON that cannot change how the page around it parses: every '<'
 * (only ever inside a string) is written "\u003c", which JSON.parse reads
 * back as '<'. Escaping only "</" is not enough: "<!--" followed by
 * "<script" puts the tokenizer in the "script data double escaped" state,
 * where "</script>" no longer ends the element and the page is blank. */
static int put_escaped(const char *buffer, size_t size, void *out)
{
	for (size_t i = 0; i < size; i++) {
		if (buffer[i] == '<')
			fputs("\\u003c", out);
		else
			fputc(buffer[i], out);
	}
	return 0;
}

static int put_json(FILE *out, const json_t *doc)
{
	return json_dump_callback(doc, put_escaped, out, JSON_COMPACT) ? -EIO : 0;
}

/* The part of index.html between <body> and </body>: one page layout. */
static void put_body(FILE *out)
{
	const struct hl_ui_asset *a = hl_ui_asset_find("index.html");
	const char *text = (const char *)a->data;
	const char *start = strstr(text, "<body>"), *end = strstr(text, "</body>");

	if (start && end && end > start)
		fwrite(start + 6, 1, (size_t)(end - start - 6), out);
}

/* "function file module ..." of a stack: what the leak filter searches. */
static json_t *stack_text(const json_t *stack)
{
	json_t *frames = json_object_get(stack, "frames"), *f;
	char *text = hl_xstrdup("");
	size_t i, len = 0;

	json_array_foreach(frames, i, f) {
		const char *parts[] = { json_string_value(json_object_get(f, "function")),
					json_string_value(json_object_get(f, "file")),
					json_string_value(json_object_get(f, "module")) };

		for (size_t k = 0; k < HL_ARRAY_SIZE(parts); k++) {
			size_t n = parts[k] ? strlen(parts[k]) : 0;

			text = hl_xrealloc(text, len + n + 2);
			memcpy(text + len, parts[k] ? parts[k] : "", n);
			len += n;
			text[len++] = ' ';
			text[len] = 0;
		}
	}
	f = json_string(text);
	free(text);
	return f;
}

/* answers["stacks/ID"], once per stack: many rows share one. */
static int add_stack(struct hl_store *s, json_t *answers, struct hl_maybe id, json_t **stack)
{
	struct hl_stack_row row;
	struct hl_bump arena;
	char key[48];
	int err = 0;

	*stack = NULL;
	if (!id.known || id.value <= 0)
		return 0;
	snprintf(key, sizeof(key), "stacks/%lld", (long long)id.value);
	if ((*stack = json_object_get(answers, key)))
		return 0;
	hl_bump_init(&arena);
	err = hl_query_stack(s, id.value, &arena, &row);
	if (!err) {
		*stack = hl_stack_json(&row);
		json_object_set_new(answers, key, *stack);
	}
	hl_bump_free(&arena);
	return err;
}

/* A stack id from a JSON answer (null or absent: none). */
static struct hl_maybe stack_ref(const json_t *id)
{
	return (struct hl_maybe){ json_integer_value(id), json_is_integer(id) };
}

/* The rows of one class filter of the run's records (the largest
 * REPORT_LEAKS), their stacks added to the stack table, in *out; the
 * total of that filter in *total. */
static int leak_rows(struct hl_store *s, json_t *answers, int64_t run_id, const char *cls,
		     bool by_site, int64_t limit, json_t **out, int64_t *total)
{
	struct hl_query_page page = { 0, limit, NULL, cls, by_site };
	struct hl_run_rows rows;
	json_t *stack, *row;
	int err;

	hl_run_rows_init(&rows);
	err = hl_query_leaks(s, run_id, &page, &rows);
	*out = NULL;
	if (!err) {
		json_t *doc = hl_leak_rows_json(&rows);

		*out = json_incref(json_object_get(doc, "rows"));
		json_decref(doc);
	}
	*total = rows.leaks_total;
	for (size_t i = 0; !err && i < rows.nleaks; i++) {
		err = add_stack(s, answers, rows.leaks[i].stack_id, &stack);
		row = json_array_get(*out, i);
		/* Its stack is in the table once (stacks/ID), not in every row. */
		json_object_del(row, "stack");
		if (!err && stack)
			json_object_set_new(row, "search", stack_text(stack));
	}
	hl_run_rows_destroy(&rows);
	if (err) {
		json_decref(*out);
		*out = NULL;
	}
	return err;
}

/* a and b, each largest first, as one array largest first (a's first
 * among equals). */
static json_t *merge_by_bytes(json_t *a, json_t *b)
{
	json_t *all = json_array();
	size_t i = 0, k = 0;

	while (i < json_array_size(a) || k < json_array_size(b)) {
		json_t *x = json_array_get(a, i), *y = json_array_get(b, k);
		bool take_a = x && (!y || json_integer_value(json_object_get(x, "bytes")) >=
					       json_integer_value(json_object_get(y, "bytes")));

		json_array_append(all, take_a ? x : y);
		if (take_a)
			i++;
		else
			k++;
	}
	return all;
}

/* answers["runs/ID/leaks"] (by_site: "runs/ID/leaks?group=site", a row
 * per leak site, the page's default): what leaks (the lost classes, not suppressed)
 * and the suppressed records, REPORT_LEAKS of each at most, with their
 * stacks once each in the stack table; still reachable records are only
 * counted ("left_out"): a suite's runner and shells hold thousands of
 * them (a 101-process suite: 1,867 of its 1,907 records, 4.6 of the
 * report's 6.9 MB). The page says how to see them. */
static int add_leaks(struct hl_store *s, json_t *answers, int64_t run_id, bool by_site)
{
	json_t *lost = NULL, *suppressed = NULL, *none = NULL;
	int64_t lost_total = 0, suppressed_total = 0, reachable = 0;
	char key[64];
	int err = leak_rows(s, answers, run_id, "lost", by_site, REPORT_LEAKS, &lost, &lost_total);

	if (!err)
		err = leak_rows(s, answers, run_id, "suppressed", by_site, REPORT_LEAKS, &suppressed,
				&suppressed_total);
	if (!err)
		err = leak_rows(s, answers, run_id, "reachable", false, 0, &none, &reachable);
	if (!err) {
		/* the page asks for the table by site with ?group=site (app.js) */
		snprintf(key, sizeof(key), "runs/%lld/leaks%s", (long long)run_id,
			 by_site ? "?group=site" : "");
		json_object_set_new(answers, key, json_pack("{sIsos{sIsI}}",
			"total", (json_int_t)(lost_total + suppressed_total),
			"rows", merge_by_bytes(lost, suppressed), "left_out",
			"reachable", (json_int_t)reachable, "run", (json_int_t)run_id));
	}
	json_decref(lost);
	json_decref(suppressed);
	json_decref(none);
	return err;
}

/* The run's errors and checks (their stacks are in them). */
static int add_rows(struct hl_store *s, json_t *answers, int64_t run_id)
{
	static const char *const sub[] = { "errors", "checks" };
	json_t *rows;
	char key[48];
	int err = 0;

	for (unsigned i = 0; !err && i < 2; i++) {
		err = hl_ui_records(s, run_id, i == 1, &rows);
		snprintf(key, sizeof(key), "runs/%lld/%s", (long long)run_id, sub[i]);
		if (!err)
			json_object_set_new(answers, key, rows);
	}
	return err;
}

/* The summary, and the stacks its lists name (a click shows them). */
static int add_summary(struct hl_store *s, json_t *answers, int64_t run_id)
{
	static const char *const lists[] = { "most_allocations", "most_bytes" };
	json_t *sum, *row, *stack;
	char key[48];
	size_t i;
	int err = hl_ui_summary(s, run_id, &sum);

	if (err)
		return err;
	snprintf(key, sizeof(key), "runs/%lld/summary", (long long)run_id);
	json_object_set_new(answers, key, sum);
	json_array_foreach(json_object_get(sum, "top_sites"), i, row)
		if (!err)
			err = add_stack(s, answers, stack_ref(json_object_get(
				json_object_get(row, "where"), "stack_id")), &stack);
	json_array_foreach(json_object_get(json_object_get(sum, "peak"), "stacks"), i, row)
		if (!err)
			err = add_stack(s, answers, stack_ref(json_object_get(row, "stack_id")), &stack);
	for (size_t k = 0; k < HL_ARRAY_SIZE(lists); k++)
		json_array_foreach(json_object_get(sum, lists[k]), i, row)
			if (!err)
				err = add_stack(s, answers, stack_ref(json_object_get(row, "stack_id")),
						&stack);
	return err;
}

/* answers["runs/ID/sizes"] or ["processes/ID/sizes"]: the size histogram. */
static int add_sizes(struct hl_store *s, json_t *answers, bool whole_run, int64_t id)
{
	char key[64];
	json_t *sizes;
	int err = hl_ui_sizes(s, whole_run, id, &sizes);

	if (err)
		return err;
	snprintf(key, sizeof(key), "%s/%lld/sizes", whole_run ? "runs" : "processes",
		 (long long)id);
	json_object_set_new(answers, key, sizes);
	return 0;
}

static int flame(struct hl_store *s, int64_t process_id, bool leaks, json_t **out)
{
	struct hl_flame f;
	int err;

	hl_flame_init(&f);
	err = hl_query_flame(s, process_id, leaks, &f);
	*out = err ? NULL : hl_flame_json(&f);
	hl_flame_destroy(&f);
	return err;
}

/* answers["processes/ID/consumed"]: heap consumed by the top functions. */
static int add_consumed(struct hl_store *s, json_t *answers, int64_t id)
{
	struct hl_consumed c;
	char key[64];
	int err;

	hl_consumed_init(&c);
	err = hl_query_consumed(s, id, &c);
	if (!err) {
		snprintf(key, sizeof(key), "processes/%lld/consumed", (long long)id);
		json_object_set_new(answers, key, hl_consumed_json(&c));
	}
	hl_consumed_destroy(&c);
	return err;
}

static int add_process(struct hl_store *s, json_t *answers, const struct hl_process_row *proc)
{
	struct hl_run_rows rows;
	int64_t id = proc->id;
	json_t *leaks, *all, *stack;
	char key[64];
	int err = add_stack(s, answers, proc->fatal_stack_id, &stack); /* where a fatal signal arrived */

	hl_run_rows_init(&rows);
	if (!err)
		err = hl_query_timeline(s, id, &rows);
	if (!err) {
		snprintf(key, sizeof(key), "processes/%lld/timeline", (long long)id);
		json_object_set_new(answers, key, hl_timeline_json(&rows));
	}
	hl_run_rows_destroy(&rows);
	if (!err)
		err = add_consumed(s, answers, id);
	if (err)
		return err;
	if ((err = flame(s, id, true, &leaks)))
		return err;
	if ((err = flame(s, id, false, &all))) {
		json_decref(leaks);
		return err;
	}
	snprintf(key, sizeof(key), "processes/%lld/flame", (long long)id);
	json_object_set_new(answers, key, json_pack("{soso}", "leaks", leaks, "all", all));
	return add_sizes(s, answers, false, id);
}

static int collect(struct hl_store *s, int64_t run_id, json_t *answers)
{
	struct hl_run_page run;
	char key[48];
	json_t *page;
	int err;

	hl_run_page_init(&run);
	err = hl_query_run(s, run_id, &run);
	if (!err)
		err = hl_ui_run(s, run_id, &page);
	if (!err) {
		snprintf(key, sizeof(key), "runs/%lld", (long long)run_id);
		json_object_set_new(answers, key, page);
		json_object_set_new(answers, "vocabulary", hl_ui_vocabulary());
		err = add_leaks(s, answers, run_id, false);
		if (!err)
			err = add_leaks(s, answers, run_id, true);
		if (!err)
			err = add_summary(s, answers, run_id);
		if (!err)
			err = add_sizes(s, answers, true, run_id);
	}
	if (!err)
		err = add_rows(s, answers, run_id);
	for (size_t i = 0; !err && i < run.nprocs; i++)
		err = add_process(s, answers, &run.procs[i]);
	hl_run_page_destroy(&run);
	return err;
}

int hl_ui_write_html_report(struct hl_store *s, int64_t run_id, FILE *out)
{
	json_t *answers = json_object(), *doc;
	int err = collect(s, run_id, answers);

	if (err) {
		json_decref(answers);
		return err;
	}
	doc = json_pack("{sIso}", "run", (json_int_t)run_id, "answers", answers);
	fprintf(out, "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"" REPORT_CSP "\">\n"
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		"<title>heapledger: run %lld</title>\n<style>\n", (long long)run_id);
	put_inline(out, "vendor/uPlot.min.css");
	put_inline(out, "vendor/d3-flamegraph.css");
	put_inline(out, "app.css");
	fputs("</style>\n<script id=\"hl-data\" type=\"application/json\">", out);
	err = put_json(out, doc);
	json_decref(doc);
	fputs("</script>\n<script>", out);
	put_inline(out, "vendor/d3.min.js");
	fputs("</script>\n<script>", out);
	put_inline(out, "vendor/d3-flamegraph.umd.min.js");
	fputs("</script>\n<script>", out);
	put_inline(out, "vendor/uPlot.iife.min.js");
	fputs("</script>\n</head>\n<body>", out);
	put_body(out);
	fputs("<script>", out);
	put_inline(out, "app.js");
	fputs("</script>\n</body>\n</html>\n", out);
	return err || ferror(out) ? -EIO : 0;
}
