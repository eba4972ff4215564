/*
 * libhook/misuse.c: heap misuse errors — a pointer that free, realloc,
 * malloc_usable_size or delete cannot accept, a block released by the wrong
 * family, a sized delete with the wrong size — described, counted by
 * context, and sent to the reporter as an ERROR record or, standalone,
 * printed valgrind's way to $HEAPLEDGER_LOG (else stderr).
 *
 * A bad pointer's call is then ignored, so the heap stays intact; a
 * mismatched release still releases the block (valgrind does the same). With
 * on_error=abort the process then aborts: the exit path reports as for any
 * abort (the reporter gets the error and the live set, or the standalone
 * summary is printed) and SIGABRT leaves a core dump at the bad call.
 *
 * Contexts are (kind, call, stack of the bad call), as valgrind's are: each is
 * printed once, standalone, and "ERROR SUMMARY: N errors from M contexts"
 * counts them at exit.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "heap.h"
#include "track.h"
#include "heapledger/classes.h"

#define CONTEXTS_MAX 1024u

struct context {
	uint32_t kind, call, stack_id;
	uint32_t count;
};

static struct hl_lock contexts_lock = HL_LOCK_INIT;
static struct context contexts[CONTEXTS_MAX]; /* contexts_lock */
static uint32_t context_count;                /* contexts_lock */
static uint64_t contexts_lost;                /* errors past CONTEXTS_MAX contexts */
static _Atomic uint64_t errors_seen;

uint64_t hl_misuse_error_count(void)
{
	return atomic_load_explicit(&errors_seen, memory_order_relaxed);
}

/* Counts the error under its context; true if the context is new. */
static bool context_count_new(const struct hl_misuse *m, uint32_t stack_id)
{
	bool fresh = false;
	hl_lock(&contexts_lock);
	uint32_t i = 0;
	while (i < context_count && (contexts[i].kind != m->kind || contexts[i].call != m->call ||
				     contexts[i].stack_id != stack_id))
		i++;
	if (i < context_count) {
		contexts[i].count++;
	} else if (context_count < CONTEXTS_MAX) {
		contexts[context_count++] = (struct context){ m->kind, m->call, stack_id, 1 };
		fresh = true;
	} else {
		contexts_lost++;
	}
	hl_unlock(&contexts_lock);
	return fresh;
}

/* ---- describing a bad pointer ---------------------------------------------- */

static void describe_block(struct hl_misuse *m, struct hl_range *r)
{
	m->block = hl_range_data(r);
	m->block_size = hl_block_requested(r);
	m->alloc_stack = hl_range_stack_id(r);
	m->alloc_kind = hl_range_kind(r);
}

/* A pointer that is no block start: inside a live block (interior, maybe
 * misaligned), or not in any block the program holds. */
static void describe_foreign(struct hl_misuse *m, const void *p)
{
	m->kind = HL_ERROR_INVALID_FREE;
	enum hl_region region = hl_registry_lookup(p);
	if (region == HL_REGION_SEGMENT) {
		struct hl_arena *a = hl_segment_of(p)->arena;
		hl_lock(&a->lock);
		struct hl_range *r = hl_blockmap_find(p);
		if (r != NULL && hl_block_is_live(r) && (const char *)p >= (char *)hl_range_data(r)) {
			m->kind = HL_ERROR_INTERIOR_FREE;
			describe_block(m, r);
		}
		hl_unlock(&a->lock);
	} else if (region == HL_REGION_LARGE) {
		size_t size;
		void *start = hl_large_find(p, &size);
		if (start != NULL) {
			m->kind = HL_ERROR_INTERIOR_FREE;
			describe_block(m, hl_range_of(start));
		}
	}
}

void hl_misuse_bad_pointer(unsigned call, const void *p, enum hl_ptr_class c)
{
	struct hl_misuse m = { .call = call, .address = p };
	if (c == HL_PTR_FREED) {
		m.kind = HL_ERROR_DOUBLE_FREE;
		if (hl_guard_describe_freed(p, &m))
			; /* its header is PROT_NONE: the slot's record says it all */
		else if (describe_block(&m, hl_range_of(p)), hl_block_is_quarantined(hl_range_of(p)))
			m.free_stack = hl_checks_free_stack(hl_range_of(p));
		else /* the default mode keeps the caller of free only */
			m.free_stack = hl_track_caller_stack(hl_block_free_caller(hl_range_of(p)));
	} else if (c == HL_PTR_CORRUPT) {
		m.kind = HL_ERROR_HEADER_CORRUPT;
		m.block = p;
	} else {
		describe_foreign(&m, p);
	}
	hl_misuse_report(&m);
}

