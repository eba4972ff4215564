/*
 * ui/ui.h: the web UI over the database (`heapledger ui`) and the
 * self-contained HTML report built from the same pages.
 *
 * server.c serves the embedded assets (assets.c) and a JSON API whose every
 * answer comes from the query layer (reporter/store/store_query.h); the pages
 * (ui/assets/app.js) read only that API, or, in an HTML report, the same
 * answers inlined into the file (report_html.c).
 */
#ifndef HL_UI_UI_H
#define HL_UI_UI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store.h"

/* One file of the pages, compiled into the binary. */
struct hl_ui_asset {
	const char *name;          /* "app.js", "vendor/uPlot.iife.min.js" */
	const char *content_type;
	const unsigned char *data;
	size_t len;
};

/* The asset called name (no leading '/'), or NULL: only these are served. */
const struct hl_ui_asset *hl_ui_asset_find(const char *name);

/* The API: answers GET path?query (path without the query string, query
 * parameters through get(param, cls)) from store. Returns the HTTP status
 * and sets *body to the JSON answer (an {"error": ...} object on failure). */
/* GET /api/vocabulary: every leak class and error kind with its spellings
 * (heapledger/classes.h), so the pages name them as every other output. */
json_t *hl_ui_vocabulary(void);
/* GET /api/runs/ID: the run and its processes (each with its test_name
 * when a test runner gave one), and previous_run: the run before it of the
 * same program (null for the first), which its diff and history links
 * compare with. 0 or -errno. */
int hl_ui_run(struct hl_store *store, int64_t run_id, json_t **out);
/* GET /api/runs/ID/errors (checks false): the run's heap errors, [{"pid",
 * then the error as `report --format json` writes it}]; GET
 * /api/runs/ID/checks: {"checks": [{"pid", then the check as the report
 * writes it, its loss records in it}]}. Both from the report model, by the
 * report's writers (formats/record_json.h). 0 or -errno. */
int hl_ui_records(struct hl_store *store, int64_t run_id, bool checks, json_t **out);
/* GET /api/runs/ID/summary: the run's summary, its verdict counted with the
 * gate's default options (what `heapledger gate RUN` says). 0 or -errno. */
int hl_ui_summary(struct hl_store *store, int64_t run_id, json_t **out);
/* GET /api/runs/ID/sizes (whole_run) or /api/processes/ID/sizes: the
 * allocation-size histogram (formats/size_bins_json.h). 0 or -errno. */
int hl_ui_sizes(struct hl_store *store, bool whole_run, int64_t id, json_t **out);
int hl_ui_api(struct hl_store *store, const char *path,
	      const char *(*get)(const char *param, void *cls), void *cls, json_t **body);

/* The HTTP server: serves db (opened read-only, one connection per server
 * thread; a missing db is shown as having no runs yet) on addr; *port is
 * the port it bound (addr may ask for 0). Returns NULL after printing why
 * it could not start and what to do. */
struct sockaddr;
struct hl_ui_server;
struct hl_ui_server *hl_ui_server_start(const char *db, const struct sockaddr *addr,
					 bool loopback, uint16_t *port);
/* The secret every request must carry (?token= or the cookie it sets). */
const char *hl_ui_server_token(const struct hl_ui_server *sv);
void hl_ui_server_stop(struct hl_ui_server *server);

/* `heapledger ui`. */
int hl_cmd_ui(int argc, char **argv);
/* `heapledger report --format html` of run_id: one file, assets and data
 * inlined, that needs no network. Returns 0 or -errno. */
int hl_ui_write_html_report(struct hl_store *store, int64_t run_id, FILE *out);

#endif /* HL_UI_UI_H */
