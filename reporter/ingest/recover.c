/*
 * reporter/ingest/recover.c: see recover.h. The memory is the program's: every
 * value read from it is checked before use (offsets inside the mapping,
 * events re-read with the decoder's own bounds), and the decoder then
 * checks each event as if it had come over the socket. The mapping cannot
 * fault: the hook sealed the memfd against shrinking, and a descriptor
 * without that seal is refused.
 */
#define _GNU_SOURCE
#include "recover.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Larger areas are refused: 256 slots of 132 KiB need 34 MiB. */
#define MAX_AREA_BYTES ((size_t)1 << 30)

static void view_map(int fd, struct hl_shared_view *view)
{
	struct stat st;
	void *p;
	int seals = fcntl(fd, F_GET_SEALS);

	if (view->base != NULL || seals < 0 || !(seals & F_SEAL_SHRINK) ||
	    fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(struct hl_shared_area) ||
	    (size_t)st.st_size > MAX_AREA_BYTES)
		return;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return;
	view->base = p;
	view->bytes = (size_t)st.st_size;
}

ssize_t hl_recover_read(int fd, void *buf, size_t len, struct hl_shared_view *view)
{
	union {
		struct cmsghdr h;
		char bytes[CMSG_SPACE(sizeof(int) * 4)];
	} control;
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = control.bytes,
			      .msg_controllen = sizeof(control.bytes) };
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

	if (n < 0 || msg.msg_controllen == 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t count;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int passed;

			memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			view_map(passed, view);
			close(passed);
		}
	}
	return n;
}

void hl_recover_release(struct hl_shared_view *view)
{
	if (view->base)
		munmap((void *)view->base, view->bytes);
	view->base = NULL;
	view->bytes = 0;
}

/* The area's header if its geometry lies inside the mapping, else NULL. */
static const struct hl_shared_area *view_area(const struct hl_shared_view *view)
{
	const struct hl_shared_area *a = (const void *)view->base;

	if (view->base == NULL || view->bytes < sizeof(*a) || a->magic != HL_SHARED_MAGIC ||
	    a->version != HL_SHARED_VERSION || a->slot_bytes == 0 ||
	    a->first_slot > view->bytes || a->first_slot % 8 != 0 || a->slot_bytes % 8 != 0 ||
	    a->slots > (view->bytes - a->first_slot) / a->slot_bytes ||
	    a->data_offset < sizeof(struct hl_shared_slot) || a->data_offset > a->slot_bytes ||
	    a->data_bytes > a->slot_bytes - a->data_offset ||
	    a->data_bytes > HL_WIRE_MAX_RECORD - sizeof(struct hl_rec_batch) - HL_PACK_MAX_EVENT)
		return NULL;
	return a;
}

/* The slots to look at: `slots` read once, as the hook raises it while
 * its threads start, and bounded by the mapping. view_area checked the
 * geometry once, but the program may have written any of it since: each
 * value is read once here and checked again. */
static uint32_t area_slots(const struct hl_shared_view *view, const struct hl_shared_area *a)
{
	uint32_t n = __atomic_load_n(&a->slots, __ATOMIC_ACQUIRE);
	uint64_t first = __atomic_load_n(&a->first_slot, __ATOMIC_RELAXED);
	uint32_t stride = __atomic_load_n(&a->slot_bytes, __ATOMIC_RELAXED);
	uint64_t room;

	if (stride == 0 || first > view->bytes)
		return 0;
	room = (view->bytes - first) / stride;
	return n < room ? n : (uint32_t)room;
}

static uint32_t known_stack(const struct hl_decoder *d, uint64_t id)
{
	return id <= UINT32_MAX && hl_decode_stack_known(d, (uint32_t)id) ? (uint32_t)id : 0;
}

/* An ERROR record's stack ids that were never defined become 0. */
static void error_ids_known(const struct hl_decoder *d, uint8_t *rec, uint32_t len)
{
	struct hl_rec_error e;

	if (len < sizeof(e))
		return;
	memcpy(&e, rec, sizeof(e));
	if (e.h.type != HL_REC_ERROR)
		return;
	e.stack_id = known_stack(d, e.stack_id);
	e.alloc_stack_id = known_stack(d, e.alloc_stack_id);
	e.free_stack_id = known_stack(d, e.free_stack_id);
	memcpy(rec, &e, sizeof(e));
}

/* Copies the events of src (len bytes) to dst, stack ids the connection
 * never defined as 0, up to the first that does not parse. Returns the
 * bytes written; *events counts them. dst has len + HL_PACK_MAX_EVENT. */
