/*
 * ui/api.c: the web UI's JSON API, one route per query of the query layer
 * (reporter/store/store_query.h), rendered by reporter/formats/ (the same
 * writers as the CLI's where both show the same thing). It only parses
 * parameters, picks the query and the writer; no SQL and no JSON shapes here. Every malformed parameter is a 400, never a guess.
 *
 *   /api/runs?offset&limit&filter         runs, newest first
 *   /api/runs/ID                          a run, its processes, the run before
 *   /api/runs/ID/leaks?offset&limit&filter&class&group=record|site
 *   /api/runs/ID/errors
 *   /api/runs/ID/summary                  the gate's verdict, top sites and stacks
 *   /api/stacks/ID                        frames, innermost first
 *   /api/runs/ID/sizes                    allocation sizes, every process's added up
 *   /api/processes/ID/timeline
 *   /api/processes/ID/sizes               allocation sizes by power-of-two bin
 *   /api/processes/ID/consumed            heap in use over time by the top functions
 *   /api/processes/ID/flame?kind=all|leaks
 *   /api/diff?a=ID&b=ID
 *   /api/search?q=TERM&limit
 *   /api/history?program=NAME             runs and leak sites of one program
 *   /api/trend?program=NAME&upto=ID&limit  the newest runs of a program up to a run
 *   /api/vocabulary                       leak classes and error kinds, every spelling
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "consumed_json.h"
#include "diff_json.h"
#include "history_json.h"
#include "heapledger/classes.h"
#include "query_sizes.h"
#include "query_summary.h"
#include "query_views.h"
#include "record_json.h"
#include "report.h"
#include "run_rows_json.h"
#include "size_bins_json.h"
#include "runs_json.h"
#include "store_query.h"
#include "summary_json.h"
#include "ui.h"

#define PAGE_DEFAULT 100
#define PAGE_MAX 5000

struct request {
	const char *(*get)(const char *param, void *cls);
	void *cls;
	json_t **body;
};

static int answer(struct request *rq, int status, const char *message)
{
	*rq->body = json_pack("{ss}", "error", message);
	return status;
}

/* A decimal id or count in [0, max] from s (the whole of it). */
static bool parse_number(const char *s, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* Optional numeric parameter: absent gives def; malformed gives false. */
static bool param_number(struct request *rq, const char *name, int64_t def, int64_t max,
			 int64_t *out)
{
	const char *v = rq->get(name, rq->cls);

	*out = def;
	return !v || !*v || parse_number(v, max, out);
}

static bool param_page(struct request *rq, struct hl_query_page *page)
{
	page->filter = rq->get("filter", rq->cls);
	const char *group = rq->get("group", rq->cls);

	page->leak_class = rq->get("class", rq->cls);
	page->by_site = group && !strcmp(group, "site");
	if (group && !page->by_site && strcmp(group, "record"))
		return false;
	return param_number(rq, "offset", 0, INT64_MAX / 2, &page->offset) &&
	       param_number(rq, "limit", PAGE_DEFAULT, PAGE_MAX, &page->limit);
}

/* "123" or "123/rest": the id, and *rest set to "" or "rest". */
static bool path_id(const char *p, int64_t *id, const char **rest)
{
	char buf[24];
	size_t n = strcspn(p, "/");

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, p, n);
	buf[n] = 0;
	*rest = p[n] ? p + n + 1 : "";
	return parse_number(buf, INT64_MAX, id);
}

static int result(struct hl_store *store, struct request *rq, int err)
{
	if (!err)
		return 200;
	if (err == -ENOENT)
		return answer(rq, 404, hl_store_error(store));
	return answer(rq, 500, hl_store_error(store));
}

/* Names each process object of procs (in process order, as the test
 * names come) with its test's name. */
struct test_names {
	json_t *procs;
	size_t next;
};

static int name_test(void *ctx, int64_t process_id, const char *test_name)
{
	struct test_names *t = ctx;

	for (; t->next < json_array_size(t->procs); t->next++) {
		json_t *p = json_array_get(t->procs, t->next);

		if (json_integer_value(json_object_get(p, "id")) == process_id) {
			json_object_set_new(p, "test_name", json_string(test_name));
			break;
		}
	}
	return 0;
}

int hl_ui_run(struct hl_store *store, int64_t run_id, json_t **out)
{
	struct hl_run_page page;
	struct test_names names;
	int64_t before;
	int err;

	*out = NULL;
	hl_run_page_init(&page);
	err = hl_query_run(store, run_id, &page);
	if (!err)
		err = hl_query_previous_run(store, run_id, &before);
	if (!err) {
		*out = hl_run_page_json(&page);
		names.procs = json_object_get(*out, "processes");
		names.next = 0;
		err = hl_query_test_names(store, run_id, name_test, &names);
	}
	hl_run_page_destroy(&page);
	if (err) {
		json_decref(*out);
		*out = NULL;
		return err;
	}
	json_object_set_new(*out, "previous_run", before ? json_integer(before) : json_null());
	return 0;
}

