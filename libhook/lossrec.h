/*
 * libhook/lossrec.h: loss records of the standalone leak report (lossrec.c).
 */
#ifndef HL_LOSSREC_H
#define HL_LOSSREC_H

#include "internal.h"
#include "leakcheck.h"

/* The blocks of one allocation stack in one leak class. */
struct hl_lossrec {
	uint64_t bytes;     /* of the blocks themselves */
	uint64_t indirect;  /* held indirectly by them (definitely lost only) */
	uint64_t blocks;    /* 0: empty slot */
	uint32_t stack_id;
	uint8_t leak_class; /* enum hl_leak_class */
};

struct hl_lossrec_table {
	struct hl_lossrec *groups; /* open addressing by (stack, class) */
	size_t mask;               /* slots - 1 */
	uint64_t class_bytes[6];   /* totals by enum hl_leak_class */
	uint64_t class_blocks[6];
	uint64_t overflow_blocks;  /* blocks whose record did not fit */
};

/* What the report is about. */
struct hl_lossrec_report {
	bool scanned;       /* classes come from a scan */
	const char *why;    /* if not: why ("the process ended through _exit") */
	uint32_t check_seq; /* an on-demand check's number, 0 at exit */
	struct hl_unstopped unstopped; /* threads that did not stop for the scan */
};

/* A table sized for the stacks interned so far (hl_meta_alloc: call before
 * stopping the world); NULL without memory. */
struct hl_lossrec_table *hl_lossrec_new(void);
void hl_lossrec_free(struct hl_lossrec_table *t);
/* Counts one block; no allocation, no lock. */
void hl_lossrec_add(struct hl_lossrec_table *t, uint32_t stack_id, unsigned leak_class,
		    uint64_t bytes, uint64_t indirect);
/* Prints the records and the LEAK SUMMARY to fd; `prev`, the previous
 * check's table, gives the growth an on-demand check shows. */
void hl_lossrec_print(int fd, struct hl_lossrec_table *t, const struct hl_lossrec_table *prev,
		      const struct hl_lossrec_report *how);

#endif /* HL_LOSSREC_H */