static uint32_t copy_events(const struct hl_decoder *d, const uint8_t *src, uint32_t len,
			    uint8_t *dst, uint64_t *events)
{
	uint32_t in = 0, out = 0;

	while (in < len) {
		unsigned event, kind;
		uint64_t f[HL_PACK_MAX_FIELDS];
		struct hl_wire_header h;
		uint32_t n = hl_pack_read(src + in, len - in, &event, &kind, f);

		if (n == 0)
			break;
		if (event == HL_PACK_RECORD) {
			if (len - in - n < sizeof(h))
				break;
			memcpy(&h, src + in + n, sizeof(h));
			if (h.length < sizeof(h) || h.length > HL_PACK_MAX_RECORD ||
			    h.length > len - in - n)
				break;
			memcpy(dst + out, src + in, n + h.length);
			error_ids_known(d, dst + out + n, h.length);
			in += n + h.length;
			out += n + h.length;
		} else {
			unsigned stack_field = event == HL_PACK_ALLOC ? 3 : 4;

			if (event != HL_PACK_FREE)
				f[stack_field] = known_stack(d, f[stack_field]);
			out += hl_pack_write(dst + out, event, kind, f, hl_pack_field_count(event));
			in += n;
		}
		++*events;
	}
	return out;
}

/* One slot's unsent events as a BATCH fed to d; false if decoding failed. */
static bool feed_slot(const struct hl_shared_area *a, const uint8_t *slot_base,
		      struct hl_decoder *d, const struct hl_process *p, uint64_t *events)
{
	struct hl_shared_slot slot;
	uint32_t start, packed, padded;
	struct hl_rec_batch *batch;
	bool ok = true;

	memcpy(&slot, slot_base, sizeof(slot));
	start = slot.sent;
	if (slot.sending_end != slot.sent && d->batch_end > slot.sending_sequence)
		start = slot.sending_end; /* that batch arrived; `sent` did not move */
	if (slot.tid == 0 || start >= slot.used || slot.used > a->data_bytes)
		return true;
	batch = hl_xcalloc(1, sizeof(*batch) + slot.used - start + HL_PACK_MAX_EVENT + 8);
	packed = copy_events(d, slot_base + a->data_offset + start, slot.used - start,
			     (uint8_t *)(batch + 1), events);
	padded = hl_wire_padded(packed);
	*batch = (struct hl_rec_batch){
		.h = hl_wire_hdr(HL_REC_BATCH, 0, (uint32_t)sizeof(*batch) + padded),
		.tid = slot.tid, .packed_bytes = packed,
		/* No clock reading of its own: the latest sync again. */
		.ticks = p->sync_ticks[1], .monotonic_ns = p->sync_mono[1],
		.realtime_ns = p->sync_real[1], .sequence = d->batch_end,
		.base_ticks = slot.base_ticks, .base_address = slot.base_address };
	memset((uint8_t *)(batch + 1) + packed, 0, padded - packed);
	if (packed > 0)
		ok = hl_decode_feed(d, batch, batch->h.length) >= 0;
	free(batch);
	return ok;
}

uint64_t hl_recover_feed(const struct hl_shared_view *view, struct hl_decoder *d,
			 const struct hl_process *p)
{
	const struct hl_shared_area *a = view_area(view);
	uint64_t events = 0;
	uint32_t slots;

	if (a == NULL || p == NULL || !p->clock_synced)
		return 0;
	slots = area_slots(view, a);
	for (uint32_t i = 0; i < slots; i++)
		if (!feed_slot(a, view->base + a->first_slot + (size_t)i * a->slot_bytes, d, p,
			       &events))
			break;
	return events;
}

bool hl_recover_ending(const struct hl_shared_view *view, struct hl_shared_ending *out)
{
	const struct hl_shared_area *a = view_area(view);

	if (!a || __atomic_load_n(&a->ending.ended, __ATOMIC_ACQUIRE) != HL_SHARED_ENDED)
		return false;
	memcpy(out, &a->ending, sizeof(*out));
	return out->ended == HL_SHARED_ENDED && out->how <= HL_EXIT_SIGNAL &&
	       out->counted <= 1 && out->scanned <= 1;
}

/* The allocating addresses of the packed events in [p, p + len), relative
 * to base_address; false if one does not parse. */
static bool pin_events(const uint8_t *p, uint32_t len, uint64_t base_address,
		       void (*pin)(void *ctx, uint64_t address), void *ctx)
{
	uint32_t at = 0;

	while (at < len) {
		unsigned event, kind;
		uint64_t f[HL_PACK_MAX_FIELDS], old;
		struct hl_wire_header h;
		uint32_t n = hl_pack_read(p + at, len - at, &event, &kind, f);

		if (n == 0)
			return false;
		at += n;
		switch (event) {
		case HL_PACK_ALLOC:
			pin(ctx, base_address + hl_unzigzag(f[1]));
			break;
		case HL_PACK_REALLOC:
			old = base_address + hl_unzigzag(f[1]);
			pin(ctx, old + hl_unzigzag(f[2]));
			break;
		case HL_PACK_RECORD:
			if (len - at < sizeof(h))
				return false;
			memcpy(&h, p + at, sizeof(h));
			if (h.length < sizeof(h) || h.length > len - at)
				return false;
			at += h.length;
			break;
		default:
			break;
		}
	}
	return true;
}