/* A run's heap errors or checks, as the report model has them
 * (store_load.c), each written by the report's own writer (record_json.h)
 * with the pid of its process and the test it belongs to (null: none). */
struct run_records {
	bool checks;                  /* the checks, else the heap errors */
	json_t *rows;
};

static json_t *with_process(const struct hl_report_process *p, json_t *record)
{
	json_t *o = json_pack("{sIso}", "pid", (json_int_t)p->pid, "test",
			      p->test_name ? json_string(p->test_name) : json_null());

	json_object_update(o, record);
	json_decref(record);
	return o;
}

static int add_records(void *ctx, const struct hl_report_process *p)
{
	struct run_records *rr = ctx;

	for (size_t i = 0; p && !rr->checks && i < p->nerrors; i++) {
		if (json_array_size(rr->rows) >= HL_QUERY_ROWS_MAX)
			break; /* a page lists them all at once */
		json_array_append_new(rr->rows,
				      with_process(p, hl_error_record_json(NULL, &p->errors[i])));
	}
	for (size_t i = 0; p && rr->checks && i < p->nchecks; i++)
		json_array_append_new(rr->rows,
				      with_process(p, hl_check_json(NULL, &p->checks[i],
								     i ? &p->checks[i - 1] : NULL)));
	return 0;
}

int hl_ui_records(struct hl_store *store, int64_t run_id, bool checks, json_t **out)
{
	struct hl_report_filter filter = { .records_only = true };
	struct run_records rr = { checks, json_array() };
	struct hl_report r;
	int err;

	hl_report_init(&r);
	err = hl_store_load_report_filtered(store, run_id, &filter, &r, add_records, &rr);
	hl_report_destroy(&r);
	if (err) {
		json_decref(rr.rows);
		*out = NULL;
		return err;
	}
	*out = checks ? json_pack("{so}", "checks", rr.rows) : rr.rows;
	return 0;
}

int hl_ui_summary(struct hl_store *store, int64_t run_id, json_t **out)
{
	struct hl_gate_options o;
	struct hl_run_summary sum;
	int err;

	hl_gate_options_init(&o);
	err = hl_query_run_summary(store, run_id, &o, &sum);
	if (!err)
		*out = hl_run_summary_json(&sum, &o);
	hl_run_summary_destroy(&sum);
	return err;
}

int hl_ui_sizes(struct hl_store *store, bool whole_run, int64_t id, json_t **out)
{
	struct hl_size_histogram sizes;
	int err = hl_query_size_histogram(store, whole_run, id, &sizes);

	*out = err ? NULL : hl_size_histogram_json(&sizes);
	return err;
}

/* Each run of a page of runs gets its gate verdict ("verdict"), so the list
 * shows the gate's result beside the program's exit status. */
static int add_verdicts(struct hl_store *store, json_t *rows)
{
	struct hl_gate_options o;
	size_t i;
	json_t *row;

	hl_gate_options_init(&o);
	json_array_foreach(rows, i, row) {
		struct hl_gate g;
		int err;

		hl_gate_init(&g);
		err = hl_query_run_gate(store, json_integer_value(json_object_get(row, "id")), &o, &g);
		if (!err)
			json_object_set_new(row, "verdict", hl_gate_verdict_json(&g, &o));
		hl_gate_destroy(&g);
		if (err)
			return err;
	}
	return 0;
}

static int route_run_list(struct hl_store *store, const struct hl_query_page *page,
			  struct request *rq)
{
	struct hl_run_list runs;
	int err;

	hl_run_list_init(&runs);
	err = hl_query_runs(store, page, &runs);
	if (!err) {
		*rq->body = hl_run_list_json(&runs);
		err = add_verdicts(store, json_object_get(*rq->body, "rows"));
	}
	hl_run_list_destroy(&runs);
	if (err) {
		json_decref(*rq->body);
		*rq->body = NULL;
	}
	return result(store, rq, err);
}

/* Rows of a run or process (query_run_rows.h) and their writer. */
static int route_rows(struct hl_store *store, int64_t id,
		      int (*query)(struct hl_store *, int64_t, struct hl_run_rows *),
		      json_t *(*write)(const struct hl_run_rows *), struct request *rq)
{
	struct hl_run_rows rows;
	int err;

	hl_run_rows_init(&rows);
	err = query(store, id, &rows);
	if (!err)
		*rq->body = write(&rows);
	hl_run_rows_destroy(&rows);
	return result(store, rq, err);
}

static int route_leaks(struct hl_store *store, int64_t id, const struct hl_query_page *page,
		       struct request *rq)
{
	struct hl_run_rows rows;
	int err;

