/*
 * tests/fuzz/gen_recover_corpus.c: writes corpus/recover/tally, a seed of
 * the shared area as a killed process's hook leaves it while it counts
 * (wire.h, "Counting in the hook"): the area's header, one empty slot and a
 * tally with room for a few of everything (its offsets and capacities are
 * the seed's own, not the hook's), counts for two stacks, samples, points of
 * a tracked stack and a stack log entry for a stack the connection never
 * defined; the slot's thread had a delta it had not merged, and another's
 * merge was under way (the journal holds stack 1 as it was before it).
 * Usage: gen_recover_corpus DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapledger/tally.h"
#include "heapledger/wire.h"

#define DELTA_AT 2048u
#define SLOT ((DELTA_AT + (uint32_t)sizeof(struct hl_tally_delta) + 4095u) & ~4095u)
#define CAP 8u

int main(int argc, char **argv)
{
	uint64_t tally_at = 2 * SLOT;
	uint64_t head = HL_TALLY_ROUND8(sizeof(struct hl_tally));
	uint64_t bytes = head + CAP * sizeof(struct hl_tally_stack) +
			 CAP * sizeof(struct hl_tally_sample) + CAP * sizeof(struct hl_tally_point) +
			 CAP * sizeof(struct hl_tally_journal_entry) + 256;
	size_t size = (size_t)(tally_at + bytes);
	uint8_t *buf = calloc(1, size);
	struct hl_shared_area *a = (void *)buf;
	struct hl_tally *t = (void *)(buf + tally_at);
	struct hl_tally_stack *s;
	char path[4096];
	FILE *f;

	if (argc != 2 || buf == NULL)
		return 2;
	*a = (struct hl_shared_area){ .magic = HL_SHARED_MAGIC, .version = HL_SHARED_VERSION,
				      .slots = 1, .first_slot = SLOT, .slot_bytes = SLOT,
				      .data_offset = sizeof(struct hl_shared_slot),
				      .data_bytes = DELTA_AT - sizeof(struct hl_shared_slot),
				      .tally_offset = tally_at, .tally_bytes = bytes,
				      .delta_offset = DELTA_AT,
				      .delta_bytes = sizeof(struct hl_tally_delta) };
	*t = (struct hl_tally){ .magic = HL_TALLY_MAGIC, .state = HL_TALLY_COUNTING,
				.stacks_used = 3, .allocs = 5, .frees = 2, .bytes_allocated = 300,
				.in_use_bytes = 200, .in_use_blocks = 3, .peak_bytes = 260,
				.peak_gen = 2, .events = 7, .sample_every = 256,
				.sample_countdown = 249, .nsamples = 2, .npoints = 2, .ntracked = 1,
				.tracked = { 1 }, .tracked_last = { 160 } };
	t->stacks_offset = head;
	t->stacks_cap = CAP;
	t->samples_offset = t->stacks_offset + CAP * sizeof(struct hl_tally_stack);
	t->samples_cap = CAP;
	t->points_offset = t->samples_offset + CAP * sizeof(struct hl_tally_sample);
	t->points_cap = CAP;
	t->journal_offset = t->points_offset + CAP * sizeof(struct hl_tally_point);
	t->journal_cap = CAP;
	t->log_offset = t->journal_offset + CAP * sizeof(struct hl_tally_journal_entry);
	t->log_cap = 256;
	t->sizes.allocs[7] = 5;
	t->sizes.bytes[7] = 300;
	s = (void *)((uint8_t *)t + t->stacks_offset);
	s[1] = (struct hl_tally_stack){ .allocs = 4, .bytes = 240, .frees = 2, .live_bytes = 160,
					.live_blocks = 2, .peak_live_bytes = 200, .point = 2,
					.tracked_since = 1 };
	s[2] = (struct hl_tally_stack){ .allocs = 1, .bytes = 40, .live_bytes = 40, .live_blocks = 1,
					.peak_live_bytes = 40, .flags = HL_TALLY_STACK_REALLOC };
	struct hl_tally_sample *sm = (void *)((uint8_t *)t + t->samples_offset);
	sm[0] = (struct hl_tally_sample){ 100, 120, 2 };
	sm[1] = (struct hl_tally_sample){ 200, 200, 3 };
	struct hl_tally_point *pt = (void *)((uint8_t *)t + t->points_offset);
	pt[0] = (struct hl_tally_point){ 0, 1, 120 };
	pt[1] = (struct hl_tally_point){ 1, 1, 160 };
	/* stack 2 only in the log (stack 1 is the connection's own) */
	struct hl_tally_log_entry e = { .stack_id = 2, .depth = 2 };
	uint64_t frames[2] = { 0x401200, 0x401300 };
	memcpy((uint8_t *)t + t->log_offset, &e, sizeof(e));
	memcpy((uint8_t *)t + t->log_offset + sizeof(e), frames, sizeof(frames));
	t->log_used = sizeof(e) + sizeof(frames);
	/* A merge under way: stack 1 and the totals as they were before it. */
	struct hl_tally_journal_entry *j = (void *)((uint8_t *)t + t->journal_offset);
	t->merging = 1;
	t->journal_n = 1;
	t->journal_totals = (struct hl_tally_totals){ .allocs = 4, .frees = 2,
						      .bytes_allocated = 260, .in_use_bytes = 160,
						      .in_use_blocks = 2, .peak_bytes = 260,
						      .peak_gen = 2, .events = 6 };
	j[0] = (struct hl_tally_journal_entry){ .stack_id = 1, .before = s[1] };
	j[0].before.allocs = 3;
	/* The slot's thread: two allocations and a free from stack 1, one
	 * allocation from stack 2, not merged. */
	struct hl_tally_delta *d = (void *)(buf + SLOT + DELTA_AT);
	d->events = 4;
	d->nused = 2;
	d->used[0] = 7;
	d->used[1] = 9;
	d->slots[7] = (struct hl_tally_delta_stack){ .id = 2, .made = { 2, 64 }, .freed = { 1, 32 },
						     .max_live = 64 };
	d->slots[9] = (struct hl_tally_delta_stack){ .id = 3, .made = { 1, 16 }, .max_live = 16 };
	d->sizes.allocs[5] = 2;
	d->sizes.bytes[5] = 64;
	snprintf(path, sizeof(path), "%s/tally", argv[1]);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, size, f) != size || fclose(f) != 0)
		return 1;
	free(buf);
	return 0;
}
