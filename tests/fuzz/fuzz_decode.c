/*
 * tests/fuzz/fuzz_decode.c: libFuzzer target for the reporter's decoder and
 * the state it drives. Any input may be rejected, none may crash, hang or
 * leak. The first byte picks how the input is split into reads, so records
 * spanning reads are exercised too, and (its low bit) whether packed events
 * go to the events sink or one record each to the sink.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hl_run run;
	struct hl_conn_state cs;
	struct hl_decoder d;
	uint8_t *buf;
	size_t piece, fill = 0, off = 1;

	if (size < 1)
		return 0;
	piece = (size_t)data[0] * 8 + 1;
	buf = malloc(size + 8);
	hl_run_init(&run);
	cs.run = &run;
	cs.proc = NULL;
	hl_decode_init(&d, hl_state_record, &cs);
	if (data[0] & 1) /* packed events through the events sink, or one record each */
		d.events = hl_state_events;
	while (off < size) {
		size_t n = size - off < piece ? size - off : piece;
		long used;

		memcpy(buf + fill, data + off, n);
		fill += n;
		off += n;
		used = hl_decode_feed(&d, buf, fill);
		if (used < 0)
			break;
		fill -= (size_t)used;
		memmove(buf, buf + used, fill);
	}
	for (size_t i = 0; i < run.nprocs; i++) {
		hl_process_closed(run.procs[i]);
		hl_process_finish(run.procs[i]);
	}
	hl_decode_destroy(&d);
	hl_run_destroy(&run);
	free(buf);
	return 0;
}
