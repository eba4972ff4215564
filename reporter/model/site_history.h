/*
 * reporter/model/site_history.h: one leak site across a series of stored
 * runs, as `heapledger history` and the web UI's history page show it. The
 * query layer hands these out one at a time (store/store_query.h:
 * hl_query_history); formats/history_json.h renders them.
 */
#ifndef HL_REPORTER_SITE_HISTORY_H
#define HL_REPORTER_SITE_HISTORY_H

#include <stddef.h>
#include <stdint.h>

struct hl_site_history {
	const char *fingerprint;
	const char *function;         /* innermost program function, NULL if unknown */
	int64_t first_run, last_run;  /* first and last selected run that leaked there */
	uint64_t runs;                /* selected runs that leaked there */
	const int64_t *run_ids;       /* the selected runs, oldest first (nruns) */
	const uint64_t *bytes;        /* bytes leaked there in each of them (0: none) */
	/* 1 where every leak of the site in that run was suppressed: its bytes
	 * are 0 there, as the gate and diff count it, but it was not fixed */
	const unsigned char *suppressed;
	size_t nruns;
};
typedef int (*hl_site_history_fn)(void *ctx, const struct hl_site_history *h);

#endif /* HL_REPORTER_SITE_HISTORY_H */