	hl_run_rows_init(&rows);
	err = hl_query_leaks(store, id, page, &rows);
	if (!err)
		*rq->body = hl_leak_rows_json(&rows);
	hl_run_rows_destroy(&rows);
	return result(store, rq, err);
}

static int route_search(struct hl_store *store, const char *term, int64_t limit,
			struct request *rq)
{
	struct hl_run_rows rows;
	int err;

	hl_run_rows_init(&rows);
	err = hl_query_search(store, term, limit, &rows);
	if (!err)
		*rq->body = hl_symbol_rows_json(term, limit, &rows);
	hl_run_rows_destroy(&rows);
	return result(store, rq, err);
}

static int route_flame(struct hl_store *store, int64_t id, bool leaks, struct request *rq)
{
	struct hl_flame flame;
	int err;

	hl_flame_init(&flame);
	err = hl_query_flame(store, id, leaks, &flame);
	if (!err)
		*rq->body = hl_flame_json(&flame);
	hl_flame_destroy(&flame);
	return result(store, rq, err);
}

static int route_consumed(struct hl_store *store, int64_t id, struct request *rq)
{
	struct hl_consumed c;
	int err;

	hl_consumed_init(&c);
	err = hl_query_consumed(store, id, &c);
	if (!err)
		*rq->body = hl_consumed_json(&c);
	hl_consumed_destroy(&c);
	return result(store, rq, err);
}

static int route_stack(struct hl_store *store, int64_t id, struct request *rq)
{
	struct hl_stack_row stack;
	struct hl_bump arena;
	int err;

	hl_bump_init(&arena);
	err = hl_query_stack(store, id, &arena, &stack);
	if (!err)
		*rq->body = hl_stack_json(&stack);
	hl_bump_free(&arena);
	return result(store, rq, err);
}

/* The newest runs of a program up to a run, oldest first, with their
 * leaked bytes: the runs list's sparklines, whatever its page holds. */
static int route_trend(struct hl_store *store, const char *program, int64_t upto, int64_t limit,
		       struct request *rq)
{
	struct hl_run_list runs;
	int err;

	hl_run_list_init(&runs);
	err = hl_query_program_trend(store, program, upto, limit, &runs);
	if (!err)
		*rq->body = hl_history_runs_json(&runs);
	hl_run_list_destroy(&runs);
	return result(store, rq, err);
}

/* A program's runs and leak sites, oldest first. */
static int route_history(struct hl_store *store, const char *program, struct request *rq)
{
	struct hl_run_filter f = { .program = program };
	struct hl_run_list runs;
	json_t *sites = json_array();
	size_t nruns;
	int err = hl_query_history(store, &f, hl_site_history_append, sites, &nruns);

	hl_run_list_init(&runs);
	if (!err)
		err = hl_query_program_runs(store, program, &runs);
	if (!err)
		*rq->body = hl_program_history_json(program, &runs, sites);
	else
		json_decref(sites);
	hl_run_list_destroy(&runs);
	return result(store, rq, err);
}

static int route_runs(struct hl_store *store, const char *rest, struct request *rq)
{
	struct hl_query_page page;
	const char *sub;
	int64_t id;

	if (!param_page(rq, &page))
		return answer(rq, 400, "offset and limit are numbers (limit at most 5000),"
			      " group is site or record");
	if (!*rest)
		return route_run_list(store, &page, rq);
	if (!path_id(rest, &id, &sub))
		return answer(rq, 400, "a run id is a number");
	if (!*sub)
		return result(store, rq, hl_ui_run(store, id, rq->body));
	if (!strcmp(sub, "leaks"))
		return route_leaks(store, id, &page, rq);
	if (!strcmp(sub, "errors") || !strcmp(sub, "checks"))
		return result(store, rq, hl_ui_records(store, id, !strcmp(sub, "checks"), rq->body));
	if (!strcmp(sub, "summary"))
		return result(store, rq, hl_ui_summary(store, id, rq->body));
	if (!strcmp(sub, "sizes"))
		return result(store, rq, hl_ui_sizes(store, true, id, rq->body));
	return answer(rq, 404, "no such page of a run");
}

static int route_process(struct hl_store *store, const char *rest, struct request *rq)
{
	const char *sub, *kind = rq->get("kind", rq->cls);
	int64_t id;

	if (!path_id(rest, &id, &sub))
		return answer(rq, 400, "a process id is a number");
	if (!strcmp(sub, "timeline"))
		return route_rows(store, id, hl_query_timeline, hl_timeline_json, rq);
	if (!strcmp(sub, "sizes"))
		return result(store, rq, hl_ui_sizes(store, false, id, rq->body));
	if (!strcmp(sub, "consumed"))
		return route_consumed(store, id, rq);
	if (strcmp(sub, "flame"))
		return answer(rq, 404, "no such page of a process");
	if (kind && strcmp(kind, "all") && strcmp(kind, "leaks"))
		return answer(rq, 400, "kind is all or leaks");
	return route_flame(store, id, kind && !strcmp(kind, "leaks"), rq);
}

