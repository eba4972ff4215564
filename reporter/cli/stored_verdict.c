/*
 * reporter/cli/stored_verdict.c: what `gate` and `report` add to a stored
 * run before judging it: the --baseline a command names (a run or a file)
 * and the --suppressions it was given. Both commands take them from here, so
 * that JUnit's failures and SARIF's baselineState are the gate's.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "stored_verdict.h"
#include "store_query.h"
#include "suppress.h"
#include "util.h"

static int add_site_to_baseline(void *ctx, const struct hl_run_site *site)
{
	struct hl_baseline *b = ctx;

	if (!hl_baseline_has(b, site->fingerprint)) {
		hl_baseline_add(b, site->fingerprint);
		hl_baseline_sort(b);
	}
	return 0;
}

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

int hl_baseline_from_arg(struct hl_store *s, const char *command, const char *arg,
			 struct hl_baseline *b)
{
	struct stat st;
	char err[512];
	int rc;

	if (all_digits(arg) && stat(arg, &st) != 0) {
		int64_t id = strtoll(arg, NULL, 10);

		rc = hl_query_run_exists(s, id);
		if (!rc)
			rc = hl_query_run_sites(s, id, add_site_to_baseline, b);
		if (rc)
			hl_log("%s: --baseline %s: %s", command, arg, hl_store_error(s));
		return rc;
	}
	rc = hl_baseline_load(b, arg, err, sizeof(err));
	if (rc)
		hl_log("%s: --baseline: %s", command, err);
	return rc;
}

void hl_suppress_stored(struct hl_report *r, const struct hl_policy *pol)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		for (size_t j = 0; j < r->procs[i].nleaks; j++) {
			struct hl_report_leak *l = &r->procs[i].leaks[j];
			const struct hl_suppression *s;

			if (l->suppressed)
				continue;
			s = hl_supp_match(pol->supp, l->stack.frames, l->stack.nframes, l->leak_class,
					  l->bytes, l->blocks);
			if (s) {
				l->suppressed = true;
				l->suppression = s->name;
			}
		}
	}
}

