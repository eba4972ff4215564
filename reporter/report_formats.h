/*
 * reporter/report_formats.h: the report in the formats CI services read:
 * SARIF 2.1.0 (code scanning: one result per leak site) and JUnit XML (test
 * reports: one testcase per process, one failure per leak or heap error).
 * Both return 0 or -EIO.
 */
#ifndef HL_REPORTER_REPORT_FORMATS_H
#define HL_REPORTER_REPORT_FORMATS_H

#include <stdio.h>

#include "report.h"

int hl_report_write_sarif(const struct hl_report *r, FILE *out);
int hl_report_write_junit(const struct hl_report *r, FILE *out);

#endif /* HL_REPORTER_REPORT_FORMATS_H */
