/*
 * libhook/stats.c: exact heap counters and the HEAP SUMMARY.
 *
 * Each thread counts its own allocations and frees (no shared cache line on
 * the fast path); a total is the sum over live thread caches plus what exited
 * threads left behind (`retired`), taken under the cache list lock. The peak
 * needs a running global total: a single-threaded program publishes every
 * change, so its peak is exact; once a second thread allocates, threads
 * publish in steps of 64 KiB, so the peak is exact to within 64 KiB per thread.
 */
#include <unistd.h>

#include "heap.h"

bool hl_multithreaded;
int64_t hl_single_thread_peak;
_Atomic uint64_t hl_mapped_bytes;
static _Atomic int64_t global_in_use;
static _Atomic int64_t global_peak;
static struct hl_thread_stats retired; /* guarded by the cache list lock */

static void raise_peak(int64_t value)
{
	int64_t peak = atomic_load_explicit(&global_peak, memory_order_relaxed);
	while (value > peak &&
	       !atomic_compare_exchange_weak_explicit(&global_peak, &peak, value,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

void hl_stats_free_mark_set(struct hl_thread_cache *tc)
{
	uint64_t bound = hl_relaxed_load(&tc->stats.bytes_allocated) + (uint64_t)HL_PUBLISH_STEP -
			 (uint64_t)hl_relaxed_load(&tc->published_bytes);
	hl_relaxed_store(&tc->free_mark, bound);
}

bool hl_stats_free_recheck(struct hl_thread_cache *tc)
{
	if (!hl_relaxed_load(&hl_multithreaded))
		return false; /* a mark set before the switch (cache.c) */
	if (hl_relaxed_load(&tc->published_bytes) - hl_stats_in_use(&tc->stats) > HL_PUBLISH_STEP)
		return true;
	hl_stats_free_mark_set(tc); /* allocations since the mark raised the bound */
	return false;
}

void hl_stats_publish(struct hl_thread_cache *tc)
{
	int64_t in_use = hl_stats_in_use(&tc->stats);
	int64_t delta = in_use - hl_relaxed_load(&tc->published_bytes);
	hl_relaxed_store(&tc->published_bytes, in_use);
	hl_relaxed_store(&tc->alloc_mark, in_use + HL_PUBLISH_STEP);
	hl_stats_free_mark_set(tc);
	raise_peak(atomic_fetch_add_explicit(&global_in_use, delta, memory_order_relaxed) + delta);
}

void hl_stats_retire_locked(struct hl_thread_cache *tc)
{
	hl_assert(hl_caches_lock_is_held());
	struct hl_thread_stats *ts = &tc->stats;
	retired.allocs += hl_relaxed_load(&ts->allocs);
	retired.frees += hl_relaxed_load(&ts->frees);
	retired.bytes_allocated += hl_relaxed_load(&ts->bytes_allocated);
	retired.bytes_freed += hl_relaxed_load(&ts->bytes_freed);
	if (hl_relaxed_load(&hl_multithreaded))
		hl_stats_publish(tc);
}

/* The one running thread may still be counting while we read its totals,
 * so the seed can be off by its last few operations; documented above. */
void hl_stats_go_multithreaded_locked(struct hl_thread_stats *sum)
{
	hl_assert(hl_caches_lock_is_held());
	int64_t total = hl_stats_in_use(&retired) + hl_stats_in_use(sum);
	atomic_store_explicit(&global_in_use, total, memory_order_relaxed);
	raise_peak(hl_relaxed_load(&hl_single_thread_peak));
	raise_peak(total);
	hl_relaxed_store(&hl_multithreaded, true);
	hl_relaxed_store(&hl_free_tail_on, true);
}

void hl_stats_get(struct heapledger_stats *out)
{
	struct hl_thread_stats sum;
	hl_caches_lock();
	sum = retired;
	hl_caches_sum_locked(&sum);
	hl_caches_unlock();
	out->in_use_bytes = sum.bytes_allocated - sum.bytes_freed;
	out->in_use_blocks = sum.allocs - sum.frees;
	out->allocs = sum.allocs;
	out->frees = sum.frees;
	out->bytes_allocated = sum.bytes_allocated;
	int64_t peak = atomic_load_explicit(&global_peak, memory_order_relaxed);
	int64_t single = hl_relaxed_load(&hl_single_thread_peak);
	if (single > peak)
		peak = single;
	out->peak_bytes = peak > (int64_t)out->in_use_bytes ? (uint64_t)peak : out->in_use_bytes;
	out->mapped_bytes = atomic_load_explicit(&hl_mapped_bytes, memory_order_relaxed) +
			    hl_large_mapped_bytes();
}

static void summary_line_prefix(struct hl_out *out)
{
	hl_out_str(out, "==");
	hl_out_u64(out, (uint64_t)getpid());
	hl_out_str(out, "== ");
}

/* `at_exit` picks valgrind's wording for the end-of-run summary. */
void hl_summary_write(int fd, bool at_exit)
{
	struct heapledger_stats s;
	struct hl_out out;
	hl_stats_get(&s);
	hl_out_init(&out, fd);
	summary_line_prefix(&out);
	hl_out_str(&out, "heapledger HEAP SUMMARY:\n");
	summary_line_prefix(&out);
	hl_out_str(&out, at_exit ? "    in use at exit: " : "    in use now: ");
	hl_out_u64_grouped(&out, s.in_use_bytes);
	hl_out_str(&out, " bytes in ");
	hl_out_u64_grouped(&out, s.in_use_blocks);
	hl_out_str(&out, " blocks\n");
	summary_line_prefix(&out);
	hl_out_str(&out, "  total heap usage: ");
	hl_out_u64_grouped(&out, s.allocs);
	hl_out_str(&out, " allocs, ");
	hl_out_u64_grouped(&out, s.frees);
	hl_out_str(&out, " frees, ");
	hl_out_u64_grouped(&out, s.bytes_allocated);
	hl_out_str(&out, " bytes allocated\n");
	summary_line_prefix(&out);
	hl_out_str(&out, "   peak heap usage: ");
	hl_out_u64_grouped(&out, s.peak_bytes);
	hl_out_str(&out, " bytes\n");
	hl_out_flush(&out);
}

void hl_summary_print(int fd)
{
	hl_summary_write(fd, true);
}

HL_API int heapledger_get_stats(struct heapledger_stats *out)
{
	if (out == NULL)
		return -1;
	hl_stats_get(out);
	return 0;
}

HL_API void heapledger_print_summary(int fd)
{
	hl_summary_write(fd, false);
}