void hl_misuse_release_mismatch(unsigned call, const void *p, size_t delete_size)
{
	struct hl_misuse m = { .call = call, .address = p };
	describe_block(&m, hl_range_of(p));
	if (delete_size != HL_SIZE_UNKNOWN && delete_size != m.block_size) {
		m.kind = HL_ERROR_SIZE_MISMATCH;
		m.detail = delete_size;
	} else {
		m.kind = HL_ERROR_MISMATCH;
	}
	hl_misuse_report(&m);
}

unsigned hl_misuse_call_of(unsigned release_kind)
{
	switch (release_kind) {
	case HL_KIND_NEW:
	case HL_KIND_NEW_ALIGNED:
		return HL_CALL_DELETE;
	case HL_KIND_NEW_ARRAY:
	case HL_KIND_NEW_ARRAY_ALIGNED:
		return HL_CALL_DELETE_ARRAY;
	default:
		return HL_CALL_FREE;
	}
}

/* ---- output ---------------------------------------------------------------- */

static void line_start(struct hl_out *out)
{
	hl_out_str(out, "==");
	hl_out_u64(out, (uint64_t)getpid());
	hl_out_str(out, "== ");
}

/* valgrind's first line of each kind of error. */
static const char *heading_of(const struct hl_misuse *m)
{
	if (hl_misuse_is_access(m))
		return hl_error_access_heading(m->call);
	switch (m->kind) {
	case HL_ERROR_MISMATCH:
		return "Mismatched free() / delete / delete []";
	case HL_ERROR_SIZE_MISMATCH:
		return "Mismatched new/delete size value: ";
	case HL_ERROR_HEADER_CORRUPT:
		return "Invalid free() / delete / delete[] / realloc(): the block's header was "
		       "overwritten (heap underflow)";
	case HL_ERROR_OVERFLOW:
		return "Heap block overrun: the guard bytes after a block were overwritten";
	case HL_ERROR_USE_AFTER_FREE:
		return "Write to freed memory: a block in the quarantine was changed after its free";
	default:
		return m->call == HL_CALL_USABLE_SIZE
			       ? "Invalid malloc_usable_size()"
			       : "Invalid free() / delete / delete[] / realloc()";
	}
}

/* Errors about a block the program already freed. */
static bool is_freed(const struct hl_misuse *m)
{
	return m->kind == HL_ERROR_DOUBLE_FREE || m->kind == HL_ERROR_USE_AFTER_FREE;
}

static void print_address(struct hl_out *out, const struct hl_misuse *m)
{
	line_start(out);
	hl_out_str(out, " Address ");
	hl_out_hex(out, (uintptr_t)m->address);
	if (m->block == NULL || m->kind == HL_ERROR_HEADER_CORRUPT) {
		hl_out_str(out, m->block ? " is a block whose header was overwritten\n"
					 : " is not stack'd, malloc'd or (recently) free'd\n");
		return;
	}
	uint64_t offset = (uint64_t)((const char *)m->address - (const char *)m->block);
	hl_out_str(out, " is ");
	if (hl_misuse_is_access(m) && (const char *)m->address < (const char *)m->block) {
		hl_out_u64_grouped(out, (uint64_t)((const char *)m->block - (const char *)m->address));
		hl_out_str(out, " bytes before a block of size ");
	} else if (hl_misuse_is_access(m) && offset >= m->block_size) {
		hl_out_u64_grouped(out, offset - m->block_size);
		hl_out_str(out, " bytes after a block of size ");
	} else if (m->kind == HL_ERROR_OVERFLOW) {
		hl_out_u64_grouped(out, offset - m->block_size);
		hl_out_str(out, " bytes after a block of size ");
		hl_out_u64_grouped(out, m->block_size);
		hl_out_str(out, " alloc'd\n");
		line_start(out);
		hl_out_str(out, " The damage reaches ");
		hl_out_u64_grouped(out, m->detail);
		hl_out_str(out, " bytes past the end of the block\n");
		return;
	} else {
		hl_out_u64_grouped(out, offset);
		hl_out_str(out, " bytes inside a block of size ");
	}
	hl_out_u64_grouped(out, m->block_size);
	hl_out_str(out, is_freed(m) ? " free'd\n" : " alloc'd\n");
}

