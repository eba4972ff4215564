/*
 * reporter/ingest/recover.h: a killed process's buffered events, read from the
 * shared event buffers its hook passed with HELLO (wire.h, "Shared event
 * buffers"), so a thread that idled before the kill loses nothing it had
 * committed.
 */
#ifndef HL_REPORTER_RECOVER_H
#define HL_REPORTER_RECOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "decode.h"
#include "heapledger/tally.h"
#include "state.h"

/* A connection's mapping of its hook's buffers; zeroed: none. */
struct hl_shared_view {
	const uint8_t *base;
	size_t bytes;
};

/* read(2) on a hook connection. A descriptor that comes with the bytes is
 * mapped read-only into *view if it is the first, a sealed regular file of a
 * sane size; it is closed in every case (a connection costs one descriptor,
 * as before). */
ssize_t hl_recover_read(int fd, void *buf, size_t len, struct hl_shared_view *view);

/* At the end of a stream without EXIT: feeds the decoder one BATCH per
 * thread slot with the events committed and not sent; stack ids never
 * defined on the connection become 0. Returns the events fed. */
uint64_t hl_recover_feed(const struct hl_shared_view *view, struct hl_decoder *d,
			 const struct hl_process *p);

/* The hook's own ending (wire.h, "The hook's own ending") into *out: true
 * if the hook wrote one and its values are in range. */
bool hl_recover_ending(const struct hl_shared_view *view, struct hl_shared_ending *out);

/* Why the hook went on standalone, as it stored it in the area before it
 * closed the connection (enum hl_standalone; NONE if there is no area or
 * the value is not one of them). */
uint32_t hl_recover_standalone(const struct hl_shared_view *view);

/* The blocks a fork child held at fork whose snapshot it had not sent yet
 * (wire.h, HL_HOOK_FORK_SNAPSHOT): 0 without an area or once it went out. */
uint64_t hl_recover_unsent_inherited(const struct hl_shared_view *view);

/* The hook's tally ("Counting in the hook", wire.h): *copy gets its header
 * as it is now, and the return value is where its offsets start, every
 * array they name (at its capacity) lying inside the area; NULL if there is
 * none or it does not. The arrays are the program's memory: read each
 * element once and check what it names. */
const uint8_t *hl_recover_tally(const struct hl_shared_view *view, struct hl_tally *copy);

/* fn(arg, delta) for each slot's tally delta that holds counts and is not
 * marked merged (heapledger/
 * tally.h, "threads": what a killed process's threads had not merged), a
 * copy whose slot indexes are checked; the counts are the program's. */
void hl_recover_tally_deltas(const struct hl_shared_view *view,
			     void (*fn)(void *arg, const struct hl_tally_delta *d), void *arg);

/* Whether a delta is marked merged (killed while its merge cleared it: it
 * is in the tally, which is then whole). */
bool hl_recover_tally_delta_merged(const struct hl_shared_view *view);

/* Feeds the decoder a STACK record for each stack in the tally's log that
 * the connection never defined (a killed process's last stacks). */
void hl_recover_tally_stacks(const struct hl_shared_view *view, struct hl_decoder *d);

void hl_recover_release(struct hl_shared_view *view);

/* What thread tid has committed and we have not received, read from its
 * slot while it runs: true if the answer is known and at most max_bytes of
 * its packed events are unsent, each address they allocate (ALLOC, and
 * REALLOC's new one) then given to pin(ctx, address); false when it cannot
 * tell (no mapping, no slot with that tid, the last batch sent from it not
 * received yet, the slot emptied while it was read) or there are more. An
 * event committed during or after the reading is not covered (tombwatch.h). */
bool hl_recover_thread_pending(const struct hl_shared_view *view, uint32_t tid,
			       uint64_t batch_end, uint32_t max_bytes,
			       void (*pin)(void *ctx, uint64_t address), void *ctx);

#endif /* HL_REPORTER_RECOVER_H */
