/*
 * tests/libhook/arenas_valid.h: whether every arena still keeps its
 * invariants, each checked under its lock; for tests that provoke heap
 * misuse and must show the heap came through it intact.
 */
#ifndef HL_TEST_ARENAS_VALID_H
#define HL_TEST_ARENAS_VALID_H

#include <stdbool.h>

#include "heap.h"
#include "lock.h"

static inline bool arenas_valid(void)
{
	for (unsigned i = 0; i < hl_arena_count; i++) {
		hl_lock(&hl_arenas[i].lock);
		bool ok = hl_arena_is_valid_locked(&hl_arenas[i]);
		hl_unlock(&hl_arenas[i].lock);
		if (!ok)
			return false;
	}
	return true;
}

#endif
