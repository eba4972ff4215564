/*
 * libhook/dtv.h: thread DTVs sized as they would be without the hook
 * (dtv.c).
 */
#ifndef HL_DTV_H
#define HL_DTV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Finds the dynamic linker's code and counts the TLS modules the hook
 * brings; once, from hl_track_init. */
void hl_dtv_init(void);

/* Whether a calloc(count, size) made from caller may be a thread's DTV:
 * the cheap test calloc's tracked path makes before hl_dtv_reported. */
bool hl_dtv_may_be(size_t count, size_t size, uintptr_t caller);

/* The size to report for a DTV of bytes: without the hook's modules'
 * entries. */
size_t hl_dtv_reported(size_t bytes);

/* Remembers that blocks with this allocation stack are DTVs. */
void hl_dtv_note_stack(uint32_t stack_id);

/* The size to report for a block of bytes allocated at stack_id. */
size_t hl_dtv_block_reported(uint32_t stack_id, size_t bytes);

#endif
