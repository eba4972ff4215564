/*
 * ui/report_html.c: `heapledger report --format html`: the web UI's run page
 * as one file. The page's scripts, styles and the answers it would ask the
 * server for are all inlined, so the file opens from disk, from a CI
 * artifact, with no server and no network; its Content-Security-Policy
 * forbids any request at all.
 *
 * The answers are keyed by API path (see api.c): app.js finds them there
 * instead of fetching. The leak table holds the largest REPORT_LEAKS
 * records, and says so when there are more.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

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

static int add_stack(struct hl_store *s, json_t *answers, json_int_t id, json_t **stack)
{
	char key[48];
	int err = 0;

	*stack = NULL;
	if (id <= 0)
		return 0;
	snprintf(key, sizeof(key), "stacks/%lld", (long long)id);
	*stack = json_object_get(answers, key);
	if (!*stack && !(err = hl_query_stack(s, id, stack)))
		json_object_set_new(answers, key, *stack);
	return err;
}

static int add_leaks(struct hl_store *s, json_t *answers, int64_t run_id)
{
	struct hl_query_page page = { 0, REPORT_LEAKS, NULL, NULL };
	json_t *leaks, *row, *stack;
	char key[48];
	size_t i;
	int err = hl_query_leaks(s, run_id, &page, &leaks);

	if (err)
		return err;
	snprintf(key, sizeof(key), "runs/%lld/leaks", (long long)run_id);
	json_object_set_new(answers, key, leaks);
	json_array_foreach(json_object_get(leaks, "rows"), i, row) {
		if ((err = add_stack(s, answers, json_integer_value(json_object_get(row, "stack_id")),
				     &stack)))
			return err;
		if (stack)
			json_object_set_new(row, "search", stack_text(stack));
	}
	return 0;
}

static int add_errors(struct hl_store *s, json_t *answers, int64_t run_id)
{
	static const char *const stacks[] = { "stack_id", "alloc_stack_id", "free_stack_id" };
	json_t *errors, *row, *stack;
	char key[48];
	size_t i;
	int err = hl_query_errors(s, run_id, &errors);

	if (err)
		return err;
	snprintf(key, sizeof(key), "runs/%lld/errors", (long long)run_id);
	json_object_set_new(answers, key, errors);
	json_array_foreach(errors, i, row)
		for (size_t k = 0; k < HL_ARRAY_SIZE(stacks) && !err; k++)
			err = add_stack(s, answers, json_integer_value(json_object_get(row, stacks[k])),
					&stack);
	return err;
}

static int add_checks(struct hl_store *s, json_t *answers, int64_t run_id)
{
	json_t *checks, *row, *stack;
	char key[48];
	size_t i;
	int err = hl_query_checks(s, run_id, &checks);

	if (err)
		return err;
	snprintf(key, sizeof(key), "runs/%lld/checks", (long long)run_id);
	json_object_set_new(answers, key, checks);
	json_array_foreach(json_object_get(checks, "records"), i, row)
		if (!err)
			err = add_stack(s, answers, json_integer_value(json_object_get(row, "stack_id")),
					&stack);
	return err;
}

static int add_process(struct hl_store *s, json_t *answers, const json_t *proc)
{
	json_int_t id = json_integer_value(json_object_get(proc, "id"));
	json_t *timeline, *leaks, *all, *stack;
	char key[64];
	int err = add_stack(s, answers, json_integer_value(json_object_get(proc, "fatal_stack_id")),
			    &stack); /* where a fatal signal arrived */

	if (!err)
		err = hl_query_timeline(s, id, &timeline);
	if (err)
		return err;
	snprintf(key, sizeof(key), "processes/%lld/timeline", (long long)id);
	json_object_set_new(answers, key, timeline);
	if ((err = hl_query_flame(s, id, true, &leaks)))
		return err;
	if ((err = hl_query_flame(s, id, false, &all))) {
		json_decref(leaks);
		return err;
	}
	snprintf(key, sizeof(key), "processes/%lld/flame", (long long)id);
	json_object_set_new(answers, key, json_pack("{soso}", "leaks", leaks, "all", all));
	return 0;
}

static int collect(struct hl_store *s, int64_t run_id, json_t *answers)
{
	json_t *run, *proc;
	char key[48];
	size_t i;
	int err = hl_query_run(s, run_id, &run);

	if (err)
		return err;
	snprintf(key, sizeof(key), "runs/%lld", (long long)run_id);
	json_object_set_new(answers, key, run);
	json_object_set_new(answers, "vocabulary", hl_ui_vocabulary());
	err = add_leaks(s, answers, run_id);
	if (!err)
		err = add_errors(s, answers, run_id);
	if (!err)
		err = add_checks(s, answers, run_id);
	json_array_foreach(json_object_get(run, "processes"), i, proc) {
		if (err)
			break;
		err = add_process(s, answers, proc);
	}
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