bool hl_recover_thread_pending(const struct hl_shared_view *view, uint32_t tid,
			       uint64_t batch_end, uint32_t max_bytes,
			       void (*pin)(void *ctx, uint64_t address), void *ctx)
{
	const struct hl_shared_area *a = view_area(view);
	uint8_t copy[1024];
	uint32_t slots;

	if (!a || !tid || max_bytes > sizeof(copy))
		return false;
	slots = area_slots(view, a);
	for (uint32_t i = 0; i < slots; i++) {
		const uint8_t *base = view->base + a->first_slot + (size_t)i * a->slot_bytes;
		const struct hl_shared_slot *slot = (const void *)base;
		uint32_t used, sent;
		uint64_t sequence, base_ticks, base_address;

		if (__atomic_load_n(&slot->tid, __ATOMIC_RELAXED) != tid)
			continue;
		/* `used` first: whatever lies below it is complete, and what
		 * lies below `sent` (read next) went out in batches no later
		 * than the sequence read after it (a reset to 0 follows the
		 * batch that sent everything). */
		used = __atomic_load_n(&slot->used, __ATOMIC_ACQUIRE);
		sent = __atomic_load_n(&slot->sent, __ATOMIC_ACQUIRE);
		sequence = __atomic_load_n(&slot->sending_sequence, __ATOMIC_ACQUIRE);
		base_ticks = __atomic_load_n(&slot->base_ticks, __ATOMIC_ACQUIRE);
		base_address = __atomic_load_n(&slot->base_address, __ATOMIC_ACQUIRE);
		if (batch_end <= sequence)
			return false; /* a batch from it may still be on its way */
		if (used == 0)
			return true;
		if (sent > used || used > a->data_bytes || used - sent > max_bytes)
			return false;
		memcpy(copy, base + a->data_offset + sent, used - sent);
		/* Sent and emptied meanwhile, the bytes maybe overwritten:
		 * `sent` or the bases moved (a refill takes new ones). */
		if (__atomic_load_n(&slot->sent, __ATOMIC_ACQUIRE) != sent ||
		    __atomic_load_n(&slot->used, __ATOMIC_ACQUIRE) < used ||
		    __atomic_load_n(&slot->base_ticks, __ATOMIC_ACQUIRE) != base_ticks ||
		    __atomic_load_n(&slot->base_address, __ATOMIC_ACQUIRE) != base_address)
			return false;
		return pin_events(copy, used - sent, base_address, pin, ctx);
	}
	return false;
}

/* [offset, offset + count * size) inside bytes. */
static bool fits(uint64_t offset, uint64_t count, uint64_t size, uint64_t bytes)
{
	return offset % 8 == 0 && offset <= bytes && count <= (bytes - offset) / size;
}

const uint8_t *hl_recover_tally(const struct hl_shared_view *view, struct hl_tally *copy)
{
	const struct hl_shared_area *a = view_area(view);
	const uint8_t *base;
	uint64_t bytes;

	if (a == NULL || a->tally_offset == 0 || a->tally_offset % 8 != 0 ||
	    a->tally_offset > view->bytes || a->tally_bytes > view->bytes - a->tally_offset ||
	    a->tally_bytes < sizeof(*copy))
		return NULL;
	base = view->base + a->tally_offset;
	bytes = a->tally_bytes;
	memcpy(copy, base, sizeof(*copy));
	if (copy->magic != HL_TALLY_MAGIC ||
	    !fits(copy->stacks_offset, copy->stacks_cap, sizeof(struct hl_tally_stack), bytes) ||
	    !fits(copy->samples_offset, copy->samples_cap, sizeof(struct hl_tally_sample), bytes) ||
	    !fits(copy->points_offset, copy->points_cap, sizeof(struct hl_tally_point), bytes) ||
	    !fits(copy->journal_offset, copy->journal_cap, sizeof(struct hl_tally_journal_entry),
		  bytes) ||
	    !fits(copy->log_offset, copy->log_cap, 1, bytes))
		return NULL;
	return base;
}

