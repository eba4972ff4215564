/*
 * reporter/model/gate.c: the CI verdict over leaks and heap errors (gate.h), and
 * baselines of known leak sites.
 */
#include "gate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "suppress.h"
#include "util.h"

void hl_gate_options_init(struct hl_gate_options *o)
{
	memset(o, 0, sizeof(*o));
	o->kinds = HL_SUPP_KIND_DEFINITE | HL_SUPP_KIND_INDIRECT;
}

const char *hl_gate_kinds_arg(const char *value, void *opts)
{
	const unsigned kinds = HL_SUPP_KIND_ALL | HL_GATE_KIND_UNKNOWN;
	struct hl_gate_options *o = opts;

	if (!hl_leak_class_list_parse(value, kinds, kinds, &o->kinds))
		return "wants a list of definite, indirect, possible, reachable, unknown, "
		       "or all or none";
	return NULL;
}

void hl_gate_init(struct hl_gate *g)
{
	memset(g, 0, sizeof(*g));
}

void hl_gate_destroy(struct hl_gate *g)
{
	for (size_t i = 0; i < g->nfailing; i++)
		free(g->failing[i].command);
	free(g->failing);
	memset(g, 0, sizeof(*g));
}

static unsigned kind_bit(unsigned leak_class)
{
	if (HL_CLASS_BIT(leak_class) & HL_SUPP_KIND_ALL)
		return HL_CLASS_BIT(leak_class);
	return HL_GATE_KIND_UNKNOWN; /* no scan classified it */
}

bool hl_gate_count_leak(struct hl_gate *g, const struct hl_gate_options *o,
			unsigned leak_class, bool suppressed, const char *fingerprint,
			uint64_t bytes, uint64_t blocks)
{
	if (suppressed) {
		g->suppressed_bytes += bytes;
		g->suppressed_blocks += blocks;
		return false;
	}
	if (!(kind_bit(leak_class) & o->kinds)) {
		if (kind_bit(leak_class) == HL_GATE_KIND_UNKNOWN) {
			g->unscanned_bytes += bytes;
			g->unscanned_blocks += blocks;
		}
		return false;
	}
	if (o->baseline && fingerprint && hl_baseline_has(o->baseline, fingerprint)) {
		g->known_bytes += bytes;
		g->known_blocks += blocks;
		return false;
	}
	g->bytes += bytes;
	g->blocks += blocks;
	g->records++;
	return true;
}

/* Notes the process if it added counted leaks or errors: "test NAME: argv"
 * (the test's name when the runner gave one). */
