/*
 * reporter/formats/sites_text.c: a run's leak sites as text (sites_text.h).
 */
#include "sites_text.h"

#include <inttypes.h>
#include <string.h>

#include "heapledger/classes.h"
#include "util.h"

/* Where a site is, as the web UI names it (the query picked the frame):
 * function (file:line), else module+offset. */
static void print_where(const struct hl_leak_row *l, FILE *out)
{
	const char *file = l->file ? strrchr(l->file, '/') : NULL;
	const char *module = l->module ? strrchr(l->module, '/') : NULL;

	file = file ? file + 1 : l->file;
	module = module ? module + 1 : l->module;
	if (l->function)
		fprintf(out, "%s", l->function);
	else
		fprintf(out, "%s+0x%" PRIx64, module ? module : "?",
			l->module_offset.known ? (uint64_t)l->module_offset.value : 0);
	if (l->function && file)
		fprintf(out, " (%s:%" PRId64 ")", file, l->line.known ? l->line.value : 0);
	else if (l->function && module)
		fprintf(out, " (%s)", module);
}

void hl_leak_sites_print_text(const struct hl_run_rows *sites, int64_t total, FILE *out)
{
	char a[32], b[32], c[32];

	if (!sites->nleaks)
		return;
	fprintf(out, "heapledger: LEAK SITES (what leaks, every process added up; %s of %s):\n",
		hl_fmt_grouped(a, sites->nleaks), hl_fmt_grouped(b, (uint64_t)total));
	for (size_t i = 0; i < sites->nleaks; i++) {
		const struct hl_leak_row *l = &sites->leaks[i];

		fprintf(out, "heapledger:   %s bytes in %s blocks %s in %s %s: ", hl_fmt_grouped(a, l->bytes),
			hl_fmt_grouped(b, l->blocks), hl_leak_class_info(l->leak_class)->label,
			hl_fmt_grouped(c, l->processes), hl_plural(l->processes, "process", "processes"));
		print_where(l, out);
		fputc('\n', out);
	}
}
