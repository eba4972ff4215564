/*
 * reporter/ingest/encode.h: writes wire records (include/heapledger/wire.h) into a
 * growing buffer. The hook has its own allocation-free writer; this one is
 * for the reporter's tests, the fuzz seed generator, the synthetic test
 * client and `heapledger bench-ingest`, so they all speak the protocol the
 * same way.
 */
#ifndef HL_REPORTER_ENCODE_H
#define HL_REPORTER_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapledger/wire.h"

struct hl_enc {
	uint8_t *buf; /* 16-aligned (malloc) */
	size_t len;
	size_t cap;
	size_t batch_at;  /* offset of the BATCH that packed events go to */
	bool batch_open;  /* the last record written is that BATCH */
};

void hl_enc_init(struct hl_enc *e);
void hl_enc_destroy(struct hl_enc *e);
/* A zeroed record of `length` bytes (rounded up to 8) with its header set;
 * returns it for the caller to fill. Invalidated by the next call. */
void *hl_enc_record(struct hl_enc *e, uint8_t type, uint32_t length);
void hl_enc_raw(struct hl_enc *e, const void *data, size_t len);

void hl_enc_hello(struct hl_enc *e, uint32_t pid, uint32_t ppid, uint32_t origin,
		  const char *exe, int argc, const char *const *argv);
void hl_enc_batch(struct hl_enc *e, uint32_t tid, uint64_t ticks, uint64_t sequence);
void hl_enc_module(struct hl_enc *e, uint32_t id, const char *path, uint64_t base,
		   uint64_t low, uint64_t high, const uint8_t *build_id,
		   uint32_t build_id_len);
void hl_enc_module_unload(struct hl_enc *e, uint32_t id, uint64_t ticks);
void hl_enc_stack(struct hl_enc *e, uint32_t id, const uint64_t *frames,
		  uint16_t depth, uint16_t truncated);
void hl_enc_alloc(struct hl_enc *e, uint64_t address, uint64_t size, uint64_t ticks,
		  uint32_t stack_id, unsigned kind);
void hl_enc_free(struct hl_enc *e, uint64_t address, uint64_t ticks, unsigned kind);
void hl_enc_realloc(struct hl_enc *e, uint64_t old_address, uint64_t new_address,
		    uint64_t size, uint64_t ticks, uint32_t stack_id);
void hl_enc_thread(struct hl_enc *e, uint8_t type, uint32_t tid, uint64_t ticks);
void hl_enc_fork(struct hl_enc *e, uint32_t child_pid, uint64_t ticks);
void hl_enc_exit(struct hl_enc *e, uint32_t how, int32_t status, uint64_t ticks);
void hl_enc_live(struct hl_enc *e, const struct hl_wire_live_block *blocks,
		 uint32_t count, uint16_t flags);
/* LIVE with indirect entries after its blocks (wire.h). */
void hl_enc_live_indirect(struct hl_enc *e, const struct hl_wire_live_block *blocks,
			  uint32_t count, uint16_t flags,
			  const struct hl_wire_live_indirect *indirect, uint32_t nindirect);
/* Closes an on-demand check's LIVE set (LIVE records flagged HL_LIVE_CHECK). */
void hl_enc_check(struct hl_enc *e, uint32_t seq, uint32_t flags, uint64_t ticks);
/* CHECK and EXIT naming the n threads that did not stop for their scan
 * (the tail wire.h describes; n may exceed what a reader takes). */
void hl_enc_check_unstopped(struct hl_enc *e, uint32_t seq, uint32_t flags, uint64_t ticks,
			    const uint32_t *tids, uint32_t n);
void hl_enc_exit_unstopped(struct hl_enc *e, uint32_t how, int32_t status, uint64_t ticks,
			   const uint32_t *tids, uint32_t n);
/* OPTIONS: the keys in `given` (HL_OPTIONS_*) with their values. */
void hl_enc_options(struct hl_enc *e, uint32_t given, uint32_t max_leaks);
/* EXEC naming path (NUL added). */
void hl_enc_exec(struct hl_enc *e, const char *path);
/* SPAWN of child_pid running path (flags: HL_SPAWN_FAILED or 0). */
void hl_enc_spawn(struct hl_enc *e, uint32_t child_pid, const char *path, unsigned flags);
void hl_enc_error(struct hl_enc *e, const struct hl_rec_error *fields);
void hl_enc_dropped(struct hl_enc *e, uint64_t events);
/* FD_SUMMARY, then an FD per descriptor (text NULL: none; NUL added). */
void hl_enc_fd_summary(struct hl_enc *e, uint32_t open, uint32_t std, uint32_t listed,
		       uint16_t flags);
void hl_enc_fd(struct hl_enc *e, int32_t fd, uint32_t stack_id, uint32_t kind, uint32_t family,
	       uint16_t flags, const char *text);

/* Packed events (wire.h): hl_enc_batch_packed writes a BATCH with these
 * bases, and the hl_enc_pack_* calls append events to it, keeping it a
 * complete record after each call; any other record closes it. */
void hl_enc_batch_packed(struct hl_enc *e, uint32_t tid, uint64_t ticks, uint64_t sequence,
			 uint64_t base_ticks, uint64_t base_address);
void hl_enc_pack_alloc(struct hl_enc *e, uint64_t address, uint64_t size, uint64_t ticks,
		       uint32_t stack_id, unsigned kind);
void hl_enc_pack_free(struct hl_enc *e, uint64_t address, uint64_t ticks, unsigned kind);
void hl_enc_pack_realloc(struct hl_enc *e, uint64_t old_address, uint64_t new_address,
			 uint64_t size, uint64_t ticks, uint32_t stack_id);
/* A whole record (THREAD_START, FORK, ERROR, ...) as a RECORD event. */
void hl_enc_pack_record(struct hl_enc *e, const void *rec);
void hl_enc_pack_thread(struct hl_enc *e, uint8_t type, uint32_t tid, uint64_t ticks);
/* Bytes appended as they are, for malformed-input tests. */
void hl_enc_pack_raw(struct hl_enc *e, const void *bytes, uint32_t len);

#endif /* HL_REPORTER_ENCODE_H */
