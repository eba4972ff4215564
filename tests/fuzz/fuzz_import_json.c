/*
 * tests/fuzz/fuzz_import_json.c: libFuzzer target for `heapledger import` of
 * a JSON report: the input is read as a report (reporter/import_json.c);
 * one that is accepted is stored into a fresh temporary database through
 * the store's own write path, read back and printed as text and JSON, then
 * imported a second time (which must add nothing). Any input may be
 * refused, none may crash, hang or leak.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import_json.h"
#include "report.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void store_and_load(const char *path, struct hl_json_import *im)
{
	struct hl_import_result res;
	struct hl_store *store;
	struct hl_report r;
	int64_t id;
	FILE *sink;

	hl_report_init(&r);
	if (!hl_store_open(path, false, &store) &&
	    !hl_store_import_run(store, &im->run, im->procs, im->nprocs, im->sym, &res)) {
		if (res.runs_imported + res.runs_empty != 1 || res.runs_present)
			abort(); /* a fresh database has no run of that UUID */
		if (hl_store_import_run(store, &im->run, im->procs, im->nprocs, im->sym, &res) ||
		    res.runs_imported || res.runs_present + res.runs_empty != 1)
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
	char dir[] = "/tmp/hl-fuzz-import-XXXXXX", path[64], side[80], why[512];
	struct hl_json_import im;

	if (hl_json_import_read((const char *)data, size, &im, why, sizeof(why)) == 0 &&
	    mkdtemp(dir)) {
		snprintf(path, sizeof(path), "%s/f.db", dir);
		store_and_load(path, &im);
		unlink(path);
		snprintf(side, sizeof(side), "%s-wal", path);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", path);
		unlink(side);
		rmdir(dir);
	}
	hl_json_import_free(&im);
	return 0;
}
