/*
 * tests/fuzz/fuzz_import_json.c: libFuzzer target for `heapledger import` of
 * a JSON report: the input is read as a report (reporter/formats/import_json.c,
 * one process at a time) into a fresh temporary database through the
 * store's own write path; one that is accepted is imported a second time
 * (which must add nothing), read back and printed as text and JSON. Any
 * input may be refused, none may crash, hang or leak.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import_json.h"
#include "report.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sink_run(void *ctx, const struct hl_report *run)
{
	struct hl_store_import *imp = ctx;

	return hl_store_import_begin(imp->s, run, imp);
}

static int sink_process(void *ctx, struct hl_process *p, struct hl_symbolizer *sym)
{
	return hl_store_import_process(ctx, p, sym);
}

/* The input read as `heapledger import` reads a file, into store: 0 if it
 * was a report (res says what was stored), else -errno. */
static int import(struct hl_store *store, const uint8_t *data, size_t size,
		  struct hl_import_result *res)
{
	struct hl_store_import imp = { .s = store };
	const struct hl_json_import_sink sink = { &imp, sink_run, sink_process };
	FILE *f = fmemopen((void *)data, size, "r");
	char why[512];
	int err;

	memset(res, 0, sizeof(*res));
	if (!f)
		return -errno;
	err = hl_json_import_stream(f, &sink, why, sizeof(why));
	fclose(f);
	if (!err)
		err = hl_store_import_end(&imp, res);
	if (err)
		hl_store_import_abort(&imp);
	return err;
}

static void store_and_load(const char *path, const uint8_t *data, size_t size)
{
	struct hl_import_result res;
	struct hl_store *store;
	struct hl_report r;
	int64_t id;
	FILE *sink;

	hl_report_init(&r);
	if (!hl_store_open(path, false, &store) && !import(store, data, size, &res)) {
		if (res.runs_imported + res.runs_empty != 1 || res.runs_present)
			abort(); /* a fresh database has no run of that UUID */
		if (import(store, data, size, &res) || res.runs_imported ||
		    res.runs_present + res.runs_empty != 1)
			abort(); /* importing twice adds nothing */
		if (!hl_store_latest_run(store, &id) && !hl_store_load_report(store, id, &r) &&
		    (sink = fopen("/dev/null", "w"))) {
			hl_report_print_text(&r, sink);
			hl_report_write_json(&r, sink);
			fclose(sink);
		}
	}
	hl_report_destroy(&r);
	hl_store_close(store);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/tmp/hl-fuzz-import-XXXXXX", path[64], side[80];

	if (!mkdtemp(dir))
		return 0;
	snprintf(path, sizeof(path), "%s/f.db", dir);
	store_and_load(path, data, size);
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	rmdir(dir);
	return 0;
}