static void note_process(struct hl_gate *g, uint32_t pid, const char *const *argv,
			 uint32_t argc, const char *exe, const char *test, uint64_t bytes,
			 uint64_t blocks, uint64_t errors)
{
	struct hl_gate_process *fp;
	size_t len = 1, prefix = test ? strlen("test ") + strlen(test) + 2 : 0;
	char *command;

	g->processes++;
	g->errors += errors;
	if (!blocks && !errors)
		return;
	for (uint32_t i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	command = hl_xmalloc(prefix + len + (exe ? strlen(exe) : 0));
	command[0] = 0;
	if (test)
		snprintf(command, prefix + 1, "test %s: ", test);
	for (uint32_t i = 0; i < argc; i++) {
		if (i)
			strcat(command, " ");
		strcat(command, argv[i]);
	}
	if (!argc && exe)
		strcat(command, exe);
	hl_grow((void **)&g->failing, &g->failing_cap, g->nfailing, sizeof(*g->failing));
	fp = &g->failing[g->nfailing++];
	*fp = (struct hl_gate_process){ pid, command, bytes, blocks, errors };
}

void hl_gate_count_process(struct hl_gate *g, const struct hl_gate_options *o,
			   const struct hl_process *p)
{
	uint64_t bytes = g->bytes, blocks = g->blocks;

	for (size_t i = 0; i < p->nleaks; i++) {
		const struct hl_leak_group *l = &p->leaks[i];

		hl_gate_count_leak(g, o, l->leak_class,
				   l->suppression || l->leak_class == HL_CLASS_SUPPRESSED,
				   l->fingerprint[0] ? l->fingerprint : NULL, l->bytes, l->blocks);
	}
	note_process(g, p->pid, (const char *const *)p->argv, p->argc, p->exe, p->test_name,
		     g->bytes - bytes, g->blocks - blocks, p->nerrors);
}

void hl_gate_count_report(struct hl_gate *g, const struct hl_gate_options *o,
			  const struct hl_report_process *p)
{
	uint64_t bytes = g->bytes, blocks = g->blocks;

	for (size_t i = 0; i < p->nleaks; i++) {
		const struct hl_report_leak *l = &p->leaks[i];

		hl_gate_count_leak(g, o, l->leak_class, l->suppressed, l->fingerprint, l->bytes,
				   l->blocks);
	}
	note_process(g, p->pid, p->argv, p->argc, p->exe, p->test_name, g->bytes - bytes,
		     g->blocks - blocks, p->nerrors);
}

bool hl_gate_failed(const struct hl_gate *g, const struct hl_gate_options *o)
{
	/* no bytes threshold: a leaked 0-byte block fails too, as valgrind
	 * counts it as an error */
	return g->errors > 0 || (g->blocks > 0 && (g->bytes > o->max_bytes || !o->max_bytes) &&
				 g->blocks > o->max_blocks);
}

void hl_gate_print(const struct hl_gate *g, const struct hl_gate_options *o, FILE *out)
{
	char a[32], b[32], c[32], d[32];

	fprintf(out, "heapledger: gate %s: %s %s in %s %s leaked in %llu %s of the"
		" kinds counted, %llu heap %s; thresholds %s bytes, %s blocks",
		hl_gate_failed(g, o) ? "FAILED" : "passed", hl_fmt_grouped(a, g->bytes),
		hl_plural(g->bytes, "byte", "bytes"), hl_fmt_grouped(b, g->blocks),
		hl_plural(g->blocks, "block", "blocks"), (unsigned long long)g->records,
		hl_plural(g->records, "record", "records"), (unsigned long long)g->errors,
		hl_plural(g->errors, "error", "errors"), hl_fmt_grouped(c, o->max_bytes),
		hl_fmt_grouped(d, o->max_blocks));
	if (g->suppressed_blocks)
		fprintf(out, "; suppressed %s bytes in %s blocks", hl_fmt_grouped(a, g->suppressed_bytes),
			hl_fmt_grouped(b, g->suppressed_blocks));
	if (o->baseline)
		fprintf(out, "; in the baseline %s bytes in %s blocks",
			hl_fmt_grouped(a, g->known_bytes), hl_fmt_grouped(b, g->known_blocks));
	if (g->unscanned_blocks)
		fprintf(out, "; not counted: %s bytes in %s blocks that no leak scan classified"
			" (--errors-for-leak-kinds=...,unknown counts them)",
			hl_fmt_grouped(a, g->unscanned_bytes), hl_fmt_grouped(b, g->unscanned_blocks));
	fputc('\n', out);
}

/* ---- baselines ------------------------------------------------------------ */

void hl_baseline_add(struct hl_baseline *b, const char *fingerprint)
{
	hl_grow((void **)&b->fingerprints, &b->cap, b->n, sizeof(*b->fingerprints));
	b->fingerprints[b->n++] = hl_xstrdup(fingerprint);
}

static int compare_strings(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

void hl_baseline_sort(struct hl_baseline *b)
{
	if (b->n)
		qsort(b->fingerprints, b->n, sizeof(*b->fingerprints), compare_strings);
}

bool hl_baseline_has(const struct hl_baseline *b, const char *fingerprint)
{
	return b->n && bsearch(&fingerprint, b->fingerprints, b->n, sizeof(*b->fingerprints),
			       compare_strings) != NULL;
}

void hl_baseline_destroy(struct hl_baseline *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->fingerprints[i]);
	free(b->fingerprints);
	memset(b, 0, sizeof(*b));
}

static bool is_fingerprint(const char *s, size_t len)
{
	if (len != HL_FINGERPRINT_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

int hl_baseline_load(struct hl_baseline *b, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	unsigned n = 0;
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");
		size_t len = strcspn(p, " \t\r\n");

		n++;
		if (*p == '#' || !len)
			continue;
		if (!is_fingerprint(p, len)) {
			snprintf(err, errlen, "%s:%u: expected a leak site fingerprint (%d hex digits)",
				 path, n, HL_FINGERPRINT_LEN);
			rc = -EINVAL;
			break;
		}
		p[len] = 0;
		hl_baseline_add(b, p);
	}
	fclose(f);
	hl_baseline_sort(b);
	return rc;
}
