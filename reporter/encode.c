/*
 * reporter/encode.c: wire record writer for tests and benchmarks.
 */
#include "encode.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void hl_enc_init(struct hl_enc *e)
{
	memset(e, 0, sizeof(*e));
}

void hl_enc_destroy(struct hl_enc *e)
{
	free(e->buf);
	hl_enc_init(e);
}

static void reserve(struct hl_enc *e, size_t more)
{
	if (e->len + more <= e->cap)
		return;
	while (e->len + more > e->cap)
		e->cap = e->cap ? e->cap * 2 : 4096;
	e->buf = hl_xrealloc(e->buf, e->cap);
}

void hl_enc_raw(struct hl_enc *e, const void *data, size_t len)
{
	reserve(e, len);
	memcpy(e->buf + e->len, data, len);
	e->len += len;
}

void *hl_enc_record(struct hl_enc *e, uint8_t type, uint32_t length)
{
	struct hl_wire_header *h;

	length = hl_wire_padded(length);
	reserve(e, length);
	h = (void *)(e->buf + e->len);
	memset(h, 0, length);
	h->version = HL_WIRE_VERSION;
	h->type = type;
	h->length = length;
	e->len += length;
	return h;
}

void hl_enc_hello(struct hl_enc *e, uint32_t pid, uint32_t ppid, uint32_t origin,
		  const char *exe, int argc, const char *const *argv)
{
	uint32_t exe_len = (uint32_t)strlen(exe) + 1, argv_len = 0;
	struct hl_rec_hello *r;
	char *p;

	for (int i = 0; i < argc; i++)
		argv_len += (uint32_t)strlen(argv[i]) + 1;
	r = hl_enc_record(e, HL_REC_HELLO, (uint32_t)sizeof(*r) + exe_len + argv_len);
	r->pid = pid;
	r->ppid = ppid;
	r->origin = origin;
	r->argc = (uint32_t)argc;
	r->exe_len = exe_len;
	r->argv_len = argv_len;
	r->stack_depth = 64;
	r->pointer_bytes = 8;
	r->hook_flags = HL_HOOK_STACKS;
	r->start_realtime_ns = hl_now_realtime_ns();
	p = (char *)(r + 1);
	memcpy(p, exe, exe_len);
	p += exe_len;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		memcpy(p, argv[i], n);
		p += n;
	}
}

void hl_enc_batch(struct hl_enc *e, uint32_t tid, uint64_t ticks, uint64_t sequence)
{
	struct hl_rec_batch *r = hl_enc_record(e, HL_REC_BATCH, sizeof(*r));

	r->tid = tid;
	r->ticks = ticks;
	r->monotonic_ns = ticks;
	r->realtime_ns = 1700000000000000000ull + ticks;
	r->sequence = sequence;
}

void hl_enc_module(struct hl_enc *e, uint32_t id, const char *path, uint64_t base,
		   uint64_t low, uint64_t high, const uint8_t *build_id,
		   uint32_t build_id_len)
{
	uint32_t path_len = (uint32_t)strlen(path) + 1;
	struct hl_rec_module_load *r = hl_enc_record(e, HL_REC_MODULE_LOAD,
		(uint32_t)sizeof(*r) + build_id_len + path_len);

	r->module_id = id;
	r->build_id_len = build_id_len;
	r->base = base;
	r->low = low;
	r->high = high;
	r->path_len = path_len;
	if (build_id_len)
		memcpy(r + 1, build_id, build_id_len);
	memcpy((char *)(r + 1) + build_id_len, path, path_len);
}

void hl_enc_module_unload(struct hl_enc *e, uint32_t id, uint64_t ticks)
{
	struct hl_rec_module_unload *r = hl_enc_record(e, HL_REC_MODULE_UNLOAD, sizeof(*r));

	r->module_id = id;
	r->ticks = ticks;
}

void hl_enc_stack(struct hl_enc *e, uint32_t id, const uint64_t *frames,
		  uint16_t depth, uint16_t truncated)
{
	struct hl_rec_stack *r = hl_enc_record(e, HL_REC_STACK,
		(uint32_t)sizeof(*r) + depth * 8u);

	r->stack_id = id;
	r->depth = depth;
	r->truncated = truncated;
	memcpy(r + 1, frames, depth * 8u);
}

void hl_enc_alloc(struct hl_enc *e, uint64_t address, uint64_t size, uint64_t ticks,
		  uint32_t stack_id, unsigned kind)
{
	struct hl_rec_alloc *r = hl_enc_record(e, HL_REC_ALLOC, sizeof(*r));

	r->h.flags = (uint16_t)kind;
	r->address = address;
	r->size = size;
	r->ticks = ticks;
	r->stack_id = stack_id;
}

void hl_enc_free(struct hl_enc *e, uint64_t address, uint64_t ticks, unsigned kind)
{
	struct hl_rec_free *r = hl_enc_record(e, HL_REC_FREE, sizeof(*r));

	r->h.flags = (uint16_t)kind;
	r->address = address;
	r->ticks = ticks;
}

void hl_enc_realloc(struct hl_enc *e, uint64_t old_address, uint64_t new_address,
		    uint64_t size, uint64_t ticks, uint32_t stack_id)
{
	struct hl_rec_realloc *r = hl_enc_record(e, HL_REC_REALLOC, sizeof(*r));

	r->old_address = old_address;
	r->new_address = new_address;
	r->size = size;
	r->ticks = ticks;
	r->stack_id = stack_id;
}

void hl_enc_thread(struct hl_enc *e, uint8_t type, uint32_t tid, uint64_t ticks)
{
	struct hl_rec_thread *r = hl_enc_record(e, type, sizeof(*r));

	r->tid = tid;
	r->ticks = ticks;
}

void hl_enc_fork(struct hl_enc *e, uint32_t child_pid, uint64_t ticks)
{
	struct hl_rec_fork *r = hl_enc_record(e, HL_REC_FORK, sizeof(*r));

	r->child_pid = child_pid;
	r->ticks = ticks;
}

void hl_enc_exit(struct hl_enc *e, uint32_t how, int32_t status, uint64_t ticks)
{
	struct hl_rec_exit *r = hl_enc_record(e, HL_REC_EXIT, sizeof(*r));

	r->how = how;
	r->status = status;
	r->ticks = ticks;
}

void hl_enc_live(struct hl_enc *e, const struct hl_wire_live_block *blocks,
		 uint32_t count, uint16_t flags)
{
	struct hl_rec_live *r = hl_enc_record(e, HL_REC_LIVE,
		(uint32_t)(sizeof(*r) + count * sizeof(*blocks)));

	r->h.flags = flags;
	r->count = count;
	memcpy(r + 1, blocks, count * sizeof(*blocks));
}

void hl_enc_error(struct hl_enc *e, const struct hl_rec_error *fields)
{
	struct hl_rec_error *r = hl_enc_record(e, HL_REC_ERROR, sizeof(*r));
	struct hl_wire_header h = r->h;

	*r = *fields;
	r->h = h;
}

void hl_enc_dropped(struct hl_enc *e, uint64_t events)
{
	struct hl_rec_dropped *r = hl_enc_record(e, HL_REC_DROPPED, sizeof(*r));

	r->events = events;
}
