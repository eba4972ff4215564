/*
 * reporter/formats/report_formats.h: the report in the formats CI services read:
 * SARIF 2.1.0 (code scanning: one result per leak site) and JUnit XML (test
 * reports: one testcase per test program, failed where the gate fails it).
 * Both return 0 or -EIO. And valgrind memcheck's XML (protocol 4) and the
 * --log-file/--xml-file files of `run` (report_valgrind.c).
 */
#ifndef HL_REPORTER_REPORT_FORMATS_H
#define HL_REPORTER_REPORT_FORMATS_H

#include <stdio.h>

#include "report.h"

struct hl_baseline;
struct hl_gate_options;
/* root: the source root (files under it are written relative to it, with
 * uriBaseId SRCROOT), NULL for absolute file: URIs only. baseline: each
 * result's baselineState says whether the baseline holds its site (NULL:
 * no baselineState). */
int hl_report_write_sarif(const struct hl_report *r, const char *root,
			  const struct hl_baseline *baseline, FILE *out);
/* One testcase per test program, failed exactly where the gate fails (o:
 * its kinds and thresholds). */
int hl_report_write_junit(const struct hl_report *r, const struct hl_gate_options *o,
			  FILE *out);

/* s escaped for XML text and attributes (control characters XML 1.0 cannot
 * hold become '?'). */
void hl_report_xml_text(FILE *out, const char *s);

/* valgrind memcheck's XML, protocol 4, of the n processes at procs (the
 * first names the document: pid, ppid, command). Returns 0 or -EIO. */
int hl_report_write_valgrind_xml(const struct hl_report *r, const struct hl_report_process *procs,
				 size_t n, FILE *out);

enum hl_report_file_format {
	HL_REPORT_FILE_TEXT,         /* the text report (hl_report_print_process_text) */
	HL_REPORT_FILE_XML,          /* valgrind's XML */
};
/* Writes the report into the file pattern names, as valgrind's --log-file
 * and --xml-file do: a pattern with %p gives each process its own file
 * (%p its pid), else one file holds every process; %q{VAR} is $VAR, %% a %.
 * Files are created 0600, never through a symbolic link. Returns 0 or -EIO
 * after saying which file failed. */
int hl_report_write_files(const struct hl_report *r, const char *pattern,
			  enum hl_report_file_format format);
/* pattern expanded for the process pid (malloc'd), NULL if it has a % other
 * than %p, %q{VAR} or %% (errno EINVAL) or a VAR that is not set (ENOENT). */
char *hl_report_expand_file_name(const char *pattern, uint32_t pid);
/* NULL if pattern is a valid file name pattern, else why not (an args.h
 * message). */
const char *hl_report_check_file_name(const char *pattern);

#endif /* HL_REPORTER_REPORT_FORMATS_H */
