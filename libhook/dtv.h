/*
 * libhook/dtv.h: thread DTVs sized as they would be without the hook
 * (dtv.c).
 */
#ifndef HL_DTV_H
#define HL_DTV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Finds the dynamic linker's code and counts the TLS modules the hook
 * brings; once, from hl_track_init. */
void hl_dtv_init(void);

#define HL_DTV_ENTRY 16u /* sizeof(dtv_t) */

extern uintptr_t hl_dtv_ld_low;  /* the dynamic linker's code; 0 before hl_dtv_init */
extern uintptr_t hl_dtv_ld_span; /* its length; 0: nothing is a DTV */
extern size_t hl_dtv_min_count;  /* entries a DTV has at least */

/* Whether a calloc(count, size) returning to caller is a thread's DTV. On
 * calloc's path: the element size is compared first, and only 16-byte
 * elements pay for the rest (and for reading the return address). */
HL_INLINE bool hl_dtv_may_be(size_t count, size_t size, uintptr_t caller)
{
	return size == HL_DTV_ENTRY && count >= hl_dtv_min_count &&
	       caller - hl_dtv_ld_low < hl_dtv_ld_span;
}

/* The size to report for a DTV of bytes: without the hook's modules'
 * entries. */
size_t hl_dtv_reported(size_t bytes);

/* Remembers that blocks with this allocation stack are DTVs. */
void hl_dtv_note_stack(uint32_t stack_id);

/* The size to report for a block of bytes allocated at stack_id. */
size_t hl_dtv_block_reported(uint32_t stack_id, size_t bytes);

#endif
