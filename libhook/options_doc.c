/*
 * libhook/options_doc.c: prints the HEAPLEDGER_OPTIONS table (options.h) for
 * the documentation, so the man page and doc/manual.md never drift from the code.
 *
 *   options_doc markdown   the table in doc/manual.md (between its markers)
 *   options_doc scdoc      the table spliced into doc/libheapledger.7.scd
 *
 * A build-time program: it runs on the build machine and allocates freely.
 */
#include <stdio.h>
#include <string.h>

#include "options.h"

static const struct hl_option_info infos[] = { HL_OPTION_TABLE(HL_OPTION_INFO) };

/* "0..256", "0|1", "abort|report"; `bar` replaces each '|' (markdown needs \|). */
static void print_values(const struct hl_option_info *info, const char *bar)
{
	const char *v = info->values;

	if (!v && info->min == 0 && info->max == 1)
		v = "0|1";
	if (!v) {
		printf("%u..%u", info->min, info->max);
		return;
	}
	for (; *v; v++) {
		if (*v == '|')
			fputs(bar, stdout);
		else
			putchar(*v);
	}
}

/* The default as users write it: a number, or the chosen value's name. */
static void print_default(const struct hl_option_info *info)
{
	const char *v = info->values;

	if (!v) {
		printf("%u", info->default_value);
		return;
	}
	for (unsigned i = 0; i < info->default_value && *v; i++)
		v += strcspn(v, "|") + (v[strcspn(v, "|")] == '|');
	printf("%.*s", (int)strcspn(v, "|"), v);
}

int main(int argc, char **argv)
{
	size_t n = sizeof(infos) / sizeof(infos[0]);
	int scdoc = argc == 2 && !strcmp(argv[1], "scdoc");

	if (argc != 2 || (!scdoc && strcmp(argv[1], "markdown"))) {
		fprintf(stderr, "usage: options_doc markdown|scdoc\n");
		return 2;
	}
	if (scdoc)
		printf("[[ *Key*\n:[ *Values*\n:[ *Default*\n:[ *Meaning*\n");
	else
		printf("| Key | Values | Default | Meaning |\n|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		printf(scdoc ? "|[ *%s*\n:[ " : "| `%s` | ", infos[i].key);
		print_values(&infos[i], scdoc ? "|" : "\\|");
		printf(scdoc ? "\n:[ " : " | ");
		print_default(&infos[i]);
		printf(scdoc ? "\n:[ %s\n" : " | %s |\n", infos[i].help);
	}
	return 0;
}
