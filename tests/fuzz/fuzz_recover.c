/*
 * tests/fuzz/fuzz_recover.c: libFuzzer target for reading a killed
 * process's shared event buffers (reporter/recover.c). The input is the
 * memfd's contents, which the program under test could have scribbled on:
 * any bytes may be refused or decoded in part, none may crash, read outside
 * the mapping, hang or leak. A connection with HELLO, one batch and stack 1
 * comes first, as at the end of a real stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "recover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *argv[] = { "prog" };
	uint64_t frames[2] = { 0x401000, 0x401100 };
	struct hl_run run;
	struct hl_conn_state cs = { .run = &run, .proc = NULL };
	struct hl_decoder d;
	struct hl_enc e;
	uint64_t *area = malloc(size + 8); /* 8-aligned, as a mapping is */
	struct hl_shared_view view = { (const uint8_t *)area, size };

	memcpy(area, data, size);
	hl_run_init(&run);
	hl_decode_init(&d, hl_state_record, &cs);
	hl_enc_init(&e);
	hl_enc_hello(&e, 42, 1, HL_ORIGIN_START, "/bin/prog", 1, argv);
	hl_enc_batch(&e, 42, 1, 0);
	hl_enc_stack(&e, 1, frames, 2, 0);
	if (hl_decode_feed(&d, e.buf, e.len) == (long)e.len)
		hl_recover_feed(&view, &d, cs.proc);
	for (size_t i = 0; i < run.nprocs; i++) {
		hl_process_closed(run.procs[i]);
		hl_process_finish(run.procs[i]);
	}
	hl_enc_destroy(&e);
	hl_decode_destroy(&d);
	hl_run_destroy(&run);
	free(area);
	return 0;
}
