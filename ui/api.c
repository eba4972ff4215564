/*
 * ui/api.c: the web UI's JSON API, one route per query of the query layer
 * (reporter/store/store_query.h), rendered by reporter/formats/ (the same
 * writers as the CLI's where both show the same thing). It only parses
 * parameters, picks the query and the writer; no SQL and no JSON shapes here. Every malformed parameter is a 400, never a guess.
 *
 *   /api/runs?offset&limit&filter         runs, newest first
 *   /api/runs/ID                          a run, its processes, the run before
 *   /api/runs/ID/leaks?offset&limit&filter&class
 *   /api/runs/ID/errors
 *   /api/stacks/ID                        frames, innermost first
 *   /api/processes/ID/timeline
 *   /api/processes/ID/flame?kind=all|leaks
 *   /api/diff?a=ID&b=ID
 *   /api/search?q=TERM&limit
 *   /api/history?program=NAME             runs and leak sites of one program
 *   /api/vocabulary                       leak classes and error kinds, every spelling
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "diff_json.h"
#include "history_json.h"
#include "heapledger/classes.h"
#include "query_runs.h"
#include "query_views.h"
#include "runs_json.h"
#include "store_query.h"
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
	page->leak_class = rq->get("class", rq->cls);
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

/* A run, with the run before it of the same program (previous_run, null
 * for the first): what its diff and history links compare with. */
static int route_run(struct hl_store *store, int64_t id, struct request *rq)
{
	int64_t before;
	int err = hl_query_run(store, id, rq->body);

	if (!err)
		err = hl_query_previous_run(store, id, &before);
	if (err) {
		json_decref(*rq->body);
		*rq->body = NULL;
		return result(store, rq, err);
	}
	json_object_set_new(*rq->body, "previous_run", before ? json_integer(before) : json_null());
	return 200;
}

static int route_run_list(struct hl_store *store, const struct hl_query_page *page,
			  struct request *rq)
{
	struct hl_run_list runs;
	int err;

	hl_run_list_init(&runs);
	err = hl_query_runs(store, page, &runs);
	if (!err)
		*rq->body = hl_run_list_json(&runs);
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
		return answer(rq, 400, "offset and limit are numbers (limit at most 5000)");
	if (!*rest)
		return route_run_list(store, &page, rq);
	if (!path_id(rest, &id, &sub))
		return answer(rq, 400, "a run id is a number");
	if (!*sub)
		return route_run(store, id, rq);
	if (!strcmp(sub, "leaks"))
		return result(store, rq, hl_query_leaks(store, id, &page, rq->body));
	if (!strcmp(sub, "errors"))
		return result(store, rq, hl_query_errors(store, id, rq->body));
	if (!strcmp(sub, "checks"))
		return result(store, rq, hl_query_checks(store, id, rq->body));
	return answer(rq, 404, "no such page of a run");
}

static int route_process(struct hl_store *store, const char *rest, struct request *rq)
{
	const char *sub, *kind = rq->get("kind", rq->cls);
	int64_t id;

	if (!path_id(rest, &id, &sub))
		return answer(rq, 400, "a process id is a number");
	if (!strcmp(sub, "timeline"))
		return result(store, rq, hl_query_timeline(store, id, rq->body));
	if (strcmp(sub, "flame"))
		return answer(rq, 404, "no such page of a process");
	if (kind && strcmp(kind, "all") && strcmp(kind, "leaks"))
		return answer(rq, 400, "kind is all or leaks");
	return result(store, rq, hl_query_flame(store, id, kind && !strcmp(kind, "leaks"),
						rq->body));
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
	return json_pack("{s:o,s:o}", "leak_classes", classes, "error_kinds", kinds);
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
		return result(store, &rq, hl_query_stack(store, a, body));
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
		return result(store, &rq, hl_query_search(store, q, limit, body));
	}
	if (!strcmp(path, "history")) {
		const char *program = get("program", cls);

		if (!program || !*program)
			return answer(&rq, 400, "history needs program");
		return route_history(store, program, &rq);
	}
	return answer(&rq, 404, "no such API path");
}
