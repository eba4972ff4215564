/*
 * reporter/ingest/decode.h: turns the bytes of one hook connection into validated
 * records (see include/heapledger/wire.h). This is the fuzz target: nothing
 * a peer sends may crash it or make a later stage read out of bounds.
 *
 * Invariants of every record handed to the sink:
 *  - version == HL_WIRE_VERSION, length a multiple of 8, within
 *    [hl_wire_min_length(type), HL_WIRE_MAX_RECORD];
 *  - the record is 8-aligned in memory (the caller keeps its buffer aligned
 *    and records are multiples of 8), so it may be read through its struct;
 *  - every variable part (strings, frames, live blocks) lies inside the
 *    record; strings end with their NUL at the stated length;
 *  - HELLO came first and only once; every stack id and module id named is
 *    0 (stack only: "none") or was defined earlier on this connection, and
 *    no id is defined twice; ids are below HL_DECODE_MAX_ID;
 *  - addresses of ALLOC/FREE/REALLOC/LIVE blocks are not 0.
 * Unknown record types (known version) are skipped by length.
 */
#ifndef HL_REPORTER_DECODE_H
#define HL_REPORTER_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapledger/wire.h"

/* Stack and module ids the reporter accepts: the hook numbers them densely
 * from 1, and the bound keeps a hostile peer from making the reporter
 * allocate id tables of gigabytes. */
#define HL_DECODE_MAX_ID (1u << 24)

/* Called for each valid record; returns 0 or -errno (which stops decoding
 * and drops the connection). */
typedef int (*hl_decode_sink_fn)(void *ctx, const struct hl_wire_header *rec);

/* Optional: told of each record HL_DECODE_LOOKAHEAD records before the sink
 * gets it, to start loading what the sink will touch (the block table slot
 * of an address misses every cache once the table outgrows them). The
 * record is not validated yet: only its header has been checked and its
 * stated length lies in the buffer, so the hint may read the fixed part of
 * its type and must not trust any value (it may only prefetch). Returns
 * false when hints are of no use (the decoder stops giving them until its
 * next call). */
typedef bool (*hl_decode_hint_fn)(void *ctx, const struct hl_wire_header *rec);

#define HL_DECODE_LOOKAHEAD 8

/* A packed ALLOC, FREE or REALLOC (wire.h, "Packed events") as the decoder
 * hands it to an events sink: validated as its full-size record would be
 * (addresses not 0, a known kind, stack ids defined), its bases applied. */
struct hl_event {
	uint64_t address;     /* the block; REALLOC: the old block */
	uint64_t new_address; /* REALLOC: the new block, else 0 */
	uint64_t size;        /* ALLOC, REALLOC: bytes asked for */
	uint64_t ticks;
	uint32_t stack_id;    /* ALLOC, REALLOC: wire stack id (0: none) */
	uint8_t type;         /* HL_REC_ALLOC, HL_REC_FREE or HL_REC_REALLOC */
	uint8_t kind;         /* enum hl_alloc_kind (REALLOC: HL_KIND_MALLOC) */
	uint16_t reserved;
};

/* Optional: takes `n` packed events of the current BATCH at once, in stream
 * order, instead of one full-size record each through the sink (which then
 * receives only the other records, in order with them). The events sink
 * prefetches for itself, so no hints are given for the batches it takes.
 * Returns 0 or -errno, as the sink. Most of the stream is these events: the
 * record built for each, the call per record and its dispatch were half of
 * the reporter's instructions an event. */
typedef int (*hl_decode_events_fn)(void *ctx, const struct hl_event *ev, size_t n);

/* Events handed to an events sink at most at once. */
#define HL_DECODE_EVENTS 64

struct hl_decoder {
	hl_decode_sink_fn sink; /* receives each valid record */
	hl_decode_hint_fn hint; /* NULL, or told of records ahead (set after init) */
	hl_decode_events_fn events; /* NULL, or takes packed events (set after init) */
	void *ctx;              /* passed to sink and hint */
	bool hello_seen;        /* HELLO was accepted */
	uint32_t pid;           /* from HELLO, for log lines */
	uint8_t *stack_ids;     /* bitmap: stack id defined */
	size_t stack_bytes;     /* bytes in stack_ids */
	uint8_t *module_ids;    /* bitmap: module id defined */
	size_t module_bytes;    /* bytes in module_ids */
	uint64_t records;       /* records accepted so far */
	uint64_t batch_end;     /* highest BATCH sequence accepted + 1; 0: none */
	uint64_t bytes;         /* bytes consumed so far */
	char error[200];        /* why decoding stopped, "" while fine */
};

void hl_decode_init(struct hl_decoder *d, hl_decode_sink_fn sink, void *ctx);
void hl_decode_destroy(struct hl_decoder *d);

/* Decodes the complete records at the start of buf (which must be 8-aligned)
 * and hands them to the sink. Returns the bytes consumed (a prefix of
 * complete records; the caller keeps the rest for the next call), or a
 * negative errno with d->error describing the problem: -EPROTO for a
 * protocol violation, or whatever the sink returned. */
long hl_decode_feed(struct hl_decoder *d, const void *buf, size_t len);

/* Validates one complete record (rec->length bytes readable) without the
 * connection-state checks; exported for tests. Returns NULL or the reason. */
/* Stack `id` was defined on this connection (0 always is). */
bool hl_decode_stack_known(const struct hl_decoder *d, uint32_t id);

const char *hl_decode_check_layout(const struct hl_wire_header *rec);

/* The record type's name, "type N" for unknown ones (static buffer). */
const char *hl_decode_type_name(unsigned type);

#endif /* HL_REPORTER_DECODE_H */
