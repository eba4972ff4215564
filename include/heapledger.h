/*
 * heapledger.h: the small public API of libheapledger.so.
 *
 * A program does not need this header to be checked: LD_PRELOAD is enough.
 * It is for programs that want a heap summary at a moment of their choosing
 * (like valgrind's client requests). Declare the functions weak if the program
 * must also run without the hook:
 *     #pragma weak heapledger_print_summary
 *     if (heapledger_print_summary) heapledger_print_summary(2);
 */
#ifndef HEAPLEDGER_H
#define HEAPLEDGER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exact counters since the process (image) started. Bytes are the sizes the
 * program asked for, not the allocator's usable sizes. */
struct heapledger_stats {
	uint64_t in_use_bytes;    /* asked-for bytes in blocks not yet freed */
	uint64_t in_use_blocks;   /* blocks not yet freed */
	uint64_t allocs;          /* allocation calls that returned a block */
	uint64_t frees;           /* blocks released (free, delete, realloc moves) */
	uint64_t bytes_allocated; /* sum of sizes over all allocations */
	uint64_t peak_bytes;      /* highest in_use_bytes seen */
	uint64_t mapped_bytes;    /* memory the allocator holds from the OS now */
};

/* Fills *out with the counters as of now. Returns 0, or -1 if out is NULL. */
int heapledger_get_stats(struct heapledger_stats *out);

/* Writes the same HEAP SUMMARY the hook prints at exit to file descriptor fd,
 * without allocating. */
void heapledger_print_summary(int fd);

/* Runs a leak check now, in a running (multi-threaded) program: every other
 * thread is stopped for a reachability scan, which classifies each live
 * block as valgrind does (definitely, indirectly, possibly lost, still
 * reachable). Under `heapledger run` (or a daemon) the result is sent to
 * the reporter as a checkpoint of this process, reported and stored with its
 * loss records and what grew since the previous check; standalone, the loss
 * records that grew since the previous check and a LEAK SUMMARY are printed
 * (like valgrind's `leak_check increased`). A thread that does not stop for
 * the scan is named in the report. Returns 0, or -1 if the scan could not
 * run. */
int heapledger_check_leaks(void);

#ifdef __cplusplus
}
#endif

#endif /* HEAPLEDGER_H */
