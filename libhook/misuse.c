/*
 * libhook/misuse.c: heap misuse the allocator detects (a pointer that free,
 * realloc, malloc_usable_size or delete cannot accept), reported and
 * counted; the call is then ignored, so the heap stays intact.
 */
#include "heap.h"

static _Atomic uint64_t errors_seen;

uint64_t hl_misuse_error_count(void)
{
	return atomic_load_explicit(&errors_seen, memory_order_relaxed);
}

static const char *verdict_of(enum hl_ptr_class c)
{
	switch (c) {
	case HL_PTR_FREED:
		return " (block already freed); ignored\n";
	case HL_PTR_CORRUPT:
		return " (the block's header was overwritten); ignored\n";
	default:
		return " (not the start of a block allocated by heapledger); ignored\n";
	}
}

void hl_report_bad_pointer(const char *function, const void *p, enum hl_ptr_class c)
{
	atomic_fetch_add_explicit(&errors_seen, 1, memory_order_relaxed);
	struct hl_out out;
	hl_out_init(&out, hl_stderr_fd());
	hl_out_str(&out, "heapledger: ");
	hl_out_str(&out, function);
	hl_out_str(&out, c == HL_PTR_FREED ? "(): double free or corruption of "
					   : "(): invalid pointer ");
	hl_out_hex(&out, (uintptr_t)p);
	hl_out_str(&out, verdict_of(c));
	hl_out_flush(&out);
}
