/*
 * tests/fuzz/fuzz_recover.c: libFuzzer target for reading a killed
 * process's shared event buffers (reporter/recover.c). The input is the
 * memfd's contents, which the program under test could have scribbled on:
 * any bytes may be refused or decoded in part, none may crash, read outside
 * the mapping, hang or leak. A connection with HELLO (its hook counting:
 * the area's tally is read too), one batch and stack 1 comes first, as at
 * the end of a real stream. The same bytes are then read as a running
 * thread's unsent events are (hl_recover_thread_pending).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "recover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_pin(void *ctx, uint64_t address)
{
	*(int *)ctx += address != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *argv[] = { "prog" };
	uint64_t frames[2] = { 0x401000, 0x401100 };
	struct hl_run run;
	struct hl_decoder d;
	struct hl_enc e;
	uint64_t *area = malloc(size + 8); /* 8-aligned, as a mapping is */
	struct hl_shared_view view = { (const uint8_t *)area, size };
	/* The view also tells the state which threads have events unsent. */
	struct hl_conn_state cs = { .run = &run, .proc = NULL, .shared = &view, .decoder = &d };
	struct hl_shared_area head;
	int pins = 0;

	memcpy(area, data, size);
	hl_run_init(&run);
	hl_decode_init(&d, hl_state_record, &cs);
	hl_enc_init(&e);
	hl_enc_hello(&e, 42, 1, HL_ORIGIN_START, "/bin/prog", 1, argv);
	((struct hl_rec_hello *)e.buf)->hook_flags |= HL_HOOK_TALLY;
	hl_enc_batch(&e, 42, 1, 0);
	hl_enc_stack(&e, 1, frames, 2, 0);
	if (hl_decode_feed(&d, e.buf, e.len) == (long)e.len) {
		hl_recover_feed(&view, &d, cs.proc);
		hl_state_tally_end(&cs, &d);
	}
	/* A running thread's unsent events, read as the reporter reads them
	 * to forget remembered frees: the first slot's thread and thread 42. */
	hl_recover_thread_pending(&view, 42, d.batch_end, 1024, count_pin, &pins);
	if (size >= sizeof(head)) {
		memcpy(&head, data, sizeof(head));
		if (head.first_slot <= size - sizeof(uint32_t)) {
			uint32_t tid;

			memcpy(&tid, data + head.first_slot, sizeof(tid));
			hl_recover_thread_pending(&view, tid, UINT64_MAX, 1024, count_pin, &pins);
		}
	}
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
