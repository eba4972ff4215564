/*
 * reporter/formats/report_speedscope.h: a stored run in speedscope's file format
 * (report_speedscope.c).
 */
#ifndef HL_REPORTER_REPORT_SPEEDSCOPE_H
#define HL_REPORTER_REPORT_SPEEDSCOPE_H

#include <stdint.h>
#include <stdio.h>

#include "run_rows.h"

/* Writes a run's allocation and leak profiles (hl_query_run_profiles);
 * returns 0 or -EIO. */
int hl_report_write_speedscope(const struct hl_run_profiles *run, FILE *out);

#endif /* HL_REPORTER_REPORT_SPEEDSCOPE_H */
