/*
 * reporter/symbols/prefetch.h: symbolization ahead of time, while the program runs.
 *
 * The report is due right after the program exits, and most of the time it
 * used to take was libdw opening debug info (libc6-dbg's sections are
 * zlib-compressed and libdw inflates all of them when it opens the file:
 * about 90 ms). `heapledger run` therefore hands every new return address of
 * every stack to a background thread (nice 10) that symbolizes it into the
 * run's symbolizer as soon as the STACK record has arrived. Results are
 * cached per (module, address) and do not depend on when they were made, so
 * the report is the same; only less of the work is left after the exit.
 *
 * The main thread owns the run's state and only copies what the thread needs
 * (module path, bias, build-id; addresses) into a queue under a lock. The
 * symbolizer belongs to the thread from hl_prefetch_start until
 * hl_prefetch_stop, which lets it finish the address in progress, drops the
 * rest of the queue and joins it, except between hl_prefetch_pause and
 * hl_prefetch_resume (the main thread reports ended processes meanwhile).
 */
#ifndef HL_REPORTER_PREFETCH_H
#define HL_REPORTER_PREFETCH_H

#include <stddef.h>

#include "symbolize.h"

struct hl_run;     /* ingest/state.h: the run whose modules are scanned */
struct hl_process; /* ingest/state.h: a process leaving the run */

struct hl_prefetch;

/* NULL if the thread cannot be started (then nothing is prefetched). */
struct hl_prefetch *hl_prefetch_start(struct hl_symbolizer *sym);
/* Queues the return addresses of the stacks that are new in run since the
 * last call. Main thread only; run->procs only grows, or loses a process
 * hl_prefetch_forget was told of. */
void hl_prefetch_scan(struct hl_prefetch *pf, const struct hl_run *run);
/* Takes the symbolizer back until hl_prefetch_resume: the thread finishes
 * the address in progress and waits. pf may be NULL. */
void hl_prefetch_pause(struct hl_prefetch *pf);
void hl_prefetch_resume(struct hl_prefetch *pf);
/* p is leaving run->procs (reported and freed while the run goes on):
 * forgets what was seen of it, so the scan goes on with the others. */
void hl_prefetch_forget(struct hl_prefetch *pf, const struct hl_process *p);
/* Stops the thread, frees everything; returns how many addresses it
 * symbolized. pf may be NULL. */
size_t hl_prefetch_stop(struct hl_prefetch *pf);

#endif /* HL_REPORTER_PREFETCH_H */
