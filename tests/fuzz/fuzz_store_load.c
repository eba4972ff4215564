/*
 * tests/fuzz/fuzz_store_load.c: libFuzzer target for loading a database
 * file: the input is written to a temporary file, opened the way `heapledger
 * report` opens it (read-only; an older schema is migrated first), and the
 * newest run is loaded and printed as text and JSON. Any file may be
 * refused, none may crash, hang or leak.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load(const char *path)
{
	struct hl_store *store;
	struct hl_report r;
	int64_t id;
	FILE *sink;

	hl_report_init(&r);
	if (!hl_store_open(path, true, &store) && !hl_store_latest_run(store, &id) &&
	    !hl_store_load_report(store, id, &r) && (sink = fopen("/dev/null", "w"))) {
		hl_report_print_text(&r, sink);
		hl_report_write_json(&r, sink);
		fclose(sink);
	}
	hl_report_destroy(&r);
	hl_store_close(store);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/tmp/hl-fuzz-store-XXXXXX", path[64], side[80];
	FILE *f;

	if (!mkdtemp(dir))
		return 0;
	snprintf(path, sizeof(path), "%s/f.db", dir);
	f = fopen(path, "wb");
	if (f && fwrite(data, 1, size, f) == size && fclose(f) == 0)
		load(path);
	else if (f)
		fclose(f);
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	rmdir(dir);
	return 0;
}
