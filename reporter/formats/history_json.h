/*
 * reporter/formats/history_json.h: leak sites across runs
 * (model/site_history.h) as JSON: `heapledger history --format json` and
 * the web UI's GET /api/history write each site with the same code, so the
 * two cannot describe a site differently.
 */
#ifndef HL_REPORTER_HISTORY_JSON_H
#define HL_REPORTER_HISTORY_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "run_list.h"
#include "site_history.h"

#define HL_HISTORY_FORMAT "heapledger-history"
#define HL_HISTORY_VERSION 1

/* {"fingerprint", "function", "first_run", "last_run", "runs" (how many
 * leaked there), "bytes_by_run": [{"run", "bytes"}], oldest first}. */
json_t *hl_site_history_json(const struct hl_site_history *h);
/* hl_site_history_json(h) appended to the JSON array sites: an
 * hl_site_history_fn for hl_query_history. */
int hl_site_history_append(void *sites, const struct hl_site_history *h);
/* The CLI's document: {"format", "version", "runs" (how many were
 * selected), "sites"}; takes sites. */
json_t *hl_history_json(size_t nruns, json_t *sites);
/* The web UI's history of one program: {"program", "runs": its runs with
 * their leaked bytes by class (runs_json.h), "sites"}; takes sites. */
json_t *hl_program_history_json(const char *program, const struct hl_run_list *runs,
				json_t *sites);

#endif /* HL_REPORTER_HISTORY_JSON_H */