static void print_error(const struct hl_misuse *m, uint32_t stack_id)
{
	struct hl_out out;
	hl_out_init(&out, hl_log_fd());
	line_start(&out);
	hl_out_str(&out, heading_of(m));
	if (m->kind == HL_ERROR_SIZE_MISMATCH)
		hl_out_u64(&out, m->detail);
	if (hl_misuse_is_access(m) && m->detail != 0) {
		hl_out_str(&out, " of size ");
		hl_out_u64(&out, m->detail);
	}
	hl_out_str(&out, hl_error_found_by(m->kind, m->call));
	hl_out_str(&out, "\n");
	hl_track_print_stack(&out, stack_id);
	print_address(&out, m);
	if (m->block != NULL && m->kind != HL_ERROR_HEADER_CORRUPT) {
		if (is_freed(m) && m->free_stack != 0)
			hl_track_print_stack(&out, m->free_stack);
		if (is_freed(m)) {
			line_start(&out);
			hl_out_str(&out, " Block was alloc'd at\n");
		}
		hl_track_print_stack(&out, m->alloc_stack);
	}
	line_start(&out);
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
}

static void send_error(const struct hl_misuse *m, uint32_t stack_id)
{
	struct hl_rec_error rec = {
		.h = hl_wire_hdr(HL_REC_ERROR, 0, sizeof(rec)),
		.kind = m->kind,
		.stack_id = stack_id,
		.address = (uintptr_t)m->address,
		.block_address = (uintptr_t)m->block,
		.block_size = m->block_size,
		.alloc_stack_id = m->alloc_stack,
		.free_stack_id = m->free_stack,
		.call = m->call,
		.alloc_kind = m->alloc_kind,
		.detail = m->detail,
	};
	if (hl_guard_enter())
		hl_emit_record(&rec, sizeof(rec));
	hl_guard_leave();
}

void hl_misuse_report(const struct hl_misuse *m)
{
	atomic_fetch_add_explicit(&errors_seen, 1, memory_order_relaxed);
	uint32_t stack_id = m->fault_pc ? hl_track_fault_stack(m->fault_pc) : hl_track_error_stack();
	bool fresh = context_count_new(m, stack_id);
	if (hl_emit_is_live())
		send_error(m, stack_id);
	else if (fresh)
		print_error(m, stack_id);
	if (hl_options.on_error == HL_ON_ERROR_ABORT && !m->at_exit)
		abort(); /* the exit path reports, then SIGABRT */
}

void hl_misuse_print_summary(int fd)
{
	uint64_t errors = hl_misuse_error_count();
	struct hl_out out;
	hl_out_init(&out, fd);
	line_start(&out);
	hl_out_str(&out, "ERROR SUMMARY: ");
	hl_out_u64_grouped(&out, errors);
	hl_out_str(&out, " errors from ");
	hl_lock(&contexts_lock);
	hl_out_u64_grouped(&out, context_count);
	bool lost = contexts_lost != 0;
	hl_unlock(&contexts_lock);
	hl_out_str(&out, lost ? " contexts (and more not told apart)\n" : " contexts\n");
	hl_out_flush(&out);
}

void hl_misuse_fork_prepare(void)
{
	hl_lock(&contexts_lock);
}

void hl_misuse_fork_parent(void)
{
	hl_unlock(&contexts_lock);
}

/* The child starts its own count, as valgrind's child does. */
void hl_misuse_fork_child(void)
{
	hl_lock_reset(&contexts_lock);
	context_count = 0;
	contexts_lost = 0;
	atomic_store_explicit(&errors_seen, 0, memory_order_relaxed);
}
