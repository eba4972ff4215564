/*
 * reporter/model/run_rows.c: a stored run's rows (run_rows.h).
 */
#include "run_rows.h"

#include <stdlib.h>
#include <string.h>

const char *hl_summary_column_name(unsigned i)
{
	static const char *const names[HL_SUMMARY_COUNT] = {
#define HL_SUMMARY_NAME(column) #column,
		HL_SUMMARY_COLUMNS(HL_SUMMARY_NAME)
#undef HL_SUMMARY_NAME
	};

	return i < HL_SUMMARY_COUNT ? names[i] : "?";
}

void hl_leak_row_record(const struct hl_leak_row *row, struct hl_report_leak *out)
{
	*out = (struct hl_report_leak){
		.leak_class = row->leak_class,
		.bytes = row->bytes,
		.blocks = row->blocks,
		.indirect_bytes = row->indirect_bytes,
		.inherited_blocks = row->inherited_blocks,
		.suppressed = row->suppressed,
		.suppression = row->suppression,
		.fingerprint = row->fingerprint,
		.allocator = NULL, /* not stored */
		.stack = row->stack,
	};
}

void hl_error_row_record(const struct hl_error_row *row, struct hl_report_error *out)
{
	*out = (struct hl_report_error){
		.kind = row->kind,
		.call = row->call,
		.address = row->address,
		.block_address = (uint64_t)row->block_address.value,
		.block_size = (uint64_t)row->block_size.value,
		.detail = row->detail,
	};
}

void hl_run_page_init(struct hl_run_page *p)
{
	memset(p, 0, sizeof(*p));
	hl_run_list_init(&p->run);
}

void hl_run_page_destroy(struct hl_run_page *p)
{
	free(p->procs);
	hl_run_list_destroy(&p->run);
	hl_run_page_init(p);
}

struct hl_process_row *hl_run_page_add_process(struct hl_run_page *p)
{
	hl_grow((void **)&p->procs, &p->procs_cap, p->nprocs, sizeof(*p->procs));
	memset(&p->procs[p->nprocs], 0, sizeof(*p->procs));
	return &p->procs[p->nprocs++];
}

void hl_run_rows_init(struct hl_run_rows *r)
{
	memset(r, 0, sizeof(*r));
	hl_bump_init(&r->arena);
}

void hl_run_rows_destroy(struct hl_run_rows *r)
{
	free(r->leaks);
	free(r->profile);
	free(r->symbols);
	free(r->errors);
	free(r->fds);
	free(r->checks);
	free(r->records);
	free(r->unstopped);
	free(r->samples);
	hl_bump_free(&r->arena);
	hl_run_rows_init(r);
}

void hl_flame_init(struct hl_flame *f)
{
	memset(f, 0, sizeof(*f));
	hl_bump_init(&f->arena);
}

void hl_flame_destroy(struct hl_flame *f)
{
	hl_bump_free(&f->arena);
	hl_flame_init(f);
}

void hl_run_profiles_init(struct hl_run_profiles *p)
{
	hl_run_page_init(&p->page);
	p->procs = NULL;
}

void hl_run_profiles_destroy(struct hl_run_profiles *p)
{
	for (size_t i = 0; p->procs && i < p->page.nprocs; i++)
		hl_run_rows_destroy(&p->procs[i]);
	free(p->procs);
	hl_run_page_destroy(&p->page);
	p->procs = NULL;
}
