/*
 * reporter/formats/report_junit.c: the report as JUnit XML, which CI services show as
 * test results: the run is a testsuite, each process a testcase named by its
 * pid and command line, each unsuppressed leak record and each heap error a
 * failure with its stack as text. Suppressed leaks are counted in the
 * testcase's system-out. Everything from the program (argv, function and
 * file names) is escaped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "report_formats.h"

void hl_report_xml_text(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '&')
			fputs("&amp;", out);
		else if (c == '<')
			fputs("&lt;", out);
		else if (c == '>')
			fputs("&gt;", out);
		else if (c == '"')
			fputs("&quot;", out);
		else if (c < 0x20 && c != '\t' && c != '\n')
			fputc('?', out);
		else
			fputc(c, out);
	}
}

static void stack_text(FILE *out, const struct hl_report_stack *s)
{
	for (size_t i = 0; i < s->nframes; i++) {
		const struct hl_frame_info *f = &s->frames[i];
		char line[32] = "";

		if (f->line)
			snprintf(line, sizeof(line), ":%u", f->line);
		fputs(i ? "    by " : "    at ", out);
		hl_report_xml_text(out, f->function ? f->function : "???");
		fputs(" (", out);
		hl_report_xml_text(out, f->file ? f->file : f->module ? f->module : "?");
		fprintf(out, "%s)\n", f->file ? line : "");
	}
}

static size_t failures_of(const struct hl_report_process *p)
{
	size_t n = p->nerrors;

	for (size_t i = 0; i < p->nleaks; i++)
		n += !p->leaks[i].suppressed;
	return n;
}

static void testcase(FILE *out, const struct hl_report_process *p)
{
	uint64_t suppressed = 0, suppressed_bytes = 0;

	fputs("  <testcase classname=\"heapledger\" name=\"pid ", out);
	fprintf(out, "%u: ", p->pid);
	for (uint32_t i = 0; i < p->argc; i++) {
		if (i)
			fputc(' ', out);
		hl_report_xml_text(out, p->argv[i]);
	}
	if (!p->argc)
		hl_report_xml_text(out, p->exe);
	fprintf(out, "\" time=\"%.3f\">\n",
		p->ended_ns > p->started_ns ? (double)(p->ended_ns - p->started_ns) / 1e9 : 0.0);
	for (size_t i = 0; i < p->nerrors; i++) {
		const struct hl_report_error *e = &p->errors[i];

		fprintf(out, "   <failure type=\"heap-error/%s\" message=\"heap error: %s of 0x%llx\">",
			hl_error_kind_name(e->kind), hl_error_kind_name(e->kind),
			(unsigned long long)e->address);
		stack_text(out, &e->stack);
		fputs("</failure>\n", out);
	}
	for (size_t i = 0; i < p->nleaks; i++) {
		const struct hl_report_leak *l = &p->leaks[i];

		if (l->suppressed) {
			suppressed++;
			suppressed_bytes += l->bytes;
			continue;
		}
		fprintf(out, "   <failure type=\"leak/%s\" message=\"%llu bytes in %llu blocks are %s",
			hl_leak_class_name(l->leak_class), (unsigned long long)l->bytes,
			(unsigned long long)l->blocks, hl_leak_class_info(l->leak_class)->phrase);
		if (l->fingerprint)
			fprintf(out, " (site %s)", l->fingerprint);
		fputs("\">", out);
		stack_text(out, &l->stack);
		fputs("</failure>\n", out);
	}
	fprintf(out, "   <system-out>%llu bytes in %llu blocks in use at exit; %llu suppressed leak"
		" records (%llu bytes)</system-out>\n", (unsigned long long)p->in_use_bytes,
		(unsigned long long)p->in_use_blocks, (unsigned long long)suppressed,
		(unsigned long long)suppressed_bytes);
	fputs("  </testcase>\n", out);
}

int hl_report_write_junit(const struct hl_report *r, FILE *out)
{
	size_t failures = 0;

	for (size_t i = 0; i < r->nprocs; i++)
		failures += failures_of(&r->procs[i]);
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuites name=\"heapledger\" tests=\"%zu\" failures=\"%zu\">\n"
		" <testsuite name=\"heapledger run %lld\" tests=\"%zu\" failures=\"%zu\" errors=\"0\""
		" skipped=\"0\">\n", r->nprocs, failures, (long long)r->run_id, r->nprocs, failures);
	for (size_t i = 0; i < r->nprocs; i++)
		testcase(out, &r->procs[i]);
	fputs(" </testsuite>\n</testsuites>\n", out);
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}
