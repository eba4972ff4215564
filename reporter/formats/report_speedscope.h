/*
 * reporter/formats/report_speedscope.h: a stored run in speedscope's file format
 * (report_speedscope.c).
 */
#ifndef HL_REPORTER_REPORT_SPEEDSCOPE_H
#define HL_REPORTER_REPORT_SPEEDSCOPE_H

#include <stdint.h>
#include <stdio.h>

#include "store.h"

/* Writes run_id's allocation and leak profiles; returns 0 or -errno. */
int hl_report_write_speedscope(struct hl_store *s, int64_t run_id, FILE *out);

#endif /* HL_REPORTER_REPORT_SPEEDSCOPE_H */