/* Where slot i's delta starts, or NULL (no deltas, or past the mapping). */
static const uint8_t *slot_delta(const struct hl_shared_view *view,
				 const struct hl_shared_area *a, uint32_t i)
{
	uint32_t offset = __atomic_load_n(&a->delta_offset, __ATOMIC_RELAXED);
	uint32_t stride = __atomic_load_n(&a->slot_bytes, __ATOMIC_RELAXED);
	uint64_t first = __atomic_load_n(&a->first_slot, __ATOMIC_RELAXED);
	uint64_t at = first + (uint64_t)i * stride + offset;

	if (offset == 0 || offset % 16 != 0 || offset > stride ||
	    __atomic_load_n(&a->delta_bytes, __ATOMIC_RELAXED) != sizeof(struct hl_tally_delta) ||
	    sizeof(struct hl_tally_delta) > stride - offset || at > view->bytes ||
	    view->bytes - at < sizeof(struct hl_tally_delta))
		return NULL;
	return view->base + at;
}

bool hl_recover_tally_delta_merged(const struct hl_shared_view *view)
{
	const struct hl_shared_area *a = view_area(view);
	uint32_t slots = a ? area_slots(view, a) : 0;

	for (uint32_t i = 0; i < slots; i++) {
		const uint8_t *at = slot_delta(view, a, i);
		uint32_t merged;

		if (at == NULL)
			return false;
		memcpy(&merged, at + offsetof(struct hl_tally_delta, merged), sizeof(merged));
		if (merged)
			return true;
	}
	return false;
}

void hl_recover_tally_deltas(const struct hl_shared_view *view,
			     void (*fn)(void *arg, const struct hl_tally_delta *d), void *arg)
{
	const struct hl_shared_area *a = view_area(view);
	struct hl_tally_delta *copy;
	uint32_t slots;

	if (a == NULL)
		return;
	slots = area_slots(view, a);
	copy = hl_xmalloc(sizeof(*copy));
	for (uint32_t i = 0; i < slots; i++) {
		const uint8_t *at = slot_delta(view, a, i);
		uint32_t n = 0;

		if (at == NULL)
			break;
		memcpy(copy, at, sizeof(*copy));
		if (copy->merged || (copy->events == 0 && copy->nused == 0))
			continue;
		/* Only the slots the list names, each once, are counted. */
		uint64_t seen[HL_DELTA_SLOTS / 64] = { 0 };
		for (uint32_t k = 0; k < copy->nused && k < HL_DELTA_SLOTS; k++) {
			uint16_t slot = copy->used[k] % HL_DELTA_SLOTS;

			if (copy->slots[slot].id == 0 || (seen[slot / 64] >> (slot % 64)) & 1)
				continue;
			seen[slot / 64] |= 1ull << (slot % 64);
			copy->used[n++] = slot;
		}
		copy->nused = n;
		fn(arg, copy);
	}
	free(copy);
}

void hl_recover_tally_stacks(const struct hl_shared_view *view, struct hl_decoder *d)
{
	struct hl_tally t;
	const uint8_t *base = hl_recover_tally(view, &t);
	uint64_t at = 0, used = t.log_used;
	uint8_t *rec;

	if (base == NULL)
		return;
	rec = hl_xmalloc(sizeof(struct hl_rec_stack) + HL_WIRE_MAX_FRAMES * 8);
	if (used > t.log_cap)
		used = t.log_cap;
	while (used - at >= sizeof(struct hl_tally_log_entry)) {
		struct hl_tally_log_entry e;
		struct hl_rec_stack *r = (void *)rec;
		uint64_t frames;

		memcpy(&e, base + t.log_offset + at, sizeof(e));
		frames = (uint64_t)e.depth * 8;
		if (e.depth > HL_WIRE_MAX_FRAMES || used - at - sizeof(e) < frames)
			break;
		if (e.stack_id != 0 && !hl_decode_stack_known(d, e.stack_id)) {
			*r = (struct hl_rec_stack){
				.h = hl_wire_hdr(HL_REC_STACK, 0,
						 (uint32_t)(sizeof(*r) + frames)),
				.stack_id = e.stack_id, .depth = e.depth,
				.truncated = e.truncated ? 1 : 0 };
			memcpy(r + 1, base + t.log_offset + at + sizeof(e), frames);
			if (hl_decode_feed(d, rec, r->h.length) < 0)
				break;
		}
		at += sizeof(e) + frames;
	}
	free(rec);
}

uint32_t hl_recover_standalone(const struct hl_shared_view *view)
{
	const struct hl_shared_area *a = view_area(view);
	uint32_t why;

	if (a == NULL)
		return HL_STANDALONE_NONE;
	why = __atomic_load_n(&a->standalone, __ATOMIC_ACQUIRE);
	return why <= HL_STANDALONE_DESCRIPTOR ? why : HL_STANDALONE_NONE; /* the hook's */
}

uint64_t hl_recover_unsent_inherited(const struct hl_shared_view *view)
{
	const struct hl_shared_area *a = view_area(view);

	return a ? __atomic_load_n(&a->unsent_inherited, __ATOMIC_ACQUIRE) : 0;
}
