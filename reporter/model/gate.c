/*
 * reporter/model/gate.c: the CI verdict over leaks and heap errors (gate.h), and
 * baselines of known leak sites.
 */
#include "gate.h"
#include "from_live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "suppress.h"
#include "util.h"

void hl_gate_options_init(struct hl_gate_options *o)
{
	memset(o, 0, sizeof(*o));
	o->kinds = HL_GATE_KINDS_DEFAULT;
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

unsigned hl_gate_show_kinds(const struct hl_gate_options *o)
{
	return o->kinds; /* both are HL_CLASS_BIT()s */
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

bool hl_gate_counts_class(unsigned kinds, unsigned leak_class)
{
	return (kind_bit(leak_class) & kinds) != 0;
}

const char *hl_gate_sarif_level(unsigned kinds, unsigned leak_class)
{
	const char *level = hl_leak_class_info(leak_class)->sarif_level;

	if (hl_gate_counts_class(kinds, leak_class))
		return "error";
	return strcmp(level, "error") ? level : "warning";
}

const char *hl_gate_xml_kind(unsigned kinds, unsigned leak_class)
{
	if (leak_class == HL_CLASS_UNKNOWN && !hl_gate_counts_class(kinds, leak_class))
		return hl_leak_class_info(HL_CLASS_REACHABLE)->xml_kind;
	return hl_leak_class_info(leak_class)->xml_kind;
}

/* *total += n, or sets g->overflow and keeps the largest value: a total
 * never wraps (crafted imported numbers would wrap a leak to 0 bytes). */
static void add_checked(struct hl_gate *g, uint64_t *total, uint64_t n)
{
	if (hl_add_saturating(total, n))
		g->overflow = true;
}

bool hl_gate_count_leak(struct hl_gate *g, const struct hl_gate_options *o,
			unsigned leak_class, bool suppressed, const char *fingerprint,
			uint64_t bytes, uint64_t blocks)
{
	if (suppressed) {
		add_checked(g, &g->suppressed_bytes, bytes);
		add_checked(g, &g->suppressed_blocks, blocks);
		return false;
	}
	if (!hl_gate_counts_class(o->kinds, leak_class)) {
		if (kind_bit(leak_class) == HL_GATE_KIND_UNKNOWN) {
			add_checked(g, &g->unscanned_bytes, bytes);
			add_checked(g, &g->unscanned_blocks, blocks);
		}
		return false;
	}
	if (o->baseline && fingerprint && hl_baseline_has(o->baseline, fingerprint)) {
		add_checked(g, &g->known_bytes, bytes);
		add_checked(g, &g->known_blocks, blocks);
		return false;
	}
	add_checked(g, &g->bytes, bytes);
	add_checked(g, &g->blocks, blocks);
	g->records++;
	return true;
}

/* Why heapledger could not see all of a process, or NULL. */
static const char *unseen_reason(bool cut, bool signalled, uint32_t standalone,
				 uint64_t dropped)
{
	if (cut && hl_report_standalone_sentence(standalone))
		return hl_report_standalone_sentence(standalone);
	if (cut && signalled)
		return "killed by a signal before its exit record: its leaks are not all known";
	if (cut)
		return "its event stream ended without its exit record (it closed heapledger's"
		       " descriptor, or its hook went on standalone after the reporter stalled"
		       " for wait_ms): heapledger could not see it to its end";
	if (dropped)
		return "its hook dropped events: heapledger could not see all of it";
	return NULL;
}

static void count_unseen(struct hl_gate *g, bool cut, uint32_t standalone, uint64_t dropped)
{
	g->cut += cut;
	g->dropped += dropped > 0;
	if (cut && !g->standalone)
		g->standalone = hl_report_standalone_sentence(standalone);
}

/* Notes the process if it added counted leaks or errors: "test NAME: argv"
 * (the test's name when the runner gave one). */
static void note_process(struct hl_gate *g, uint32_t pid, const char *const *argv,
			 uint32_t argc, const char *exe, const char *test, uint64_t records,
			 uint64_t bytes, uint64_t blocks, uint64_t errors, const char *unseen)
{
	struct hl_gate_process *fp;
	size_t len = 1, prefix = test ? strlen("test ") + strlen(test) + 2 : 0;
	char *command;

	g->processes++;
	add_checked(g, &g->errors, errors);
	if (!records && !errors && !unseen)
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
	*fp = (struct hl_gate_process){ pid, command, bytes, blocks, errors, unseen };
}

void hl_gate_count_process(struct hl_gate *g, const struct hl_gate_options *o,
			   const struct hl_process *p)
{
	uint64_t bytes = g->bytes, blocks = g->blocks, records = g->records;
	/* exec is no cut: the hook sends everything before it execs */
	bool cut = !p->has_exit && p->how != HL_EXIT_EXEC;

	for (size_t i = 0; i < p->nleaks; i++) {
		const struct hl_leak_group *l = &p->leaks[i];

		hl_gate_count_leak(g, o, l->leak_class,
				   l->suppression || l->leak_class == HL_CLASS_SUPPRESSED,
				   l->fingerprint[0] ? l->fingerprint : NULL, l->bytes, l->blocks);
	}
	count_unseen(g, cut, p->standalone, p->dropped_events);
	note_process(g, p->pid, (const char *const *)p->argv, p->argc, p->exe, p->test_name,
		     g->records - records, g->bytes - bytes, g->blocks - blocks, p->nerrors,
		     unseen_reason(cut, p->how == HL_EXIT_SIGNAL, p->standalone,
				   p->dropped_events));
}

void hl_gate_count_report(struct hl_gate *g, const struct hl_gate_options *o,
			  const struct hl_report_process *p)
{
	uint64_t bytes = g->bytes, blocks = g->blocks, records = g->records;

	for (size_t i = 0; i < p->nleaks; i++) {
		const struct hl_report_leak *l = &p->leaks[i];

		hl_gate_count_leak(g, o, l->leak_class, l->suppressed, l->fingerprint, l->bytes,
				   l->blocks);
	}
	count_unseen(g, p->no_exit_record, p->standalone, p->dropped_events);
	note_process(g, p->pid, p->argv, p->argc, p->exe, p->test_name, g->records - records,
		     g->bytes - bytes, g->blocks - blocks, p->nerrors,
		     unseen_reason(p->no_exit_record, p->how && !strcmp(p->how, "signal"),
				   p->standalone, p->dropped_events));
}

void hl_gate_count_open_run(struct hl_gate *g)
{
	g->run_open = true;
}

const char *hl_gate_incomplete(const struct hl_gate *g)
{
	if (g->run_open)
		return "the run was never closed (its daemon was killed, or it still runs)";
	if (!g->processes)
		return "no process reported to heapledger";
	if (g->overflow)
		return "a leak or error total does not fit in 64 bits";
	if (g->standalone)
		return g->standalone;
	if (g->cut)
		return "heapledger did not see every process to its end (an event stream ended"
		       " without its exit record)";
	if (g->dropped)
		return "a process's hook dropped events";
	return NULL;
}

/* Counted leaks above every threshold given: a threshold of 0 bytes is no
 * threshold, so a leak of 0 bytes counts (valgrind's "0 bytes in 1 blocks
 * are definitely lost" fails its --error-exitcode). */
static bool leaks_fail(const struct hl_gate *g, const struct hl_gate_options *o)
{
	return g->records > 0 && (!o->max_bytes || g->bytes > o->max_bytes) &&
	       g->blocks > o->max_blocks;
}

bool hl_gate_failed(const struct hl_gate *g, const struct hl_gate_options *o)
{
	return g->errors > 0 || leaks_fail(g, o) || hl_gate_incomplete(g);
}

void hl_gate_print_failing(const struct hl_gate *g, FILE *out)
{
	char a[32], b[32];

	for (size_t i = 0; i < g->nfailing; i++) {
		const struct hl_gate_process *p = &g->failing[i];

		fprintf(out, "heapledger:   pid %u (%s): %s %s in %s %s leaked, %llu heap %s",
			p->pid, p->command, hl_fmt_grouped(a, p->bytes),
			hl_plural(p->bytes, "byte", "bytes"), hl_fmt_grouped(b, p->blocks),
			hl_plural(p->blocks, "block", "blocks"), (unsigned long long)p->errors,
			hl_plural(p->errors, "error", "errors"));
		if (p->unseen)
			fprintf(out, "; %s", p->unseen);
		fputc('\n', out);
	}
}

void hl_gate_print(const struct hl_gate *g, const struct hl_gate_options *o, FILE *out)
{
	char a[32], b[32], c[32], d[32], e[HL_BYTES_IN_BLOCKS_LEN];

	fprintf(out, "heapledger: gate %s: %s %s in %s %s leaked in %llu %s of the"
		" kinds counted, %llu heap %s; thresholds %s %s, %s %s",
		hl_gate_failed(g, o) ? "FAILED" : "passed", hl_fmt_grouped(a, g->bytes),
		hl_plural(g->bytes, "byte", "bytes"), hl_fmt_grouped(b, g->blocks),
		hl_plural(g->blocks, "block", "blocks"), (unsigned long long)g->records,
		hl_plural(g->records, "record", "records"), (unsigned long long)g->errors,
		hl_plural(g->errors, "error", "errors"), hl_fmt_grouped(c, o->max_bytes),
		hl_plural(o->max_bytes, "byte", "bytes"), hl_fmt_grouped(d, o->max_blocks),
		hl_plural(o->max_blocks, "block", "blocks"));
	if (g->suppressed_blocks)
		fprintf(out, "; suppressed %s", hl_fmt_bytes_in_blocks(e, g->suppressed_bytes,
							       g->suppressed_blocks));
	if (o->baseline)
		fprintf(out, "; in the baseline %s",
			hl_fmt_bytes_in_blocks(e, g->known_bytes, g->known_blocks));
	if (g->unscanned_blocks)
		fprintf(out, "; not counted: %s that no leak scan classified"
			" (--errors-for-leak-kinds=...,unknown counts them)",
			hl_fmt_bytes_in_blocks(e, g->unscanned_bytes, g->unscanned_blocks));
	fputc('\n', out);
	if (hl_gate_incomplete(g))
		fprintf(out, "heapledger: gate FAILED: the verdict is incomplete: %s\n",
			hl_gate_incomplete(g));
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
