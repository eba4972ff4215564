/*
 * libhook/track_free.h: a tracked free's event, inline in the free's tail
 * (alloc.c hl_free_fast_tail) as well as in hl_track_free (track.c): a call
 * of its own cost each tracked free a frame and the saving of the
 * registers the event's path uses. Never installed.
 */
#ifndef HL_TRACK_FREE_H
#define HL_TRACK_FREE_H

#include <stdbool.h>
#include <stdint.h>

#include "emit_event.h"
#include "heap.h"
#include "internal.h"
#include "tally_hook.h"
#include "track.h"

/* track.c's state, set by its constructor (hidden: read directly, not
 * through the GOT). */
extern __attribute__((visibility("hidden"))) bool hl_track_ready; /* the constructor ran */
extern __attribute__((visibility("hidden"))) bool hl_track_capture_on; /* stacks are captured */

/* A free before the constructor (early.c logs it). */
void hl_track_free_early(void *p, unsigned kind);

/* hl_track_free (internal.h). */
HL_INLINE void hl_track_free_inline(void *p, unsigned kind, uintptr_t caller)
{
	if (hl_unlikely(!hl_track_ready)) {
		hl_track_free_early(p, kind);
		return;
	}
	if (!hl_guard_enter())
		goto out_leave;
	/* The caller first: it is then dead across the event's path, which
	 * so saves and restores fewer registers. */
	if (hl_track_capture_on && hl_checks_redzone == 0) {
		struct hl_range *r = hl_range_of(p);

		if (!(hl_range_flags(r) & HL_RANGE_LARGE))
			hl_block_note_free_caller(r, caller ? caller
							    : hl_stack_memo_caller(__builtin_frame_address(0)));
	}
	/* errno: the event's path keeps it where it makes a system call, and
	 * nothing else here makes one (9 instructions a free, saved here). */
	if (hl_tally_counts()) {
		struct hl_range *r = hl_range_of(p);
		if (hl_likely(hl_tally_take_free((uintptr_t)p, hl_block_requested(r),
						 hl_range_stack_id(r))))
			goto out_leave;
	}
	hl_emit_free_inline((uintptr_t)p, kind);
out_leave:
	hl_guard_leave();
}

#endif
