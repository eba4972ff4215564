/*
 * reporter/model/fingerprint.h: the identity of a leak site across runs.
 *
 * A site is where the program allocated what it leaked: the symbolized
 * function names and module basenames of the innermost HL_FINGERPRINT_FRAMES
 * frames of the allocation stack, after the allocator's own frames and the
 * libc/libstdc++ wrappers around it (strdup, getline, operator new...) are
 * dropped. No addresses, offsets, line numbers or directories go in, so the
 * same leak has the same fingerprint in every run, after a rebuild, under
 * ASLR and from another build directory; editing the leaking function's body
 * keeps it, renaming the function or moving the call to another caller does
 * not. A stack with nothing but runtime frames keeps them all.
 */
#ifndef HL_REPORTER_FINGERPRINT_H
#define HL_REPORTER_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "symbolize.h"

#define HL_FINGERPRINT_LEN 16    /* hex digits (64-bit FNV-1a) */
#define HL_FINGERPRINT_FRAMES 6  /* frames that identify a site */

/* True for a frame of the allocator or of a runtime library's wrapper
 * around it (libheapledger, libc, libstdc++, ld.so). */
bool hl_frame_is_runtime(const struct hl_frame_info *f);
/* Index of the first frame that belongs to the program: the runtime frames
 * on top are skipped, unless the whole stack is runtime frames (then 0). */
size_t hl_fingerprint_first_frame(const struct hl_frame_info *frames, size_t n);
/* Writes the HL_FINGERPRINT_LEN hex digits and a NUL into out. */
void hl_fingerprint(const struct hl_frame_info *frames, size_t n,
		    char out[HL_FINGERPRINT_LEN + 1]);
/* "libc.so.6" for "/usr/lib/x86_64-linux-gnu/libc.so.6"; NULL stays NULL. */
const char *hl_basename(const char *path);

#endif /* HL_REPORTER_FINGERPRINT_H */