/* The one diff by leak site (model/site_diff.h), as `heapledger diff
 * --format json` prints it. */
static int diff(struct hl_store *store, int64_t run_a, int64_t run_b, json_t **body)
{
	struct hl_site_list sites[2] = { { 0 } };
	struct hl_site_diff d = { 0 };
	int err = hl_query_run_exists(store, run_a);

	if (!err)
		err = hl_query_run_exists(store, run_b);
	if (!err)
		err = hl_query_leak_sites(store, run_a, &sites[0]);
	if (!err)
		err = hl_query_leak_sites(store, run_b, &sites[1]);
	if (!err) {
		hl_site_diff(&sites[0], &sites[1], &d);
		d.run_a = run_a;
		d.run_b = run_b;
		*body = hl_site_diff_json(&d);
	}
	hl_site_diff_destroy(&d);
	hl_site_list_destroy(&sites[0]);
	hl_site_list_destroy(&sites[1]);
	return err;
}

json_t *hl_ui_vocabulary(void)
{
	json_t *classes = json_array(), *kinds = json_array();

	for (unsigned c = 0; c < HL_LEAK_CLASS_COUNT; c++) {
		const struct hl_leak_class_info *i = hl_leak_class_info(c);

		json_array_append_new(classes, json_pack("{s:s,s:s,s:s,s:s,s:b}", "word", i->word,
							 "token", i->token, "phrase", i->phrase,
							 "label", i->label, "lost",
							 hl_leak_class_is_lost(c)));
	}
	for (unsigned k = 0; k < HL_ERROR_KIND_COUNT; k++)
		json_array_append_new(kinds, json_pack("{s:s,s:s}", "word", hl_error_kind_name(k),
						       "heading", hl_error_heading(k, HL_CALL_FREE)));
	json_array_append_new(kinds, json_pack("{s:s,s:s}", "word", "malloc_usable_size",
					       "heading", HL_ERROR_HEADING_USABLE_SIZE));
	/* max_frames: the deepest stack the hook captures (a cut stack's words) */
	return json_pack("{s:o,s:o,s:i}", "leak_classes", classes, "error_kinds", kinds,
			 "max_frames", HL_WIRE_MAX_FRAMES);
}

int hl_ui_api(struct hl_store *store, const char *path,
	      const char *(*get)(const char *param, void *cls), void *cls, json_t **body)
{
	struct request rq = { get, cls, body };
	const char *sub;
	int64_t a, b, limit;

	*body = NULL;
	if (!strcmp(path, "runs") || !strncmp(path, "runs/", 5))
		return route_runs(store, path[4] ? path + 5 : "", &rq);
	if (!strncmp(path, "processes/", 10))
		return route_process(store, path + 10, &rq);
	if (!strncmp(path, "stacks/", 7)) {
		if (!path_id(path + 7, &a, &sub) || *sub)
			return answer(&rq, 400, "a stack id is a number");
		return route_stack(store, a, &rq);
	}
	if (!strcmp(path, "vocabulary")) {
		*body = hl_ui_vocabulary();
		return 200;
	}
	if (!strcmp(path, "diff")) {
		if (!parse_number(get("a", cls), INT64_MAX, &a) ||
		    !parse_number(get("b", cls), INT64_MAX, &b))
			return answer(&rq, 400, "diff needs two run ids, a and b");
		return result(store, &rq, diff(store, a, b, body));
	}
	if (!strcmp(path, "search")) {
		const char *q = get("q", cls);

		if (!q || !*q || strlen(q) > 200)
			return answer(&rq, 400, "search needs q, 1 to 200 characters");
		if (!param_number(&rq, "limit", 200, PAGE_MAX, &limit))
			return answer(&rq, 400, "limit is a number (at most 5000)");
		return route_search(store, q, limit, &rq);
	}
	if (!strcmp(path, "trend")) {
		const char *program = get("program", cls);

		if (!program || !*program || !parse_number(get("upto", cls), INT64_MAX, &a) ||
		    !param_number(&rq, "limit", 20, 200, &limit))
			return answer(&rq, 400, "trend needs program, upto (a run id) and limit (at most 200)");
		return route_trend(store, program, a, limit, &rq);
	}
	if (!strcmp(path, "history")) {
		const char *program = get("program", cls);

		if (!program || !*program)
			return answer(&rq, 400, "history needs program");
		return route_history(store, program, &rq);
	}
	return answer(&rq, 404, "no such API path");
}
